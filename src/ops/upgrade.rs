//! The format-2 upgrade (FORMAT §22, §23): every task, note and risk file a format-1
//! workspace named by a number or a slug takes the name `<ULID>-<slug>.md`, a path no other
//! clone can create, and `config.toml` says `format = 2`.
//!
//! The upgrade is idempotent and deterministic: it mints nothing (no `rev`, no time), so two
//! clones that upgrade the same files write byte-identical results and git merges them
//! cleanly. A task keeps its number in the new key `seq`; a note or a risk moves unchanged.

use std::path::PathBuf;

use crate::model::note::NOTE_KINDS;
use crate::model::task::{keyed_filename, parse_keyed_filename, parse_task_filename};
use crate::objects::{projects, tasks};
use crate::store::{Document, TEMP_PREFIX, TomlRecord};
use crate::workspace::{STATUS_FOLDERS, SUPPORTED_FORMAT, Workspace};

use super::Error;

/// One file the upgrade renamed: from, to (relative to the work tree).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Moved {
    pub from: String,
    pub to: String,
}

/// What [`upgrade`] did (or, with `dry_run`, would do).
#[derive(Debug, Default, serde::Serialize)]
pub struct Upgrade {
    /// The format the workspace had.
    pub from_format: i64,
    pub moved: Vec<Moved>,
    /// Whether `config.toml` was (or would be) set to the supported format.
    pub format_bumped: bool,
}

impl Upgrade {
    /// Whether anything is (or was) to do.
    pub fn pending(&self) -> bool {
        self.format_bumped || !self.moved.is_empty()
    }
}

/// Renames every format-1 record file of the workspace and bumps `format`; with `dry_run`
/// only reports what it would do. Each task is moved under its project's sequence lock and
/// its own lock.
pub fn upgrade(ws: &Workspace, dry_run: bool) -> Result<Upgrade, Error> {
    let mut out = Upgrade {
        from_format: current_format(ws)?,
        ..Upgrade::default()
    };
    let listed = projects::list(ws)?;
    for project in &listed.items {
        upgrade_tasks(ws, &project.slug, dry_run, &mut out)?;
        let risks = ws.path(&["projects", &project.slug, "risks"]);
        upgrade_records(ws, &risks, "r-", dry_run, &mut out)?;
        for (_, dir) in NOTE_KINDS {
            let base = ws.path(&["projects", &project.slug, "notes", dir]);
            upgrade_records(ws, &base, "n-", dry_run, &mut out)?;
        }
    }
    for (_, dir) in NOTE_KINDS {
        upgrade_records(ws, &ws.path(&["notes", dir]), "n-", dry_run, &mut out)?;
    }
    if out.from_format < SUPPORTED_FORMAT {
        out.format_bumped = true;
        if !dry_run {
            bump_format(ws)?;
        }
    }
    Ok(out)
}

/// The `format` `config.toml` holds now (it may have changed since the workspace opened).
fn current_format(ws: &Workspace) -> Result<i64, Error> {
    let path = ws.path(&["config.toml"]);
    let bytes = ws.fs.read(&path)?;
    let record = TomlRecord::parse(&ws.display(&path), &bytes)
        .map_err(|p| Error::from(crate::store::Error::Malformed(p)))?;
    Ok(record
        .doc
        .get("format")
        .and_then(|v| v.as_integer())
        .unwrap_or(ws.config.format))
}

fn bump_format(ws: &Workspace) -> Result<(), Error> {
    let _config = ws.fs.lock(&ws.lock_path("config"))?;
    let path = ws.path(&["config.toml"]);
    let bytes = ws.fs.read(&path)?;
    let mut record = TomlRecord::parse(&ws.display(&path), &bytes)
        .map_err(|p| Error::from(crate::store::Error::Malformed(p)))?;
    record.doc["format"] = toml_edit::value(SUPPORTED_FORMAT);
    ws.fs.replace(&path, record.render().as_bytes())?;
    Ok(())
}

fn upgrade_tasks(
    ws: &Workspace,
    slug: &str,
    dry_run: bool,
    out: &mut Upgrade,
) -> Result<(), Error> {
    let _seq = (!dry_run)
        .then(|| ws.fs.lock(&ws.lock_path(&format!("seq-{slug}"))))
        .transpose()?;
    for folder in STATUS_FOLDERS {
        let dir = ws.path(&["projects", slug, "tasks", folder]);
        for (name, path) in ws.fs.list_dir(&dir)? {
            let Some((number, file_slug)) = parse_task_filename(&name) else {
                continue;
            };
            if name.starts_with('.') || name.starts_with(TEMP_PREFIX) {
                continue;
            }
            // A file that does not parse stays where it is, for lint and doctor to report.
            let Ok(bytes) = ws.fs.read(&path) else {
                continue;
            };
            let Ok(mut doc) = Document::parse(&ws.display(&path), &bytes) else {
                continue;
            };
            let Some(ulid) = doc
                .front
                .get("id")
                .and_then(|v| v.as_str())
                .and_then(|id| id.strip_prefix("t-"))
                .map(str::to_string)
            else {
                continue;
            };
            let dest = dir.join(keyed_filename(&ulid, file_slug));
            out.moved.push(Moved {
                from: ws.display(&path),
                to: ws.display(&dest),
            });
            if dry_run {
                continue;
            }
            let _task = ws.fs.lock(&ws.lock_path(&format!("task-{ulid}")))?;
            tasks::set_seq(&mut doc.front, number);
            let _moving = ws.fs.lock(&tasks::moves_lock(ws, slug))?;
            place(ws, &dest, doc.render().as_bytes())?;
            ws.fs.remove(&path)?;
        }
    }
    Ok(())
}

/// Moves each record of `dir` whose name carries no ULID to `<ULID>-<stem>.md`, byte for
/// byte; `prefix` is its id's (`n-`, `r-`).
fn upgrade_records(
    ws: &Workspace,
    dir: &std::path::Path,
    prefix: &str,
    dry_run: bool,
    out: &mut Upgrade,
) -> Result<(), Error> {
    for (name, path) in ws.fs.list_dir(dir)? {
        if name.starts_with('.') || name.starts_with(TEMP_PREFIX) || !name.ends_with(".md") {
            continue;
        }
        if parse_keyed_filename(&name).is_some() {
            continue;
        }
        let Ok(bytes) = ws.fs.read(&path) else {
            continue;
        };
        let Ok(doc) = Document::parse(&ws.display(&path), &bytes) else {
            continue;
        };
        let Some(ulid) = doc
            .front
            .get("id")
            .and_then(|v| v.as_str())
            .and_then(|id| id.strip_prefix(prefix))
            .and_then(crate::model::id::parse_ulid)
        else {
            continue;
        };
        let stem = name.trim_end_matches(".md");
        let dest: PathBuf = dir.join(keyed_filename(&ulid.to_string(), stem));
        out.moved.push(Moved {
            from: ws.display(&path),
            to: ws.display(&dest),
        });
        if dry_run {
            continue;
        }
        place(ws, &dest, &bytes)?;
        ws.fs.remove(&path)?;
    }
    Ok(())
}

/// Creates `dest` with `bytes`; an existing byte-identical file (an upgrade interrupted after
/// this step, or the same upgrade merged from another clone) is success.
fn place(ws: &Workspace, dest: &std::path::Path, bytes: &[u8]) -> Result<(), Error> {
    match ws.fs.create_new(dest, bytes) {
        Ok(()) => Ok(()),
        Err(crate::store::Error::Exists { .. })
            if ws.fs.read(dest).ok().as_deref() == Some(bytes) =>
        {
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}
