//! The storage of the derived index (docs/DESIGN.md, "The engine"): one SQLite database,
//! `cache/index.sqlite`, in WAL mode, shared by every dacli process of a workspace.
//!
//! It stores, per kind of extract (`tasks-<project>`, `notes`, `events` ...), each listed
//! directory with its [`Stamp`] and each file with its stamp and its extract's bytes. It
//! decides nothing: the caller (`objects::index`) validates every row against its file and
//! tells it what changed. What it guarantees:
//! - a row is only ever written with the stamp its file had *before* its bytes were read, and
//!   `settled` only when [`Stamp::settled_before`] held against a reading of the file system's
//!   own clock taken before that stamp ([`Index::clock_ns`]);
//! - it can always be deleted, and any failure to open, read or write it makes it an empty
//!   index for this call (the files are the only source of truth);
//! - the rows of one directory are replaced in one transaction, so a reader sees a
//!   directory's rows as one writer left them.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, params};

use super::Stamp;

/// The schema's version (`PRAGMA user_version`); a database of another version is dropped
/// and rebuilt.
const SCHEMA: i64 = 4;

/// How long a write waits for another process's write transaction before giving up on
/// recording (reads never wait: WAL readers see the last commit).
const BUSY: Duration = Duration::from_millis(200);

/// One indexed file of a directory: its name, its stamp when its bytes were read, whether
/// that stamp was settled, and its extract.
///
/// An extract is UTF-8 text (the codec of `objects` writes nothing else), held shared so a
/// decoded value can borrow it without copying; a stored row whose bytes are not UTF-8 is no
/// row.
#[derive(Debug, Clone)]
pub struct FileRow {
    pub name: String,
    pub stamp: Stamp,
    pub settled: bool,
    pub extract: Arc<String>,
}

/// One indexed directory: its stamp when listed, whether settled, and its files by name.
#[derive(Debug, Clone, Default)]
pub struct DirRows {
    /// `None` for a directory never listed.
    pub stamp: Option<(Stamp, bool)>,
    pub files: Vec<FileRow>,
}

/// What a pass changed in one directory's rows: its stamp and settledness (`None` for a
/// directory that is absent or not a real directory: all its rows are dropped), the files
/// read again, and the names it no longer holds.
#[derive(Debug)]
pub struct DirUpdate {
    pub dir: String,
    pub stamp: Option<(Stamp, bool)>,
    pub upsert: Vec<FileRow>,
    pub remove: Vec<String>,
}

/// The index of one workspace, opened on first use by the call that owns it.
pub struct Index {
    db: PathBuf,
    clock: PathBuf,
    /// The device of the workspace directory: the clock is read on that file system only.
    dev: Option<u64>,
    conn: RefCell<Option<Option<Connection>>>,
    clock_ns: Cell<Option<Option<i128>>>,
    /// The rows of each kind this call has read, until it records that kind: a command
    /// lists a project's tasks several times (to resolve, to fold, to show), and every
    /// row is validated against its file where it is served anyway.
    loaded: RefCell<HashMap<String, Arc<HashMap<String, DirRows>>>>,
    /// Off for a call that must not touch the cache (tests of a cold read).
    enabled: bool,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("db", &self.db).finish()
    }
}

impl Index {
    /// The index under `cache/` of the workspace directory `dir`.
    pub fn new(dir: &Path, enabled: bool) -> Index {
        Index {
            db: dir.join("cache").join("index.sqlite"),
            clock: dir.join("cache").join("clock"),
            dev: device(dir),
            conn: RefCell::new(None),
            clock_ns: Cell::new(None),
            loaded: RefCell::new(HashMap::new()),
            enabled,
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.db
    }

    fn with<R>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<R>) -> Option<R> {
        if !self.enabled {
            return None;
        }
        let mut slot = self.conn.borrow_mut();
        if slot.is_none() {
            // A file that is no database, or one damaged past reading, is derived: it is
            // removed and made again.
            *slot = Some(open(&self.db).ok().or_else(|| {
                self.remove();
                open(&self.db).ok()
            }));
        }
        let conn = slot.as_ref()?.as_ref()?;
        match f(conn) {
            Ok(r) => Some(r),
            Err(e) => {
                if is_damage(&e) {
                    *slot = Some(None);
                    self.remove();
                }
                None
            }
        }
    }

    /// Removes the database and its WAL files.
    fn remove(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.db.clone().into_os_string();
            p.push(suffix);
            #[allow(
                clippy::disallowed_methods,
                reason = "store owns file removal; derived data"
            )]
            let _ = std::fs::remove_file(PathBuf::from(p));
        }
    }

    /// Every row of `kind`, by directory. Empty when the index is unusable.
    pub fn load(&self, kind: &str) -> Arc<HashMap<String, DirRows>> {
        if let Some(rows) = self.loaded.borrow().get(kind) {
            return Arc::clone(rows);
        }
        let rows = Arc::new(self.query(kind));
        self.loaded
            .borrow_mut()
            .insert(kind.to_string(), Arc::clone(&rows));
        rows
    }

    fn query(&self, kind: &str) -> HashMap<String, DirRows> {
        self.with(|c| {
            let mut out: HashMap<String, DirRows> = HashMap::new();
            let mut dirs = c.prepare_cached(
                "SELECT id, dir, size, mtime, ctime, ino, settled, names, sum FROM dirs WHERE kind = ?1",
            )?;
            let found = dirs
                .query_map(params![kind], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        [r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?],
                        r.get::<_, bool>(6)?,
                        r.get::<_, i64>(7)?,
                        r.get::<_, i64>(8)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            // In primary-key order, which is name order: callers find a name by binary search.
            let mut files = c.prepare_cached(
                "SELECT name, size, mtime, ctime, ino, settled, extract, sum FROM files \
                 WHERE dir_id = ?1 ORDER BY name",
            )?;
            for (id, dir, ints, settled, names, sum) in found {
                if sum != checksum(&dir, "", ints, settled, &names.to_le_bytes()) {
                    continue;
                }
                let Some(stamp) = Stamp::from_ints(ints) else {
                    continue;
                };
                let mut rows = DirRows {
                    stamp: Some((stamp, settled)),
                    files: Vec::new(),
                };
                let mut q = files.query(params![id])?;
                while let Some(r) = q.next()? {
                    let name = r.get_ref(0)?.as_str()?;
                    let ints = [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?];
                    let settled: bool = r.get(5)?;
                    let extract = r.get_ref(6)?.as_blob()?;
                    let sum: i64 = r.get(7)?;
                    // A row damaged on disk (SQLite checks its pages' structure, not their
                    // bytes) is no row: its file is read again.
                    if sum != checksum(&dir, name, ints, settled, extract) {
                        continue;
                    }
                    let (Some(stamp), Ok(extract)) =
                        (Stamp::from_ints(ints), std::str::from_utf8(extract))
                    else {
                        continue;
                    };
                    rows.files.push(FileRow {
                        name: name.to_string(),
                        stamp,
                        settled,
                        extract: Arc::new(extract.to_string()),
                    });
                }
                // A directory's names are its file rows': when they are not all there (a row
                // dropped above), the directory is listed again.
                if names != names_sum(rows.files.iter().map(|f| f.name.as_str())) {
                    rows.stamp = None;
                }
                out.insert(dir, rows);
            }
            Ok(out)
        })
        .unwrap_or_default()
    }

    /// Applies `updates` to the rows of `kind` in one transaction. Best effort: a busy or
    /// read-only index records nothing, which costs the next call a parse.
    pub fn store(&self, kind: &str, updates: &[DirUpdate]) {
        self.loaded.borrow_mut().remove(kind);
        self.with(|c| {
            c.execute_batch("BEGIN IMMEDIATE")?;
            match write_dirs(c, kind, updates) {
                Ok(()) => c.execute_batch("COMMIT"),
                Err(e) => {
                    let _ = c.execute_batch("ROLLBACK");
                    Err(e)
                }
            }
        });
    }

    /// A reading of the file system's clock, in ns since the epoch: the modification time
    /// the kernel gives a one-byte write to `cache/clock`, read once per call. A stamp
    /// taken after this reading and older than it is settled ([`Stamp::settled_before`]).
    /// `None` when the clock cannot be read on the workspace's own file system (a read-only
    /// workspace, a `cache/` elsewhere): nothing is then settled, and every file is read.
    pub fn clock_ns(&self) -> Option<i128> {
        if let Some(known) = self.clock_ns.get() {
            return known;
        }
        let reading = self.read_clock();
        self.clock_ns.set(Some(reading));
        reading
    }

    fn read_clock(&self) -> Option<i128> {
        if !self.enabled {
            return None;
        }
        let dir = self.clock.parent()?;
        #[allow(
            clippy::disallowed_methods,
            reason = "store owns file writes; the derived cache directory"
        )]
        let _ = std::fs::create_dir_all(dir);
        #[allow(
            clippy::disallowed_methods,
            reason = "store owns file writes; the clock probe is derived data"
        )]
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.clock)
            .ok()?;
        write_one_byte(&file)?;
        let meta = file.metadata().ok()?;
        if device_of(&meta) != self.dev || self.dev.is_none() {
            return None;
        }
        Some(Stamp::from_meta(&meta).mtime_ns())
    }
}

/// True for an error that says the database file is damaged (or not one).
fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

#[cfg(unix)]
fn write_one_byte(file: &std::fs::File) -> Option<()> {
    use std::os::unix::fs::FileExt;
    file.write_at(b"0", 0).ok().map(|_| ())
}

#[cfg(not(unix))]
fn write_one_byte(mut file: &std::fs::File) -> Option<()> {
    use std::io::Write;
    file.write_all(b"0").ok()
}

#[cfg(unix)]
fn device_of(meta: &std::fs::Metadata) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    Some(meta.dev())
}

#[cfg(not(unix))]
fn device_of(_: &std::fs::Metadata) -> Option<u64> {
    None
}

fn device(dir: &Path) -> Option<u64> {
    device_of(&std::fs::symlink_metadata(dir).ok()?)
}

fn open(path: &Path) -> rusqlite::Result<Connection> {
    if let Some(dir) = path.parent() {
        #[allow(
            clippy::disallowed_methods,
            reason = "store owns file writes; the derived cache directory"
        )]
        let _ = std::fs::create_dir_all(dir);
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY)?;
    // The index is derived: a crash may lose its last transactions (never tear one), which
    // the next call rebuilds from the files; so no fsync.
    // Pages are read through a mapping of the file rather than copied out by `pread`.
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF; PRAGMA mmap_size = 268435456;",
    )?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version != SCHEMA {
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE;
             DROP TABLE IF EXISTS dirs;
             DROP TABLE IF EXISTS files;
             CREATE TABLE dirs(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, dir TEXT NOT NULL,
                 size INTEGER NOT NULL, mtime INTEGER NOT NULL, ctime INTEGER NOT NULL,
                 ino INTEGER NOT NULL, settled INTEGER NOT NULL, names INTEGER NOT NULL,
                 sum INTEGER NOT NULL, UNIQUE (kind, dir));
             CREATE TABLE files(dir_id INTEGER NOT NULL, name TEXT NOT NULL,
                 size INTEGER NOT NULL, mtime INTEGER NOT NULL, ctime INTEGER NOT NULL,
                 ino INTEGER NOT NULL, settled INTEGER NOT NULL, extract BLOB NOT NULL,
                 sum INTEGER NOT NULL, PRIMARY KEY (dir_id, name)) WITHOUT ROWID;
             PRAGMA user_version = {SCHEMA};
             COMMIT;"
        ))?;
    }
    Ok(conn)
}

fn write_dirs(c: &Connection, kind: &str, updates: &[DirUpdate]) -> rusqlite::Result<()> {
    // The directory's row is made (or its stamp set) first, for its id; its names' checksum
    // is set last, over the file rows as the update leaves them.
    let mut put_dir = c.prepare_cached(
        "INSERT INTO dirs(kind, dir, size, mtime, ctime, ino, settled, names, sum) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, 0) \
         ON CONFLICT (kind, dir) DO UPDATE SET size = excluded.size, mtime = excluded.mtime, \
         ctime = excluded.ctime, ino = excluded.ino, settled = excluded.settled RETURNING id",
    )?;
    let mut set_sum = c.prepare_cached("UPDATE dirs SET names = ?2, sum = ?3 WHERE id = ?1")?;
    let mut del_dir =
        c.prepare_cached("DELETE FROM dirs WHERE kind = ?1 AND dir = ?2 RETURNING id")?;
    let mut del_files = c.prepare_cached("DELETE FROM files WHERE dir_id = ?1")?;
    let mut names_in =
        c.prepare_cached("SELECT name FROM files WHERE dir_id = ?1 ORDER BY name")?;
    let mut del = c.prepare_cached("DELETE FROM files WHERE dir_id = ?1 AND name = ?2")?;
    let mut put = c.prepare_cached(
        "INSERT OR REPLACE INTO files(dir_id, name, size, mtime, ctime, ino, settled, extract, sum) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for u in updates {
        let Some(([size, mtime, ctime, ino], settled)) = u
            .stamp
            .and_then(|(s, settled)| Some((s.to_ints()?, settled)))
        else {
            let ids: Vec<i64> = del_dir
                .query_map(params![kind, u.dir], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            for id in ids {
                del_files.execute(params![id])?;
            }
            continue;
        };
        let id: i64 = put_dir.query_row(
            params![kind, u.dir, size, mtime, ctime, ino, settled],
            |r| r.get(0),
        )?;
        for name in &u.remove {
            del.execute(params![id, name])?;
        }
        for f in &u.upsert {
            let Some([size, mtime, ctime, ino]) = f.stamp.to_ints() else {
                del.execute(params![id, f.name])?;
                continue;
            };
            let extract = f.extract.as_bytes();
            let sum = checksum(
                &u.dir,
                &f.name,
                [size, mtime, ctime, ino],
                f.settled,
                extract,
            );
            put.execute(params![
                id, f.name, size, mtime, ctime, ino, f.settled, extract, sum
            ])?;
        }
        let names: Vec<String> = names_in
            .query_map(params![id], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let names = names_sum(names.iter().map(String::as_str));
        let sum = checksum(
            &u.dir,
            "",
            [size, mtime, ctime, ino],
            settled,
            &names.to_le_bytes(),
        );
        set_sum.execute(params![id, names, sum])?;
    }
    Ok(())
}

/// The checksum a row carries over everything it says of its file.
fn checksum(dir: &str, name: &str, stamp: [i64; 4], settled: bool, extract: &[u8]) -> i64 {
    let mut h = crc32fast::Hasher::new();
    h.update(dir.as_bytes());
    h.update(&[0]);
    h.update(name.as_bytes());
    h.update(&[0]);
    for i in stamp {
        h.update(&i.to_le_bytes());
    }
    h.update(&[u8::from(settled)]);
    h.update(extract);
    i64::from(h.finalize())
}

/// A checksum of a directory's file names, in name order.
fn names_sum<'a>(names: impl Iterator<Item = &'a str>) -> i64 {
    let mut h = crc32fast::Hasher::new();
    for n in names {
        h.update(n.as_bytes());
        h.update(&[0]);
    }
    i64::from(h.finalize())
}
