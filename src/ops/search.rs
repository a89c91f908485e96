//! Search: titles, bodies, criteria, notes, risks, glossary terms, questions and answers, and
//! event text, through SQLite's FTS5 (`store::search`, `cache/search.sqlite`).
//!
//! The index never lies. Each call proves every searchable file's row fresh the way the engine
//! does (docs/DESIGN.md, "The engine"): a row is used only while the file's stamp equals the
//! one it was written with and that stamp was settled against the file system's clock
//! (`Index::clock_ns`, read before any stamp is taken); every other file is read, parsed with
//! the model functions every reader uses, and its row replaced; rows of files that are gone are
//! dropped. When the database cannot record that (busy, damaged, read-only), the call indexes
//! the files in memory instead, so deleting `cache/` changes no answer.

use std::collections::HashSet;

use crate::model::body::section_range;
use crate::model::task::TaskRef;
use crate::store::TEMP_PREFIX;
use crate::store::search::{Doc, FileRow, Filter, Hit, SearchDb, Upsert};
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
    if !(db.is_open() && refresh(ws, &mut db)?) {
        db = SearchDb::memory();
        if !refresh(ws, &mut db)? {
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

/// Brings every row up to date; `false` when the database did not record it.
fn refresh(ws: &Workspace, db: &mut SearchDb) -> Result<bool, Error> {
    // The clock first: a stamp taken after this reading and older than it is settled.
    let clock = ws.index.clock_ns();
    let rows = db.rows();
    let mut seen: HashSet<String> = HashSet::new();
    let mut upserts = Vec::new();
    for (dir, rel, source) in dirs(ws)? {
        let mut names: Vec<String> = ws
            .fs
            .names(&dir)?
            .into_iter()
            .filter(|n| n.ends_with(".md") && !n.starts_with('.') && !n.starts_with(TEMP_PREFIX))
            .filter(|n| !matches!(source, Source::Glossary(_)) || n == "glossary.md")
            .collect();
        names.sort();
        let stamps = stamp::of_all(&dir, &names, threads(names.len()));
        for (name, st) in names.iter().zip(stamps) {
            let Some(st) = st else { continue };
            let path = format!("{rel}/{name}");
            seen.insert(path.clone());
            if rows
                .get(&path)
                .is_some_and(|row| row.settled && row.stamp == st)
            {
                continue;
            }
            let shown = ws.display(&dir.join(name));
            let docs = match ws.fs.read(&dir.join(name)) {
                Ok(bytes) => extract(&source, &shown, &bytes),
                Err(_) => Vec::new(),
            };
            upserts.push(Upsert {
                path,
                row: FileRow {
                    stamp: st,
                    settled: clock.is_some_and(|c| st.settled_before(c)),
                },
                docs,
            });
        }
    }
    let removed: Vec<String> = rows.into_keys().filter(|p| !seen.contains(p)).collect();
    Ok(db.replace(&upserts, &removed))
}

fn threads(n: usize) -> usize {
    if n < 256 { 1 } else { 4 }
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

/// The documents of one file; none for a file that does not parse (lint reports it).
fn extract(source: &Source, shown: &str, bytes: &[u8]) -> Vec<Doc> {
    match source {
        Source::Task { project, folder } => parse_task(shown, project, folder, bytes)
            .map(|t| {
                vec![Doc {
                    kind: "task".into(),
                    reference: TaskRef::of(project, &t.head).reference,
                    project: project.clone(),
                    status: folder.clone(),
                    title: t.head.title.clone(),
                    body: without_log(&t.doc.body),
                }]
            })
            .unwrap_or_default(),
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
            .unwrap_or_default(),
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
            .unwrap_or_default(),
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
            .unwrap_or_default(),
        Source::Event => parse_event(shown, bytes)
            .ok()
            .filter(|e| e.kind != "applied")
            .map(|e| {
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
            })
            .unwrap_or_default(),
    }
}
