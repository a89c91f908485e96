//! The storage of the search index: one SQLite database with an FTS5 table,
//! `cache/search.sqlite`, derived from the workspace's files like `cache/index.sqlite`.
//!
//! It decides nothing: the caller (`ops::search`) proves each directory's rows fresh and tells
//! it what to replace. It stores, per searchable directory, the directory's [`Stamp`] when it
//! was listed and every file's row (name, stamp, settledness, whether it parsed) in one blob,
//! and each file's documents in the FTS5 table. What it guarantees:
//! - a directory's rows, its files' documents and its stamp are replaced in one transaction,
//!   and only when the directory's row is still the one the caller read (its generation, a
//!   counter every write advances): two processes refreshing at once never mix their views,
//!   and the documents of a directory are always those of the files its row lists;
//! - a row whose checksum fails (SQLite checks its pages' structure, not their bytes) is no
//!   row: the directory is listed and its files read again;
//! - any failure to open, read or write it makes it an empty index for the call (the caller
//!   then answers from the files alone), and a damaged file is removed and made again.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};

use super::Stamp;
use super::sqlite;

/// The schema's version; a database of another version is dropped and rebuilt.
const SCHEMA: i64 = 2;

/// One searchable document (a file may hold several: a glossary holds one per term).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    /// `task`, `note`, `risk`, `glossary`, `question` or `event`.
    pub kind: String,
    /// What names it to the user (`shop/004-add-the-shim`, `n-…`, an event id).
    pub reference: String,
    /// The project slug, empty for the workspace scope or an event.
    pub project: String,
    /// A task's status folder, a risk's status, an event's kind; else empty.
    pub status: String,
    pub title: String,
    pub body: String,
}

/// One file's row: its name, its stamp when read, whether that stamp was settled, and
/// whether the file parsed (one that did not has no documents).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRow {
    pub name: String,
    pub stamp: Stamp,
    pub settled: bool,
    pub parsed: bool,
}

/// A directory's own row: its stamp when listed, whether that stamp was settled, and whether
/// every file's row was settled and parsed when written (`quiet`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirHead {
    pub stamp: Stamp,
    pub settled: bool,
    pub quiet: bool,
}

/// Which write left a directory's row: a write is recorded only over the row it was planned
/// from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation(i64);

/// A directory's row as read: its head (`None` when its checksum fails) and generation.
#[derive(Debug, Clone, Copy)]
pub struct Stored {
    pub head: Option<DirHead>,
    pub generation: Generation,
}

/// A directory's new rows.
#[derive(Debug)]
pub struct DirWrite {
    /// The directory, relative to the workspace directory.
    pub dir: String,
    /// The generation of the row the write was planned from; `None` for no row.
    pub expect: Option<Generation>,
    /// `None`: the directory is gone, and its row and documents are dropped.
    pub head: Option<DirHead>,
    /// Every file's row, in name order.
    pub files: Vec<FileRow>,
    /// The files read again, by name, with their documents (which replace theirs). Every
    /// other file in `files` keeps its documents; a file not in `files` loses them.
    pub read: Vec<(String, Vec<Doc>)>,
}

/// What [`SearchDb::apply`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Recorded,
    /// Another process rewrote a directory since it was read: nothing recorded; plan again.
    Raced,
    /// Nothing recorded (busy, damaged, unwritable): answer without this database.
    Failed,
}

/// A match.
#[derive(Debug, Clone)]
pub struct Hit {
    pub doc: Doc,
    pub path: String,
    /// One line around the first match, the matched words in `[` `]`.
    pub excerpt: String,
    /// Whether the title matched.
    pub in_title: bool,
}

/// What a query is limited to.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub kinds: Vec<String>,
    pub project: Option<String>,
    pub status: Option<String>,
}

/// The search database of one workspace.
pub struct SearchDb {
    db: PathBuf,
    conn: Option<Connection>,
}

impl SearchDb {
    /// Opens (or makes) `cache/search.sqlite` under the workspace directory `dir`; a file that
    /// cannot be opened as one is removed and made again, and failing that the index is empty.
    pub fn open(dir: &Path) -> SearchDb {
        let db = dir.join("cache").join("search.sqlite");
        let make = || sqlite::open(&db).and_then(|c| schema(&c).map(|_| c));
        let conn = make().ok().or_else(|| {
            sqlite::remove(&db);
            make().ok()
        });
        SearchDb { db, conn }
    }

    /// An index in memory, for a call whose database cannot record what it read.
    pub fn memory() -> SearchDb {
        let conn = Connection::open_in_memory()
            .and_then(|c| schema(&c).map(|_| c))
            .ok();
        SearchDb {
            db: PathBuf::new(),
            conn,
        }
    }

    /// Whether the database is usable.
    pub fn is_open(&self) -> bool {
        self.conn.is_some()
    }

    /// Starts a read transaction: what [`SearchDb::heads`] and [`SearchDb::files`] return until
    /// [`SearchDb::apply`] is one state of the database.
    pub fn begin_read(&self) {
        if let Some(conn) = &self.conn
            && conn.is_autocommit()
        {
            let _ = conn.execute_batch("BEGIN DEFERRED");
        }
    }

    /// Ends the read transaction [`SearchDb::begin_read`] started, if any.
    fn end_read(&self) {
        if let Some(conn) = &self.conn
            && !conn.is_autocommit()
        {
            let _ = conn.execute_batch("COMMIT");
        }
    }

    /// Every directory's row, by directory.
    pub fn heads(&self) -> HashMap<String, Stored> {
        let Some(conn) = &self.conn else {
            return HashMap::new();
        };
        let read = || -> rusqlite::Result<HashMap<String, Stored>> {
            let mut st = conn.prepare(
                "SELECT dir, size, mtime, ctime, ino, settled, quiet, gen, bsum, sum FROM dirs",
            )?;
            let mut rows = st.query([])?;
            let mut out = HashMap::new();
            while let Some(r) = rows.next()? {
                let dir: String = r.get(0)?;
                let ints = [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?];
                let (settled, quiet): (bool, bool) = (r.get(5)?, r.get(6)?);
                let (generation, bsum, sum): (i64, i64, i64) = (r.get(7)?, r.get(8)?, r.get(9)?);
                let head = Stamp::from_ints(ints)
                    .filter(|_| sum == head_sum(&dir, ints, settled, quiet, generation, bsum))
                    .map(|stamp| DirHead {
                        stamp,
                        settled,
                        quiet,
                    });
                out.insert(
                    dir,
                    Stored {
                        head,
                        generation: Generation(generation),
                    },
                );
            }
            Ok(out)
        };
        read().unwrap_or_default()
    }

    /// The file rows of `dir` in name order; `None` when it has no row or its blob fails its
    /// checksum or layout.
    pub fn files(&self, dir: &str) -> Option<Vec<FileRow>> {
        let conn = self.conn.as_ref()?;
        let (blob, bsum): (Vec<u8>, i64) = conn
            .query_row("SELECT files, bsum FROM dirs WHERE dir = ?1", [dir], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .ok()?;
        if i64::from(crc32fast::hash(&blob)) != bsum {
            return None;
        }
        decode(&blob)
    }

    /// Records `writes` in one transaction, each only over the row it was planned from.
    pub fn apply(&mut self, writes: &[DirWrite]) -> Applied {
        self.end_read();
        if writes.is_empty() {
            return Applied::Recorded;
        }
        let Some(conn) = &mut self.conn else {
            return Applied::Failed;
        };
        let write = |conn: &mut Connection| -> rusqlite::Result<bool> {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            {
                let mut current = tx.prepare("SELECT gen FROM dirs WHERE dir = ?1")?;
                for w in writes {
                    let now: Option<i64> = current
                        .query_row([&w.dir], |r| r.get(0))
                        .map(Some)
                        .or_else(|e| match e {
                            rusqlite::Error::QueryReturnedNoRows => Ok(None),
                            e => Err(e),
                        })?;
                    if now != w.expect.map(|g| g.0) {
                        return Ok(false);
                    }
                }
            }
            let generation: i64 =
                tx.query_row("UPDATE meta SET gen = gen + 1 RETURNING gen", [], |r| {
                    r.get(0)
                })?;
            {
                let mut of_dir = tx.prepare("SELECT rowid, name FROM docs_of WHERE dir = ?1")?;
                let mut del_doc = tx.prepare("DELETE FROM docs WHERE rowid = ?1")?;
                let mut del_of = tx.prepare("DELETE FROM docs_of WHERE rowid = ?1")?;
                let mut ins_doc = tx.prepare(
                    "INSERT INTO docs(title, body, kind, ref, project, status, path)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )?;
                let mut ins_of = tx.prepare(
                    "INSERT INTO docs_of(rowid, dir, name, kind, ref, project, status)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )?;
                let mut del_dir = tx.prepare("DELETE FROM dirs WHERE dir = ?1")?;
                let mut put_dir = tx.prepare(
                    "INSERT OR REPLACE INTO dirs(dir, size, mtime, ctime, ino, settled, quiet,
                         gen, files, bsum, sum)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                )?;
                for w in writes {
                    // Documents of files no longer listed, or read again, go.
                    let keep: HashSet<&str> = w.files.iter().map(|f| f.name.as_str()).collect();
                    let reread: HashSet<&str> = w.read.iter().map(|(n, _)| n.as_str()).collect();
                    let stale: Vec<i64> = of_dir
                        .query_map([&w.dir], |r| {
                            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
                        })?
                        .filter_map(|row| match row {
                            Ok((_, name))
                                if keep.contains(name.as_str())
                                    && !reread.contains(name.as_str()) =>
                            {
                                None
                            }
                            Ok((id, _)) => Some(Ok(id)),
                            Err(e) => Some(Err(e)),
                        })
                        .collect::<rusqlite::Result<_>>()?;
                    for id in stale {
                        del_doc.execute([id])?;
                        del_of.execute([id])?;
                    }
                    let Some(head) = w.head else {
                        del_dir.execute([&w.dir])?;
                        continue;
                    };
                    for (name, docs) in &w.read {
                        let path = format!("{}/{name}", w.dir);
                        for d in docs {
                            ins_doc.execute(params![
                                d.title,
                                d.body,
                                d.kind,
                                d.reference,
                                d.project,
                                d.status,
                                path
                            ])?;
                            ins_of.execute(params![
                                tx.last_insert_rowid(),
                                w.dir,
                                name,
                                d.kind,
                                d.reference,
                                d.project,
                                d.status
                            ])?;
                        }
                    }
                    let Some(ints) = head.stamp.to_ints() else {
                        del_dir.execute([&w.dir])?;
                        continue;
                    };
                    let blob = encode(&w.files);
                    let bsum = i64::from(crc32fast::hash(&blob));
                    let sum = head_sum(&w.dir, ints, head.settled, head.quiet, generation, bsum);
                    put_dir.execute(params![
                        w.dir,
                        ints[0],
                        ints[1],
                        ints[2],
                        ints[3],
                        head.settled,
                        head.quiet,
                        generation,
                        blob,
                        bsum,
                        sum
                    ])?;
                }
            }
            tx.commit()?;
            Ok(true)
        };
        match write(conn) {
            Ok(true) => Applied::Recorded,
            Ok(false) => Applied::Raced,
            Err(e) => {
                if sqlite::is_damage(&e) && !self.db.as_os_str().is_empty() {
                    self.conn = None;
                    sqlite::remove(&self.db);
                }
                Applied::Failed
            }
        }
    }

    /// The documents matching the FTS5 expression `expr`, title matches first, then by
    /// relevance (bm25, a title match weighing ten times a body match), then by reference; at
    /// most `limit`. The ranking reads only the index and `docs_of` (reading a stored column
    /// of `docs` reads the document's whole row); the hits' columns and excerpts are read for
    /// the hits alone.
    pub fn query(&self, expr: &str, filter: &Filter, limit: usize) -> Result<Vec<Hit>, String> {
        let Some(conn) = &self.conn else {
            return Err("the search index cannot be opened".to_string());
        };
        let mut sql = String::from(
            "SELECT o.rowid, (docs.rowid IN (SELECT rowid FROM docs WHERE docs MATCH ?2))
             FROM docs JOIN docs_of o ON o.rowid = docs.rowid WHERE docs MATCH ?1",
        );
        let mut args: Vec<String> = vec![expr.to_string(), format!("title : ({expr})")];
        if !filter.kinds.is_empty() {
            let marks: Vec<String> = filter
                .kinds
                .iter()
                .map(|k| {
                    args.push(k.clone());
                    format!("?{}", args.len())
                })
                .collect();
            sql.push_str(&format!(" AND o.kind IN ({})", marks.join(", ")));
        }
        if let Some(p) = &filter.project {
            args.push(p.clone());
            sql.push_str(&format!(" AND o.project = ?{}", args.len()));
        }
        if let Some(s) = &filter.status {
            args.push(s.clone());
            sql.push_str(&format!(" AND o.status = ?{}", args.len()));
        }
        args.push(limit.to_string());
        sql.push_str(&format!(
            " ORDER BY 2 DESC, bm25(docs, 10.0, 1.0), o.ref LIMIT ?{}",
            args.len()
        ));
        let run = || -> rusqlite::Result<Vec<Hit>> {
            let mut st = conn.prepare(&sql)?;
            let ranked: Vec<(i64, bool)> = st
                .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                    Ok((r.get(0)?, r.get::<_, i64>(1)? > 0))
                })?
                .collect::<rusqlite::Result<_>>()?;
            let mut one = conn.prepare(
                "SELECT kind, ref, project, status, title, body, path,
                        snippet(docs, -1, '[', ']', '…', 12)
                 FROM docs WHERE docs MATCH ?1 AND rowid = ?2",
            )?;
            let mut hits = Vec::with_capacity(ranked.len());
            for (rowid, in_title) in ranked {
                hits.push(one.query_row(params![expr, rowid], |r| {
                    Ok(Hit {
                        doc: Doc {
                            kind: r.get(0)?,
                            reference: r.get(1)?,
                            project: r.get(2)?,
                            status: r.get(3)?,
                            title: r.get(4)?,
                            body: r.get(5)?,
                        },
                        path: r.get(6)?,
                        excerpt: r.get(7)?,
                        in_title,
                    })
                })?);
            }
            Ok(hits)
        };
        run().map_err(|e| e.to_string())
    }
}

/// The stamp of the directory a symlink at `path` leads to; `None` when it leads to no
/// directory.
pub fn followed_dir_stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    meta.is_dir().then(|| Stamp::from_meta(&meta))
}

/// The checksum a directory's row carries over its head and its blob's checksum.
fn head_sum(
    dir: &str,
    ints: [i64; 4],
    settled: bool,
    quiet: bool,
    generation: i64,
    bsum: i64,
) -> i64 {
    let mut h = crc32fast::Hasher::new();
    h.update(dir.as_bytes());
    h.update(&[0, u8::from(settled), u8::from(quiet)]);
    for i in ints.into_iter().chain([generation, bsum]) {
        h.update(&i.to_le_bytes());
    }
    i64::from(h.finalize())
}

/// Per file, in order: the name's length (u16) and bytes, the stamp (four i64) and flags
/// (bit 0 settled, bit 1 parsed), little-endian. A file whose name or stamp does not fit is
/// left out (it is then read again on every call).
fn encode(files: &[FileRow]) -> Vec<u8> {
    let mut out = Vec::with_capacity(files.len() * 80);
    for f in files {
        let (Ok(len), Some(ints)) = (u16::try_from(f.name.len()), f.stamp.to_ints()) else {
            continue;
        };
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(f.name.as_bytes());
        for i in ints {
            out.extend_from_slice(&i.to_le_bytes());
        }
        out.push(u8::from(f.settled) | (u8::from(f.parsed) << 1));
    }
    out
}

fn decode(mut blob: &[u8]) -> Option<Vec<FileRow>> {
    let mut out: Vec<FileRow> = Vec::new();
    while !blob.is_empty() {
        let len = usize::from(u16::from_le_bytes(blob.get(..2)?.try_into().ok()?));
        let name = std::str::from_utf8(blob.get(2..2 + len)?).ok()?.to_string();
        let mut at = 2 + len;
        let mut ints = [0i64; 4];
        for i in &mut ints {
            *i = i64::from_le_bytes(blob.get(at..at + 8)?.try_into().ok()?);
            at += 8;
        }
        let flags = *blob.get(at)?;
        blob = &blob[at + 1..];
        // Names in strict order, as they were written: lookups rely on it.
        if out.last().is_some_and(|last| last.name >= name) {
            return None;
        }
        out.push(FileRow {
            name,
            stamp: Stamp::from_ints(ints)?,
            settled: flags & 1 != 0,
            parsed: flags & 2 != 0,
        });
    }
    Some(out)
}

/// Makes the tables when the database has another schema (or none).
fn schema(conn: &Connection) -> rusqlite::Result<()> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version != SCHEMA {
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE;
             DROP TABLE IF EXISTS docs;
             DROP TABLE IF EXISTS docs_of;
             DROP TABLE IF EXISTS files;
             DROP TABLE IF EXISTS dirs;
             DROP TABLE IF EXISTS meta;
             CREATE VIRTUAL TABLE docs USING fts5(title, body, kind UNINDEXED, ref UNINDEXED,
                 project UNINDEXED, status UNINDEXED, path UNINDEXED,
                 tokenize = 'unicode61 remove_diacritics 2');
             CREATE TABLE docs_of(rowid INTEGER PRIMARY KEY, dir TEXT NOT NULL,
                 name TEXT NOT NULL, kind TEXT NOT NULL, ref TEXT NOT NULL,
                 project TEXT NOT NULL, status TEXT NOT NULL);
             CREATE INDEX docs_of_dir ON docs_of(dir);
             CREATE TABLE dirs(dir TEXT PRIMARY KEY, size INTEGER NOT NULL,
                 mtime INTEGER NOT NULL, ctime INTEGER NOT NULL, ino INTEGER NOT NULL,
                 settled INTEGER NOT NULL, quiet INTEGER NOT NULL, gen INTEGER NOT NULL,
                 files BLOB NOT NULL, bsum INTEGER NOT NULL, sum INTEGER NOT NULL);
             CREATE TABLE meta(k INTEGER PRIMARY KEY, gen INTEGER NOT NULL);
             INSERT INTO meta(k, gen) VALUES (0, 0);
             PRAGMA user_version = {SCHEMA};
             COMMIT;"
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, n: i64) -> FileRow {
        FileRow {
            name: name.to_string(),
            stamp: Stamp::from_ints([n, 1_000 + n, 2_000 + n, 3_000 + n]).unwrap(),
            settled: n % 2 == 0,
            parsed: n % 3 != 0,
        }
    }

    fn doc(title: &str) -> Doc {
        Doc {
            kind: "task".into(),
            reference: title.into(),
            project: "p".into(),
            status: "open".into(),
            title: title.into(),
            body: String::new(),
        }
    }

    fn head() -> DirHead {
        DirHead {
            stamp: Stamp::from_ints([0, 1, 2, 3]).unwrap(),
            settled: true,
            quiet: false,
        }
    }

    fn titles(db: &SearchDb, q: &str) -> Vec<String> {
        let mut t: Vec<String> = db
            .query(q, &Filter::default(), 100)
            .unwrap()
            .into_iter()
            .map(|h| h.doc.title)
            .collect();
        t.sort();
        t
    }

    #[test]
    fn rows_read_back_and_a_write_over_a_changed_row_records_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = SearchDb::open(dir.path());
        let files: Vec<FileRow> = (0..300).map(|i| row(&format!("{i:04}.md"), i)).collect();
        let w = DirWrite {
            dir: "d".into(),
            expect: None,
            head: Some(head()),
            files: files.clone(),
            read: vec![
                ("0001.md".into(), vec![doc("alpha one")]),
                ("0002.md".into(), vec![doc("alpha two")]),
            ],
        };
        assert_eq!(db.apply(&[w]), Applied::Recorded);
        assert_eq!(db.files("d"), Some(files.clone()));
        let stored = db.heads()["d"];
        assert_eq!(stored.head, Some(head()));
        assert_eq!(titles(&db, "alpha"), ["alpha one", "alpha two"]);

        // Planned from no row while one exists: raced, nothing recorded.
        let stale = DirWrite {
            dir: "d".into(),
            expect: None,
            head: Some(head()),
            files: Vec::new(),
            read: Vec::new(),
        };
        assert_eq!(db.apply(&[stale]), Applied::Raced);
        assert_eq!(titles(&db, "alpha"), ["alpha one", "alpha two"]);

        // A file dropped from the listing loses its documents; one read again replaces its.
        let w = DirWrite {
            dir: "d".into(),
            expect: Some(stored.generation),
            head: Some(head()),
            files: files
                .iter()
                .filter(|f| f.name != "0002.md")
                .cloned()
                .collect(),
            read: vec![("0001.md".into(), vec![doc("alpha beta")])],
        };
        assert_eq!(db.apply(&[w]), Applied::Recorded);
        assert_eq!(titles(&db, "alpha"), ["alpha beta"]);
        assert_ne!(db.heads()["d"].generation, stored.generation);

        // A damaged blob is no rows.
        let c = Connection::open(dir.path().join("cache/search.sqlite")).unwrap();
        c.execute("UPDATE dirs SET files = zeroblob(length(files))", [])
            .unwrap();
        assert_eq!(db.files("d"), None);
        c.execute("UPDATE dirs SET mtime = mtime + 1", []).unwrap();
        assert_eq!(db.heads()["d"].head, None);
    }
}
