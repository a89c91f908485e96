//! The workspace's own housekeeping: creating it (`init`), scanning and repairing it
//! (`doctor`), and the MCP client files `mcp install` merges an entry into.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Error;
use crate::objects::{gitignore, projects, read_document, tasks};
use crate::store::{self, DirEntryKind, Document, Fs, Problem, Reason, TEMP_PREFIX, TomlRecord};
use crate::workspace::{Workspace, find_work_tree};
use crate::{journal, objects};

/// Temp files older than this are leftovers of a crashed writer (FORMAT §4.2).
const STALE_AFTER_S: i64 = 600;

/// The root of the git work tree `start` is in (`start` made canonical first), if any.
pub fn work_tree_root(start: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(start)
        .ok()
        .and_then(|s| find_work_tree(&s))
}

/// Whether anything (a file, a folder, a dangling link) is at `path`.
pub fn occupied(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// `path` made canonical, or `path` itself when it cannot be.
pub fn canonical_or_same(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Creates the workspace folder `target` (in `root`, through `fs`) holding `files` (a path
/// relative to `target`, and its text) at once: staged beside it, then published with one
/// rename, so a failure leaves no half-made workspace.
pub fn init(fs: &Fs, root: &Path, target: &Path, files: &[(String, String)]) -> Result<(), Error> {
    let staging = fs.temp_name(root);
    let written = (|| {
        for (rel, text) in files {
            fs.create_new(&staging.join(rel), text.as_bytes())?;
        }
        fs.publish_dir(&staging, target)
    })();
    if let Err(e) = written {
        fs.discard_dir(&staging);
        return Err(e.into());
    }
    Ok(())
}

/// The text of the file at `path`; empty when there is none.
pub fn read_text_or_empty(path: &Path) -> std::io::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e),
    }
}

/// Replaces a client's configuration file `path` (inside `fs`'s root) with `text`; a file
/// that holds a token is created readable by its owner only.
pub fn write_client_file(fs: &Fs, path: &Path, text: &str, holds_token: bool) -> Result<(), Error> {
    Ok(objects::client_files::replace(fs, path, text, holds_token)?)
}

/// One finding of `doctor`.
#[derive(Debug, Serialize)]
pub struct Item {
    pub path: String,
    pub reason: String,
    pub detail: String,
}

impl From<Problem> for Item {
    fn from(p: Problem) -> Item {
        Item {
            path: p.path,
            reason: p.reason.as_str().to_string(),
            detail: p.detail,
        }
    }
}

/// What a scan of the workspace's files found.
pub struct Scan {
    pub malformed: Vec<Item>,
    pub noncanonical: Vec<Item>,
    /// Leftover temp files, with their paths (for `--fix`).
    pub stale: Vec<(Item, PathBuf)>,
    pub orphan_locks: Vec<Item>,
    pub held_locks: Vec<Item>,
    pub duplicates: Vec<Item>,
    pub unknown_folders: Vec<Item>,
}

/// What a walk of the workspace directory found.
#[derive(Default)]
struct Walk {
    problems: BTreeMap<(String, Reason), Problem>,
    noncanonical: Vec<Item>,
    stale: Vec<(Item, PathBuf)>,
    ids: BTreeMap<String, Vec<String>>,
    locks: Vec<(String, PathBuf)>,
}

impl Walk {
    fn problem(&mut self, p: Problem) {
        self.problems.entry((p.path.clone(), p.reason)).or_insert(p);
    }
}

/// Scans the workspace: every object file's envelope and canonical form, the typed readers'
/// findings (schema, ids, kinds, checksums, folders), duplicate ids, temp files older than
/// ten minutes at `now`, and lock files (orphaned, or held right now).
pub fn scan(ws: &Workspace, now: jiff::Timestamp) -> Result<Scan, Error> {
    let mut walk = Walk::default();
    walk_dir(ws, now, ws.dir(), 0, &mut walk)?;
    for (name, path) in ws.fs.list_dir(&ws.path(&[".locks"]))? {
        if let Some(stem) = name.strip_suffix(".lock") {
            walk.locks.push((stem.to_string(), path));
        }
    }
    // Typed readers catch what the envelope cannot: schema, ids, kinds, checksums, folders.
    let p = projects::list(ws)?;
    let mut project_slugs = BTreeSet::new();
    let mut task_ids = BTreeSet::new();
    p.warnings.into_iter().for_each(|w| walk.problem(w));
    for project in &p.items {
        project_slugs.insert(project.slug.clone());
        let t = tasks::list(ws, &project.slug)?;
        for located in &t.items {
            task_ids.insert(located.task.id.trim_start_matches("t-").to_string());
        }
        t.warnings.into_iter().for_each(|w| walk.problem(w));
    }
    journal::read(ws)?
        .warnings
        .into_iter()
        .for_each(|w| walk.problem(w));
    for (name, path) in ws.fs.list_dir(&ws.path(&["agents"]))? {
        if let Some(stem) = name.strip_suffix(".md")
            && let Ok(doc) = read_document(ws, &path)
            && let Err(e) = crate::model::agent::Agent::from_front(&doc.front, stem)
        {
            walk.problem(objects::field_problem(ws, &path, e));
        }
    }
    for (id, paths) in std::mem::take(&mut walk.ids) {
        if paths.len() > 1 {
            for path in &paths {
                walk.problem(Problem {
                    path: path.clone(),
                    reason: Reason::DuplicateId,
                    detail: format!("{id} appears in {} files", paths.len()),
                });
            }
        }
    }

    let mut malformed = Vec::new();
    let mut duplicates = Vec::new();
    let mut unknown_folders = Vec::new();
    for (_, p) in std::mem::take(&mut walk.problems) {
        match p.reason {
            Reason::DuplicateId => duplicates.push(p.into()),
            Reason::UnknownFolder => unknown_folders.push(p.into()),
            _ => malformed.push(p.into()),
        }
    }

    let mut orphan_locks = Vec::new();
    let mut held_locks = Vec::new();
    for (stem, path) in &walk.locks {
        if !lock_target_exists(ws, stem, &project_slugs, &task_ids) {
            orphan_locks.push(Item {
                path: ws.display(path),
                reason: "orphan_lock".into(),
                detail:
                    "names an object that no longer exists (kept: lock files are never deleted)"
                        .into(),
            });
        }
        if ws.fs.is_locked(path)? {
            held_locks.push(Item {
                path: ws.display(path),
                reason: "held_lock".into(),
                detail: "held by a running dacli process".into(),
            });
        }
    }
    Ok(Scan {
        malformed,
        noncanonical: walk.noncanonical,
        stale: walk.stale,
        orphan_locks,
        held_locks,
        duplicates,
        unknown_folders,
    })
}

/// `doctor --fix`: deletes the stale temp files at `stale`, and adds the lines of `wanted`
/// missing from `.dacli/.gitignore` when `gitignore` says some are. Returns how many files
/// and lines it fixed.
pub fn fix(
    ws: &Workspace,
    stale: &[PathBuf],
    gitignore: bool,
    wanted: &str,
) -> Result<usize, Error> {
    let mut fixed = 0;
    for path in stale {
        ws.fs.remove(path)?;
        fixed += 1;
    }
    if gitignore {
        fixed += gitignore::add_missing(ws, wanted)?;
    }
    Ok(fixed)
}

/// Walks the workspace directory (runtime and derived directories excluded, but for the
/// temp files `cache/` holds: a new task's file is staged there), checking every object
/// file's envelope and canonical form, collecting ids and stale temp files.
fn walk_dir(
    ws: &Workspace,
    now: jiff::Timestamp,
    dir: &Path,
    depth: usize,
    w: &mut Walk,
) -> Result<(), Error> {
    let in_cache = depth == 1 && dir.file_name().is_some_and(|n| n == "cache");
    for (name, path) in ws.fs.list_dir(dir)? {
        if depth == 0 && matches!(name.as_str(), "runs" | ".locks") {
            continue;
        }
        if depth == 0 && name == "cache" {
            if ws.fs.entry_kind(&path)? == DirEntryKind::Dir {
                walk_dir(ws, now, &path, 1, w)?;
            }
            continue;
        }
        if in_cache && !name.starts_with(TEMP_PREFIX) {
            continue;
        }
        let shown = ws.display(&path);
        if name.starts_with(TEMP_PREFIX) {
            let age = std::fs::symlink_metadata(&path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| jiff::Timestamp::try_from(t).ok())
                .map_or(0, |t| now.as_second() - t.as_second());
            if age > STALE_AFTER_S {
                w.stale.push((
                    Item {
                        path: shown,
                        reason: "stale_temp".into(),
                        detail: format!("{} min old", age / 60),
                    },
                    path,
                ));
            }
            continue;
        }
        match ws.fs.entry_kind(&path)? {
            DirEntryKind::Dir => {
                if !name.starts_with('.') {
                    walk_dir(ws, now, &path, depth + 1, w)?;
                }
                continue;
            }
            DirEntryKind::SymlinkEscape => {
                w.problem(Problem {
                    path: shown,
                    reason: Reason::SymlinkEscape,
                    detail: "symlink resolves outside .dacli/; not followed".into(),
                });
                continue;
            }
            DirEntryKind::Special => {
                w.problem(Problem {
                    path: shown,
                    reason: Reason::NotRegular,
                    detail: "not a regular file; not opened".into(),
                });
                continue;
            }
            DirEntryKind::File | DirEntryKind::SymlinkInside => {}
        }
        let is_md = name.ends_with(".md");
        if name.starts_with('.') || !(is_md || name.ends_with(".toml")) {
            continue;
        }
        let bytes = match ws.fs.read(&path) {
            Ok(b) => b,
            Err(store::Error::Malformed(p)) => {
                w.problem(p);
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let front = if is_md {
            Document::parse(&shown, &bytes).map(|d| d.front)
        } else {
            TomlRecord::parse(&shown, &bytes).map(|r| r.doc)
        };
        let front = match front {
            Ok(f) => f,
            Err(p) => {
                w.problem(p);
                continue;
            }
        };
        let reasons = store::noncanonical_reasons(&bytes);
        if !reasons.is_empty() {
            w.noncanonical.push(Item {
                path: shown.clone(),
                reason: "noncanonical".into(),
                detail: reasons.join(", "),
            });
        }
        if let Some(id) = front.get("id").and_then(|i| i.as_str()) {
            w.ids.entry(id.to_string()).or_default().push(shown);
        }
    }
    Ok(())
}

/// Whether the object a lock file is named after still exists (FORMAT §4.3 lock names).
fn lock_target_exists(
    ws: &Workspace,
    stem: &str,
    projects: &BTreeSet<String>,
    task_ids: &BTreeSet<String>,
) -> bool {
    // The clone's writing lock and its gate (`ops::machines`), which guard the whole clone.
    if stem == "writing-gate" {
        return true;
    }
    let Some((kind, key)) = stem.split_once('-') else {
        return matches!(stem, "config" | "archive" | "writing");
    };
    // Every lock kind dacli takes (`Workspace::lock_path` callers), each with what it guards.
    match kind {
        // A project's record, sequence, glossary and status moves (`tasks::moves_lock`).
        "project" | "seq" | "glossary" | "moves" => projects.contains(key),
        "task" => task_ids.contains(key),
        // An agent's record, and its MCP session (`Ctx::hold_agent_session`).
        "agent" | "mcp" => ws.path(&["agents", &format!("{key}.md")]).exists(),
        "runtime" => ws.path(&["runtimes", &format!("{key}.md")]).exists(),
        "role" => ws.path(&["roles", &format!("{key}.md")]).exists(),
        "shortcut" => ws.path(&["shortcuts", &format!("{key}.md")]).exists(),
        "queue" => ws.path(&["queues", &format!("{key}.md")]).exists(),
        "train" => ws.path(&["trains", &format!("tr-{key}.toml")]).exists(),
        "txn" => ws.path(&["txn", key]).exists(),
        // Risks live in project folders; a full scan is lint's job, so keep them.
        "risk" => true,
        _ => false,
    }
}
