//! Work across clones (FORMAT §22): the renumbering of task numbers a merge made shared.
//!
//! Numbers are display handles. After a merge two tasks of a project can share one; the task
//! with the older ULID keeps it, and every other task that shares a number with an older one
//! gets a new number from a plan every clone computes alike from the same files: those tasks
//! in ULID order take the numbers after the project's highest. Each owner writes only its
//! own tasks' new numbers, at its sync; the plan makes two owners in two clones agree.

use std::collections::BTreeMap;

use toml_edit::value;

use super::Error;
use super::lint_fix::{Fixer, may_write};
use crate::model::taskdoc::{ClaimTry, Stamp, TaskDoc};
use crate::objects::{projects, tasks};
use crate::store::Document;
use crate::workspace::Workspace;

/// One task given a new number.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Renumbered {
    pub project: String,
    pub id: String,
    pub from: u32,
    pub to: u32,
}

/// The new numbers of the tasks of one project whose number an older task also has:
/// `(id, old, new)`, in ULID order, from `tasks` (`(id, number)` pairs).
pub fn plan(tasks: &[(String, u32)]) -> Vec<(String, u32, u32)> {
    let mut sorted: Vec<&(String, u32)> = tasks.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut holder: BTreeMap<u32, &str> = BTreeMap::new();
    let mut moving = Vec::new();
    for (id, n) in sorted {
        if holder.contains_key(n) {
            moving.push((id.clone(), *n));
        } else {
            holder.insert(*n, id);
        }
    }
    let mut next = tasks.iter().map(|(_, n)| *n).max().unwrap_or(0);
    moving
        .into_iter()
        .map(|(id, n)| {
            next += 1;
            (id, n, next)
        })
        .collect()
}

/// Gives every task `by.me` may write whose number an older task also has the number the
/// [`plan`] says, under the project's sequence lock and the task's lock, with a new `rev` and
/// a Log line. With `dry_run` only reports.
pub fn renumber_owned(
    by: &Fixer<'_>,
    ws: &Workspace,
    dry_run: bool,
) -> Result<Vec<Renumbered>, Error> {
    let mut out = Vec::new();
    for project in projects::list(ws)?.items {
        let slug = project.slug;
        let listed = crate::objects::index::tasks(ws, &slug)?;
        let pairs: Vec<(String, u32)> = listed
            .items
            .iter()
            .map(|e| (e.id().to_string(), e.number()))
            .collect();
        let mine: Vec<(String, u32, u32)> = plan(&pairs)
            .into_iter()
            .filter(|(id, _, _)| {
                listed
                    .items
                    .iter()
                    .find(|e| e.id() == id)
                    .is_some_and(|e| may_write(by, ws, e.owner()).unwrap_or(false))
            })
            .collect();
        if mine.is_empty() {
            continue;
        }
        if dry_run {
            out.extend(mine.into_iter().map(|(id, from, to)| Renumbered {
                project: slug.clone(),
                id,
                from,
                to,
            }));
            continue;
        }
        let _seq = ws.fs.lock(&ws.lock_path(&format!("seq-{slug}")))?;
        // Re-planned under the lock: the files may have changed since the first look.
        let listed = crate::objects::index::tasks(ws, &slug)?;
        let pairs: Vec<(String, u32)> = listed
            .items
            .iter()
            .map(|e| (e.id().to_string(), e.number()))
            .collect();
        for (id, from, to) in plan(&pairs) {
            if !mine.iter().any(|(m, _, _)| *m == id) {
                continue;
            }
            let ulid = id.strip_prefix("t-").unwrap_or(&id).to_string();
            let _task = ws.fs.lock(&ws.lock_path(&format!("task-{ulid}")))?;
            let t = tasks::reload(ws, &slug, &id)?;
            let mut doc = t.doc.clone();
            doc.front["rev"] = value((by.mint)().to_string());
            tasks::set_seq(&mut doc.front, to);
            doc.log_line(
                Stamp {
                    at: by.at,
                    by: by.me,
                    event: None,
                },
                &format!("renumbered {from:03} -> {to:03} (number shared after a merge)"),
            );
            let dest = tasks::file_for(ws, &slug, doc.status, &id, &t.task.slug);
            let rendered = Document::new(doc.front, doc.body).render();
            if dest == t.file {
                ws.fs.replace(&dest, rendered.as_bytes())?;
            } else {
                let _moving = ws.fs.lock(&tasks::moves_lock(ws, &slug))?;
                ws.fs.create_new(&dest, rendered.as_bytes())?;
                ws.fs.remove(&t.file)?;
            }
            out.push(Renumbered {
                project: slug.clone(),
                id,
                from,
                to,
            });
        }
    }
    Ok(out)
}

/// Whether `who`'s claim of task `doc` (id `task`) lost to an earlier one (FORMAT §13.2):
/// the Log says so, or `who`'s latest claim event was refused by the owner's sync (a
/// receipt) or would be (the fold of the pending events, `fold`).
pub fn claim_lost(
    doc: &TaskDoc,
    task: &str,
    who: &str,
    journal: &crate::journal::Journal,
    fold: Option<&crate::journal::fold::Folded>,
) -> bool {
    let latest = journal
        .events
        .iter()
        .filter(|e| e.kind == "claim" && e.about.as_deref() == Some(task) && e.created_by == who)
        .max_by(|a, b| a.id.cmp(&b.id));
    let Some(e) = latest else {
        return doc.claim_lost(who, None);
    };
    let refused = matches!(
        journal.state(e),
        crate::journal::EventState::Rejected(r) if r == "claimed"
    ) || fold.is_some_and(|f| {
        f.rejected
            .iter()
            .any(|(id, r)| *id == e.id && r == "claimed")
    });
    let at = crate::model::format_time(e.created);
    doc.claim_lost(
        who,
        Some(ClaimTry {
            event: &e.id,
            at: &at,
            refused,
        }),
    )
}

/// [`claim_lost`] over the event index (what a per-task read holds).
pub fn claim_lost_indexed(
    doc: &TaskDoc,
    task: &str,
    who: &str,
    events: &crate::journal::index::Events,
    fold: Option<&crate::journal::fold::Folded>,
) -> bool {
    let latest = events
        .entries
        .iter()
        .filter(|e| e.kind() == "claim" && e.about() == Some(task) && e.created_by() == who)
        .max_by(|a, b| a.id().cmp(b.id()));
    let Some(e) = latest else {
        return doc.claim_lost(who, None);
    };
    let refused = matches!(
        events.state(e),
        crate::journal::EventState::Rejected(r) if r == "claimed"
    ) || fold.is_some_and(|f| {
        f.rejected
            .iter()
            .any(|(id, r)| id == e.id() && r == "claimed")
    });
    doc.claim_lost(
        who,
        Some(ClaimTry {
            event: e.id(),
            at: e.created(),
            refused,
        }),
    )
}

/// What the loser of a claim of `reference` reads: who holds the task, and what to do next.
/// The holder's id comes from a file any clone may have written: it is shown as one plain
/// word, so it cannot start a line or forge a notice of its own.
pub fn claim_lost_message(reference: &str, doc: &TaskDoc) -> String {
    let holder = doc
        .assignee()
        .map(plain_word)
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "another agent".to_string());
    format!(
        "your claim of {reference} lost: {holder} claimed it earlier, and the earlier claim \
         wins; the task is not yours. Next: stop working on it and pick another task \
         (`dacli next`)"
    )
}

/// `text` as one word of plain characters: letters, digits and `-_.@:/`, anything else
/// dropped (controls, markup, quotes, line breaks).
pub fn plain_word(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '@' | ':' | '/'))
        .take(80)
        .collect()
}

/// The lines `.dacli/.gitattributes` holds: every record file merges through the dacli
/// driver (FORMAT §22).
pub const GITATTRIBUTES: &str = "# written by dacli: records merge field by field, never with conflict markers\n*.md merge=dacli\n";

/// The git configuration key of the driver's command.
pub const DRIVER_KEY: &str = "merge.dacli.driver";

/// The driver command git runs for `exe` (this dacli binary).
pub fn driver_command(exe: &str) -> String {
    let quoted = if exe.contains(['\'', ' ', '"', '\\']) {
        format!("'{}'", exe.replace('\'', "'\\''"))
    } else {
        exe.to_string()
    };
    format!("{quoted} merge-driver %O %A %B %P")
}

/// What the merge driver's installation lacks: the `.gitattributes` line, the git config.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct DriverState {
    pub gitattributes: bool,
    pub config: bool,
}

/// Whether the merge driver is installed in this clone.
pub fn driver_state(ws: &Workspace) -> Result<DriverState, Error> {
    let attrs = ws.path(&[".gitattributes"]);
    let gitattributes = ws.fs.read(&attrs).ok().is_some_and(|b| {
        String::from_utf8_lossy(&b)
            .lines()
            .any(|l| l.trim() == "*.md merge=dacli")
    });
    let config = crate::git::remote::config_get(ws.root(), DRIVER_KEY)
        .ok()
        .flatten()
        .is_some_and(|v| v.contains("merge-driver"));
    Ok(DriverState {
        gitattributes,
        config,
    })
}

/// Installs the record merge driver in this clone: `.dacli/.gitattributes` (shared with
/// the team through git) and the repository-local `merge.dacli.*` config (a clone's own, so
/// each clone runs it once: `init`, `doctor --fix`, or `sync --remote`). Returns whether
/// anything changed.
pub fn install_driver(ws: &Workspace, exe: &str) -> Result<bool, Error> {
    let state = driver_state(ws)?;
    let mut changed = false;
    if !state.gitattributes {
        let attrs = ws.path(&[".gitattributes"]);
        let mut text = ws
            .fs
            .read(&attrs)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(GITATTRIBUTES);
        ws.fs.replace(&attrs, text.as_bytes())?;
        changed = true;
    }
    Ok(install_driver_config(ws.root(), exe)? || changed)
}

/// Sets the repository-local `merge.dacli.*` config of the work tree `root` to run `exe`;
/// returns whether it changed.
pub fn install_driver_config(root: &std::path::Path, exe: &str) -> Result<bool, Error> {
    // Outside a repository there is no merge to drive; `doctor --fix` configures one made
    // later.
    if !crate::git::remote::in_repository(root) {
        return Ok(false);
    }
    let want = driver_command(exe);
    let have = crate::git::remote::config_get(root, DRIVER_KEY)?;
    if have.as_deref() == Some(want.as_str()) {
        return Ok(false);
    }
    crate::git::remote::config_set(root, "merge.dacli.name", "dacli record merge")?;
    crate::git::remote::config_set(root, DRIVER_KEY, &want)?;
    Ok(true)
}

/// What the merge driver did with one file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum Merged {
    /// Merged field by field into the result.
    Fields,
    /// Not a record dacli merges: the later write is kept and the other version saved.
    Kept { saved: String },
}

/// The merge driver's work (git's `%O %A %B`): merges `theirs` into `ours` against `base`,
/// writing the result over `ours`, through `fs`. A pair it cannot merge field by field keeps
/// `ours` and saves `theirs` as `saved` (under `runs/merges/`, machine-local), for `doctor`
/// to report: no workspace file ever holds a conflict marker.
pub fn merge_files(
    fs: &crate::store::Fs,
    base: &std::path::Path,
    ours: &std::path::Path,
    theirs: &std::path::Path,
    saved: &std::path::Path,
) -> Result<Merged, Error> {
    let read = |p: &std::path::Path| -> Result<String, Error> {
        Ok(String::from_utf8_lossy(&fs.read(p)?).into_owned())
    };
    let base_text = read(base).unwrap_or_default();
    let (o, t) = (read(ours)?, read(theirs)?);
    match crate::model::merge::merge_record(&base_text, &o, &t) {
        Some(m) => {
            fs.replace(ours, m.as_bytes())?;
            Ok(Merged::Fields)
        }
        None => {
            if let Some(dir) = saved.parent() {
                fs.create_dir_all(dir)?;
            }
            fs.replace(saved, t.as_bytes())?;
            Ok(Merged::Kept {
                saved: saved.display().to_string(),
            })
        }
    }
}

/// The versions the merge driver could not merge and kept aside (`runs/merges/`).
pub fn kept_versions(ws: &Workspace) -> Result<Vec<String>, Error> {
    let dir = ws.path(&["runs", "merges"]);
    Ok(ws
        .fs
        .list_dir(&dir)?
        .into_iter()
        .map(|(_, p)| ws.display(&p))
        .collect())
}

/// What `sync --remote` is asked to do.
pub struct RemoteSync<'a> {
    /// The remote's name; `None`: the branch's upstream remote, else `origin`.
    pub remote: Option<&'a str>,
    pub dry_run: bool,
    /// This dacli binary, for the merge driver's command.
    pub exe: &'a str,
    /// Pushes tried before giving up (each rejected push fetches and integrates again).
    pub attempts: u32,
    /// Waits between attempts: the attempt number (1, 2, ...) and a random number.
    pub wait: &'a dyn Fn(u32, u64),
}

/// What `sync --remote` did (or, with `--dry-run`, would do).
#[derive(Debug, Default, serde::Serialize)]
pub struct RemoteReport {
    pub remote: String,
    pub branch: String,
    /// `merge` or `rebase`, as `pull.rebase` says.
    pub integrate: &'static str,
    /// Workspace files committed (or to commit), relative to the work tree.
    pub committed: Vec<String>,
    /// Conflicted workspace paths resolved by dacli (outside the merge driver's reach:
    /// moves in both clones, a record deleted on one side).
    pub resolved: Vec<String>,
    /// Events applied by the caller's sync, and tasks renumbered.
    pub applied: usize,
    pub renumbered: Vec<Renumbered>,
    pub pushed: bool,
    /// Push attempts made.
    pub attempts: u32,
    /// A merge or rebase an interrupted `sync --remote` left, abandoned before starting.
    pub recovered: Option<String>,
    pub driver_installed: bool,
    pub dry_run: bool,
}

const MARKER: &str = "sync-remote.marker";

/// Holds this clone's writing lock shared, as every dacli write does (the dispatcher takes
/// it; `sync` takes it itself). A `sync --remote` waiting for it exclusive holds the gate, so
/// writers that arrive meanwhile wait behind it instead of starving it.
pub fn writing(ws: &Workspace) -> Result<crate::store::LockGuard, Error> {
    let gate = ws.fs.lock_shared(&ws.lock_path("writing-gate"))?;
    let held = ws.fs.lock_shared(&ws.lock_path("writing"))?;
    drop(gate);
    Ok(held)
}

/// Holds this clone's writing lock exclusive: no other dacli process of the clone writes
/// while the guards live. It holds the gate for at most about two seconds at a time, so a
/// long write (a shortcut run, a verified check) delays other writers that long, never the
/// whole lock deadline; it gives up after about thirty seconds of such rounds.
fn exclusive(ws: &Workspace) -> Result<[crate::store::LockGuard; 2], Error> {
    const ROUNDS: u32 = 15;
    const TRIES: u32 = 200;
    let pause = std::time::Duration::from_millis(10);
    let (gate_path, held_path) = (ws.lock_path("writing-gate"), ws.lock_path("writing"));
    for _ in 0..ROUNDS {
        let gate = ws.fs.lock(&gate_path)?;
        for _ in 0..TRIES {
            if let Some(held) = ws.fs.try_lock(&held_path)? {
                return Ok([gate, held]);
            }
            std::thread::sleep(pause);
        }
        drop(gate);
        std::thread::sleep(pause * 5);
    }
    Err(crate::store::Error::LockTimeout {
        path: ws.display(&held_path),
        waited_ms: u64::from(ROUNDS * (TRIES + 5)) * 10,
    }
    .into())
}

/// Commits the workspace's own changes (only `.dacli/`, as dacli), fetches, integrates as
/// `pull.rebase` says (conflicts in workspace files resolved, never left as markers),
/// applies what `by.me` owns, commits that, and pushes; a rejected push is retried after a
/// wait. It never force-pushes, never commits a path outside the workspace, and stops with
/// `E_CONFLICT` (the integration abandoned) when a file outside the workspace conflicts.
pub fn sync_remote(
    by: &Fixer<'_>,
    ws: &Workspace,
    req: &RemoteSync<'_>,
) -> Result<RemoteReport, Error> {
    use crate::git::remote as git;
    let root = ws.root();
    let spec = ws.display(ws.dir());
    let branch = git::current_branch(root)?.ok_or_else(|| {
        Error::rejected(
            super::error::Kind::Operational,
            "E_DETACHED",
            "HEAD is detached: sync --remote exchanges a branch",
        )
        .hint("check out the branch the team shares, then run it again")
    })?;
    let remote = match req.remote {
        Some(r) => r.to_string(),
        None => git::default_remote(root, &branch)?,
    };
    let rebase = git::pull_rebases(root, &branch)?;
    let mut report = RemoteReport {
        remote: remote.clone(),
        branch: branch.clone(),
        integrate: if rebase { "rebase" } else { "merge" },
        dry_run: req.dry_run,
        ..RemoteReport::default()
    };
    if req.dry_run {
        report.committed = git::changed(root, &spec)?;
        return Ok(report);
    }
    let _sync = ws.fs.lock(&ws.lock_path("sync-remote"))?;
    let marker = ws.path(&["runs", MARKER]);
    let message = format!("dacli: sync --remote by {}", by.me);
    let mut attempt = 0;
    loop {
        attempt += 1;
        report.attempts = attempt;
        // The network first, with nobody kept waiting: a fetch writes only git's refs.
        let upstream = git::fetch(root, &remote, &branch)?;
        // Then the clone's own work, committed, integrated and applied while no other dacli
        // process of this clone writes: a write never lands between the commit and the merge
        // (it would be clobbered by it, or half of a move committed), and one arriving now
        // waits and is committed by a later sync.
        let writing = exclusive(ws)?;
        if attempt == 1 {
            if let Some(op) = git::in_progress(root)? {
                if ws.fs.read(&marker).is_err() {
                    return Err(Error::rejected(
                        super::error::Kind::Conflict,
                        "E_CONFLICT",
                        format!("a git {op:?} is in progress that sync --remote did not start"),
                    )
                    .hint("finish or abort it with git, then run sync --remote again"));
                }
                // An interrupted sync --remote (killed mid-integration) left it: start over.
                git::abort(root, op)?;
                report.recovered = Some(format!("{op:?}").to_lowercase());
            }
            report.driver_installed = install_driver(ws, req.exe)?;
        }
        let changed = git::changed(root, &spec)?;
        if git::commit_only(root, &spec, &message)? {
            report.committed.extend(changed);
        }
        if let Some(upstream) = upstream {
            ws.fs.create_dir_all(&ws.path(&["runs"]))?;
            ws.fs.replace(&marker, b"sync --remote integrating\n")?;
            integrate(ws, &upstream, rebase, &message, &mut report)?;
            ws.fs.remove(&marker)?;
        }
        // The caller's own objects: pending events applied, shared numbers renumbered.
        let scope = crate::journal::sync::Scope {
            about: None,
            decline: Vec::new(),
            dry_run: false,
        };
        let (synced, _) = super::collab::sync(ws, by.me, by.mint, &scope)?;
        report.applied += synced.iter().map(|o| o.applied.len()).sum::<usize>();
        report.renumbered.extend(renumber_owned(by, ws, false)?);
        let changed = git::changed(root, &spec)?;
        if git::commit_only(root, &spec, &message)? {
            report.committed.extend(changed);
        }
        drop(writing);
        match git::push(root, &remote, &branch)? {
            git::Pushed::Done => {
                report.pushed = true;
                break;
            }
            git::Pushed::Rejected if attempt < req.attempts => {
                let jitter = u64::from((by.mint)().random() as u16);
                (req.wait)(attempt, jitter);
            }
            git::Pushed::Rejected => {
                return Err(Error::rejected(
                    super::error::Kind::Operational,
                    "E_PUSH_REJECTED",
                    format!(
                        "{remote} moved on during each of {attempt} attempts; your work is committed locally"
                    ),
                )
                .hint("run sync --remote again"));
            }
        }
    }
    report.committed.sort();
    report.committed.dedup();
    Ok(report)
}

/// Integrates `upstream`, resolving every conflicted workspace file until the merge or
/// rebase is done; a conflict outside the workspace abandons it.
fn integrate(
    ws: &Workspace,
    upstream: &str,
    rebase: bool,
    message: &str,
    report: &mut RemoteReport,
) -> Result<(), Error> {
    use crate::git::remote as git;
    let root = ws.root();
    let spec = format!("{}/", ws.display(ws.dir()));
    let mut state = git::integrate(root, upstream, rebase, message)?;
    // A rebase stops once per conflicting commit.
    for _ in 0..1000 {
        let git::Integrated::Conflicts(paths) = state else {
            return Ok(());
        };
        let op = git::in_progress(root)?.unwrap_or(if rebase {
            git::InProgress::Rebase
        } else {
            git::InProgress::Merge
        });
        if let Some(outside) = paths.iter().find(|p| !p.starts_with(&spec)) {
            git::abort(root, op)?;
            return Err(Error::rejected(
                super::error::Kind::Conflict,
                "E_CONFLICT",
                format!("{outside} conflicts: sync --remote resolves workspace files only"),
            )
            .hint("integrate with git (pull, resolve, commit), then run sync --remote again"));
        }
        for path in &paths {
            resolve_path(ws, path)?;
            report.resolved.push(path.clone());
        }
        state = git::conclude(root, op)?;
    }
    Err(Error::internal("sync --remote: the rebase did not end"))
}

/// Resolves one conflicted workspace file: the three stages merged field by field when both
/// sides have it; the side that has it when only one does (a record is never lost; two
/// copies of a task are the duplicate rule's, FORMAT §4.2).
fn resolve_path(ws: &Workspace, path: &str) -> Result<(), Error> {
    use crate::git::remote as git;
    let root = ws.root();
    let full = root.join(path);
    let text = |b: Option<Vec<u8>>| b.map(|b| String::from_utf8_lossy(&b).into_owned());
    let base = text(git::stage(root, 1, path)?).unwrap_or_default();
    let ours = text(git::stage(root, 2, path)?);
    let theirs = text(git::stage(root, 3, path)?);
    let result = match (ours, theirs) {
        (Some(o), Some(t)) => Some(
            crate::model::merge::merge_record(&base, &o, &t).unwrap_or_else(|| {
                // Not a record: the later write by `rev` cannot be told; keep ours.
                o.clone()
            }),
        ),
        // One side moved the record (a status change) and the other rewrote it where it
        // was: the rewrite is merged into the moved file, never kept as a second copy.
        (Some(m), None) | (None, Some(m)) => match moved_copy(ws, &full)? {
            Some(moved) => {
                let current = String::from_utf8_lossy(&ws.fs.read(&moved)?).into_owned();
                if let Some(merged) = crate::model::merge::merge_record(&base, &current, &m) {
                    ws.fs.replace(&moved, merged.as_bytes())?;
                    let rel = moved.strip_prefix(root).unwrap_or(&moved);
                    git::resolve_as_is(root, &rel.to_string_lossy(), true)?;
                }
                if full.exists() {
                    ws.fs.remove(&full)?;
                }
                None
            }
            None => Some(m),
        },
        (None, None) => None,
    };
    match result {
        Some(bytes) => {
            if let Some(dir) = full.parent() {
                ws.fs.create_dir_all(dir)?;
            }
            ws.fs.replace(&full, bytes.as_bytes())?;
            git::resolve_as_is(root, path, true)?;
        }
        None => git::resolve_as_is(root, path, false)?,
    }
    Ok(())
}

/// Another file of the same record as `file` (a `<ULID>-<slug>.md` in a sibling status
/// folder, or renamed in its own), as the work tree has it now.
fn moved_copy(ws: &Workspace, file: &std::path::Path) -> Result<Option<std::path::PathBuf>, Error> {
    let Some(name) = file.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Ok(None);
    };
    let Some((ulid, _)) = name.split_once('-') else {
        return Ok(None);
    };
    if ulid.len() != 26 {
        return Ok(None);
    }
    let Some(folders) = file.parent().and_then(|p| p.parent()) else {
        return Ok(None);
    };
    for (_, folder) in ws.fs.list_dirs(folders)? {
        for (other, path) in ws.fs.list_dir(&folder)? {
            if path != file && other.starts_with(&format!("{ulid}-")) && other.ends_with(".md") {
                return Ok(Some(path));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::plan;

    #[test]
    fn the_older_ulid_keeps_the_number_and_the_rest_follow_the_highest_in_ulid_order() {
        let tasks = vec![
            ("t-02".to_string(), 6),
            ("t-01".to_string(), 6),
            ("t-03".to_string(), 7),
            ("t-04".to_string(), 7),
            ("t-00".to_string(), 5),
        ];
        assert_eq!(
            plan(&tasks),
            vec![("t-02".to_string(), 6, 8), ("t-04".to_string(), 7, 9)]
        );
        assert!(plan(&[("t-1".into(), 1), ("t-2".into(), 2)]).is_empty());
    }
}
