//! Sync (docs/FORMAT.md §14.3): the owner applies an object's pending events for real, writes
//! the object once, materialises the notes they carry, then writes one receipt. Every effect is
//! idempotent (Log lines carry event ids; notes are pure functions of their events), so a crash
//! anywhere is repaired by syncing again.

use toml_edit::{Array, InlineTable, Item, Value, value};

use crate::model::event::EventHead;
use crate::model::note::materialise;
use crate::model::taskdoc::TaskDoc;
use crate::objects::{self, notes, tasks};
use crate::store::Document;
use crate::workspace::Workspace;

use super::fold::{Folded, fold_task};
use super::{Journal, NewEvent, append};

/// What one object's sync did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Synced {
    pub about: String,
    pub applied: Vec<String>,
    pub rejected: Vec<Rejected>,
    pub pending: Vec<Waiting>,
    pub notes: Vec<String>,
    pub receipt: Option<String>,
    /// Files of this object's events that could not be used (a `checksum` that fails, a
    /// file that no longer parses): neither applied nor receipted, and reported by the caller.
    #[serde(skip)]
    pub warnings: Vec<crate::store::Problem>,
}

/// A declined event in a sync report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Rejected {
    pub id: String,
    pub reason: String,
}

/// An event that stays pending, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Waiting {
    pub id: String,
    pub why: String,
}

/// How the caller mints ids (the clock and random source belong to the dispatcher).
pub type Mint<'a> = &'a dyn Fn() -> ulid::Ulid;

/// Syncs one task. The caller holds `task-<ULID>.lock` and passes the task re-read under it
/// and a journal read after taking it. `decline` lists pending events to reject with reason
/// `declined`. With `dry_run` nothing is written. Returns the task as written (or as it would
/// be) and the report.
#[allow(
    clippy::too_many_arguments,
    reason = "one call site per front of sync; a struct would only rename them"
)]
pub fn sync_task(
    ws: &Workspace,
    journal: &Journal,
    task: &tasks::Located,
    me: &str,
    mint: Mint<'_>,
    can_finish: &mut dyn FnMut(&TaskDoc) -> bool,
    decline: &[String],
    dry_run: bool,
) -> Result<(TaskDoc, Synced), objects::Error> {
    let id = task.task.id.clone();
    let (declined, pending): (Vec<&EventHead>, Vec<&EventHead>) = journal
        .pending_about(&id)
        .partition(|e| decline.contains(&e.id));
    let mut doc = task.doc.clone();
    let mut folded = fold_task(&mut doc, &pending, journal, can_finish);
    folded.rejected.extend(
        declined
            .iter()
            .map(|e| (e.id.clone(), "declined".to_string())),
    );
    let changed = Document::new(doc.front.clone(), doc.body.clone()).render()
        != Document::new(task.doc.front.clone(), task.doc.body.clone()).render()
        || doc.status != task.doc.status;
    let mut report = report_of(&id, &folded);
    if dry_run {
        return Ok((doc, report));
    }
    report.notes = materialise_notes(ws, journal, &folded, Some(&task.project))?;
    if changed {
        doc.front["rev"] = value(mint().to_string());
        tasks::write(ws, task, &doc)?;
    }
    report.receipt = receipt(ws, &id, me, mint, &folded)?;
    Ok((doc, report))
}

/// Syncs the events about a project (`p-<slug>`) or `workspace`: comments are receipted,
/// findings and answers materialise notes, questions wait for their answers; task-only kinds
/// are rejected `wrong_target`. The caller holds the project lock (or `config.lock`).
#[allow(clippy::too_many_arguments, reason = "mirrors sync_task")]
pub fn sync_other(
    ws: &Workspace,
    journal: &Journal,
    about: &str,
    me: &str,
    mint: Mint<'_>,
    decline: &[String],
    dry_run: bool,
) -> Result<Synced, objects::Error> {
    let mut folded = Folded::default();
    for ev in journal.pending_about(about) {
        if decline.contains(&ev.id) {
            folded.rejected.push((ev.id.clone(), "declined".into()));
            continue;
        }
        match ev.kind.as_str() {
            "comment" => folded.applied.push(ev.id.clone()),
            "finding" => {
                folded.notes.push(ev.id.clone());
                folded.applied.push(ev.id.clone());
            }
            "help" => {
                let answered = journal
                    .events
                    .iter()
                    .any(|e| e.kind == "answer" && e.field_str("question") == Some(&ev.id));
                if !answered {
                    folded.waiting.push((ev.id.clone(), "open_question"));
                }
            }
            "answer" => {
                if ev.field_str("as") != Some("none") {
                    folded.notes.push(ev.id.clone());
                }
                folded.applied.push(ev.id.clone());
                if let Some(q) = ev.field_str("question") {
                    folded.applied.push(q.to_string());
                }
            }
            k if crate::model::event::is_mailbox(k) => {
                folded.rejected.push((ev.id.clone(), "wrong_target".into()));
            }
            _ => folded.waiting.push((ev.id.clone(), "unknown_kind")),
        }
    }
    let mut report = report_of(about, &folded);
    if dry_run {
        return Ok(report);
    }
    let project = about.strip_prefix("p-");
    report.notes = materialise_notes(ws, journal, &folded, project)?;
    report.receipt = receipt(ws, about, me, mint, &folded)?;
    Ok(report)
}

fn report_of(about: &str, f: &Folded) -> Synced {
    Synced {
        about: about.to_string(),
        applied: f.applied.clone(),
        rejected: f
            .rejected
            .iter()
            .map(|(id, reason)| Rejected {
                id: id.clone(),
                reason: reason.clone(),
            })
            .collect(),
        pending: f
            .waiting
            .iter()
            .map(|(id, why)| Waiting {
                id: id.clone(),
                why: why.to_string(),
            })
            .collect(),
        notes: f.notes.iter().map(|id| format!("n-{id}")).collect(),
        receipt: None,
        warnings: Vec::new(),
    }
}

/// Writes the notes the folded events carry. Project-scope notes go to `project` (the
/// project of the object); workspace-scope ones to `notes/`.
fn materialise_notes(
    ws: &Workspace,
    journal: &Journal,
    folded: &Folded,
    project: Option<&str>,
) -> Result<Vec<String>, objects::Error> {
    let mut out = Vec::new();
    for id in &folded.notes {
        let Some(ev) = journal.get(id) else { continue };
        let Some(mut note) = materialise(ev) else {
            continue;
        };
        if ev.kind == "answer" && crate::model::taskdoc::title_of(&note.body).is_none() {
            // Answers written by hand may lack a heading; the title still has a default.
            let question = ev
                .field_str("question")
                .and_then(|q| journal.get(q))
                .map(|q| q.summary())
                .unwrap_or_default();
            note.title = format!("Answer: {question}");
        }
        let dir = crate::model::note::dir_of(&note.kind).unwrap_or("findings");
        let target = if note.scope == "workspace" {
            None
        } else {
            project
        };
        let doc = Document::new(note.front.clone(), note.body.clone());
        notes::create(ws, target, dir, &note.id, &note.title, &doc)?;
        out.push(note.id);
    }
    Ok(out)
}

/// Writes the receipt (an `applied` event about the object) when anything was settled.
fn receipt(
    ws: &Workspace,
    about: &str,
    me: &str,
    mint: Mint<'_>,
    folded: &Folded,
) -> Result<Option<String>, objects::Error> {
    if folded.applied.is_empty() && folded.rejected.is_empty() {
        return Ok(None);
    }
    let mut applied = Array::new();
    for id in &folded.applied {
        applied.push(id.as_str());
    }
    let mut rejected = Array::new();
    for (id, reason) in &folded.rejected {
        let mut t = InlineTable::new();
        t.insert("id", Value::from(id.as_str()));
        t.insert("reason", Value::from(reason.as_str()));
        rejected.push(Value::InlineTable(t));
    }
    let ev = append(
        ws,
        NewEvent {
            id: mint(),
            kind: "applied",
            created_by: me,
            about: Some(about),
            fields: vec![
                ("applied", value(applied)),
                ("rejected", Item::Value(Value::Array(rejected))),
            ],
            body: String::new(),
        },
    )?;
    Ok(Some(ev.envelope.id))
}

/// Which objects a sync covers.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Only this object: a task id, `p-<slug>` or `workspace`.
    pub about: Option<String>,
    pub decline: Vec<String>,
    pub dry_run: bool,
}

/// The whole sync of COMMANDS.md §7: every object `me` owns (root also those of retired or
/// missing owners, and `workspace`), each under its own lock, re-read after locking.
/// Objects with no pending events are skipped. Returns one report per object touched and the
/// number of objects with pending events that `me` does not own.
pub fn sync_all(
    ws: &Workspace,
    me: &str,
    mint: Mint<'_>,
    passes: &dyn Fn(&crate::model::dod::DodFacts) -> bool,
    scope: &Scope,
) -> Result<(Vec<Synced>, usize), objects::Error> {
    use crate::model::agent::AgentStatus;
    use crate::model::id::ROOT_AGENT;
    let is_root = me == ROOT_AGENT;
    let owner_gone = |owner: &str| -> bool {
        match objects::agents::load(ws, owner) {
            Ok(a) => a.status == AgentStatus::Retired,
            Err(_) => true,
        }
    };
    // Which objects have pending events, and who owns each task, come from the indexes: a
    // sync reads in full only the tasks it syncs and their own events.
    let events = super::index::read(ws)?;
    let mut out = Vec::new();
    let mut not_owned = 0;
    let slugs: Vec<String> = objects::projects::list(ws)?
        .items
        .into_iter()
        .map(|p| p.slug)
        .collect();
    let mut entries = Vec::new();
    for slug in &slugs {
        entries.extend(objects::index::tasks(ws, slug)?.items);
    }
    let mut pending_abouts: Vec<String> = events
        .entries
        .iter()
        .filter(|e| events.is_pending(e))
        .filter_map(|e| e.about().map(str::to_string))
        .collect();
    pending_abouts.sort();
    pending_abouts.dedup();
    for about in pending_abouts {
        if scope.about.as_ref().is_some_and(|a| a != &about) {
            continue;
        }
        if let Some(t) = entries.iter().find(|e| e.id() == about) {
            let owner = t.owner();
            if owner != me && !(is_root && owner_gone(owner)) {
                not_owned += 1;
                continue;
            }
            let ulid = about.trim_start_matches("t-");
            let _lock = ws.fs.lock(&ws.lock_path(&format!("task-{ulid}")))?;
            let task = tasks::reload(ws, t.project(), &about)?;
            // Read again under the lock: events appended since the listing count.
            let events = super::index::read(ws)?;
            let journal = super::snapshot::task_journal(ws, &events, &about)?;
            let notes = objects::index::notes(ws, &slugs)?.items;
            let has_note = |about: &str, kind: &str| {
                notes
                    .iter()
                    .any(|n| n.about() == Some(about) && (kind == "any" || n.kind() == kind))
            };
            let snapshot = task.clone();
            let (_, report) = sync_task(
                ws,
                &journal,
                &task,
                me,
                mint,
                &mut |d: &TaskDoc| {
                    passes(&super::fold::dod_facts_with(
                        ws, &journal, &has_note, &snapshot, d,
                    ))
                },
                &scope.decline,
                scope.dry_run,
            )?;
            out.push(Synced {
                warnings: journal.warnings.clone(),
                ..report
            });
        } else if let Some(slug) = about.strip_prefix("p-") {
            let owner = objects::projects::list(ws)?
                .items
                .into_iter()
                .find(|p| p.slug == slug)
                .map(|p| p.owner);
            let Some(owner) = owner else {
                continue;
            };
            if owner != me && !(is_root && owner_gone(&owner)) {
                not_owned += 1;
                continue;
            }
            let _lock = ws.fs.lock(&ws.lock_path(&format!("project-{slug}")))?;
            let journal = super::read(ws)?;
            out.push(sync_other(
                ws,
                &journal,
                &about,
                me,
                mint,
                &scope.decline,
                scope.dry_run,
            )?);
        } else if about == "workspace" {
            if !is_root {
                not_owned += 1;
                continue;
            }
            let _lock = ws.fs.lock(&ws.lock_path("config"))?;
            let journal = super::read(ws)?;
            out.push(sync_other(
                ws,
                &journal,
                &about,
                me,
                mint,
                &scope.decline,
                scope.dry_run,
            )?);
        }
    }
    Ok((out, not_owned))
}
