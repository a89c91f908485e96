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
const SCHEMA: i64 = 5;

/// How long a write waits for another process's write transaction before giving up on
/// recording (reads never wait: WAL readers see the last commit).
const BUSY: Duration = Duration::from_millis(200);

/// A file's row as a pass records it: its name, its stamp when its bytes were read, whether
/// that stamp was settled, and its extract (UTF-8 text: the codec of `objects` writes
/// nothing else).
#[derive(Debug, Clone)]
pub struct FileRow {
    pub name: String,
    pub stamp: Stamp,
    pub settled: bool,
    pub extract: Arc<String>,
}

/// A file's row as read back: its stamp and settledness, and where its name and extract lie
/// in the directory's text ([`DirRows::name`], [`DirRows::extract`]).
#[derive(Debug, Clone)]
pub struct Row {
    name: std::ops::Range<usize>,
    extract: std::ops::Range<usize>,
    pub stamp: Stamp,
    pub settled: bool,
}

/// One indexed directory: its stamp when listed, whether settled, and its files' rows in
/// name order. Every name and extract is a slice of one shared text, read in one piece, so
/// decoded extracts borrow it instead of copying.
#[derive(Debug, Clone, Default)]
pub struct DirRows {
    /// `None` for a directory never listed.
    pub stamp: Option<(Stamp, bool)>,
    pub text: Arc<String>,
    pub files: Vec<Row>,
}

impl DirRows {
    pub fn name(&self, row: &Row) -> &str {
        self.text.get(row.name.clone()).unwrap_or_default()
    }

    pub fn extract(&self, row: &Row) -> &str {
        self.text.get(row.extract.clone()).unwrap_or_default()
    }

    /// Where `row`'s extract lies in [`DirRows::text`].
    pub fn extract_range(&self, row: &Row) -> std::ops::Range<usize> {
        row.extract.clone()
    }

    /// The row of `name`, by binary search (rows are in name order).
    pub fn find(&self, name: &str) -> Option<usize> {
        self.files.binary_search_by(|r| self.name(r).cmp(name)).ok()
    }
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
            let mut out = HashMap::new();
            let mut dirs = c.prepare_cached(
                "SELECT dir, size, mtime, ctime, ino, settled, meta, text, sum FROM dirs \
                 WHERE kind = ?1",
            )?;
            let mut q = dirs.query(params![kind])?;
            while let Some(r) = q.next()? {
                if let Some((dir, rows)) = dir_of(r)? {
                    out.insert(dir, rows);
                }
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
             DROP TABLE IF EXISTS packs;
             CREATE TABLE dirs(kind TEXT NOT NULL, dir TEXT NOT NULL,
                 size INTEGER NOT NULL, mtime INTEGER NOT NULL, ctime INTEGER NOT NULL,
                 ino INTEGER NOT NULL, settled INTEGER NOT NULL, meta BLOB NOT NULL,
                 text TEXT NOT NULL, sum INTEGER NOT NULL, PRIMARY KEY (kind, dir));
             PRAGMA user_version = {SCHEMA};
             COMMIT;"
        ))?;
    }
    Ok(conn)
}

/// The bytes of one file's row in a directory's `meta`: where its name and extract lie in
/// the directory's `text` (four u32), its stamp (four i64) and settledness (one byte).
const META: usize = 4 * 4 + 4 * 8 + 1;

/// A directory's row read back; `None` when its checksum or layout does not hold (it is
/// then listed and its files read again).
fn dir_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<Option<(String, DirRows)>> {
    let dir: String = r.get(0)?;
    let ints = [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?];
    let settled: bool = r.get(5)?;
    let meta = r.get_ref(6)?.as_blob()?;
    let text = r.get_ref(7)?.as_str()?;
    let sum: i64 = r.get(8)?;
    // SQLite checks its pages' structure, not their bytes: a row damaged on disk fails here.
    if sum != checksum(&dir, ints, settled, meta, text) || meta.len() % META != 0 {
        return Ok(None);
    }
    let Some(stamp) = Stamp::from_ints(ints) else {
        return Ok(None);
    };
    let mut files = Vec::with_capacity(meta.len() / META);
    for m in meta.chunks_exact(META) {
        let u = |at: usize| {
            let mut b = [0; 4];
            b.copy_from_slice(&m[at..at + 4]);
            u32::from_le_bytes(b) as usize
        };
        let i = |at: usize| {
            let mut b = [0; 8];
            b.copy_from_slice(&m[at..at + 8]);
            i64::from_le_bytes(b)
        };
        let name = u(0)..u(0) + u(4);
        let extract = u(8)..u(8) + u(12);
        let (Some(stamp), true, true) = (
            Stamp::from_ints([i(16), i(24), i(32), i(40)]),
            text.get(name.clone()).is_some(),
            text.get(extract.clone()).is_some(),
        ) else {
            return Ok(None);
        };
        files.push(Row {
            name,
            extract,
            stamp,
            settled: m[48] == 1,
        });
    }
    let rows = DirRows {
        stamp: Some((stamp, settled)),
        text: Arc::new(text.to_string()),
        files,
    };
    // Names in strict order, as they were written: a binary search relies on it.
    if rows
        .files
        .windows(2)
        .any(|w| rows.name(&w[0]) >= rows.name(&w[1]))
    {
        return Ok(None);
    }
    Ok(Some((dir, rows)))
}

/// Replaces each updated directory's row with its current rows (read again inside the
/// transaction, so a concurrent writer's rows are kept) plus what the update read.
fn write_dirs(c: &Connection, kind: &str, updates: &[DirUpdate]) -> rusqlite::Result<()> {
    let mut get = c.prepare_cached(
        "SELECT dir, size, mtime, ctime, ino, settled, meta, text, sum FROM dirs \
         WHERE kind = ?1 AND dir = ?2",
    )?;
    let mut del = c.prepare_cached("DELETE FROM dirs WHERE kind = ?1 AND dir = ?2")?;
    let mut put = c.prepare_cached(
        "INSERT OR REPLACE INTO dirs(kind, dir, size, mtime, ctime, ino, settled, meta, text, sum) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    for u in updates {
        let Some(([size, mtime, ctime, ino], settled)) = u
            .stamp
            .and_then(|(s, settled)| Some((s.to_ints()?, settled)))
        else {
            del.execute(params![kind, u.dir])?;
            continue;
        };
        let current = {
            let mut q = get.query(params![kind, u.dir])?;
            match q.next()? {
                Some(r) => dir_of(r)?.map(|(_, rows)| rows).unwrap_or_default(),
                None => DirRows::default(),
            }
        };
        // Name → (stamp, settled, extract), in name order.
        let mut rows: std::collections::BTreeMap<&str, (Stamp, bool, &str)> = current
            .files
            .iter()
            .map(|r| (current.name(r), (r.stamp, r.settled, current.extract(r))))
            .collect();
        for name in &u.remove {
            rows.remove(name.as_str());
        }
        for f in &u.upsert {
            rows.insert(&f.name, (f.stamp, f.settled, f.extract.as_str()));
        }
        let Some((meta, text)) = pack(&rows) else {
            // Past 4 GiB of text: not indexed.
            del.execute(params![kind, u.dir])?;
            continue;
        };
        let ints = [size, mtime, ctime, ino];
        let sum = checksum(&u.dir, ints, settled, &meta, &text);
        put.execute(params![
            kind, u.dir, size, mtime, ctime, ino, settled, meta, text, sum
        ])?;
    }
    Ok(())
}

/// A directory's `meta` and `text` for `rows` (by name, in name order); `None` when the
/// text would not fit 32-bit offsets.
fn pack(rows: &std::collections::BTreeMap<&str, (Stamp, bool, &str)>) -> Option<(Vec<u8>, String)> {
    let mut meta = Vec::with_capacity(rows.len() * META);
    let mut text = String::new();
    for (name, (stamp, settled, extract)) in rows {
        let Some(ints) = stamp.to_ints() else {
            continue;
        };
        let name_at = u32::try_from(text.len()).ok()?;
        text.push_str(name);
        let at = u32::try_from(text.len()).ok()?;
        text.push_str(extract);
        let end = u32::try_from(text.len()).ok()?;
        for n in [name_at, at - name_at, at, end - at] {
            meta.extend_from_slice(&n.to_le_bytes());
        }
        for i in ints {
            meta.extend_from_slice(&i.to_le_bytes());
        }
        meta.push(u8::from(*settled));
    }
    Some((meta, text))
}

/// The checksum a directory's row carries over everything it says.
fn checksum(dir: &str, stamp: [i64; 4], settled: bool, meta: &[u8], text: &str) -> i64 {
    let mut h = crc32fast::Hasher::new();
    h.update(dir.as_bytes());
    h.update(&[0]);
    for i in stamp {
        h.update(&i.to_le_bytes());
    }
    h.update(&[u8::from(settled)]);
    h.update(&(meta.len() as u64).to_le_bytes());
    h.update(meta);
    h.update(text.as_bytes());
    i64::from(h.finalize())
}
