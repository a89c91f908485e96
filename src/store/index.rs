//! The storage of the derived index (docs/DESIGN.md, "The engine"): one SQLite database,
//! `cache/index.sqlite`, in WAL mode, shared by every dacli process of a workspace.
//!
//! It stores, per kind of extract (`tasks-<project>`, `notes`, `events` ...), each listed
//! directory with its [`Stamp`] (table `dirs`) and each file with its stamp and its extract's
//! bytes, in parts of about [`PART`] files (table `parts`): a part starts at every name whose
//! hash says so, so parts depend on the names alone, and a write that changes one file of a
//! directory of ten thousand rewrites one part of a few kilobytes, not the directory. It
//! decides nothing: the caller (`objects::index`) validates every row against its file and
//! tells it what changed. What it guarantees:
//! - a row is only ever written with the stamp its file had *before* its bytes were read, and
//!   `settled` only when [`Stamp::settled_before`] held against a reading of the file system's
//!   own clock taken before that stamp ([`Index::clock_ns`]);
//! - it can always be deleted, and any failure to open, read or write it makes it an empty
//!   index for this call (the files are the only source of truth);
//! - the rows of one directory are replaced in one transaction and read in one statement, so
//!   a reader sees a directory's rows as one writer left them; the directory's row carries
//!   the number of its parts and a checksum over theirs, so a part lost or damaged makes the
//!   whole directory no row.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use rusqlite::{Connection, params};

use super::Stamp;
use super::sqlite;

/// The schema's version (`PRAGMA user_version`); a database of another version is dropped
/// and rebuilt.
const SCHEMA: i64 = 7;

/// The average number of files in a part: a name starts a part when its hash is a multiple
/// of this. About 8 KiB of extracts per part for task files.
const PART: u32 = 32;

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
/// in the texts of the directory's parts ([`DirRows::name`], [`DirRows::extract`]). Packed
/// (56 bytes, not 96): the event log holds one per event, 100,000 of them.
#[derive(Debug, Clone)]
pub struct Row {
    /// The part, then the start and length of the name and of the extract in its text.
    spans: [u32; 5],
    /// The stamp as [`Stamp::to_ints`] wrote it, which [`Stamp::from_ints`] reads back.
    stamp: [i64; 4],
    pub settled: bool,
}

// The size the event log's memory at 100,000 events rests on (docs/DESIGN.md).
const _: () = assert!(std::mem::size_of::<Row>() == 56);

/// The text at `range` of `row`'s part among `parts`; empty when it is not there.
fn text_in<'a>(parts: &'a [Arc<String>], row: &Row, range: std::ops::Range<usize>) -> &'a str {
    parts
        .get(row.part())
        .and_then(|t| t.get(range))
        .unwrap_or_default()
}

impl Row {
    fn part(&self) -> usize {
        self.spans[0] as usize
    }

    fn name(&self) -> std::ops::Range<usize> {
        let [_, at, len, ..] = self.spans.map(|v| v as usize);
        at..at + len
    }

    fn extract(&self) -> std::ops::Range<usize> {
        let [.., at, len] = self.spans.map(|v| v as usize);
        at..at + len
    }

    /// The stamp its file had when it was read; `None` only for a row no write makes.
    pub fn stamp(&self) -> Option<Stamp> {
        Stamp::from_ints(self.stamp)
    }
}

/// One indexed directory: its stamp when listed, whether settled, and its files' rows in
/// name order. Every name and extract is a slice of the text of its part, each read in one
/// piece of exactly its size, so decoded extracts borrow it instead of copying (and no
/// directory's text is grown by doubling: 100,000 events' rows take 34 MB of heap, not 58).
#[derive(Debug, Clone, Default)]
pub struct DirRows {
    /// `None` for a directory never listed.
    pub stamp: Option<(Stamp, bool)>,
    parts: Vec<Arc<String>>,
    pub files: Vec<Row>,
}

impl DirRows {
    pub fn name(&self, row: &Row) -> &str {
        self.text_at(row, row.name())
    }

    pub fn extract(&self, row: &Row) -> &str {
        self.text_at(row, row.extract())
    }

    /// The text of `row`'s part and where its extract lies in it.
    pub fn extract_in(&self, row: &Row) -> Option<(&Arc<String>, std::ops::Range<usize>)> {
        Some((self.parts.get(row.part())?, row.extract()))
    }

    fn text_at(&self, row: &Row, range: std::ops::Range<usize>) -> &str {
        text_in(&self.parts, row, range)
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
    conn: Mutex<Option<Option<Connection>>>,
    /// The store being written in the background, if any, with its kind: a load of that
    /// kind, the next store and dropping the index wait for it first, so this call reads
    /// what it recorded and the process does not exit with it half-done. Loads of other
    /// kinds read beside it (WAL): it changes no row of theirs.
    pending: Mutex<Option<(String, std::thread::JoinHandle<()>)>>,
    clock_ns: OnceLock<Option<i128>>,
    /// The rows of each kind this call has read, until it records that kind: a command
    /// lists a project's tasks several times (to resolve, to fold, to show), and every
    /// row is validated against its file where it is served anyway.
    loaded: Mutex<HashMap<String, Arc<HashMap<String, DirRows>>>>,
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
            conn: Mutex::new(None),
            pending: Mutex::new(None),
            clock_ns: OnceLock::new(),
            loaded: Mutex::new(HashMap::new()),
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
        let mut slot = self.conn.lock().unwrap_or_else(|p| p.into_inner());
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
                if sqlite::is_damage(&e) {
                    *slot = Some(None);
                    self.remove();
                }
                None
            }
        }
    }

    /// Waits for the store being written in the background, if any (of `kind` only, when
    /// given). A store that failed or panicked recorded nothing, which costs the next call
    /// a parse.
    fn finish_pending(&self, kind: Option<&str>) {
        let store = {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            match &*pending {
                Some((of, _)) if kind.is_none_or(|k| k == of) => pending.take(),
                _ => None,
            }
        };
        if let Some((_, store)) = store {
            let _ = store.join();
        }
    }

    /// Waits until the stores this index began are written, as dropping it does.
    pub fn flush(&self) {
        self.finish_pending(None);
    }

    /// Removes the database and its WAL files.
    fn remove(&self) {
        sqlite::remove(&self.db);
    }

    /// Every row of `kind`, by directory. Empty when the index is unusable.
    pub fn load(&self, kind: &str) -> Arc<HashMap<String, DirRows>> {
        if let Some(rows) = self.loaded().get(kind) {
            return Arc::clone(rows);
        }
        self.finish_pending(Some(kind));
        let rows = Arc::new(self.query(kind));
        self.loaded().insert(kind.to_string(), Arc::clone(&rows));
        rows
    }

    fn query(&self, kind: &str) -> HashMap<String, DirRows> {
        self.with(|c| {
            let mut out = HashMap::new();
            // One statement: one snapshot of the directory rows and their parts.
            let mut q = c.prepare_cached(
                "SELECT d.dir, d.size, d.mtime, d.ctime, d.ino, d.settled, d.parts, d.sum, \
                        p.first, p.meta, p.text, p.sum \
                 FROM dirs d LEFT JOIN parts p ON p.kind = d.kind AND p.dir = d.dir \
                 WHERE d.kind = ?1 ORDER BY d.dir, p.first",
            )?;
            let mut rows = q.query(params![kind])?;
            let mut open: Option<Assembly> = None;
            while let Some(r) = rows.next()? {
                let dir = r.get_ref(0)?.as_str()?;
                if open.as_ref().is_none_or(|a| a.dir != dir) {
                    if let Some((d, rows)) = open.take().and_then(Assembly::finish) {
                        out.insert(d, rows);
                    }
                    open = Some(Assembly::start(r)?);
                }
                if let Some(a) = open.as_mut() {
                    a.add(r)?;
                }
            }
            if let Some((d, rows)) = open.take().and_then(Assembly::finish) {
                out.insert(d, rows);
            }
            Ok(out)
        })
        .unwrap_or_default()
    }

    /// Applies `updates` to the rows of `kind` in one transaction, in a thread of its own:
    /// the call goes on (a cold read renders while its ten thousand rows are written), and
    /// the next use of the index or its drop waits for it. Best effort: a busy or read-only
    /// index, or no thread to write it in, records nothing, which costs the next call a
    /// parse.
    pub fn store(&self, kind: &str, updates: Vec<DirUpdate>) {
        self.loaded().remove(kind);
        if !self.enabled {
            return;
        }
        self.finish_pending(None);
        // Its own connection: a connection serves one thread at a time, and this call's
        // loads go on beside the write.
        let db = self.db.clone();
        let of = kind.to_string();
        let write = move || {
            let Ok(c) = open(&db) else { return };
            let _ = c.execute_batch("BEGIN IMMEDIATE").and_then(|()| {
                match write_dirs(&c, &of, &updates) {
                    Ok(()) => c.execute_batch("COMMIT"),
                    Err(e) => {
                        let _ = c.execute_batch("ROLLBACK");
                        Err(e)
                    }
                }
            });
        };
        if let Ok(store) = std::thread::Builder::new()
            .name("index-store".into())
            .spawn(write)
        {
            *self.pending.lock().unwrap_or_else(|p| p.into_inner()) =
                Some((kind.to_string(), store));
        }
    }

    /// A reading of the file system's clock, in ns since the epoch: the modification time
    /// the kernel gives a one-byte write to `cache/clock`, read once per call. A stamp
    /// taken after this reading and older than it is settled ([`Stamp::settled_before`]).
    /// `None` when the clock cannot be read on the workspace's own file system (a read-only
    /// workspace, a `cache/` elsewhere): nothing is then settled, and every file is read.
    pub fn clock_ns(&self) -> Option<i128> {
        *self.clock_ns.get_or_init(|| self.read_clock())
    }

    fn loaded(&self) -> MutexGuard<'_, HashMap<String, Arc<HashMap<String, DirRows>>>> {
        self.loaded.lock().unwrap_or_else(|p| p.into_inner())
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

impl Drop for Index {
    fn drop(&mut self) {
        self.flush();
    }
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
    let conn = sqlite::open(path)?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version != SCHEMA {
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE;
             DROP TABLE IF EXISTS dirs;
             DROP TABLE IF EXISTS files;
             DROP TABLE IF EXISTS packs;
             DROP TABLE IF EXISTS parts;
             CREATE TABLE dirs(kind TEXT NOT NULL, dir TEXT NOT NULL,
                 size INTEGER NOT NULL, mtime INTEGER NOT NULL, ctime INTEGER NOT NULL,
                 ino INTEGER NOT NULL, settled INTEGER NOT NULL, parts INTEGER NOT NULL,
                 sum INTEGER NOT NULL, PRIMARY KEY (kind, dir));
             CREATE TABLE parts(kind TEXT NOT NULL, dir TEXT NOT NULL, first TEXT NOT NULL,
                 sum INTEGER NOT NULL, meta BLOB NOT NULL, text TEXT NOT NULL,
                 PRIMARY KEY (kind, dir, first));
             PRAGMA user_version = {SCHEMA};
             COMMIT;"
        ))?;
    }
    Ok(conn)
}

/// One directory's row and parts as the query returns them, joined into [`DirRows`].
struct Assembly {
    dir: String,
    stamp: Option<(Stamp, bool)>,
    /// What the directory's row says of its parts: how many, and their checksums' fold.
    parts: i64,
    sum: i64,
    seen: i64,
    sums: i64,
    texts: Vec<Arc<String>>,
    files: Vec<Row>,
    /// A part failed its checksum or its layout: the directory is no row.
    bad: bool,
}

impl Assembly {
    fn start(r: &rusqlite::Row<'_>) -> rusqlite::Result<Assembly> {
        let ints = [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?];
        let settled: bool = r.get(5)?;
        Ok(Assembly {
            dir: r.get(0)?,
            stamp: Stamp::from_ints(ints).map(|s| (s, settled)),
            parts: r.get(6)?,
            sum: r.get(7)?,
            seen: 0,
            sums: 0,
            texts: Vec::new(),
            files: Vec::new(),
            bad: false,
        })
    }

    /// Appends the part in `r` (none for a directory without files).
    fn add(&mut self, r: &rusqlite::Row<'_>) -> rusqlite::Result<()> {
        let Some(first) = r.get_ref(8)?.as_str_or_null()? else {
            return Ok(());
        };
        self.add_part(
            first,
            r.get_ref(9)?.as_blob()?,
            r.get_ref(10)?.as_str()?,
            r.get(11)?,
        );
        Ok(())
    }

    /// Appends one part: its first name, `meta`, `text` and stored checksum.
    fn add_part(&mut self, first: &str, meta: &[u8], text: &str, sum: i64) {
        self.seen += 1;
        self.sums ^= sum;
        // SQLite checks its pages' structure, not their bytes: a part damaged on disk fails
        // here.
        if sum != part_checksum(&self.dir, first, meta, text) || !meta.len().is_multiple_of(META) {
            self.bad = true;
            return;
        }
        if self.seen == 1 {
            // Parts hold about as many files: one allocation for the directory's rows
            // rather than a doubling (and a copy) every few parts.
            let parts = usize::try_from(self.parts).unwrap_or(1).clamp(1, 1 << 20);
            self.files
                .reserve((meta.len() / META).saturating_mul(parts) / 8 * 9);
        }
        let (Ok(part), Ok(len)) = (u32::try_from(self.texts.len()), u32::try_from(text.len()))
        else {
            self.bad = true;
            return;
        };
        let text = Arc::new(text.to_string());
        for m in meta.chunks_exact(META) {
            let u = |at: usize| {
                let mut b = [0; 4];
                b.copy_from_slice(&m[at..at + 4]);
                u32::from_le_bytes(b)
            };
            let i = |at: usize| {
                let mut b = [0; 8];
                b.copy_from_slice(&m[at..at + 8]);
                i64::from_le_bytes(b)
            };
            // Within a part's text, which `len` proves fits in a u32.
            let within = |at: u32, n: u32| at.checked_add(n).is_some_and(|end| end <= len);
            let spans = [part, u(0), u(4), u(8), u(12)];
            let stamp = [i(16), i(24), i(32), i(40)];
            let range = |at: u32, n: u32| at as usize..(at + n) as usize;
            let (Some(_), true, true) = (
                Stamp::from_ints(stamp),
                within(spans[1], spans[2]) && text.get(range(spans[1], spans[2])).is_some(),
                within(spans[3], spans[4]) && text.get(range(spans[3], spans[4])).is_some(),
            ) else {
                self.bad = true;
                return;
            };
            self.files.push(Row {
                spans,
                stamp,
                settled: m[48] == 1,
            });
        }
        self.texts.push(text);
    }

    fn text_at(&self, row: &Row, range: std::ops::Range<usize>) -> &str {
        text_in(&self.texts, row, range)
    }

    /// The directory's rows; `None` when its row, a part or the order of its names does not
    /// hold (it is then listed and its files read again).
    fn finish(self) -> Option<(String, DirRows)> {
        let stamp = self.stamp?;
        let (ints, settled) = (stamp.0.to_ints()?, stamp.1);
        if self.bad
            || self.seen != self.parts
            || self.sum != dir_checksum(&self.dir, ints, settled, self.parts, self.sums)
        {
            return None;
        }
        let rows = DirRows {
            stamp: Some(stamp),
            parts: self.texts,
            files: self.files,
        };
        // Names in strict order, as they were written: a binary search relies on it.
        if rows
            .files
            .windows(2)
            .any(|w| rows.name(&w[0]) >= rows.name(&w[1]))
        {
            return None;
        }
        Some((self.dir, rows))
    }
}

/// The bytes of one file's row in a part's `meta`: where its name and extract lie in the
/// part's `text` (four u32), its stamp (four i64) and settledness (one byte).
const META: usize = 4 * 4 + 4 * 8 + 1;

/// One file's row while a directory is rewritten.
#[derive(Clone, Copy)]
struct Entry<'a> {
    name: &'a str,
    stamp: Stamp,
    settled: bool,
    extract: &'a str,
}

/// Replaces each updated directory's rows with its current rows (read again inside the
/// transaction, so a concurrent writer's rows are kept) plus what the update read, writing
/// only the parts that changed.
fn write_dirs(c: &Connection, kind: &str, updates: &[DirUpdate]) -> rusqlite::Result<()> {
    let mut del_dir = c.prepare_cached("DELETE FROM dirs WHERE kind = ?1 AND dir = ?2")?;
    let mut del_parts = c.prepare_cached("DELETE FROM parts WHERE kind = ?1 AND dir = ?2")?;
    let mut del_part =
        c.prepare_cached("DELETE FROM parts WHERE kind = ?1 AND dir = ?2 AND first = ?3")?;
    let mut put_dir = c.prepare_cached(
        "INSERT OR REPLACE INTO dirs(kind, dir, size, mtime, ctime, ino, settled, parts, sum) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    let mut put_part = c.prepare_cached(
        "INSERT OR REPLACE INTO parts(kind, dir, first, sum, meta, text) \
         VALUES (?1, ?2, ?3, ?6, ?4, ?5)",
    )?;
    // Rows of another layout of the same extract (`name@layout`) are never read again by
    // this build: without this, each upgrade would leave the last one's rows in the file.
    if let Some((name, _)) = kind.rsplit_once('@') {
        // Every kind that starts `name@`, and no other: '@' + 1 is 'A'.
        let (from, to) = (format!("{name}@"), format!("{name}A"));
        for table in ["dirs", "parts"] {
            c.prepare_cached(&format!(
                "DELETE FROM {table} WHERE kind >= ?1 AND kind < ?2 AND kind != ?3"
            ))?
            .execute(params![from, to, kind])?;
        }
    }
    for u in updates {
        let Some(([size, mtime, ctime, ino], settled)) = u
            .stamp
            .and_then(|(s, settled)| Some((s.to_ints()?, settled)))
        else {
            del_dir.execute(params![kind, u.dir])?;
            del_parts.execute(params![kind, u.dir])?;
            continue;
        };
        let changes = changes_of(u);
        if rewrite_touched_parts(c, kind, u, &changes)? {
            continue;
        }
        let (current, stored) = current_parts(c, kind, &u.dir)?;
        let old = current.files.iter().filter_map(|r| {
            Some(Entry {
                name: current.name(r),
                stamp: r.stamp()?,
                settled: r.settled,
                extract: current.extract(r),
            })
        });
        let merged = merge(old, &changes);
        let Some(parts) = split(&merged) else {
            // Past 4 GiB of text in a part: not indexed.
            del_dir.execute(params![kind, u.dir])?;
            del_parts.execute(params![kind, u.dir])?;
            continue;
        };
        let mut sums = 0;
        for part in &parts {
            let sum = part_checksum(&u.dir, part.first, &part.meta, &part.text);
            sums ^= sum;
            if stored.get(part.first) != Some(&sum) {
                put_part.execute(params![kind, u.dir, part.first, part.meta, part.text, sum])?;
            }
        }
        let firsts: std::collections::HashSet<&str> = parts.iter().map(|p| p.first).collect();
        for first in stored.keys().filter(|f| !firsts.contains(f.as_str())) {
            del_part.execute(params![kind, u.dir, first])?;
        }
        let count = i64::try_from(parts.len()).unwrap_or(i64::MAX);
        let ints = [size, mtime, ctime, ino];
        let sum = dir_checksum(&u.dir, ints, settled, count, sums);
        put_dir.execute(params![
            kind, u.dir, size, mtime, ctime, ino, settled, count, sum
        ])?;
    }
    Ok(())
}

/// Changes to a directory's rows by name, in name order: `None` removes the name.
type Changes<'a> = Vec<(&'a str, Option<Entry<'a>>)>;

/// `u`'s changes in name order, one per name (the last one the update lists wins): `None`
/// removes the name.
fn changes_of(u: &DirUpdate) -> Vec<(&str, Option<Entry<'_>>)> {
    let mut changes: Vec<(&str, Option<Entry<'_>>)> = u
        .remove
        .iter()
        .map(|n| (n.as_str(), None))
        .chain(u.upsert.iter().map(|f| {
            let e = Entry {
                name: &f.name,
                stamp: f.stamp,
                settled: f.settled,
                extract: f.extract.as_str(),
            };
            (f.name.as_str(), Some(e))
        }))
        .collect();
    changes.reverse();
    changes.sort_by(|a, b| a.0.cmp(b.0));
    changes.dedup_by(|a, b| a.0 == b.0);
    changes
}

/// Applies `changes` to directory `u.dir` by reading and rewriting only the parts the changed
/// names fall in (a name belongs to the part with the greatest first name not after it, or
/// to the first part), and the directory's row. False, with nothing written, when the stored
/// row and parts do not hold together (no row, a count or checksum that differs, a damaged
/// touched part): the caller then rewrites the whole directory.
///
/// A touched part is split again from its own first entry, so after removals or inserts
/// parts may start where a rewrite of the whole directory would not start them; readers
/// join parts in name order whatever their bounds.
fn rewrite_touched_parts(
    c: &Connection,
    kind: &str,
    u: &DirUpdate,
    changes: &[(&str, Option<Entry<'_>>)],
) -> rusqlite::Result<bool> {
    let Some((stamp, settled)) = u.stamp else {
        return Ok(false);
    };
    let Some(ints) = stamp.to_ints() else {
        return Ok(false);
    };
    let row: Option<([i64; 4], bool, i64, i64)> = c
        .prepare_cached(
            "SELECT size, mtime, ctime, ino, settled, parts, sum FROM dirs \
             WHERE kind = ?1 AND dir = ?2",
        )?
        .query_row(params![kind, u.dir], |r| {
            Ok((
                [r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?],
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(e),
        })?;
    let Some((old_ints, old_settled, count, sum)) = row else {
        return Ok(false);
    };
    // `first` and `sum` precede the part's blobs in its record: no overflow page is read.
    let mut firsts: Vec<(String, i64)> = Vec::new();
    {
        let mut q = c.prepare_cached(
            "SELECT first, sum FROM parts WHERE kind = ?1 AND dir = ?2 ORDER BY first",
        )?;
        let mut rows = q.query(params![kind, u.dir])?;
        while let Some(r) = rows.next()? {
            firsts.push((r.get(0)?, r.get(1)?));
        }
    }
    let stored_sums = firsts.iter().fold(0, |acc, (_, s)| acc ^ s);
    let stored_count = i64::try_from(firsts.len()).unwrap_or(i64::MAX);
    if firsts.is_empty()
        || count != stored_count
        || sum != dir_checksum(&u.dir, old_ints, old_settled, count, stored_sums)
    {
        return Ok(false);
    }
    // The touched parts, by position, each with its changes (in name order).
    let mut touched: Vec<(usize, Changes<'_>)> = Vec::new();
    for change in changes {
        let at = firsts
            .partition_point(|(f, _)| f.as_str() <= change.0)
            .saturating_sub(1);
        match touched.last_mut() {
            Some((p, list)) if *p == at => list.push(*change),
            _ => touched.push((at, vec![*change])),
        }
    }
    let mut read = c.prepare_cached(
        "SELECT meta, text, sum FROM parts WHERE kind = ?1 AND dir = ?2 AND first = ?3",
    )?;
    let mut del_part =
        c.prepare_cached("DELETE FROM parts WHERE kind = ?1 AND dir = ?2 AND first = ?3")?;
    let mut put_part = c.prepare_cached(
        "INSERT OR REPLACE INTO parts(kind, dir, first, sum, meta, text) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut writes: Vec<(String, Vec<(Part<'_>, i64)>)> = Vec::new();
    let mut holders: Vec<Assembly> = Vec::new();
    for (at, _) in &touched {
        let first = &firsts[*at].0;
        let mut part = Assembly {
            dir: u.dir.clone(),
            stamp: None,
            parts: 1,
            sum: 0,
            seen: 0,
            sums: 0,
            texts: Vec::new(),
            files: Vec::new(),
            bad: false,
        };
        let (meta, text, part_sum): (Vec<u8>, String, i64) = read
            .query_row(params![kind, u.dir, first], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?;
        part.add_part(first, &meta, &text, part_sum);
        if part.bad || part.sums != firsts[*at].1 {
            return Ok(false);
        }
        holders.push(part);
    }
    let mut sums = stored_sums;
    let mut parts_now = count;
    for ((at, list), part) in touched.iter().zip(&holders) {
        // Every row read back has a stamp (`Assembly::add_part` checks it).
        let old = part.files.iter().filter_map(|r| {
            Some(Entry {
                name: part.text_at(r, r.name()),
                stamp: r.stamp()?,
                settled: r.settled,
                extract: part.text_at(r, r.extract()),
            })
        });
        let merged = merge(old, list);
        let Some(new_parts) = split(&merged) else {
            return Ok(false);
        };
        sums ^= firsts[*at].1;
        parts_now -= 1;
        let new_parts: Vec<(Part<'_>, i64)> = new_parts
            .into_iter()
            .map(|p| {
                let part_sum = part_checksum(&u.dir, p.first, &p.meta, &p.text);
                (p, part_sum)
            })
            .collect();
        for (_, part_sum) in &new_parts {
            sums ^= part_sum;
            parts_now += 1;
        }
        writes.push((firsts[*at].0.clone(), new_parts));
    }
    for (old_first, new_parts) in &writes {
        if !new_parts.iter().any(|(p, _)| p.first == old_first) {
            del_part.execute(params![kind, u.dir, old_first])?;
        }
        for (p, part_sum) in new_parts {
            put_part.execute(params![kind, u.dir, p.first, part_sum, p.meta, p.text])?;
        }
    }
    let [size, mtime, ctime, ino] = ints;
    let dir_sum = dir_checksum(&u.dir, ints, settled, parts_now, sums);
    c.prepare_cached(
        "INSERT OR REPLACE INTO dirs(kind, dir, size, mtime, ctime, ino, settled, parts, sum) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        kind, u.dir, size, mtime, ctime, ino, settled, parts_now, dir_sum
    ])?;
    Ok(true)
}

/// The rows `dir` holds now, and the checksum of each stored part by its first name (a part
/// whose checksum is wrong is rewritten, whatever it holds).
fn current_parts(
    c: &Connection,
    kind: &str,
    dir: &str,
) -> rusqlite::Result<(DirRows, HashMap<String, i64>)> {
    let mut q = c.prepare_cached(
        "SELECT d.dir, d.size, d.mtime, d.ctime, d.ino, d.settled, d.parts, d.sum, \
                p.first, p.meta, p.text, p.sum \
         FROM dirs d LEFT JOIN parts p ON p.kind = d.kind AND p.dir = d.dir \
         WHERE d.kind = ?1 AND d.dir = ?2 ORDER BY p.first",
    )?;
    let mut rows = q.query(params![kind, dir])?;
    let mut open: Option<Assembly> = None;
    let mut stored: HashMap<String, i64> = HashMap::new();
    while let Some(r) = rows.next()? {
        if open.is_none() {
            open = Some(Assembly::start(r)?);
        }
        if let Some(first) = r.get_ref(8)?.as_str_or_null()? {
            stored.insert(first.to_string(), r.get(11)?);
        }
        if let Some(a) = open.as_mut() {
            a.add(r)?;
        }
    }
    let current = open
        .and_then(Assembly::finish)
        .map(|(_, rows)| rows)
        .unwrap_or_default();
    // Parts stored under a directory row that does not hold are all rewritten or removed.
    if current.stamp.is_none() {
        stored.values_mut().for_each(|s| *s = !*s);
    }
    Ok((current, stored))
}

/// `old` (in name order) with `changes` (in name order, one per name: `None` removes) applied.
fn merge<'a>(
    old: impl Iterator<Item = Entry<'a>>,
    changes: &[(&'a str, Option<Entry<'a>>)],
) -> Vec<Entry<'a>> {
    let mut out = Vec::new();
    let mut changes = changes.iter().peekable();
    for e in old {
        while let Some((name, change)) = changes.next_if(|(n, _)| *n < e.name) {
            out.extend(change.filter(|c| c.name == *name));
        }
        match changes.next_if(|(n, _)| *n == e.name) {
            Some((_, change)) => out.extend(*change),
            None => out.push(e),
        }
    }
    out.extend(changes.filter_map(|(_, c)| *c));
    out
}

/// One part of a directory as written: its first name, `meta` and `text`.
struct Part<'a> {
    first: &'a str,
    meta: Vec<u8>,
    text: String,
}

/// Splits `rows` (in name order) into parts: a part starts at the first name and at every
/// name whose hash is a multiple of [`PART`]. `None` when a part's text would not fit 32-bit
/// offsets.
fn split<'a>(rows: &[Entry<'a>]) -> Option<Vec<Part<'a>>> {
    let mut parts: Vec<Part<'a>> = Vec::new();
    for (i, e) in rows.iter().enumerate() {
        let Some(ints) = e.stamp.to_ints() else {
            continue;
        };
        let starts =
            i == 0 || parts.is_empty() || crc32fast::hash(e.name.as_bytes()).is_multiple_of(PART);
        if starts {
            parts.push(Part {
                first: e.name,
                meta: Vec::new(),
                text: String::new(),
            });
        }
        let part = parts.last_mut()?;
        let name_at = u32::try_from(part.text.len()).ok()?;
        part.text.push_str(e.name);
        let at = u32::try_from(part.text.len()).ok()?;
        part.text.push_str(e.extract);
        let end = u32::try_from(part.text.len()).ok()?;
        for n in [name_at, at - name_at, at, end - at] {
            part.meta.extend_from_slice(&n.to_le_bytes());
        }
        for i in ints {
            part.meta.extend_from_slice(&i.to_le_bytes());
        }
        part.meta.push(u8::from(e.settled));
    }
    Some(parts)
}

/// The checksum a part carries over everything it says.
fn part_checksum(dir: &str, first: &str, meta: &[u8], text: &str) -> i64 {
    let mut h = crc32fast::Hasher::new();
    h.update(dir.as_bytes());
    h.update(&[0]);
    h.update(first.as_bytes());
    h.update(&[0]);
    h.update(&(meta.len() as u64).to_le_bytes());
    h.update(meta);
    h.update(text.as_bytes());
    i64::from(h.finalize())
}

/// The checksum a directory's row carries: over its path, stamp, settledness, number of
/// parts and the fold of their checksums.
fn dir_checksum(dir: &str, stamp: [i64; 4], settled: bool, parts: i64, sums: i64) -> i64 {
    let mut h = crc32fast::Hasher::new();
    h.update(dir.as_bytes());
    h.update(&[0]);
    for i in stamp {
        h.update(&i.to_le_bytes());
    }
    h.update(&[u8::from(settled)]);
    h.update(&parts.to_le_bytes());
    h.update(&sums.to_le_bytes());
    i64::from(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(n: i64) -> Stamp {
        Stamp::from_ints([n, 1_000 + n, 2_000 + n, 3_000 + n]).unwrap()
    }

    fn row(name: &str, n: i64) -> FileRow {
        FileRow {
            name: name.to_string(),
            stamp: stamp(n),
            settled: n % 2 == 0,
            extract: Arc::new(format!("extract of {name} #{n}")),
        }
    }

    fn update(upsert: Vec<FileRow>, remove: Vec<String>) -> DirUpdate {
        DirUpdate {
            dir: "projects/p/tasks/open".into(),
            stamp: Some((stamp(7), true)),
            upsert,
            remove,
        }
    }

    /// The rows of the one directory, as (name, stamp, settled, extract).
    fn rows(index: &Index) -> Vec<(String, Stamp, bool, String)> {
        let all = index.load("tasks-p@x");
        let Some(d) = all.get("projects/p/tasks/open") else {
            return Vec::new();
        };
        d.files
            .iter()
            .map(|r| {
                (
                    d.name(r).to_string(),
                    r.stamp().expect("a stamp"),
                    r.settled,
                    d.extract(r).to_string(),
                )
            })
            .collect()
    }

    fn parts(db: &Path) -> Vec<(String, i64)> {
        let c = Connection::open(db).unwrap();
        let mut q = c
            .prepare("SELECT first, sum FROM parts ORDER BY first")
            .unwrap();
        q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    #[test]
    fn a_directory_reads_back_as_written_and_one_change_rewrites_one_part() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::new(dir.path(), true);
        let names: Vec<String> = (0..2_000).map(|i| format!("{i:05}-task.md")).collect();
        let all: Vec<FileRow> = names.iter().zip(0..).map(|(n, i)| row(n, i)).collect();
        index.store("tasks-p@x", vec![update(all.clone(), Vec::new())]);
        index.flush();
        let back = rows(&index);
        assert_eq!(back.len(), 2_000);
        for (b, w) in back.iter().zip(&all) {
            assert_eq!(
                (&b.0, b.1, b.2, b.3.as_str()),
                (&w.name, w.stamp, w.settled, w.extract.as_str())
            );
        }
        let before = parts(index.path());
        assert!(
            before.len() > 20,
            "2,000 files make many parts: {}",
            before.len()
        );

        // One file rewritten, one removed, one added.
        index.store(
            "tasks-p@x",
            vec![update(
                vec![row("00500-task.md", 99_999), row("99999-new.md", 5)],
                vec!["01500-task.md".into()],
            )],
        );
        index.flush();
        let after = parts(index.path());
        let changed = after.iter().filter(|p| !before.contains(p)).count();
        assert!(changed <= 3, "{changed} parts rewritten for three changes");
        let back = rows(&index);
        assert_eq!(back.len(), 2_000);
        assert!(
            back.iter()
                .any(|r| r.0 == "00500-task.md" && r.1 == stamp(99_999))
        );
        assert!(back.iter().any(|r| r.0 == "99999-new.md"));
        assert!(!back.iter().any(|r| r.0 == "01500-task.md"));
        assert!(
            back.windows(2).all(|w| w[0].0 < w[1].0),
            "names stay in order"
        );
    }

    #[test]
    fn a_new_layout_of_an_extract_drops_the_rows_of_the_old_one_only() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::new(dir.path(), true);
        let one = || vec![update(vec![row("a.md", 1)], Vec::new())];
        for kind in ["tasks-p@old", "tasks-p-2@old", "tasks-q@old"] {
            index.store(kind, one());
        }
        index.store("tasks-p@new", one());
        index.flush();
        let count = |kind: &str| {
            let db = Connection::open(index.path()).unwrap();
            let n = |table: &str| -> i64 {
                db.query_row(
                    &format!("SELECT count(*) FROM {table} WHERE kind = ?1"),
                    [kind],
                    |r| r.get(0),
                )
                .unwrap()
            };
            (n("dirs"), n("parts"))
        };
        assert_eq!(count("tasks-p@old"), (0, 0));
        assert_eq!(count("tasks-p@new"), (1, 1));
        assert_eq!(
            count("tasks-p-2@old"),
            (1, 1),
            "another name keeps its rows"
        );
        assert_eq!(count("tasks-q@old"), (1, 1));
        assert_eq!(index.load("tasks-p@new").len(), 1);
    }

    #[test]
    fn a_damaged_or_missing_part_makes_the_directory_no_row() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::new(dir.path(), true);
        let all: Vec<FileRow> = (0..500).map(|i| row(&format!("{i:04}.md"), i)).collect();
        index.store("tasks-p@x", vec![update(all, Vec::new())]);
        index.flush();
        assert_eq!(rows(&index).len(), 500);
        let c = Connection::open(index.path()).unwrap();
        c.execute(
            "UPDATE parts SET text = replace(text, 'extract of 0100', 'extract of 0999') \
             WHERE text LIKE '%extract of 0100%'",
            [],
        )
        .unwrap();
        let fresh = Index::new(dir.path(), true);
        assert!(
            rows(&fresh).is_empty(),
            "a part whose bytes changed is no row"
        );

        index.store(
            "tasks-p@x",
            vec![update(
                (0..500).map(|i| row(&format!("{i:04}.md"), i)).collect(),
                Vec::new(),
            )],
        );
        index.flush();
        assert_eq!(rows(&Index::new(dir.path(), true)).len(), 500);
        c.execute(
            "DELETE FROM parts WHERE first = (SELECT max(first) FROM parts)",
            [],
        )
        .unwrap();
        assert!(
            rows(&Index::new(dir.path(), true)).is_empty(),
            "a directory missing a part is no row"
        );
    }

    #[test]
    fn random_changes_read_back_as_a_model_of_them_says() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::new(dir.path(), true);
        let mut model: std::collections::BTreeMap<String, i64> = std::collections::BTreeMap::new();
        // A small linear congruential generator: the same sequence on every run.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % n
        };
        for step in 0..120_i64 {
            let mut upsert = Vec::new();
            let mut remove = Vec::new();
            for _ in 0..(1 + next(if step == 0 { 400 } else { 12 })) {
                let name = format!("{:05}-t.md", next(3_000));
                match next(4) {
                    0 if !model.is_empty() => {
                        let at = next(model.len() as u64) as usize;
                        let gone = model.keys().nth(at).unwrap().clone();
                        model.remove(&gone);
                        upsert.retain(|r: &FileRow| r.name != gone);
                        remove.push(gone);
                    }
                    _ => {
                        let n = step * 10_000 + next(10_000) as i64;
                        model.insert(name.clone(), n);
                        remove.retain(|r| *r != name);
                        upsert.retain(|r: &FileRow| r.name != name);
                        upsert.push(row(&name, n));
                    }
                }
            }
            index.store("tasks-p@x", vec![update(upsert, remove)]);
            index.flush();
            let back = rows(&Index::new(dir.path(), true));
            let want: Vec<(String, Stamp)> =
                model.iter().map(|(k, n)| (k.clone(), stamp(*n))).collect();
            let got: Vec<(String, Stamp)> = back.iter().map(|r| (r.0.clone(), r.1)).collect();
            assert_eq!(got, want, "step {step}");
            assert!(
                back.iter()
                    .all(|r| r.3 == format!("extract of {} #{}", r.0, model[&r.0]))
            );
        }
    }
}
