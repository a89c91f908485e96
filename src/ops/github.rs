//! The GitHub tools' workspace files: consent records (FORMAT §19.2), the `[github]` link in
//! `config.toml`, the issue number written back to a task, and the events a pull brings in
//! (deduplicated under the project lock).

use std::collections::BTreeSet;

use serde::Serialize;
use toml_edit::{Array, DocumentMut, InlineTable, Item, value};
use ulid::Ulid;

use super::Error;
use crate::journal::{self, NewEvent, archive};
use crate::model::id::{ROOT_AGENT, ulid_time};
use crate::model::toml_time;
use crate::objects::tasks;
use crate::policy::disclosure::Consent;
use crate::store::{Document, Problem, TEMP_PREFIX, TomlRecord};
use crate::workspace::Workspace;

/// A consent record as shown.
#[derive(Debug, Clone, Serialize)]
pub struct ConsentRecord {
    pub id: String,
    pub action: String,
    pub project: String,
    pub repo: String,
    pub visibility: String,
    pub classes: Vec<String>,
    pub granted_by: String,
    pub path: String,
}

/// One consent decision to record.
pub struct NewConsent<'a> {
    pub id: Ulid,
    pub created_by: &'a str,
    pub action: &'a str,
    pub slug: &'a str,
    pub repo: &'a str,
    pub visibility: &'a str,
    pub classes: &'a [String],
    pub granted_by: &'a str,
}

/// Creates one consent record (keys in FORMAT §19.2 order).
pub fn write_consent(ws: &Workspace, c: &NewConsent<'_>) -> Result<ConsentRecord, Error> {
    let id = c.id;
    let mut doc = DocumentMut::new();
    doc["id"] = value(id.to_string());
    doc["kind"] = value("consent");
    doc["created"] = value(toml_time(ulid_time(id)));
    doc["created_by"] = value(c.created_by);
    doc["granted_by"] = value(c.granted_by);
    doc["action"] = value(c.action);
    doc["project"] = value(format!("p-{}", c.slug));
    doc["repo"] = value(c.repo);
    doc["visibility"] = value(c.visibility);
    let mut arr = Array::new();
    for class in c.classes {
        arr.push(class.as_str());
    }
    doc["classes"] = value(arr);
    let path = ws.path(&["github", "consent", &format!("{id}.toml")]);
    ws.fs.create_new(&path, doc.to_string().as_bytes())?;
    Ok(ConsentRecord {
        id: id.to_string(),
        action: c.action.into(),
        project: format!("p-{}", c.slug),
        repo: c.repo.into(),
        visibility: c.visibility.into(),
        classes: c.classes.to_vec(),
        granted_by: c.granted_by.into(),
        path: ws.display(&path),
    })
}

/// The consent in effect for (project, repo), with what reading it found.
pub struct InEffect {
    pub consent: Option<Consent>,
    /// Records that do not parse.
    pub warnings: Vec<Problem>,
    /// Records about the pair not written by a-root (shown paths): ignored.
    pub foreign: Vec<String>,
}

/// The consent in effect for (project, repo): the root-authored record with the greatest
/// ULID. Records by other authors are ignored and reported; unreadable ones are warnings.
pub fn consent_in_effect(ws: &Workspace, slug: &str, repo: &str) -> Result<InEffect, Error> {
    let project = format!("p-{slug}");
    let mut out = InEffect {
        consent: None,
        warnings: Vec::new(),
        foreign: Vec::new(),
    };
    for (name, path) in ws.fs.list_dir(&ws.path(&["github", "consent"]))? {
        if name.starts_with('.') || name.starts_with(TEMP_PREFIX) || !name.ends_with(".toml") {
            continue;
        }
        let parsed = ws.fs.read(&path).and_then(|b| {
            TomlRecord::parse(&ws.display(&path), &b).map_err(crate::store::Error::Malformed)
        });
        let rec = match parsed {
            Ok(r) => r,
            Err(crate::store::Error::Malformed(p)) => {
                out.warnings.push(p);
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let s = |k: &str| {
            rec.doc
                .get(k)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string()
        };
        if s("kind") != "consent" || s("project") != project || s("repo") != repo {
            continue;
        }
        if s("created_by") != ROOT_AGENT {
            out.foreign.push(ws.display(&path));
            continue;
        }
        let c = Consent {
            id: s("id"),
            action: s("action"),
            repo: s("repo"),
            visibility: s("visibility"),
            classes: rec
                .doc
                .get("classes")
                .and_then(|v| v.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            granted_by: s("granted_by"),
        };
        if out.consent.as_ref().is_none_or(|b| c.id > b.id) {
            out.consent = Some(c);
        }
    }
    Ok(out)
}

/// Sets `[github] repo` and `api_url` under the config lock, keeping every other byte.
pub fn write_link(ws: &Workspace, repo: &str, api_url: &str) -> Result<(), Error> {
    let _lock = ws.fs.lock(&ws.lock_path("config"))?;
    let path = ws.path(&["config.toml"]);
    let bytes = ws.fs.read(&path)?;
    let mut record =
        TomlRecord::parse(&ws.display(&path), &bytes).map_err(crate::store::Error::Malformed)?;
    if !record.doc.contains_key("github") {
        record.doc["github"] = Item::Table(toml_edit::Table::new());
    }
    record.doc["github"]["repo"] = value(repo);
    record.doc["github"]["api_url"] = value(api_url);
    ws.fs.replace(&path, record.doc.to_string().as_bytes())?;
    Ok(())
}

/// Writes the issue number back to task `id` (`github = {issue, synced_at}`) under the
/// task's lock when `me` may: the task's owner, or root (FORMAT §12). Others rely on the
/// marker alone.
pub fn record_issue(
    ws: &Workspace,
    slug: &str,
    id: &str,
    me: &str,
    number: u64,
    now: jiff::Timestamp,
    fresh: &dyn Fn() -> Ulid,
) -> Result<(), Error> {
    let ulid = id.trim_start_matches("t-");
    let _lock = ws.fs.lock(&ws.lock_path(&format!("task-{ulid}")))?;
    let t = tasks::reload(ws, slug, id)?;
    if me != ROOT_AGENT && t.doc.owner() != me {
        return Ok(());
    }
    let mut doc = t.doc.clone();
    let mut table = InlineTable::new();
    table.insert("issue", (number as i64).into());
    table.insert("synced_at", toml_time(now).into());
    doc.front["github"] = value(table);
    doc.front["rev"] = value(fresh().to_string());
    tasks::write(ws, &t, &doc)?;
    Ok(())
}

/// One remote fact a pull turns into an event.
#[derive(Debug, Clone, Serialize)]
pub struct Pulled {
    /// `comment` or `propose-status`.
    pub kind: &'static str,
    /// The task the event is about.
    pub about: String,
    pub issue: u64,
    pub github_ref: String,
    pub origin: String,
    /// The event's id once written.
    pub event: Option<String>,
    #[serde(skip)]
    pub body: String,
}

/// What a pull brought in.
pub struct PullResult {
    /// The facts not brought in before (with their event ids unless a dry run).
    pub items: Vec<Pulled>,
    /// Facts an earlier pull already brought in.
    pub skipped: usize,
    /// The ids of the events written.
    pub events: Vec<String>,
    pub warnings: Vec<Problem>,
}

/// Leaves out what an earlier pull brought in and (unless `dry_run`) appends the rest as
/// events by `me`. Deduplication and the writes happen under the project lock, so two pulls
/// running at once cannot both bring in the same comment.
pub fn pull_events(
    ws: &Workspace,
    slug: &str,
    me: &str,
    found: Vec<Pulled>,
    dry_run: bool,
    fresh: &dyn Fn() -> Ulid,
) -> Result<PullResult, Error> {
    let _lock = if dry_run {
        None
    } else {
        Some(ws.fs.lock(&ws.lock_path(&format!("project-{slug}")))?)
    };
    let mut warnings = Vec::new();
    let seen = already_pulled(ws, &mut warnings)?;
    let mut skipped = 0;
    let mut items = Vec::new();
    for p in found {
        if seen.contains(&p.github_ref) {
            skipped += 1;
        } else {
            items.push(p);
        }
    }
    let mut events = Vec::new();
    if !dry_run {
        for p in &mut items {
            let id = append_pulled(ws, me, p, fresh())?;
            p.event = Some(id.clone());
            events.push(id);
        }
    }
    Ok(PullResult {
        items,
        skipped,
        events,
        warnings,
    })
}

/// The `github_ref` of every event an earlier pull wrote: in the live log, and in sealed
/// archive segments (an archived comment must not come back as a new one).
fn already_pulled(ws: &Workspace, warnings: &mut Vec<Problem>) -> Result<BTreeSet<String>, Error> {
    let journal = journal::read(ws)?;
    warnings.extend(journal.warnings.clone());
    let mut seen: BTreeSet<String> = journal
        .events
        .iter()
        .filter_map(|e| pulled_ref(&e.front))
        .collect();
    let segments = archive::segments(ws)?;
    warnings.extend(segments.warnings);
    for seg in segments
        .items
        .iter()
        .filter(|s| s.state == archive::SegmentState::Sealed)
    {
        for e in &seg.manifest.entries {
            if !matches!(e.event_kind.as_str(), "comment" | "propose-status") {
                continue;
            }
            let path = archive::archived_path(ws, &seg.manifest.id, e);
            let Ok(bytes) = ws.fs.read(&path) else {
                continue;
            };
            match Document::parse(&ws.display(&path), &bytes) {
                Ok(doc) => seen.extend(pulled_ref(&doc.front)),
                Err(p) => warnings.push(p),
            }
        }
    }
    Ok(seen)
}

/// The `github_ref` of an event frontmatter written by a pull.
fn pulled_ref(front: &toml_edit::DocumentMut) -> Option<String> {
    let origin = front.get("origin").and_then(|v| v.as_str())?;
    if !origin.starts_with("github:") {
        return None;
    }
    front
        .get("github_ref")
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

fn append_pulled(ws: &Workspace, me: &str, p: &Pulled, id: Ulid) -> Result<String, Error> {
    let mut fields = vec![("origin", value(p.origin.as_str()))];
    if p.kind == "propose-status" {
        fields.push(("to", value("open")));
        fields.push(("reason", value(p.body.as_str())));
    }
    fields.push(("github_ref", value(p.github_ref.as_str())));
    let body = if p.kind == "comment" {
        format!("{}\n", p.body.trim_end())
    } else {
        String::new()
    };
    let ev = journal::append(
        ws,
        NewEvent {
            id,
            kind: p.kind,
            created_by: me,
            about: Some(&p.about),
            fields,
            body,
        },
    )?;
    Ok(ev.envelope.id)
}
