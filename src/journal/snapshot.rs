//! The folded view of the workspace through the derived index: every task as its index
//! extract, the event log as index entries, and, read in full, only the tasks that pending
//! events change, folded exactly as [`super::view::World`] folds them. Reads that need a few
//! fields of every task (status, listings) use this instead of parsing every file.
//!
//! Invariant: for every task, [`Snapshot::summary`] equals what `World::summary` gives for
//! the same workspace, and the warnings are the same files in the same order.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::model::dod::DodFacts;
use crate::model::event::EventHead;
use crate::model::task::{Estimate, PlanTask, Status, TaskRef};
use crate::model::taskdoc::TaskDoc;
use crate::objects::index::{self, NoteEntry, TaskEntry};
use crate::objects::{self, projects, tasks};
use crate::store::Problem;
use crate::workspace::Workspace;

use super::Journal;
use super::fold::{Folded, dod_facts_with, fold_task};
use super::folds::View;
use super::index::{EventEntry, Events};
use super::view::{Acceptance, EstimateView, TaskSummary};

/// Every task (index entries), the event log, and the tasks pending events change, folded.
pub struct Snapshot {
    /// Every task of every project: projects by slug, tasks by number then id.
    pub tasks: Vec<Arc<TaskEntry>>,
    pub events: Events,
    /// The notes, read only when needed ([`Snapshot::load_notes`]): a fold needs them only
    /// to judge a pending finish request's definition of done.
    pub notes: Vec<Arc<NoteEntry>>,
    /// The projects whose notes [`Snapshot::load_notes`] reads; `None` once read.
    notes_of: Option<Vec<String>>,
    /// The tasks whose pending events change what a reader sees (anything but comments and
    /// findings), read in full and folded, with what folding did. [`Snapshot::load_picked`]
    /// leaves out those whose view it found in `cache/folds.bin`.
    pub folded: BTreeMap<String, (tasks::Located, Folded)>,
    /// What readers see of every task pending events change: what the accessors answer.
    views: BTreeMap<String, View>,
    /// Pending events by the object they are about ([`Pending::by_object`]).
    pending: Arc<Pending>,
    /// The addresses of the folded tasks' entries: most tasks are not folded, and asking
    /// this set (a few integer comparisons, no hashing) is cheaper than a lookup by id for
    /// each of thousands of tasks.
    folded_at: BTreeSet<usize>,
    /// Files skipped while loading.
    pub warnings: Vec<Problem>,
}

impl Snapshot {
    /// Loads through the index and folds the tasks that have pending events. `passes` is the
    /// definition-of-done verdict used for finish requests.
    pub fn load(
        ws: &Workspace,
        passes: &dyn Fn(&DodFacts) -> bool,
    ) -> Result<Snapshot, objects::Error> {
        // A task moved by a writer between the listing and its fold is gone from where it
        // was listed: the snapshot is made again from a fresh listing.
        const ATTEMPTS: usize = 5;
        let mut attempt = 1;
        loop {
            match Snapshot::load_once(ws, passes) {
                Err(e) if e.is_vanished() && attempt < ATTEMPTS => attempt += 1,
                other => return other,
            }
        }
    }

    fn load_once(
        ws: &Workspace,
        passes: &dyn Fn(&DodFacts) -> bool,
    ) -> Result<Snapshot, objects::Error> {
        let listing = projects::list(ws)?;
        let mut warnings = listing.warnings;
        let mut all = Vec::new();
        for p in &listing.items {
            let t = index::tasks(ws, &p.slug)?;
            warnings.extend(t.warnings);
            all.extend(t.items);
        }
        let (mut snapshot, to_fold) = Snapshot::unfolded(ws, &listing.items, all, warnings)?;
        let changed: Vec<Arc<TaskEntry>> = snapshot
            .tasks
            .iter()
            .filter(|t| to_fold.contains(t.id()))
            .cloned()
            .collect();
        let related = snapshot.events.derived(Related::of);
        for entry in changed {
            match snapshot.fold(ws, &entry, &related, passes) {
                Ok((folded, view)) => {
                    snapshot.folded_at.insert(address(&entry));
                    snapshot.views.insert(entry.id().to_string(), view);
                    snapshot.folded.insert(entry.id().to_string(), folded);
                }
                // Broken since it was indexed (rewritten in place): reported, shown unfolded.
                Err(objects::Error::Store(crate::store::Error::Malformed(p))) => {
                    snapshot.warnings.push(p);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(snapshot)
    }

    /// A snapshot of `tasks` with the notes and the event log of `projects`, nothing folded
    /// yet; and the ids of the tasks pending events change.
    fn unfolded(
        ws: &Workspace,
        projects: &[crate::model::project::ProjectHead],
        tasks: Vec<Arc<TaskEntry>>,
        mut warnings: Vec<Problem>,
    ) -> Result<(Snapshot, BTreeSet<String>), objects::Error> {
        let slugs: Vec<String> = projects.iter().map(|p| p.slug.clone()).collect();
        let events = super::index::read(ws)?;
        warnings.extend(events.warnings.iter().cloned());
        let derived = events.derived(pending_of);
        let (pending, to_fold, finishing) = (
            Arc::clone(&derived),
            derived.to_fold.clone(),
            derived.finishing,
        );
        let mut snapshot = Snapshot {
            tasks,
            events,
            notes: Vec::new(),
            notes_of: Some(slugs),
            folded: BTreeMap::new(),
            views: BTreeMap::new(),
            pending,
            folded_at: BTreeSet::new(),
            warnings,
        };
        if finishing {
            snapshot.load_notes(ws)?;
        }
        Ok((snapshot, to_fold))
    }

    /// Reads the notes (once), reporting the files skipped: before anything reads
    /// [`Snapshot::notes`].
    pub fn load_notes(&mut self, ws: &Workspace) -> Result<(), objects::Error> {
        if let Some(slugs) = self.notes_of.take() {
            let notes = index::notes(ws, &slugs)?;
            self.warnings.extend(notes.warnings);
            self.notes = notes.items;
        }
        Ok(())
    }

    /// A snapshot holding only some tasks: those `pick` accepts (given the project, the
    /// folded status and the folded assignee), after the task `after` when given, `limit`
    /// at most; tasks pending events change are folded as [`Snapshot::load`] folds them.
    /// The tasks whose ids `wanted` names (given the event log) are looked up too, kept or
    /// not, in [`Picked::by_id`].
    /// Projects whose rows are current ([`objects::rows`]) are walked row by row and only
    /// the kept entries read. `None` when a rows file failed a check mid-way: the caller
    /// loads the whole snapshot instead.
    pub fn load_picked(
        ws: &Workspace,
        passes: &dyn Fn(&DodFacts) -> bool,
        mut pick: Option<&mut Pick<'_>>,
        after: Option<&str>,
        limit: Option<usize>,
        wanted: &dyn Fn(&Events) -> BTreeSet<String>,
        folds: Folds,
    ) -> Result<Option<Picked>, objects::Error> {
        use crate::objects::lookup::{ProjectTasks, id_hash};
        let listing = projects::list(ws)?;
        // The event log first: which tasks its pending events change decides what is folded.
        let slugs: Vec<String> = listing.items.iter().map(|p| p.slug.clone()).collect();
        let (mut snapshot, mut to_fold) =
            Snapshot::unfolded(ws, &listing.items, Vec::new(), Vec::new())?;
        // The warnings in the order of a plain load: projects, tasks, then the event log's.
        let mut warnings = listing.warnings;
        let mut loaded = Vec::new();
        for slug in slugs {
            let (tasks, found) = ProjectTasks::load(ws, &slug)?;
            warnings.extend(found);
            loaded.push((slug, tasks));
        }
        warnings.append(&mut snapshot.warnings);
        snapshot.warnings = warnings;
        if folds == Folds::DoneOnly {
            let events = &snapshot.events;
            to_fold = events
                .entries
                .iter()
                .filter(|e| events.is_pending(e))
                .filter(|e| matches!(e.kind(), "finish" | "propose-status"))
                .filter_map(|e| e.about().map(str::to_string))
                .collect();
        }
        // The tasks to fold, found by the hashes of their ids, then read and folded.
        // Hashes, asked of each of thousands of rows: cheaper than a set of ids.
        let fold_hashes = crate::objects::lookup::sorted(to_fold.iter().map(|id| id_hash(id)));
        let wanted = wanted(&snapshot.events);
        // What the walks below ask of every task, read once; not at all by a caller picking
        // nothing with nothing to fold or look up (`task add`, at ten thousand rows).
        let walked = pick.is_some() || !fold_hashes.is_empty() || !wanted.is_empty();
        let walks: Vec<Vec<crate::objects::lookup::Walked<'_>>> = loaded
            .iter()
            .map(|(_, tasks)| if walked { tasks.walk() } else { Vec::new() })
            .collect();
        let mut changed: BTreeMap<(usize, usize), Arc<TaskEntry>> = BTreeMap::new();
        for (p, (_, tasks)) in loaded.iter().enumerate() {
            for (at, row) in walks[p].iter().enumerate() {
                if !fold_hashes.contains(row.id_hash) {
                    continue;
                }
                let item = tasks.item(at);
                let Some(entry) = item.entry() else {
                    return Ok(None);
                };
                if to_fold.contains(entry.id()) {
                    changed.insert((p, at), entry);
                }
            }
        }
        // Which events bear on which task: made only when a task is folded.
        let related = (!changed.is_empty()).then(|| snapshot.events.derived(Related::of));
        for entry in changed.values() {
            let Some(related) = &related else { break };
            let id = entry.id();
            match snapshot.fold(ws, entry, related, passes) {
                Ok((folded, view)) => {
                    snapshot.folded_at.insert(address(entry));
                    snapshot.views.insert(id.to_string(), view);
                    snapshot.folded.insert(id.to_string(), folded);
                }
                Err(objects::Error::Store(crate::store::Error::Malformed(p))) => {
                    snapshot.warnings.push(p);
                }
                Err(e) => return Err(e),
            }
        }
        let after_hash = after.map(id_hash);
        let wanted_hashes = crate::objects::lookup::sorted(wanted.iter().map(|id| id_hash(id)));
        let mut picked = Picked {
            total: 0,
            by_id: BTreeMap::new(),
            projects: Vec::new(),
            after_found: after.is_none(),
            snap: Snapshot {
                tasks: Vec::new(),
                ..snapshot
            },
        };
        let snap = &mut picked.snap;
        // Positions to read, by project; folded tasks are already read.
        let mut kept: Vec<Vec<usize>> = vec![Vec::new(); loaded.len()];
        let mut looked_up: Vec<Vec<usize>> = vec![Vec::new(); loaded.len()];
        let mut order: Vec<(usize, usize)> = Vec::new();
        for (p, (slug, tasks)) in loaded.iter().enumerate() {
            // The changed tasks of this project, met in order as the walk goes.
            let mut next_changed = changed.range((p, 0)..(p + 1, 0)).peekable();
            for (at, row) in walks[p].iter().enumerate() {
                let folded = next_changed
                    .next_if(|((_, c), _)| *c == at)
                    .map(|(_, e)| e)
                    .filter(|e| snap.folded_at.contains(&address(e)));
                if let Some(e) = folded {
                    // Every folded task is found by id: a caller judging tasks by their
                    // folded fields must see those the fold changed.
                    picked.by_id.insert(e.id().to_string(), Arc::clone(e));
                } else if wanted_hashes.contains(row.id_hash) {
                    looked_up[p].push(at);
                }
                let (status, assignee) = match folded.and_then(|e| snap.views.get(e.id())) {
                    Some(v) => (v.entry.status(), v.entry.assignee()),
                    None => (row.status, row.assignee),
                };
                if !pick
                    .as_mut()
                    .is_some_and(|pick| pick(slug, status, assignee))
                {
                    continue;
                }
                picked.total += 1;
                if !picked.after_found {
                    if after_hash == Some(row.id_hash) {
                        let Some(entry) = tasks.item(at).entry() else {
                            return Ok(None);
                        };
                        picked.after_found = Some(entry.id()) == after;
                    }
                    continue;
                }
                if limit.is_some_and(|l| order.len() >= l) {
                    continue;
                }
                if folded.is_none() {
                    kept[p].push(at);
                }
                order.push((p, at));
            }
        }
        let mut read: BTreeMap<(usize, usize), Arc<TaskEntry>> = BTreeMap::new();
        for (p, (_, tasks)) in loaded.iter().enumerate() {
            for ats in [&kept[p], &looked_up[p]] {
                let Some(found) = tasks.entries(ats) else {
                    return Ok(None);
                };
                read.extend(ats.iter().map(|&at| (p, at)).zip(found));
            }
        }
        let looked: BTreeSet<(usize, usize)> = looked_up
            .iter()
            .enumerate()
            .flat_map(|(p, ats)| ats.iter().map(move |&at| (p, at)))
            .collect();
        for (key, entry) in &read {
            if looked.contains(key) && wanted.contains(entry.id()) {
                picked
                    .by_id
                    .insert(entry.id().to_string(), Arc::clone(entry));
            }
        }
        for key in order {
            let entry = match changed
                .get(&key)
                .filter(|e| snap.folded_at.contains(&address(e)))
            {
                Some(e) => Arc::clone(e),
                None => match read.get(&key) {
                    Some(e) => Arc::clone(e),
                    None => return Ok(None),
                },
            };
            snap.tasks.push(entry);
        }
        picked.projects = loaded;
        Ok(Some(picked))
    }

    /// Reads one task in full and applies its pending events, as `fold_all` does with the
    /// whole journal: the partial journal holds every event the fold and the definition of
    /// done look at for this task (its pending events, answers to its questions, its runs).
    fn fold(
        &mut self,
        ws: &Workspace,
        entry: &TaskEntry,
        index: &Related,
        passes: &dyn Fn(&DodFacts) -> bool,
    ) -> Result<((tasks::Located, Folded), View), objects::Error> {
        let id = entry.id();
        let path = ws.dir().join(entry.file());
        let mut task = tasks::read_one(ws, entry.project(), entry.folder(), path)?;
        let mut journal = journal_with(ws, &self.events, index, id)?;
        self.warnings.append(&mut journal.warnings);
        let pending: Vec<&EventHead> = journal.pending_about(id).collect();
        let notes = &self.notes;
        let has_note = |about: &str, kind: &str| {
            notes
                .iter()
                .any(|n| n.about() == Some(about) && (kind == "any" || n.kind() == kind))
        };
        let before = task.clone();
        let mut doc = task.doc.clone();
        let folded = fold_task(&mut doc, &pending, &journal, &mut |d: &TaskDoc| {
            passes(&dod_facts_with(ws, &journal, &has_note, &before, d))
        });
        task.doc = doc;
        let view = View::of(entry, &task.doc, &folded);
        Ok(((task, folded), view))
    }

    /// The folded document of a task that pending events change.
    pub fn doc(&self, id: &str) -> Option<&TaskDoc> {
        self.folded.get(id).map(|(t, _)| &t.doc)
    }

    /// True when pending events change task `id` (its accessors answer with their fold),
    /// whether or not [`Snapshot::doc`] holds its document.
    pub fn is_folded(&self, id: &str) -> bool {
        self.views.contains_key(id)
    }

    /// The entry the accessors read for an entry of `tasks`: its folded view when pending
    /// events change it, else itself. Its identity (project, id, number, slug) is the
    /// entry's own.
    pub fn shown<'a>(&'a self, t: &'a TaskEntry) -> &'a TaskEntry {
        if self.folded_at.contains(&address(t))
            && let Some(v) = self.views.get(t.id())
        {
            &v.entry
        } else {
            t
        }
    }

    /// The task with this id.
    pub fn task(&self, id: &str) -> Option<&Arc<TaskEntry>> {
        self.tasks.iter().find(|t| t.id() == id)
    }

    /// Resolves a task reference in any FORMAT §3.3 form.
    pub fn resolve(&self, reference: &str) -> Result<&Arc<TaskEntry>, tasks::ResolveError> {
        tasks::resolve_keys(&self.tasks, reference)
    }

    /// The notice a reader shows when `reference` resolved by the merge rule (a number two
    /// tasks share after a merge, or a handle whose number a merge changed), if it did.
    pub fn resolve_notice(&self, reference: &str) -> Option<String> {
        tasks::resolve_noted(&self.tasks, reference, |p| {
            self.tasks.iter().any(|t| t.project() == p)
        })
        .1
    }

    /// [`Snapshot::resolve`], except that a reference only an unreadable task file answers is
    /// that file's problem ([`tasks::ResolveError::Malformed`]), as [`super::view::World`]
    /// answers it.
    pub fn resolve_reported(
        &self,
        reference: &str,
    ) -> Result<&Arc<TaskEntry>, tasks::ResolveError> {
        match self.resolve(reference) {
            Err(tasks::ResolveError::NotFound { .. } | tasks::ResolveError::NoProject { .. })
                if let Some(p) = tasks::unreadable_match(&self.warnings, reference) =>
            {
                Err(tasks::ResolveError::Malformed(p))
            }
            other => other,
        }
    }

    /// The folded owner.
    pub fn owner<'a>(&'a self, t: &'a TaskEntry) -> &'a str {
        self.shown(t).owner()
    }

    /// The folded status.
    pub fn status(&self, t: &TaskEntry) -> Status {
        self.shown(t).status()
    }

    /// The folded assignee.
    pub fn assignee<'a>(&'a self, t: &'a TaskEntry) -> Option<&'a str> {
        self.shown(t).assignee()
    }

    /// The folded title as a `TaskRef` shows it.
    pub fn task_ref(&self, t: &TaskEntry) -> TaskRef {
        self.shown(t).task_ref()
    }

    /// When an active task became active: the last Log line that made it so.
    pub fn active_since(&self, t: &TaskEntry) -> Option<String> {
        self.shown(t).active_since().map(str::to_string)
    }

    /// Pending events about an object.
    pub fn pending_count(&self, id: &str) -> usize {
        self.pending.by_object.get(id).copied().unwrap_or(0)
    }

    /// The `TaskSummary` of a task, folded.
    pub fn summary(&self, t: &TaskEntry) -> TaskSummary {
        let shown = self.shown(t);
        TaskSummary {
            task: shown.task_ref(),
            status: shown.status(),
            priority: shown.priority().to_string(),
            owner: shown.owner().to_string(),
            assignee: shown.assignee().map(str::to_string),
            acceptance: Acceptance {
                checked: shown.checked(),
                total: shown.criteria(),
            },
            estimate: shown.estimate().map(|[o, p, q]| {
                EstimateView::of(Estimate {
                    optimistic: o,
                    probable: p,
                    pessimistic: q,
                })
            }),
            tags: shown.tags().into_iter().map(str::to_string).collect(),
            pending: self.pending_count(t.id()),
            finish_requested: self.views.get(t.id()).is_some_and(|v| v.finish_requested),
        }
    }

    /// The planning view of every task, index for index with `tasks`.
    pub fn plan_tasks(&self) -> Vec<PlanTask> {
        self.tasks
            .iter()
            .map(|t| {
                let shown = self.shown(t);
                PlanTask {
                    id: t.id().to_string(),
                    project: t.project().to_string(),
                    number: t.number(),
                    status: shown.status(),
                    assignee: shown.assignee().map(str::to_string),
                    priority: shown.priority().to_string(),
                    parent: shown.parent().map(str::to_string),
                    depends_on: shown
                        .depends_on()
                        .iter()
                        .map(|(on, kind)| crate::model::task::Dependency {
                            on: on.to_string(),
                            kind: kind.to_string(),
                        })
                        .collect(),
                    estimate: shown.estimate().map(|[o, p, q]| Estimate {
                        optimistic: o,
                        probable: p,
                        pessimistic: q,
                    }),
                }
            })
            .collect()
    }
}

/// Pending events by the object they are about, and the tasks they change. A pending
/// comment or finding only adds a Log line (and a note): no field a summary, a count or a
/// plan shows. Only tasks with other pending events are read and folded.
fn pending_of(events: &Events) -> Pending {
    let mut by_object: BTreeMap<String, usize> = BTreeMap::new();
    let mut to_fold: BTreeSet<String> = BTreeSet::new();
    let mut finishing = false;
    for e in events.entries.iter().filter(|e| events.is_pending(e)) {
        finishing |= e.kind() == "finish";
        if let Some(about) = &e.about() {
            *by_object.entry(about.to_string()).or_default() += 1;
            if !matches!(e.kind(), "comment" | "finding") {
                to_fold.insert(about.to_string());
            }
        }
    }
    Pending {
        by_object,
        to_fold,
        finishing,
    }
}

/// The pending events of a settled log ([`pending_of`]).
struct Pending {
    /// Pending events by the object they are about.
    by_object: BTreeMap<String, usize>,
    /// The tasks they change.
    to_fold: BTreeSet<String>,
    /// Whether a finish request is among them.
    finishing: bool,
}

/// Whether [`Snapshot::load_picked`] keeps a task, given its project, folded status and
/// folded assignee; called for every task, in walking order.
pub type Pick<'a> = dyn FnMut(&str, Status, Option<&str>) -> bool + 'a;

/// Which tasks [`Snapshot::load_picked`] folds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Folds {
    /// Every task pending events change, as [`Snapshot::load`].
    All,
    /// Only tasks a pending event may make done or not done (`finish`, `propose-status`):
    /// for a caller that judges nothing but whether tasks are done, and their titles,
    /// which no event changes.
    DoneOnly,
}

/// What [`Snapshot::load_picked`] kept.
pub struct Picked {
    /// The kept tasks in `tasks`, in listing order; folds of every changed task.
    pub snap: Snapshot,
    /// How many tasks `pick` accepted, before `after` and `limit` were applied.
    pub total: usize,
    /// The wanted tasks found and every folded task, by id (folded ones are the entries
    /// the snapshot folded, so that its folded accessors apply to them).
    pub by_id: BTreeMap<String, Arc<TaskEntry>>,
    /// Each project's tasks as walked (rows, or the listing where rows were not current).
    pub projects: Vec<(String, crate::objects::lookup::ProjectTasks)>,
    /// Whether the task `after` was among them (always true without one).
    pub after_found: bool,
}

/// The address of an entry, which identifies it among the entries of one snapshot.
/// The part of the log that folding task `id` and judging its definition of done look at,
/// read in full through the index: its pending events, the answers to its pending questions
/// and its runs. Files that no longer parse are in the journal's `warnings`. A per-task
/// command needs this much, not every event of the log.
pub fn task_journal(ws: &Workspace, events: &Events, id: &str) -> Result<Journal, objects::Error> {
    journal_with(ws, events, &events.derived(Related::of), id)
}

/// The events [`journal_with`] reads for task `id`, in the order it reads them.
fn journal_entries<'e>(events: &'e Events, index: &Related, id: &str) -> Vec<&'e EventEntry> {
    let entries = &events.entries;
    let mine: Vec<&EventEntry> = index
        .pending
        .get(id)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .map(|&i| &entries[i])
        .collect();
    let mut related: Vec<usize> = mine
        .iter()
        .filter(|e| e.kind() == "help")
        .filter_map(|e| index.answers.get(e.id()))
        .chain(index.runs.get(id))
        .flatten()
        .copied()
        .collect();
    related.sort_unstable();
    related.dedup();
    mine.into_iter()
        .chain(related.into_iter().map(|i| &entries[i]))
        .collect()
}

fn journal_with(
    ws: &Workspace,
    events: &Events,
    index: &Related,
    id: &str,
) -> Result<Journal, objects::Error> {
    let mut heads: Vec<EventHead> = Vec::new();
    let mut warnings = Vec::new();
    // Answers to its questions and its runs follow its pending events, in log order as a
    // scan would meet them.
    for e in journal_entries(events, index, id) {
        match events.load(ws, e) {
            Ok(head) => heads.push(head),
            Err(objects::Error::Store(crate::store::Error::Malformed(p))) => warnings.push(p),
            Err(err) => return Err(err),
        }
    }
    heads.sort_by(|a, b| a.id.cmp(&b.id));
    heads.dedup_by(|a, b| a.id == b.id);
    Ok(Journal {
        events: heads,
        warnings,
        ..Journal::default()
    })
}

/// The events a fold looks at, by what they concern, as positions in the event listing (in
/// log order): found in one pass over the log instead of one pass per folded task.
struct Related {
    /// Pending events, by the object they are about.
    pending: HashMap<String, Vec<usize>>,
    /// `answer` events, by the question they answer.
    answers: HashMap<String, Vec<usize>>,
    /// `run` events, by task.
    runs: HashMap<String, Vec<usize>>,
}

impl Related {
    fn of(events: &Events) -> Related {
        let mut r = Related {
            pending: HashMap::new(),
            answers: HashMap::new(),
            runs: HashMap::new(),
        };
        for (i, e) in events.entries.iter().enumerate() {
            if let Some(about) = &e.about()
                && events.is_pending(e)
            {
                r.pending.entry(about.to_string()).or_default().push(i);
            }
            if e.kind() == "answer"
                && let Some(q) = &e.question()
            {
                r.answers.entry(q.to_string()).or_default().push(i);
            }
            if e.kind() == "run"
                && let Some(t) = &e.task()
            {
                r.runs.entry(t.to_string()).or_default().push(i);
            }
        }
        r
    }
}

fn address(t: &TaskEntry) -> usize {
    std::ptr::from_ref(t) as usize
}
