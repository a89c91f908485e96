//! What a writer can prove about a directory it just changed: that nobody else changed it
//! meanwhile (the watch), and that nobody can change it later without changing its stamp
//! ([`stamps_change_after_reads`]). Together they let `task add` record a status folder's
//! stamp as exact, so that the next reader need not list thousands of names to trust it
//! (docs/DESIGN.md, "An add proves its own folder").

use std::path::Path;

/// The file systems that stamp a change made after a read of a file's times with a time
/// finer than the clock tick (Linux 6.13 multigrain timestamps): ext4, XFS, Btrfs, tmpfs.
#[cfg(target_os = "linux")]
const MULTIGRAIN_FS: [u64; 4] = [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994];

/// True when every change to `dir` made after its times were last read changes them: the
/// kernel (Linux 6.13 or later) gives such a change a fine-grained time on the file
/// systems of [`MULTIGRAIN_FS`], where a coarse clock would give two changes within one
/// tick the same time. Elsewhere false, and stamps are trusted only once a tick old.
fn stamps_change_after_reads(dir: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        let uname = rustix::system::uname();
        let release = uname.release().to_string_lossy();
        let mut numbers = release
            .split(|c: char| !c.is_ascii_digit())
            .map(|n| n.parse::<u32>().ok());
        let (Some(Some(major)), Some(Some(minor))) = (numbers.next(), numbers.next()) else {
            return false;
        };
        if (major, minor) < (6, 13) {
            return false;
        }
        rustix::fs::statfs(dir).is_ok_and(|fs| {
            u64::try_from(fs.f_type).is_ok_and(|magic| MULTIGRAIN_FS.contains(&magic))
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        false
    }
}

/// A watch on the entries of one directory, started before a writer reads and changes it.
///
/// Invariant: [`DirWatch::only_arrived`] is true only when every change the kernel
/// reported for the directory since [`DirWatch::start`] is the one rename that brought
/// the writer's own file in, and the directory's stamp changes with every change made
/// after it is read ([`stamps_change_after_reads`]): the stamp the writer read before
/// asking is then exact.
pub struct DirWatch {
    #[cfg(target_os = "linux")]
    fd: rustix::fd::OwnedFd,
    #[cfg(target_os = "linux")]
    dir: std::path::PathBuf,
}

impl DirWatch {
    /// Starts watching `dir` where a watch can prove its stamp exact; `None` elsewhere
    /// (another kernel or file system), or where the system refuses a watch.
    pub fn start(dir: &Path) -> Option<DirWatch> {
        if !stamps_change_after_reads(dir) {
            return None;
        }
        DirWatch::entries(dir)
    }

    /// Watches `dir`'s entries: every one created, removed or renamed in or out, and the
    /// directory itself removed or moved. Not its files' contents or attributes: those
    /// change no entry, and asking for them makes the kernel mark every cached entry of the
    /// directory (a millisecond at 5,000 tasks).
    fn entries(dir: &Path) -> Option<DirWatch> {
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::inotify::{CreateFlags, WatchFlags, add_watch, init};
            let fd = init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
            let events = WatchFlags::CREATE
                | WatchFlags::DELETE
                | WatchFlags::MOVED_FROM
                | WatchFlags::MOVED_TO
                | WatchFlags::DELETE_SELF
                | WatchFlags::MOVE_SELF
                | WatchFlags::ONLYDIR
                | WatchFlags::DONT_FOLLOW;
            add_watch(&fd, dir, events).ok()?;
            Some(DirWatch {
                fd,
                dir: dir.to_path_buf(),
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = dir;
            None
        }
    }

    /// True when the only change to the directory since the watch started is `name`
    /// renamed into it. Call it after reading the directory's stamp: a change another
    /// process made before that read is then reported here, even one whose report was
    /// still being queued when the stamp was read (see the barrier below).
    pub fn only_arrived(self, name: &str) -> bool {
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::inotify::{ReadFlags, Reader};
            use rustix::io::Errno;
            // A change updates the directory's times, then queues its report, under the
            // directory's lock. Removing an absent name takes that lock too, so once it
            // returns every change the stamp already showed has been reported.
            let barrier = self.dir.join(format!("{}barrier", super::TEMP_PREFIX));
            match rustix::fs::unlink(&barrier) {
                Err(Errno::NOENT) => {}
                _ => return false,
            }
            let mut buf = [std::mem::MaybeUninit::uninit(); 4096];
            let mut events = Reader::new(&self.fd, &mut buf);
            let mut arrived = false;
            loop {
                match events.next() {
                    Ok(event) => {
                        let ours = event.events() == ReadFlags::MOVED_TO
                            && event
                                .file_name()
                                .is_some_and(|n| n.to_bytes() == name.as_bytes());
                        if !ours || arrived {
                            return false;
                        }
                        arrived = true;
                    }
                    Err(Errno::AGAIN) => return arrived,
                    Err(_) => return false,
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = name;
            false
        }
    }
}

#[cfg(test)]
#[cfg(target_os = "linux")]
#[allow(
    clippy::disallowed_methods,
    reason = "the tests play the other processes, which change the folder directly"
)]
mod tests {
    use super::*;

    fn arrive(dir: &Path, name: &str) {
        let tmp = dir.join(".incoming");
        std::fs::write(&tmp, b"task").unwrap();
        std::fs::rename(&tmp, dir.join(name)).unwrap();
    }

    #[test]
    fn a_watch_passes_only_the_writers_own_arrival() {
        let outside = tempfile::tempdir().unwrap();
        let staged = |name: &str| {
            let p = outside.path().join(name);
            std::fs::write(&p, b"task").unwrap();
            p
        };
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();

        let w = DirWatch::entries(d).unwrap();
        std::fs::rename(staged("a"), d.join("001-a.md")).unwrap();
        assert!(w.only_arrived("001-a.md"));

        let w = DirWatch::entries(d).unwrap();
        std::fs::rename(staged("b"), d.join("002-b.md")).unwrap();
        assert!(!w.only_arrived("002-other.md"), "another name arrived");

        let w = DirWatch::entries(d).unwrap();
        std::fs::write(d.join("by-hand.md"), b"x").unwrap();
        std::fs::rename(staged("c"), d.join("003-c.md")).unwrap();
        assert!(!w.only_arrived("003-c.md"), "a file written there first");

        let w = DirWatch::entries(d).unwrap();
        std::fs::rename(staged("d"), d.join("004-d.md")).unwrap();
        arrive(d, "005-e.md");
        assert!(!w.only_arrived("004-d.md"), "a rename there after");

        let w = DirWatch::entries(d).unwrap();
        std::fs::rename(staged("f"), d.join("006-f.md")).unwrap();
        std::fs::remove_file(d.join("001-a.md")).unwrap();
        assert!(!w.only_arrived("006-f.md"), "a removal there after");

        let w = DirWatch::entries(d).unwrap();
        assert!(!w.only_arrived("007-g.md"), "nothing arrived");
    }

    /// Where it answers true, every change made after a read of the stamp changes it, even
    /// many within one tick of the clock.
    #[test]
    fn stamps_said_to_change_after_reads_do() {
        let dir = tempfile::tempdir().unwrap();
        if !stamps_change_after_reads(dir.path()) {
            return;
        }
        let stamp = || {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::metadata(dir.path()).unwrap();
            (m.ctime(), m.ctime_nsec(), m.mtime(), m.mtime_nsec())
        };
        for i in 0..200 {
            let before = stamp();
            std::fs::write(dir.path().join(format!("{i}.md")), b"x").unwrap();
            assert_ne!(before, stamp(), "change {i} kept the stamp");
        }
    }
}
