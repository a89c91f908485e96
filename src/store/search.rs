//! The storage of the search index: one SQLite database with an FTS5 table,
//! `cache/search.sqlite`, derived from the workspace's files like `cache/index.sqlite`.
//!
//! It decides nothing: the caller (`ops::search`) proves each file's row fresh by its
//! [`Stamp`] and tells it what to replace. What it guarantees:
//! - a file's documents and its stamp are replaced in one transaction, so a reader never sees
//!   a file's new documents under its old stamp or the reverse;
//! - any failure to open, read or write it makes it an empty index for the call (the caller
//!   then answers from the files alone), and a damaged file is removed and made again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, params};

use super::Stamp;

/// The schema's version; a database of another version is dropped and rebuilt.
const SCHEMA: i64 = 1;

const BUSY: Duration = Duration::from_millis(200);

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

/// One file's row: its stamp when read and whether that stamp was settled.
#[derive(Debug, Clone, Copy)]
pub struct FileRow {
    pub stamp: Stamp,
    pub settled: bool,
}

/// A file read again: its path, stamp, settledness and documents.
#[derive(Debug)]
pub struct Upsert {
    pub path: String,
    pub row: FileRow,
    pub docs: Vec<Doc>,
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
        let conn = open(&db).ok().or_else(|| {
            remove(&db);
            open(&db).ok()
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

    /// Every file's row, by path.
    pub fn rows(&self) -> HashMap<String, FileRow> {
        let Some(conn) = &self.conn else {
            return HashMap::new();
        };
        let read = || -> rusqlite::Result<HashMap<String, FileRow>> {
            let mut st =
                conn.prepare("SELECT path, size, mtime, ctime, ino, settled FROM files")?;
            let rows = st.query_map([], |r| {
                let ints = [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?];
                Ok((r.get::<_, String>(0)?, ints, r.get::<_, bool>(5)?))
            })?;
            let mut out = HashMap::new();
            for row in rows {
                let (path, ints, settled) = row?;
                if let Some(stamp) = Stamp::from_ints(ints) {
                    out.insert(path, FileRow { stamp, settled });
                }
            }
            Ok(out)
        };
        read().unwrap_or_default()
    }

    /// Replaces the documents of the files `upserts` and drops those of `removed`, in one
    /// transaction. `false` when nothing was recorded (busy or damaged): the caller answers
    /// from what it read.
    pub fn replace(&mut self, upserts: &[Upsert], removed: &[String]) -> bool {
        if upserts.is_empty() && removed.is_empty() {
            return true;
        }
        let Some(conn) = &mut self.conn else {
            return false;
        };
        let write = |conn: &mut Connection| -> rusqlite::Result<()> {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            {
                let mut old = tx.prepare("SELECT rowid FROM docs_of WHERE path = ?1")?;
                let mut del_doc = tx.prepare("DELETE FROM docs WHERE rowid = ?1")?;
                let mut del_of = tx.prepare("DELETE FROM docs_of WHERE path = ?1")?;
                let mut del_file = tx.prepare("DELETE FROM files WHERE path = ?1")?;
                let mut drop_path = |path: &str| -> rusqlite::Result<()> {
                    let ids: Vec<i64> = old
                        .query_map([path], |r| r.get(0))?
                        .collect::<rusqlite::Result<_>>()?;
                    for id in ids {
                        del_doc.execute([id])?;
                    }
                    del_of.execute([path])?;
                    del_file.execute([path])?;
                    Ok(())
                };
                for path in removed {
                    drop_path(path)?;
                }
                for u in upserts {
                    drop_path(&u.path)?;
                }
                let mut ins_doc = tx.prepare(
                    "INSERT INTO docs(title, body, kind, ref, project, status, path)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )?;
                let mut ins_of = tx.prepare("INSERT INTO docs_of(rowid, path) VALUES (?1, ?2)")?;
                let mut ins_file = tx.prepare(
                    "INSERT INTO files(path, size, mtime, ctime, ino, settled)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?;
                for u in upserts {
                    let Some([size, mtime, ctime, ino]) = u.row.stamp.to_ints() else {
                        continue;
                    };
                    for d in &u.docs {
                        ins_doc.execute(params![
                            d.title,
                            d.body,
                            d.kind,
                            d.reference,
                            d.project,
                            d.status,
                            u.path
                        ])?;
                        ins_of.execute(params![tx.last_insert_rowid(), u.path])?;
                    }
                    ins_file.execute(params![u.path, size, mtime, ctime, ino, u.row.settled])?;
                }
            }
            tx.commit()
        };
        match write(conn) {
            Ok(()) => true,
            Err(e) => {
                if is_damage(&e) && !self.db.as_os_str().is_empty() {
                    self.conn = None;
                    remove(&self.db);
                }
                false
            }
        }
    }

    /// The documents matching the FTS5 expression `expr`, title matches first, then by
    /// relevance (bm25, a title match weighing ten times a body match); at most `limit`.
    pub fn query(&self, expr: &str, filter: &Filter, limit: usize) -> Result<Vec<Hit>, String> {
        let Some(conn) = &self.conn else {
            return Err("the search index cannot be opened".to_string());
        };
        let mut sql = String::from(
            "SELECT kind, ref, project, status, title, body, path,
                    snippet(docs, -1, '[', ']', '…', 12),
                    (docs.rowid IN (SELECT rowid FROM docs WHERE docs MATCH ?2))
             FROM docs WHERE docs MATCH ?1",
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
            sql.push_str(&format!(" AND kind IN ({})", marks.join(", ")));
        }
        if let Some(p) = &filter.project {
            args.push(p.clone());
            sql.push_str(&format!(" AND project = ?{}", args.len()));
        }
        if let Some(s) = &filter.status {
            args.push(s.clone());
            sql.push_str(&format!(" AND status = ?{}", args.len()));
        }
        args.push(limit.to_string());
        sql.push_str(&format!(
            " ORDER BY 9 DESC, bm25(docs, 10.0, 1.0), ref LIMIT ?{}",
            args.len()
        ));
        let run = || -> rusqlite::Result<Vec<Hit>> {
            let mut st = conn.prepare(&sql)?;
            let rows = st.query_map(rusqlite::params_from_iter(args.iter()), |r| {
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
                    in_title: r.get::<_, i64>(8)? > 0,
                })
            })?;
            rows.collect()
        };
        run().map_err(|e| e.to_string())
    }
}

fn remove(db: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = db.to_path_buf().into_os_string();
        p.push(suffix);
        #[allow(
            clippy::disallowed_methods,
            reason = "store owns file removal; derived data"
        )]
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
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
    // Derived: a crash may lose the last transactions, never tear one.
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF;")?;
    schema(&conn)?;
    Ok(conn)
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
             CREATE VIRTUAL TABLE docs USING fts5(title, body, kind UNINDEXED, ref UNINDEXED,
                 project UNINDEXED, status UNINDEXED, path UNINDEXED,
                 tokenize = 'unicode61 remove_diacritics 2');
             CREATE TABLE docs_of(rowid INTEGER PRIMARY KEY, path TEXT NOT NULL);
             CREATE INDEX docs_of_path ON docs_of(path);
             CREATE TABLE files(path TEXT PRIMARY KEY, size INTEGER NOT NULL,
                 mtime INTEGER NOT NULL, ctime INTEGER NOT NULL, ino INTEGER NOT NULL,
                 settled INTEGER NOT NULL) WITHOUT ROWID;
             PRAGMA user_version = {SCHEMA};
             COMMIT;"
        ))?;
    }
    Ok(())
}
