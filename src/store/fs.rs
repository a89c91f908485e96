//! The filesystem seam. Every write dacli makes goes through one [`Fs`] value, which can be
//! told to fail a chosen operation so that fault-injection tests can prove that no failure
//! leaves a torn file under a final name (docs/FORMAT.md §4.2).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::error::{Error, Problem, Reason, lossy};

/// Every temporary file dacli creates starts with this prefix; readers skip such names.
pub const TEMP_PREFIX: &str = ".dacli-tmp-";

/// The size caps of docs/FORMAT.md §2.
pub struct Limits;

impl Limits {
    /// No file may exceed 1 MiB; no read takes more than this plus one byte.
    pub const MAX_FILE: u64 = 1024 * 1024;
    /// The frontmatter, between the fences, is at most 64 KiB.
    pub const MAX_FRONTMATTER: usize = 64 * 1024;
}

/// The kinds of write operation a fault can be injected into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultOp {
    Write,
    Sync,
    Rename,
    Link,
    Remove,
    Mkdir,
    /// A write or rename of a derived file (`cache/`), whose failure a command shrugs off:
    /// counted apart so that `write:<n>` and `rename:<n>` reach the durable steps alone.
    Derived,
}

impl FaultOp {
    fn parse(s: &str) -> Option<FaultOp> {
        Some(match s {
            "write" => FaultOp::Write,
            "sync" => FaultOp::Sync,
            "rename" => FaultOp::Rename,
            "link" => FaultOp::Link,
            "remove" => FaultOp::Remove,
            "mkdir" => FaultOp::Mkdir,
            "derived" => FaultOp::Derived,
            _ => return None,
        })
    }
}

/// Fail the `nth` (1-based) operation of kind `op` made through one [`Fs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    pub op: FaultOp,
    pub nth: u32,
}

impl Fault {
    /// Parses the test hook syntax `<op>:<n>`, e.g. `rename:1`.
    pub fn parse(spec: &str) -> Option<Fault> {
        let (op, nth) = spec.split_once(':')?;
        Some(Fault {
            op: FaultOp::parse(op.trim())?,
            nth: nth.trim().parse().ok().filter(|n| *n > 0)?,
        })
    }
}

/// What a directory entry is, judged with `lstat` so that a FIFO or a device is never opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirEntryKind {
    File,
    Dir,
    /// A symlink whose target lies inside the jail; it is read as its target.
    SymlinkInside,
    /// A symlink whose target lies outside the jail, or dangles; never followed.
    SymlinkEscape,
    /// A FIFO, socket or device.
    Special,
}

/// The filesystem seam: display root, containment jail, temp naming, lock deadline, faults.
///
/// Invariants: a file under a final name is only ever created by [`Fs::create_new`] (never
/// overwriting, or [`Fs::publish_new`] after [`Fs::stage`]) or replaced whole by
/// [`Fs::replace`]; every temporary file is named with [`TEMP_PREFIX`], in the destination
/// directory or, staged, in one the caller names; a failed call leaves no new final name.
#[derive(Debug)]
pub struct Fs {
    root: Option<PathBuf>,
    jail: Option<PathBuf>,
    temp_seed: u64,
    temp_counter: AtomicU32,
    pub(super) lock_timeout: Duration,
    fault: Option<Fault>,
    /// A file every durable step is appended to, for the fsync-order audit (tests only).
    trace: Option<PathBuf>,
    counts: Mutex<[u32; 7]>,
    /// The directory [`Fs::contain`] verified last: a listing reads many files of one folder.
    contained: Mutex<Option<PathBuf>>,
    /// Derived data (the index) is not written: a reader that must leave no trace.
    no_derived: bool,
}

impl Fs {
    /// A seam that reports paths relative to `root` (when given) and treats `jail` (a
    /// canonical directory) as the boundary symlinks may not leave. `temp_seed` makes this
    /// process's temporary names unique; it comes from the caller's random source.
    pub fn new(
        root: Option<PathBuf>,
        jail: Option<PathBuf>,
        temp_seed: u64,
        lock_timeout: Duration,
    ) -> Fs {
        Fs {
            root,
            jail,
            temp_seed,
            temp_counter: AtomicU32::new(0),
            lock_timeout,
            fault: None,
            trace: None,
            counts: Mutex::new([0; 7]),
            contained: Mutex::new(None),
            no_derived: false,
        }
    }

    /// A seam that never writes derived data (shell completion reads the workspace as the
    /// user types and must leave it as it was).
    pub fn without_derived_writes(mut self) -> Fs {
        self.no_derived = true;
        self
    }

    /// Arms a fault for tests.
    pub fn with_fault(mut self, fault: Option<Fault>) -> Fs {
        self.fault = fault;
        self
    }

    /// Records every durable step (create, flush, rename, link, unlink, mkdir, directory
    /// flush) as one line of `trace`, for the fsync-order audit of RELIABILITY K3.
    pub fn with_trace(mut self, trace: Option<PathBuf>) -> Fs {
        self.trace = trace;
        self
    }

    /// Appends `<step> <path>[ <path>]` to the trace, when one is set. Best effort: the trace
    /// is a test instrument and never fails the operation it observes.
    fn record(&self, step: &str, a: &Path, b: Option<&Path>) {
        let Some(trace) = &self.trace else { return };
        let mut line = format!("{step} {}", self.display(a));
        if let Some(b) = b {
            line.push(' ');
            line.push_str(&self.display(b));
        }
        line.push('\n');
        #[allow(clippy::disallowed_methods, reason = "store owns file writes")]
        let file = OpenOptions::new().create(true).append(true).open(trace);
        if let Ok(mut f) = file {
            let _ = f.write_all(line.as_bytes());
        }
    }

    /// The path as shown to users: relative to the work-tree root when it is inside it.
    pub fn display(&self, path: &Path) -> String {
        match &self.root {
            Some(root) => match path.strip_prefix(root) {
                Ok(rel) => lossy(rel),
                Err(_) => lossy(path),
            },
            None => lossy(path),
        }
    }

    /// Whether a write of derived data at `path` may go ahead: counted as one
    /// [`FaultOp::Derived`] step, so that a fault test can fail the index's writes too.
    pub fn derived_write_allowed(&self, path: &Path) -> bool {
        !self.no_derived && self.hit(FaultOp::Derived, path).is_ok()
    }

    fn hit(&self, op: FaultOp, path: &Path) -> Result<(), Error> {
        let idx = op as usize;
        let nth = {
            let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
            counts[idx] += 1;
            counts[idx]
        };
        match self.fault {
            Some(f) if f.op == op && f.nth == nth => Err(Error::io(
                op_name(op),
                self.display(path),
                io::Error::other("injected fault"),
            )),
            _ => Ok(()),
        }
    }

    /// Classifies a directory entry with `lstat`, resolving symlinks against the jail.
    pub fn entry_kind(&self, path: &Path) -> Result<DirEntryKind, Error> {
        self.entry_kind_and_len(path).map(|(kind, _)| kind)
    }

    /// [`Fs::entry_kind`] with the length the same `stat` saw (the target's, for a symlink
    /// inside the jail), so a read can size its buffer without another system call.
    fn entry_kind_and_len(&self, path: &Path) -> Result<(DirEntryKind, u64), Error> {
        let meta =
            fs::symlink_metadata(path).map_err(|e| Error::io("stat", self.display(path), e))?;
        let ft = meta.file_type();
        if ft.is_symlink() {
            return Ok(match (fs::canonicalize(path), &self.jail) {
                (Ok(target), Some(jail)) if target.starts_with(jail) => {
                    match fs::metadata(&target) {
                        Ok(m) if m.is_dir() || m.is_file() => {
                            (DirEntryKind::SymlinkInside, m.len())
                        }
                        _ => (DirEntryKind::Special, 0),
                    }
                }
                _ => (DirEntryKind::SymlinkEscape, 0),
            });
        }
        let kind = if ft.is_file() {
            DirEntryKind::File
        } else if ft.is_dir() {
            DirEntryKind::Dir
        } else {
            DirEntryKind::Special
        };
        Ok((kind, meta.len()))
    }

    /// The entries of `dir`, each with its listing's errors named; an absent directory has
    /// none (FORMAT §1).
    fn entries<'a>(
        &'a self,
        dir: &'a Path,
    ) -> Result<impl Iterator<Item = Result<fs::DirEntry, Error>> + 'a, Error> {
        let rd = match fs::read_dir(dir) {
            Ok(rd) => Some(rd),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io("list", self.display(dir), e)),
        };
        Ok(rd
            .into_iter()
            .flatten()
            .map(move |entry| entry.map_err(|e| Error::io("list", self.display(dir), e))))
    }

    /// Lists a directory, sorted by name; an absent directory is empty (FORMAT §1).
    pub fn list_dir(&self, dir: &Path) -> Result<Vec<(String, PathBuf)>, Error> {
        let mut out = self
            .entries(dir)?
            .map(|e| e.map(|e| (e.file_name().to_string_lossy().into_owned(), e.path())))
            .collect::<Result<Vec<_>, _>>()?;
        out.sort();
        Ok(out)
    }

    /// The subdirectories of `dir` (symlinks to directories included), sorted by name as
    /// [`Fs::list_dir`] sorts: the type comes from the listing itself, so only symlinks
    /// cost a `stat` (the event log's scan looks at every day's directory on every read).
    pub fn list_dirs(&self, dir: &Path) -> Result<Vec<(String, PathBuf)>, Error> {
        let mut out = Vec::new();
        for entry in self.entries(dir)? {
            let entry = entry?;
            let path = entry.path();
            let is_dir = match entry.file_type() {
                Ok(t) if t.is_dir() => true,
                Ok(t) if t.is_file() => false,
                _ => path.is_dir(),
            };
            if is_dir {
                out.push((entry.file_name().to_string_lossy().into_owned(), path));
            }
        }
        out.sort();
        Ok(out)
    }

    /// The names of the entries of `dir`, in no particular order (empty when `dir` is
    /// missing): for callers that only look at names, without [`Fs::list_dir`]'s paths and
    /// sorting, which cost more than the listing itself in a directory of thousands.
    pub fn names(&self, dir: &Path) -> Result<Vec<String>, Error> {
        self.entries(dir)?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect()
    }

    /// Reads a file for parsing: refuses special files and escaping symlinks before opening
    /// and reads at most [`Limits::MAX_FILE`] plus one byte.
    pub fn read(&self, path: &Path) -> Result<Vec<u8>, Error> {
        self.contain(parent(path))?;
        let len = match self.entry_kind_and_len(path)? {
            (DirEntryKind::File | DirEntryKind::SymlinkInside, len) => len,
            (DirEntryKind::SymlinkEscape, _) => {
                return Err(self.malformed(
                    path,
                    Reason::SymlinkEscape,
                    "symlink resolves outside .dacli/; not followed".into(),
                ));
            }
            (DirEntryKind::Special | DirEntryKind::Dir, _) => {
                return Err(self.malformed(
                    path,
                    Reason::NotRegular,
                    "not a regular file; not opened".into(),
                ));
            }
        };
        let file = File::open(path).map_err(|e| Error::io("open", self.display(path), e))?;
        self.read_open(path, file, len)
    }

    /// [`Fs::read`] of the file `name` of `dir` that its caller has just found, by `lstat`,
    /// to be a regular file of `len` bytes: a cold read of ten thousand files takes no second
    /// `stat` of each, and opens each relative to its directory instead of walking the
    /// directory's path again. The open follows no symlink and never waits on a FIFO, so an
    /// entry swapped since the caller's `lstat` is classified again by [`Fs::read`] instead
    /// of followed.
    pub fn read_regular(&self, dir: &OpenDir, name: &str, len: u64) -> Result<Vec<u8>, Error> {
        let path = dir.path.join(name);
        self.contain(&dir.path)?;
        match open_no_follow(dir, name) {
            Ok(file) if file.metadata().is_ok_and(|m| m.is_file()) => {
                self.read_open(&path, file, len)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Err(Error::io("open", self.display(&path), e))
            }
            _ => self.read(&path),
        }
    }

    fn malformed(&self, path: &Path, reason: Reason, detail: String) -> Error {
        Error::Malformed(Problem {
            path: self.display(path),
            reason,
            detail,
        })
    }

    fn read_open(&self, path: &Path, file: File, len: u64) -> Result<Vec<u8>, Error> {
        // One byte past the stat'ed length lets `read_to_end` see the end without growing
        // the buffer; a file that grew since the stat still reads whole, up to the cap.
        let mut bytes = Vec::with_capacity(len.min(Limits::MAX_FILE) as usize + 1);
        file.take(Limits::MAX_FILE + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("read", self.display(path), e))?;
        if bytes.len() as u64 > Limits::MAX_FILE {
            return Err(self.malformed(
                path,
                Reason::TooLarge,
                format!("larger than {} bytes", Limits::MAX_FILE),
            ));
        }
        Ok(bytes)
    }

    /// Refuses a directory that is named inside the jail but resolves outside it through a
    /// symlinked ancestor (FORMAT §4.4 `symlink_escape`): nothing outside the workspace is ever
    /// read or written through a path built inside it. Paths named outside the jail (a chart
    /// `--out` in the work tree) are the caller's to check.
    fn contain(&self, dir: &Path) -> Result<(), Error> {
        let Some(jail) = &self.jail else {
            return Ok(());
        };
        if !dir.starts_with(jail) {
            return Ok(());
        }
        if self.contained_last().as_deref() == Some(dir) {
            return Ok(());
        }
        // The deepest part that exists decides: what is created below it stays below it.
        let Some(existing) = dir.ancestors().find(|a| fs::symlink_metadata(a).is_ok()) else {
            return Ok(());
        };
        match fs::canonicalize(existing) {
            Ok(real) if real.starts_with(jail) => {
                if existing == dir {
                    *self.contained_last() = Some(dir.to_path_buf());
                }
                Ok(())
            }
            _ => Err(Error::Malformed(Problem {
                path: self.display(existing),
                reason: Reason::SymlinkEscape,
                detail: "resolves outside .dacli/ through a symlink; nothing read or written there"
                    .into(),
            })),
        }
    }

    fn contained_last(&self) -> std::sync::MutexGuard<'_, Option<PathBuf>> {
        self.contained.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a fault is armed: a test counting steps needs them taken in one order, so
    /// reads that could run in several threads run in one.
    pub fn fault_armed(&self) -> bool {
        self.fault.is_some()
    }

    /// Creates `dir` and its parents.
    pub fn create_dir_all(&self, dir: &Path) -> Result<(), Error> {
        self.contain(dir)?;
        if dir.is_dir() {
            return Ok(());
        }
        self.hit(FaultOp::Mkdir, dir)?;
        // The directories about to be made, outermost first: each one's entry in its parent
        // must be flushed too, or a crash could lose a directory with durable files in it.
        let mut made: Vec<&Path> = dir
            .ancestors()
            .take_while(|d| fs::symlink_metadata(d).is_err())
            .collect();
        made.reverse();
        #[allow(clippy::disallowed_methods, reason = "store owns directory creation")]
        fs::create_dir_all(dir).map_err(|e| Error::io("create directory", self.display(dir), e))?;
        for d in made {
            self.record("mkdir", d, None);
            self.sync_dir(parent(d))?;
        }
        Ok(())
    }

    /// Atomic replace: write a temp file in the same directory, flush it, rename it over
    /// `path`, flush the directory. Readers see the old bytes or the new, never a mix.
    pub fn replace(&self, path: &Path, bytes: &[u8]) -> Result<(), Error> {
        self.replace_as(path, bytes, Access::Default)
    }

    /// [`Fs::replace`] for a file only its owner may read (a client configuration holding a
    /// token): the new file is created mode 0600 before any byte is written, so no moment
    /// exists at which others can read it.
    pub fn replace_private(&self, path: &Path, bytes: &[u8]) -> Result<(), Error> {
        self.replace_as(path, bytes, Access::OwnerOnly)
    }

    fn replace_as(&self, path: &Path, bytes: &[u8], access: Access) -> Result<(), Error> {
        let dir = parent(path);
        self.create_dir_all(dir)?;
        let tmp = self.write_temp_as(dir, bytes, access)?;
        let renamed = self.hit(FaultOp::Rename, path).and_then(|()| {
            #[allow(clippy::disallowed_methods, reason = "store owns renames")]
            fs::rename(&tmp, path).map_err(|e| Error::io("rename", self.display(path), e))
        });
        if let Err(e) = renamed {
            self.discard(&tmp);
            return Err(e);
        }
        self.record("rename", &tmp, Some(path));
        self.sync_dir(dir)
    }

    /// Atomic replace without flushing, for derived data (`cache/`) that a crash may lose:
    /// readers see the old bytes or the new ones, never a mix, and a file a crash leaves empty
    /// or torn fails to parse, so readers ignore it and rebuild from the objects.
    pub fn replace_derived(&self, path: &Path, bytes: &[u8]) -> Result<(), Error> {
        let dir = parent(path);
        self.create_dir_all(dir)?;
        let tmp = self.temp_name(dir);
        self.hit(FaultOp::Derived, &tmp)?;
        #[allow(clippy::disallowed_methods, reason = "store owns file creation")]
        let written = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .and_then(|mut file| file.write_all(bytes))
            .map_err(|e| Error::io("write", self.display(&tmp), e));
        let renamed = written
            .and_then(|()| self.hit(FaultOp::Derived, path))
            .and_then(|()| {
                swap_in(&tmp, path).map_err(|e| Error::io("rename", self.display(path), e))
            });
        // After an exchange the old bytes are under the temporary name; after a failure the
        // new ones are.
        self.discard(&tmp);
        renamed
    }

    /// Create-new: the record appears under `path` complete or not at all, and an existing
    /// `path` is never overwritten ([`Error::Exists`]).
    pub fn create_new(&self, path: &Path, bytes: &[u8]) -> Result<(), Error> {
        let dir = parent(path);
        self.create_dir_all(dir)?;
        let tmp = self.write_temp(dir, bytes)?;
        let linked = self.hit(FaultOp::Link, path).and_then(|()| {
            #[allow(clippy::disallowed_methods, reason = "store owns no-replace links")]
            fs::hard_link(&tmp, path).map_err(|e| {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    Error::Exists {
                        path: self.display(path),
                    }
                } else {
                    Error::io("link", self.display(path), e)
                }
            })
        });
        self.discard(&tmp);
        linked?;
        self.record("link", &tmp, Some(path));
        self.record("unlink", &tmp, None);
        self.sync_dir(dir)
    }

    /// The first half of a create-new: `bytes` written and flushed under a temporary name in
    /// `dir`, which must be on the file system of the directory [`Fs::publish_new`] will
    /// give the record its name in. A caller stages a record while it still waits for
    /// something else (`task add`: the listing that proves its number), and stages it
    /// outside the destination, whose stamp its readers compare. Dropped unpublished, the
    /// temporary file is removed.
    pub fn stage(&self, dir: &Path, bytes: &[u8]) -> Result<Staged, Error> {
        self.create_dir_all(dir)?;
        let (tmp, file) = self.write_unflushed(dir, bytes)?;
        // The flush, the dearest step of a small write, runs beside the caller's work until
        // the record is published; without a thread, here.
        let flushing = match std::thread::Builder::new()
            .name("dacli-flush".into())
            .spawn(move || file.sync_all())
        {
            Ok(thread) => Some(thread),
            Err(_) => {
                if let Err(e) = File::open(&tmp).and_then(|f| f.sync_all()) {
                    self.discard(&tmp);
                    return Err(Error::io("flush", self.display(&tmp), e));
                }
                None
            }
        };
        Ok(Staged {
            tmp,
            bytes: bytes.to_vec(),
            flushing,
        })
    }

    /// The second half: the staged record appears under `path` complete or not at all, and
    /// an existing `path` is never overwritten ([`Error::Exists`]). The record is moved by a
    /// rename that refuses to replace; where the file system refuses such a rename (or
    /// another file system holds the temporary name), it is written again beside `path`.
    /// Only `path`'s directory is flushed: should a crash undo the removal of the temporary
    /// name, what is left is a leftover `doctor` reports, never a second record.
    pub fn publish_new(&self, staged: Staged, path: &Path) -> Result<(), Error> {
        let dir = parent(path);
        let mut staged = staged;
        if let Some(thread) = staged.flushing.take() {
            let flushed = thread
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the flushing thread panicked")));
            flushed.map_err(|e| Error::io("flush", self.display(&staged.tmp), e))?;
        }
        self.record("flush", &staged.tmp, None);
        self.create_dir_all(dir)?;
        self.hit(FaultOp::Rename, path)?;
        match rename_new(&staged.tmp, path) {
            Ok(true) => {}
            Ok(false) => return self.create_new(path, &staged.bytes),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(Error::Exists {
                    path: self.display(path),
                });
            }
            Err(e) => return Err(Error::io("rename", self.display(path), e)),
        }
        self.record("rename", &staged.tmp, Some(path));
        self.sync_dir(dir)
    }

    /// Appends `bytes` to `path`, creating it and its directory when missing. Only for
    /// machine-local runtime logs under `runs/`, which are neither canonical nor append-only
    /// records: a crash may leave a partial last line, which their readers skip. An existing
    /// `path` that is not a regular file (a symlink, a FIFO) is never opened.
    pub fn append(&self, path: &Path, bytes: &[u8]) -> Result<(), Error> {
        self.create_dir_all(parent(path))?;
        if fs::symlink_metadata(path).is_ok() && self.entry_kind(path)? != DirEntryKind::File {
            return Err(Error::Malformed(Problem {
                path: self.display(path),
                reason: Reason::NotRegular,
                detail: "not a regular file; not appended to".into(),
            }));
        }
        self.hit(FaultOp::Write, path)?;
        #[allow(clippy::disallowed_methods, reason = "store owns file writes")]
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::io("open", self.display(path), e))?;
        file.write_all(bytes)
            .map_err(|e| Error::io("append", self.display(path), e))
    }

    /// Moves a file without changing a byte and without ever replacing one (archival, FORMAT
    /// §20): link it under `to` (failing with [`Error::Exists`] if that name is taken), flush,
    /// then unlink `from`. A crash in between leaves the same bytes under both names, never
    /// neither, which is what lets a resumed move finish by removing the original.
    pub fn move_file(&self, from: &Path, to: &Path) -> Result<(), Error> {
        let dir = parent(to);
        self.create_dir_all(dir)?;
        self.hit(FaultOp::Link, to)?;
        #[allow(clippy::disallowed_methods, reason = "store owns no-replace links")]
        fs::hard_link(from, to).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                Error::Exists {
                    path: self.display(to),
                }
            } else {
                Error::io("link", self.display(to), e)
            }
        })?;
        self.record("link", from, Some(to));
        self.sync_dir(dir)?;
        self.remove(from)
    }

    /// Removes a directory only if it is empty (after its files were moved away); an absent
    /// or non-empty directory is left as it is and is not an error.
    pub fn remove_empty_dir(&self, dir: &Path) -> Result<(), Error> {
        self.hit(FaultOp::Remove, dir)?;
        #[allow(clippy::disallowed_methods, reason = "store owns removals")]
        match fs::remove_dir(dir) {
            Ok(()) => {
                self.record("unlink", dir, None);
                self.sync_dir(parent(dir))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => Ok(()),
            Err(e) => Err(Error::io("remove directory", self.display(dir), e)),
        }
    }

    /// Removes a file and flushes its directory. An absent file is not an error.
    pub fn remove(&self, path: &Path) -> Result<(), Error> {
        self.hit(FaultOp::Remove, path)?;
        #[allow(clippy::disallowed_methods, reason = "store owns removals")]
        match fs::remove_file(path) {
            Ok(()) => {
                self.record("unlink", path, None);
                self.sync_dir(parent(path))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io("remove", self.display(path), e)),
        }
    }

    /// Publishes a fully written staging directory under `target`, which must not exist:
    /// the whole tree appears at once or not at all.
    pub fn publish_dir(&self, staging: &Path, target: &Path) -> Result<(), Error> {
        if fs::symlink_metadata(target).is_ok() {
            return Err(Error::Exists {
                path: self.display(target),
            });
        }
        self.hit(FaultOp::Rename, target)?;
        #[allow(clippy::disallowed_methods, reason = "store owns renames")]
        fs::rename(staging, target).map_err(|e| Error::io("rename", self.display(target), e))?;
        self.record("rename", staging, Some(target));
        self.sync_dir(parent(target))
    }

    /// Removes a staging directory dacli created, after a failure. Best effort.
    pub fn discard_dir(&self, dir: &Path) {
        let is_staging = dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(TEMP_PREFIX));
        if is_staging {
            #[allow(clippy::disallowed_methods, reason = "store owns removals")]
            let _ = fs::remove_dir_all(dir);
        }
    }

    /// A fresh name for a temporary file or staging directory inside `dir`.
    pub fn temp_name(&self, dir: &Path) -> PathBuf {
        let n = self
            .temp_counter
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1);
        dir.join(format!("{TEMP_PREFIX}{:016x}{n:04x}", self.temp_seed))
    }

    fn write_temp(&self, dir: &Path, bytes: &[u8]) -> Result<PathBuf, Error> {
        self.write_temp_as(dir, bytes, Access::Default)
    }

    fn write_temp_as(&self, dir: &Path, bytes: &[u8], access: Access) -> Result<PathBuf, Error> {
        let (tmp, file) = self.write_unflushed_as(dir, bytes, access)?;
        if let Err(e) = file.sync_all() {
            self.discard(&tmp);
            return Err(Error::io("flush", self.display(&tmp), e));
        }
        self.record("flush", &tmp, None);
        Ok(tmp)
    }

    /// `bytes` written to a new temporary file in `dir`, up to the flush it still needs
    /// (its fault point passed); nothing is left behind on failure.
    fn write_unflushed(&self, dir: &Path, bytes: &[u8]) -> Result<(PathBuf, File), Error> {
        self.write_unflushed_as(dir, bytes, Access::Default)
    }

    fn write_unflushed_as(
        &self,
        dir: &Path,
        bytes: &[u8],
        access: Access,
    ) -> Result<(PathBuf, File), Error> {
        let tmp = self.temp_name(dir);
        self.hit(FaultOp::Write, &tmp)?;
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        if access == Access::OwnerOnly {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        #[allow(clippy::disallowed_methods, reason = "store owns file creation")]
        let mut file = options
            .open(&tmp)
            .map_err(|e| Error::io("create", self.display(&tmp), e))?;
        self.record("create", &tmp, None);
        let written = file
            .write_all(bytes)
            .map_err(|e| Error::io("write", self.display(&tmp), e))
            .and_then(|()| self.hit(FaultOp::Sync, &tmp));
        if let Err(e) = written {
            self.discard(&tmp);
            return Err(e);
        }
        Ok((tmp, file))
    }

    /// Best-effort cleanup of a temp file after a failure; a leftover is reported by `doctor`.
    fn discard(&self, tmp: &Path) {
        #[allow(clippy::disallowed_methods, reason = "store owns removals")]
        let _ = fs::remove_file(tmp);
    }

    fn sync_dir(&self, dir: &Path) -> Result<(), Error> {
        self.hit(FaultOp::Sync, dir)?;
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io("flush directory", self.display(dir), e))?;
        self.record("flushdir", dir, None);
        Ok(())
    }

    /// Opens (creating if needed, never truncating) a lock file.
    pub(super) fn open_lock_file(&self, path: &Path) -> Result<File, Error> {
        self.create_dir_all(parent(path))?;
        #[allow(clippy::disallowed_methods, reason = "store owns lock files")]
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io("open lock", self.display(path), e))
    }
}

/// A directory whose files are about to be read one by one: on Linux an `O_PATH` descriptor
/// of it (taken without following a symlink), which each open is relative to.
pub struct OpenDir {
    path: PathBuf,
    #[cfg(target_os = "linux")]
    fd: Option<rustix::fd::OwnedFd>,
}

impl OpenDir {
    /// `path`, opened when it is a real directory (no descriptor otherwise: each file is
    /// then reached by its path).
    pub fn new(path: &Path) -> OpenDir {
        OpenDir {
            path: path.to_path_buf(),
            #[cfg(target_os = "linux")]
            fd: {
                use rustix::fs::{Mode, OFlags};
                let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
                rustix::fs::open(path, flags, Mode::empty()).ok()
            },
        }
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The descriptor each open and `lstat` is relative to (`None`: no real directory).
    #[cfg(target_os = "linux")]
    pub fn fd(&self) -> Option<rustix::fd::BorrowedFd<'_>> {
        use rustix::fd::AsFd;
        self.fd.as_ref().map(|fd| fd.as_fd())
    }
}

/// Opens `name` of `dir` for reading without following a symlink in its last component and
/// without waiting for a writer should it be a FIFO.
#[cfg(target_os = "linux")]
fn open_no_follow(dir: &OpenDir, name: &str) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match dir.fd() {
        Some(fd) => rustix::fs::openat(fd, name, flags, Mode::empty())?,
        None => rustix::fs::open(dir.path.join(name), flags, Mode::empty())?,
    };
    Ok(File::from(fd))
}

/// Elsewhere [`Fs::read`] classifies every file itself.
#[cfg(not(target_os = "linux"))]
fn open_no_follow(_: &OpenDir, _: &str) -> io::Result<File> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Puts `tmp` at `path`, replacing what is there; the old file may be left under `tmp`.
///
/// On Linux the two names are exchanged (`renameat2(RENAME_EXCHANGE)`) when `path` exists.
/// ext4 writes a file renamed over another out at once (`auto_da_alloc`, so that a crash
/// does not leave it empty), which allocates its blocks; the next replace then frees them,
/// and on a disk mounted with `discard` that waits for the device: a quarter of a
/// millisecond of every `task add`, whose overlay is replaced each time. An exchange does
/// neither, and derived data needs no such flush (a file a crash leaves empty is ignored).
/// Anything the exchange refuses (no old file, a file system without it) is a plain rename.
fn swap_in(tmp: &Path, path: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        if renameat_with(CWD, tmp, CWD, path, RenameFlags::EXCHANGE).is_ok() {
            return Ok(());
        }
    }
    #[allow(clippy::disallowed_methods, reason = "store owns renames")]
    fs::rename(tmp, path)
}

/// A record [`Fs::stage`]d and not yet published: the temporary file, removed on drop
/// unless published, its bytes, should it have to be written again, and its flush.
#[derive(Debug)]
pub struct Staged {
    tmp: PathBuf,
    bytes: Vec<u8>,
    /// The thread flushing the temporary file, until [`Fs::publish_new`] waits for it.
    flushing: Option<std::thread::JoinHandle<io::Result<()>>>,
}

impl Drop for Staged {
    fn drop(&mut self) {
        // Published, the temporary name is gone and this fails harmlessly.
        #[allow(clippy::disallowed_methods, reason = "store owns removals")]
        let _ = fs::remove_file(&self.tmp);
    }
}

/// Renames `tmp` to `path` unless `path` exists (`AlreadyExists`); `Ok(false)` when the
/// rename cannot be made so (no such rename on this system or file system, or the two names
/// on different file systems) and nothing was changed.
fn rename_new(tmp: &Path, path: &Path) -> io::Result<bool> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        use rustix::io::Errno;
        match renameat_with(CWD, tmp, CWD, path, RenameFlags::NOREPLACE) {
            Ok(()) => Ok(true),
            Err(Errno::EXIST) => Err(io::ErrorKind::AlreadyExists.into()),
            Err(Errno::INVAL | Errno::NOSYS | Errno::XDEV | Errno::NOENT) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (tmp, path);
        Ok(false)
    }
}

fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

fn op_name(op: FaultOp) -> &'static str {
    match op {
        FaultOp::Write => "write",
        FaultOp::Sync => "flush",
        FaultOp::Rename => "rename",
        FaultOp::Link => "link",
        FaultOp::Remove => "remove",
        FaultOp::Mkdir => "create directory",
        FaultOp::Derived => "write derived",
    }
}

/// Who may read a file the store creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// As the process's umask allows.
    Default,
    /// Its owner only (mode 0600).
    OwnerOnly,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jailed(root: &Path) -> Fs {
        let jail = fs::canonicalize(root).unwrap();
        Fs::new(Some(jail.clone()), Some(jail), 1, Duration::from_secs(1))
    }

    /// The caller's `lstat` said "regular file", and then the entry became something else:
    /// the read classifies it again, and neither follows a symlink out nor waits on a FIFO.
    #[test]
    #[cfg(target_os = "linux")]
    fn an_entry_swapped_after_its_lstat_is_classified_again_not_followed() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        let fs = jailed(root.path());
        fs.replace(&secret, b"outside").unwrap();
        let dir = root.path().join("d");
        fs.replace(&dir.join("plain.md"), b"hello").unwrap();
        std::os::unix::fs::symlink(&secret, dir.join("link.md")).unwrap();
        let (fifo, mode) = (rustix::fs::FileType::Fifo, rustix::fs::Mode::RUSR);
        rustix::fs::mknodat(rustix::fs::CWD, dir.join("fifo.md"), fifo, mode, 0).unwrap();
        let open = OpenDir::new(&dir);

        assert_eq!(fs.read_regular(&open, "plain.md", 5).unwrap(), b"hello");
        // A length that no longer matches still reads the whole file.
        assert_eq!(fs.read_regular(&open, "plain.md", 1).unwrap(), b"hello");
        let reason = |name: &str| match fs.read_regular(&open, name, 7) {
            Err(Error::Malformed(p)) => p.reason,
            other => panic!("{name}: {other:?}"),
        };
        assert_eq!(reason("link.md"), Reason::SymlinkEscape);
        assert_eq!(reason("fifo.md"), Reason::NotRegular);
        // Gone since the `lstat`: a vanished file, which a scan looks for again.
        match fs.read_regular(&open, "gone.md", 3) {
            Err(Error::Io { source, .. }) => assert_eq!(source.kind(), io::ErrorKind::NotFound),
            other => panic!("{other:?}"),
        }
    }
}
