//! Search: titles, bodies, criteria, notes, risks, glossary terms, questions and answers, and
//! event text, through SQLite's FTS5 (`store::search`, `cache/search.sqlite`).
//!
//! The index never lies. Each call proves every searchable directory's rows fresh with the
//! engine's rules (docs/DESIGN.md, "Search"): a directory whose own stamp equals its row's
//! settled stamp keeps its indexed names; in it, a task, note, risk or glossary file is served
//! from its row only while its stamp equals the settled one the row was written with, and an
//! event that was settled and parsed needs no look at all (events are never edited). Every
//! other file is read, parsed with the model functions every reader uses, and its row
//! replaced; rows of files and directories that are gone are dropped. When the database
//! cannot record that (busy, damaged, read-only), the call indexes the files in memory
//! instead, so deleting `cache/` changes no answer.

use std::collections::HashSet;

use crate::model::body::section_range;
use crate::model::task::TaskRef;
use crate::store::Stamp;
use crate::store::TEMP_PREFIX;
use crate::store::search::{self, Applied, DirHead, DirWrite, Doc, FileRow, Filter, Hit, SearchDb};
use crate::store::stamp;
use crate::workspace::{STATUS_FOLDERS, Workspace};

use super::Error;
use super::review::{parse_event, parse_glossary, parse_note, parse_risk, parse_task};

/// The note directories (FORMAT §15).
const NOTE_DIRS: [&str; 4] = ["decisions", "findings", "metrics", "refs"];

/// What a searchable file holds, by where it is.
#[derive(Clone)]
enum Source {
    Task {
        project: String,
        folder: String,
    },
    Note {
        project: Option<String>,
        dir: String,
    },
    Risk(String),
    Glossary(String),
    Event,
}

/// One search.
#[derive(Debug, Clone)]
pub struct Query {
    pub text: String,
    pub filter: Filter,
    pub limit: usize,
}

/// Turns what a user typed into an FTS5 expression: every word is a term all hits contain,
/// `"…"` is a phrase, a trailing `*` makes a prefix, and a word joined by punctuation
/// (`half-even`) is a phrase of its parts. Nothing else of FTS5's syntax is taken from the
/// input, so no input is a syntax error. `None` when the input holds no word.
pub fn fts_expr(input: &str) -> Option<String> {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut terms = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let (chunk, after, quoted) = if let Some(r) = rest.strip_prefix('"') {
            match r.find('"') {
                Some(end) => (&r[..end], &r[end + 1..], true),
                None => (r, "", true),
            }
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            (&rest[..end], &rest[end..], false)
        };
        let (after, prefix) = match after.strip_prefix('*') {
            Some(a) if quoted => (a, true),
            _ => (after, !quoted && chunk.ends_with('*')),
        };
        let parts = words(chunk);
        if !parts.is_empty() {
            let mut t = format!("\"{}\"", parts.join(" "));
            if prefix {
                t.push('*');
            }
            terms.push(t);
        }
        rest = after;
    }
    (!terms.is_empty()).then(|| terms.join(" "))
}

/// Runs a search over the workspace's files; `limit + 1` hits are fetched so the caller can
/// tell that more exist.
pub fn search(ws: &Workspace, q: &Query) -> Result<Vec<Hit>, Error> {
    let Some(expr) = fts_expr(&q.text) else {
        return Ok(Vec::new());
    };
    let mut db = SearchDb::open(ws.dir());
    let mut recorded = false;
    // A refresh that raced another process's is planned again over what that one recorded.
    for _ in 0..RACES {
        if !db.is_open() {
            break;
        }
        match db.apply(&plan(ws, &db)?) {
            Applied::Recorded => {
                recorded = true;
                break;
            }
            Applied::Raced => continue,
            Applied::Failed => break,
        }
    }
    if !recorded {
        db = SearchDb::memory();
        if db.apply(&plan(ws, &db)?) != Applied::Recorded {
            return Err(Error::rejected(
                super::error::Kind::Operational,
                "E_IO",
                "the search index cannot be built, not even in memory",
            ));
        }
    }
    db.query(&expr, &q.filter, q.limit + 1).map_err(|e| {
        Error::rejected(
            super::error::Kind::Operational,
            "E_IO",
            format!("search failed: {e}"),
        )
    })
}

/// How many times a refresh is planned again after racing another process's.
const RACES: usize = 5;

/// What brings every directory's rows up to date (docs/DESIGN.md, "Search"): a directory
/// whose own stamp is unchanged and settled holds the names its row lists; an event directory
/// proven so, whose files' rows were all settled and parsed, needs nothing more (events are
/// never edited); in any other directory every file is stamped, and a file whose stamp is not
/// its row's settled stamp is read again.
fn plan(ws: &Workspace, db: &SearchDb) -> Result<Vec<DirWrite>, Error> {
    // The clock first: a stamp taken after this reading and older than it is settled.
    let clock = ws.index.clock_ns();
    let settled = |s: Stamp| clock.is_some_and(|c| s.settled_before(c));
    db.begin_read();
    let stored = db.heads();
    let mut seen: HashSet<String> = HashSet::new();
    let mut writes = Vec::new();
    for (dir, rel, source) in dirs(ws)? {
        seen.insert(rel.clone());
        let old = stored.get(&rel).copied();
        let expect = old.map(|o| o.generation);
        // A symlink to a directory (inside the workspace; reads refuse the others) is read
        // through, as every reader does, but never proven: its own stamp says nothing of the
        // directory it leads to.
        let real = Stamp::of_dir(&dir);
        let Some(now) = real.or_else(|| search::followed_dir_stamp(&dir)) else {
            // Absent, or no directory: nothing of it is indexed.
            if old.is_some() {
                writes.push(DirWrite {
                    dir: rel,
                    expect,
                    head: None,
                    files: Vec::new(),
                    read: Vec::new(),
                });
            }
            continue;
        };
        let head = old.and_then(|o| o.head);
        let proven = real.is_some() && head.is_some_and(|h| h.settled && h.stamp == now);
        let append_only = matches!(source, Source::Event);
        if proven && append_only && head.is_some_and(|h| h.quiet) {
            continue;
        }
        let old_files = match old {
            Some(_) => db.files(&rel),
            None => Some(Vec::new()),
        };
        let proven = proven && old_files.is_some();
        let old_files = old_files.unwrap_or_default();
        let names: Vec<String> = if proven {
            old_files.iter().map(|f| f.name.clone()).collect()
        } else {
            let mut names: Vec<String> = ws
                .fs
                .names(&dir)?
                .into_iter()
                .filter(|n| {
                    n.ends_with(".md") && !n.starts_with('.') && !n.starts_with(TEMP_PREFIX)
                })
                .filter(|n| !matches!(source, Source::Glossary(_)) || n == "glossary.md")
                .collect();
            names.sort();
            names
        };
        let row_of = |name: &str| {
            old_files
                .binary_search_by(|f| f.name.as_str().cmp(name))
                .ok()
                .and_then(|i| old_files.get(i))
        };
        // An event's file never changes once written: in a proven directory only the files
        // not yet settled and parsed are looked at.
        let firm = |f: &FileRow| proven && append_only && f.settled && f.parsed;
        let look: Vec<String> = names
            .iter()
            .filter(|n| !row_of(n).is_some_and(firm))
            .cloned()
            .collect();
        let open = crate::store::OpenDir::new(&dir);
        let mut stamps = stamp::of_all(&open, &look, threads(look.len())).into_iter();
        let mut changed = !proven;
        let mut files = Vec::with_capacity(names.len());
        let mut read = Vec::new();
        for name in names {
            let row = row_of(&name);
            if let Some(row) = row.filter(|r| firm(r)) {
                files.push(row.clone());
                continue;
            }
            let Some(st) = stamps.next().flatten() else {
                // Gone, or no regular file: no row, and the directory is listed next time.
                changed = true;
                continue;
            };
            if let Some(row) = row.filter(|r| r.settled && r.stamp == st) {
                files.push(row.clone());
                continue;
            }
            changed = true;
            let shown = ws.display(&dir.join(&name));
            let docs = match ws.fs.read(&dir.join(&name)) {
                Ok(bytes) => extract(&source, &shown, &bytes),
                Err(_) => None,
            };
            files.push(FileRow {
                name: name.clone(),
                stamp: st,
                settled: settled(st),
                parsed: docs.is_some(),
            });
            read.push((name, docs.unwrap_or_default()));
        }
        let new_head = DirHead {
            stamp: now,
            // A file that vanished from a proven directory: list it again next time.
            settled: real.is_some() && settled(now) && !(proven && changed),
            quiet: files.iter().all(|f| f.settled && f.parsed),
        };
        if changed || head != Some(new_head) {
            writes.push(DirWrite {
                dir: rel,
                expect,
                head: Some(new_head),
                files,
                read,
            });
        }
    }
    for (dir, old) in stored {
        if !seen.contains(&dir) {
            writes.push(DirWrite {
                dir,
                expect: Some(old.generation),
                head: None,
                files: Vec::new(),
                read: Vec::new(),
            });
        }
    }
    Ok(writes)
}

fn threads(n: usize) -> usize {
    if n < 512 { 1 } else { 2 }
}

/// Every searchable directory: its path, its path relative to the workspace directory, and
/// what its files hold.
fn dirs(ws: &Workspace) -> Result<Vec<(std::path::PathBuf, String, Source)>, Error> {
    let mut out = Vec::new();
    for (slug, pdir) in ws.fs.list_dirs(&ws.path(&["projects"]))? {
        for folder in STATUS_FOLDERS {
            out.push((
                pdir.join("tasks").join(folder),
                format!("projects/{slug}/tasks/{folder}"),
                Source::Task {
                    project: slug.clone(),
                    folder: folder.to_string(),
                },
            ));
        }
        for d in NOTE_DIRS {
            out.push((
                pdir.join("notes").join(d),
                format!("projects/{slug}/notes/{d}"),
                Source::Note {
                    project: Some(slug.clone()),
                    dir: d.to_string(),
                },
            ));
        }
        out.push((
            pdir.join("risks"),
            format!("projects/{slug}/risks"),
            Source::Risk(slug.clone()),
        ));
        out.push((
            pdir.clone(),
            format!("projects/{slug}"),
            Source::Glossary(slug.clone()),
        ));
    }
    for d in NOTE_DIRS {
        out.push((
            ws.path(&["notes", d]),
            format!("notes/{d}"),
            Source::Note {
                project: None,
                dir: d.to_string(),
            },
        ));
    }
    let events = ws.path(&["events"]);
    for (y, ydir) in ws.fs.list_dirs(&events)? {
        for (m, mdir) in ws.fs.list_dirs(&ydir)? {
            for (d, ddir) in ws.fs.list_dirs(&mdir)? {
                out.push((ddir, format!("events/{y}/{m}/{d}"), Source::Event));
            }
        }
    }
    Ok(out)
}

/// The body without its title line (the title is its own column) and, for a task, its
/// `## Log` section (the Log repeats what events and fields say).
fn without_log(body: &str) -> String {
    let body = drop_title(body);
    let body = body.as_str();
    match section_range(body, "Log") {
        Some(r) => {
            let start = body[..r.start]
                .trim_end_matches('\n')
                .rfind('\n')
                .map_or(0, |i| i + 1);
            format!("{}{}", &body[..start], &body[r.end..])
        }
        None => body.to_string(),
    }
}

fn drop_title(body: &str) -> String {
    let mut seen = false;
    body.lines()
        .filter(|l| {
            if !seen && l.starts_with("# ") {
                seen = true;
                return false;
            }
            true
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The documents of one file; `None` for a file that does not parse (lint reports it).
fn extract(source: &Source, shown: &str, bytes: &[u8]) -> Option<Vec<Doc>> {
    match source {
        Source::Task { project, folder } => parse_task(shown, project, folder, bytes)
            .map(|t| {
                vec![Doc {
                    kind: "task".into(),
                    reference: TaskRef::of(project, &t.head).reference,
                    project: project.clone(),
                    status: folder.clone(),
                    title: t.head.title.clone(),
                    body: without_log(&t.body),
                }]
            })
            .ok(),
        Source::Note { project, dir } => parse_note(shown, project.as_deref(), dir, bytes)
            .map(|n| {
                vec![Doc {
                    kind: "note".into(),
                    reference: n.head.id.clone(),
                    project: project.clone().unwrap_or_default(),
                    status: n.head.kind.clone(),
                    title: n.head.title.clone(),
                    body: drop_title(&n.body),
                }]
            })
            .ok(),
        Source::Risk(project) => parse_risk(shown, bytes)
            .map(|(r, body)| {
                vec![Doc {
                    kind: "risk".into(),
                    reference: r.id.clone(),
                    project: project.clone(),
                    status: r.status.clone(),
                    title: r.title.clone(),
                    body: drop_title(&body),
                }]
            })
            .ok(),
        Source::Glossary(project) => parse_glossary(shown, project, bytes)
            .map(|entries| {
                entries
                    .into_iter()
                    .map(|e| Doc {
                        kind: "glossary".into(),
                        reference: format!("{project}/glossary#{}", e.term),
                        project: project.clone(),
                        status: String::new(),
                        title: e.term,
                        body: e.definition,
                    })
                    .collect()
            })
            .ok(),
        Source::Event => parse_event(shown, bytes).ok().map(|e| {
            if e.kind == "applied" {
                return Vec::new();
            }
            let question = e.kind == "help" || e.kind == "answer";
            let title = e
                .field_str("title")
                .or(e.field_str("reason"))
                .map(str::to_string)
                .unwrap_or_else(|| e.summary());
            vec![Doc {
                kind: if question { "question" } else { "event" }.into(),
                reference: e.id.clone(),
                project: String::new(),
                status: e.kind.clone(),
                title,
                body: e.body.clone(),
            }]
        }),
    }
}
