//! What identifies one version of a file or directory, the way git's index identifies one:
//! size, modification and change times to the nanosecond, inode.

use std::path::Path;

use super::fs::OpenDir;

/// The metadata that identifies one version of a file or directory.
///
/// Invariant: any write to a file, any rename or link of it, and any change of its times by
/// `touch` or `cp -p` gives it a new change time, which nothing but the kernel's clock sets.
/// Two stamps are equal only when none of that happened between them, or when it happened
/// within one tick of the file system's clock — which [`Stamp::settled_before`] rules out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
}

impl Stamp {
    /// The stamp of a regular file (`lstat`); `None` for anything else, which is never indexed.
    pub fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        if !meta.file_type().is_file() {
            return None;
        }
        Some(Stamp::from_meta(&meta))
    }

    /// The stamp of a real directory; `None` when absent or anything else. A directory's size
    /// is left out: it says nothing its times do not.
    pub fn of_dir(path: &Path) -> Option<Stamp> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        if !meta.file_type().is_dir() {
            return None;
        }
        Some(Stamp {
            size: 0,
            ..Stamp::from_meta(&meta)
        })
    }

    /// The size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The modification time, in nanoseconds since the epoch.
    pub fn mtime_ns(&self) -> i128 {
        self.mtime_ns
    }

    /// The later of the modification and change times: the last moment the kernel stamped it.
    pub fn last_ns(&self) -> i128 {
        self.mtime_ns.max(self.ctime_ns)
    }

    /// True when the file system's clock read `clock_ns` ([`super::index::Index`]'s probe)
    /// before this stamp was taken, and this stamp is older than that reading: any change
    /// after the stamp was taken then gets a change time of at least `clock_ns`, so it cannot
    /// keep this stamp. A stamp as recent as the clock's current tick proves nothing (git's
    /// "racily clean" entries): a change in that same tick may keep it.
    pub fn settled_before(&self, clock_ns: i128) -> bool {
        self.last_ns() < clock_ns
    }

    #[cfg(unix)]
    pub fn from_meta(meta: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Stamp {
            size: meta.size(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
        }
    }

    #[cfg(not(unix))]
    pub fn from_meta(meta: &std::fs::Metadata) -> Stamp {
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        Stamp {
            size: meta.len(),
            mtime_ns,
            ctime_ns: mtime_ns,
            ino: 0,
        }
    }

    /// The stamp as four integers, for records that hold integers; `None` for times beyond
    /// 2262. [`Stamp::from_ints`] gives it back.
    pub fn to_ints(&self) -> Option<[i64; 4]> {
        Some([
            i64::try_from(self.size).ok()?,
            i64::try_from(self.mtime_ns).ok()?,
            i64::try_from(self.ctime_ns).ok()?,
            // An inode is a bit pattern: the cast goes both ways without loss.
            self.ino as i64,
        ])
    }

    /// The stamp [`Stamp::to_ints`] gave; `None` for a negative size.
    pub fn from_ints([size, mtime_ns, ctime_ns, ino]: [i64; 4]) -> Option<Stamp> {
        Some(Stamp {
            size: u64::try_from(size).ok()?,
            mtime_ns: i128::from(mtime_ns),
            ctime_ns: i128::from(ctime_ns),
            ino: ino as u64,
        })
    }
}

/// The stamps of the files `names` of directory `dir`, in order (`None` for one that is
/// absent or no regular file), in `threads` threads. On Linux each is an `fstatat` relative to
/// the directory's descriptor, which skips walking the directory's path again for every file:
/// at ten thousand tasks those walks were a third of a warm read.
pub fn of_all<S: AsRef<str> + Sync>(
    dir: &OpenDir,
    names: &[S],
    threads: usize,
) -> Vec<Option<Stamp>> {
    let chunk = names.len().div_ceil(threads.max(1)).max(1);
    let stat_chunk = |part: &[S]| -> Vec<Option<Stamp>> { in_dir(dir, part) };
    if threads <= 1 || names.len() <= chunk {
        return stat_chunk(names);
    }
    std::thread::scope(|s| {
        let parts: Vec<_> = names
            .chunks(chunk)
            .map(|part| s.spawn(move || stat_chunk(part)))
            .collect();
        let mut out = Vec::with_capacity(names.len());
        for (part, handle) in names.chunks(chunk).zip(parts) {
            match handle.join() {
                Ok(found) => out.extend(found),
                Err(_) => out.extend(part.iter().map(|_| None)),
            }
        }
        out
    })
}

#[cfg(target_os = "linux")]
fn in_dir<S: AsRef<str>>(dir: &OpenDir, names: &[S]) -> Vec<Option<Stamp>> {
    use rustix::fs::{AtFlags, FileType};
    let Some(fd) = dir.fd() else {
        return names
            .iter()
            .map(|n| Stamp::of(&dir.path().join(n.as_ref())))
            .collect();
    };
    let ns = |s: i128, n: i128| s * 1_000_000_000 + n;
    names
        .iter()
        .map(|name| {
            let st = rustix::fs::statat(fd, name.as_ref(), AtFlags::SYMLINK_NOFOLLOW).ok()?;
            if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
                return None;
            }
            Some(Stamp {
                size: u64::try_from(st.st_size).ok()?,
                mtime_ns: ns(i128::from(st.st_mtime), i128::from(st.st_mtime_nsec)),
                ctime_ns: ns(i128::from(st.st_ctime), i128::from(st.st_ctime_nsec)),
                ino: st.st_ino,
            })
        })
        .collect()
}

#[cfg(not(target_os = "linux"))]
fn in_dir<S: AsRef<str>>(dir: &OpenDir, names: &[S]) -> Vec<Option<Stamp>> {
    names
        .iter()
        .map(|n| Stamp::of(&dir.path().join(n.as_ref())))
        .collect()
}
