//! `dacli doctor`: workspace health, one entry per check (COMMANDS.md §3).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, ErrorKind, IdentitySource, Outcome};
use crate::journal;
use crate::objects::{projects, read_document, tasks};
use crate::store::{self, DirEntryKind, Document, Problem, Reason, TEMP_PREFIX, TomlRecord};
use crate::workspace::{SUPPORTED_FORMAT, Workspace};

use super::init::GITIGNORE;

/// Temp files older than this are leftovers of a crashed writer (FORMAT §4.2).
const STALE_AFTER_S: i64 = 600;

/// Check the workspace's health: malformed, non-canonical and duplicate files, leftover
/// temp files, locks, the .gitignore, git tracking, your identity and the GitHub token.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Delete stale temp files and add the missing lines to `.dacli/.gitignore` (and
    /// nothing else); needs rw.
    #[arg(long)]
    #[serde(default)]
    fix: bool,
    /// Exit 1 (E_LINT) when any check is an error.
    #[arg(long)]
    #[serde(default)]
    check: bool,
}

impl Classify for Request {
    fn class(&self, declared: Class) -> Class {
        if self.fix { Class::Mutate } else { declared }
    }

    fn display_path(&self, path: &str) -> String {
        if self.fix {
            format!("{path} --fix")
        } else {
            path.to_string()
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Response {
    format: FormatInfo,
    checks: Vec<Check>,
    fixed: usize,
}

#[derive(Debug, Serialize)]
struct FormatInfo {
    workspace: i64,
    supported: i64,
}

#[derive(Debug, Serialize)]
struct Check {
    name: &'static str,
    status: &'static str,
    count: usize,
    items: Vec<Item>,
}

#[derive(Debug, Serialize)]
struct Item {
    path: String,
    reason: String,
    detail: String,
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

fn check(name: &'static str, bad: &'static str, items: Vec<Item>) -> Check {
    Check {
        name,
        status: if items.is_empty() { "ok" } else { bad },
        count: items.len(),
        items,
    }
}

pub(super) fn command() -> Command {
    Command::new("doctor", Class::Read, run, render)
}

/// What a walk of the workspace directory found.
#[derive(Default)]
struct Walk {
    problems: BTreeMap<(String, Reason), Problem>,
    noncanonical: Vec<Item>,
    stale: Vec<(Item, std::path::PathBuf)>,
    ids: BTreeMap<String, Vec<String>>,
    locks: Vec<(String, std::path::PathBuf)>,
}

impl Walk {
    fn problem(&mut self, p: Problem) {
        self.problems.entry((p.path.clone(), p.reason)).or_insert(p);
    }
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let mut walk = Walk::default();
    walk_dir(ctx, ws, ws.dir(), 0, &mut walk)?;
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
            walk.problem(crate::objects::field_problem(ws, &path, e));
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

    let mut orphan = Vec::new();
    let mut held = Vec::new();
    for (stem, path) in &walk.locks {
        if !lock_target_exists(ws, stem, &project_slugs, &task_ids) {
            orphan.push(Item {
                path: ws.display(path),
                reason: "orphan_lock".into(),
                detail:
                    "names an object that no longer exists (kept: lock files are never deleted)"
                        .into(),
            });
        }
        if ws.fs.is_locked(path)? {
            held.push(Item {
                path: ws.display(path),
                reason: "held_lock".into(),
                detail: "held by a running dacli process".into(),
            });
        }
    }

    let gitignore_path = ws.path(&[".gitignore"]);
    let absent = crate::objects::gitignore::missing(ws, GITIGNORE)?;
    let missing: Vec<Item> = absent
        .iter()
        .map(|l| Item {
            path: ws.display(&gitignore_path),
            reason: "gitignore_missing_line".into(),
            detail: format!("`{l}` is not ignored"),
        })
        .collect();

    let tracked = tracked_items(ws);
    let me = ctx.identity()?;
    let identity = Check {
        name: "identity",
        status: "ok",
        count: 0,
        items: vec![Item {
            path: String::new(),
            reason: match me.source {
                IdentitySource::Token => "token".into(),
                IdentitySource::Unset => "unset".into(),
            },
            detail: format!("{} ({})", me.agent.id, me.agent.grant),
        }],
    };
    let github = github_token_check(ctx, ws);

    let mut fixed = 0;
    let mut missing = missing;
    if req.fix {
        for (_, path) in &walk.stale {
            ws.fs.remove(path)?;
            fixed += 1;
        }
        if !absent.is_empty() {
            fixed += crate::objects::gitignore::add_missing(ws, GITIGNORE)?;
            missing.clear();
        }
    }
    let stale_items: Vec<Item> = if req.fix {
        Vec::new()
    } else {
        walk.stale.into_iter().map(|(i, _)| i).collect()
    };

    let checks = vec![
        check("format_version", "error", Vec::new()),
        check("malformed_files", "error", malformed),
        check("noncanonical_files", "warn", walk.noncanonical),
        check("stale_temp_files", "warn", stale_items),
        check("orphan_locks", "warn", orphan),
        check("held_locks", "warn", held),
        check("duplicate_ids", "error", duplicates),
        check("unknown_folders", "error", unknown_folders),
        check("gitignore", "warn", missing),
        tracked,
        identity,
        github,
    ];
    if req.check {
        let failing: Vec<&str> = checks
            .iter()
            .filter(|c| c.status == "error")
            .map(|c| c.name)
            .collect();
        if !failing.is_empty() {
            let mut err = Error::new(
                ErrorKind::Operational,
                "E_LINT",
                format!("doctor found errors in: {}", failing.join(", ")),
            );
            for c in checks.iter().filter(|c| c.status == "error") {
                for i in &c.items {
                    err = err.hint(format!("{}: {} ({})", i.path, i.reason, i.detail));
                }
            }
            return Err(err);
        }
    }
    Ok(Outcome::Done(Response {
        format: FormatInfo {
            workspace: ws.config.format,
            supported: SUPPORTED_FORMAT,
        },
        checks,
        fixed,
    }))
}

/// Walks the workspace directory (runtime and derived directories excluded, but for the
/// temp files `cache/` holds: a new task's file is staged there), checking every object
/// file's envelope and canonical form, collecting ids and stale temp files.
fn walk_dir(
    ctx: &Ctx,
    ws: &Workspace,
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
                walk_dir(ctx, ws, &path, 1, w)?;
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
                .map_or(0, |t| ctx.now().as_second() - t.as_second());
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
                    walk_dir(ctx, ws, &path, depth + 1, w)?;
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
    let Some((kind, key)) = stem.split_once('-') else {
        return matches!(stem, "config" | "archive");
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

fn tracked_items(ws: &Workspace) -> Check {
    let config = ws.display(&ws.path(&["config.toml"]));
    let mut items = Vec::new();
    match crate::git::is_tracked(ws.root(), &config) {
        None => {
            return Check {
                name: "tracked",
                status: "warn",
                count: 1,
                items: vec![Item {
                    path: config,
                    reason: "unknown".into(),
                    detail: "git could not be asked (no git binary, or not a repository)".into(),
                }],
            };
        }
        Some(false) => items.push(Item {
            path: config,
            reason: "untracked".into(),
            detail: "the workspace is not committed: `git add` it so the team shares it".into(),
        }),
        Some(true) => {}
    }
    for dir in ["runs", ".locks", "cache"] {
        let shown = ws.display(&ws.path(&[dir]));
        if crate::git::is_tracked(ws.root(), &shown) == Some(true) {
            items.push(Item {
                path: shown,
                reason: "runtime_tracked".into(),
                detail: "machine-local data is committed; `git rm -r --cached` it".into(),
            });
        }
    }
    check("tracked", "warn", items)
}

fn github_token_check(ctx: &Ctx, ws: &Workspace) -> Check {
    let source = ["GH_TOKEN", "GITHUB_TOKEN"]
        .into_iter()
        .find(|v| ctx.env().is_set(v));
    let linked = ws
        .config
        .doc
        .get("github")
        .and_then(|g| g.get("repo"))
        .is_some();
    let (status, reason, detail) = match (source, linked) {
        (Some(v), _) => ("ok", "present", format!("from {v}")),
        (None, true) => (
            "warn",
            "missing",
            "the workspace is linked to GitHub but neither GH_TOKEN nor GITHUB_TOKEN is set"
                .to_string(),
        ),
        (None, false) => (
            "ok",
            "absent",
            "no GitHub token set (not linked)".to_string(),
        ),
    };
    Check {
        name: "github_token",
        status,
        count: 0,
        items: vec![Item {
            path: String::new(),
            reason: reason.into(),
            detail,
        }],
    }
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    let mut out = String::new();
    for c in &r.checks {
        let mark = match c.status {
            "ok" => "ok   ",
            "warn" => "warn ",
            _ => "ERROR",
        };
        out.push_str(&format!("{mark}  {}", c.name));
        if c.count > 0 {
            out.push_str(&format!(" ({})", c.count));
        }
        out.push('\n');
        for i in &c.items {
            if i.path.is_empty() {
                out.push_str(&format!("       {}: {}\n", i.reason, i.detail));
            } else {
                out.push_str(&format!("       {}: {} ({})\n", i.path, i.reason, i.detail));
            }
        }
    }
    if r.fixed > 0 {
        out.push_str(&format!("removed {} stale temp file(s)\n", r.fixed));
    }
    out
}
