//! OS advisory locks with a deadline (docs/FORMAT.md §4.3).

use std::fs::{File, TryLockError};
use std::path::Path;
use std::time::{Duration, Instant};

use super::error::Error;
use super::fs::Fs;

/// An exclusive lock on one file under `.dacli/.locks/`, released when dropped.
///
/// Invariant: while a guard lives, no other dacli process holds the same lock; the kernel
/// releases it if this process dies, so there is no stale-lock recovery to get wrong.
#[derive(Debug)]
pub struct LockGuard {
    _file: File,
}

impl Fs {
    /// Takes the exclusive lock `path`, waiting at most the configured deadline (30 s unless
    /// `DACLI_LOCK_TIMEOUT_MS` says otherwise). It never proceeds unlocked.
    pub fn lock(&self, path: &Path) -> Result<LockGuard, Error> {
        let file = self.open_lock_file(path)?;
        self.wait_for(file, path, Duration::from_millis(2), File::try_lock)
    }

    /// Takes lock `path` shared (any number of shared holders, never while the exclusive
    /// lock is held), creating its file, waiting at most the configured deadline.
    pub fn lock_shared(&self, path: &Path) -> Result<LockGuard, Error> {
        let file = self.open_lock_file(path)?;
        self.wait_for(file, path, Duration::from_millis(2), File::try_lock_shared)
    }

    /// Takes lock `path` shared (any number of shared holders, never while the exclusive
    /// lock is held), waiting at most the configured deadline, when its file exists: `None`
    /// when it does not (a reader creates nothing; the first writer creates it). A reader
    /// that cannot open the file (a read-only checkout) also gets `None`.
    pub fn lock_shared_if_exists(&self, path: &Path) -> Result<Option<LockGuard>, Error> {
        let Ok(file) = File::open(path) else {
            return Ok(None);
        };
        // A move holds it for a few file operations: retry soon.
        self.wait_for(
            file,
            path,
            Duration::from_micros(200),
            File::try_lock_shared,
        )
        .map(Some)
    }

    /// Retries `try_lock` on `file` with a growing pause until it succeeds or the deadline
    /// passes.
    fn wait_for(
        &self,
        file: File,
        path: &Path,
        mut pause: Duration,
        try_lock: fn(&File) -> Result<(), TryLockError>,
    ) -> Result<LockGuard, Error> {
        #[allow(
            clippy::disallowed_methods,
            reason = "a lock deadline needs a monotonic clock"
        )]
        let start = Instant::now();
        loop {
            match try_lock(&file) {
                Ok(()) => return Ok(LockGuard { _file: file }),
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) => {
                    return Err(Error::io("lock", self.display(path), e));
                }
            }
            let waited = start.elapsed();
            if waited >= self.lock_timeout {
                return Err(Error::LockTimeout {
                    path: self.display(path),
                    waited_ms: waited.as_millis() as u64,
                });
            }
            std::thread::sleep(pause.min(self.lock_timeout - waited));
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }

    /// Takes the exclusive lock `path` if nobody holds it, without waiting: `None` when
    /// another process (or another open of the file in this one) holds it.
    pub fn try_lock(&self, path: &Path) -> Result<Option<LockGuard>, Error> {
        let file = self.open_lock_file(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(LockGuard { _file: file })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(Error::io("lock", self.display(path), e)),
        }
    }

    /// Probes a lock without waiting: true when another process holds it (for `doctor`).
    pub fn is_locked(&self, path: &Path) -> Result<bool, Error> {
        let file = self.open_lock_file(path)?;
        match file.try_lock() {
            Ok(()) => Ok(false),
            Err(TryLockError::WouldBlock) => Ok(true),
            Err(TryLockError::Error(e)) => Err(Error::io("lock", self.display(path), e)),
        }
    }
}
