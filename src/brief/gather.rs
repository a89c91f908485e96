//! Gathering the candidates of every section (spec/BRIEF.md §1, §5): the task and what is in
//! its scope, read through the derived index so that only the files a brief shows are parsed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::fence::{inert, label, quote};
use super::{Error, Reader};
use crate::journal::fold::fold_task;
use crate::journal::index::{EventEntry, Events};
use crate::journal::{EventState, Journal};
use crate::model::body::{section_items, section_text};
use crate::model::fields::Fields;
use crate::model::id::ROOT_AGENT;
use crate::model::role::shortcut_effect;
use crate::model::task::{Dependency, Status, TaskRef};
use crate::model::taskdoc::{ClaimTry, TaskDoc, title_of};
use crate::objects::index::{NoteEntry, TaskEntry, md_files};
use crate::objects::lookup::Lookup;
use crate::objects::note_digest::{self, Notes};
use crate::objects::{self, glossary, projects, risks, roles, warn_or_fail};
use crate::store::{Document, Problem};
use crate::workspace::Workspace;
use crate::workspace::names::check_slug;

/// How many recently done tasks of the project contribute their findings.
const RECENT_DONE: usize = 10;

/// One candidate of a section: a stable id and its Markdown block.
#[derive(Debug, Clone)]
pub(super) struct Item {
    pub id: String,
    pub text: String,
}

/// A section's candidates, ranked best first, with how the section renders.
#[derive(Debug, Clone)]
pub(super) struct Section {
    /// Stable name used in JSON and `--explain`.
    pub name: &'static str,
    pub heading: &'static str,
    /// What the items are called in omission notices ("findings").
    pub noun: &'static str,
    /// Whether the heading says "(k of n)".
    pub counted: bool,
    /// Between two items: a newline for lines, a blank line for blocks.
    pub joiner: &'static str,
    pub cap: Option<usize>,
    /// How a cut by cap says to see the rest (`dacli run --list`, or the MCP tool call).
    pub more: Option<String>,
    pub candidates: Vec<Item>,
    /// Superseded notes: never shown, reported by `--explain`.
    pub superseded: Vec<Item>,
}

impl Section {
    fn new(name: &'static str, heading: &'static str, noun: &'static str) -> Section {
        Section {
            name,
            heading,
            noun,
            counted: false,
            joiner: "\n",
            cap: None,
            more: None,
            candidates: Vec::new(),
            superseded: Vec::new(),
        }
    }

    fn blocks(mut self) -> Section {
        self.joiner = "\n\n";
        self
    }

    fn counted(mut self, cap: Option<usize>) -> Section {
        self.counted = true;
        self.cap = cap;
        self
    }
}

/// Everything a brief is laid out from.
pub(super) struct Material {
    pub task_ref: TaskRef,
    /// The task section, never trimmed.
    pub task_block: String,
    /// Sections 2–12 in priority order.
    pub sections: Vec<Section>,
    pub warnings: Vec<Problem>,
}

/// What the gatherers share: the workspace, the reader, the task and its surroundings.
struct Scope<'a> {
    ws: &'a Workspace,
    reader: &'a Reader,
    task: Arc<TaskEntry>,
    /// Every project's tasks, looked up by id, parent or reference: a brief names the
    /// object of every note, event and question it shows, and reads only those tasks.
    tasks: Lookup,
    /// Ancestors, nearest first.
    ancestors: Vec<Arc<TaskEntry>>,
    /// The task and its descendants (ids).
    subtree: BTreeSet<String>,
    /// The events about the task, its ancestors and its subtree, the pending ones and the
    /// answers to questions among them ([`crate::journal::digest::about`]).
    events: Events,
    /// Runs of each shortcut in the whole log.
    runs: BTreeMap<String, usize>,
    /// The notes the sections may show, sorted by id ([`Notes::select`]): at least every
    /// note each section looks for, perhaps more.
    notes: Vec<Arc<NoteEntry>>,
    superseded: BTreeSet<String>,
    /// The objects whose findings the brief shows ([`finding_targets`]).
    finding_about: BTreeSet<String>,
    /// The task's `depends_on` edges, as its folded document states them.
    deps: Vec<Dependency>,
    /// Note bodies read so far, by id: a note shown twice is read once.
    bodies: BTreeMap<String, String>,
    warnings: Vec<Problem>,
}

impl Scope<'_> {
    fn project_id(&self) -> String {
        format!("p-{}", self.task.project())
    }

    /// The first task listed with this id.
    fn entry(&self, id: &str) -> Result<Option<Arc<TaskEntry>>, Error> {
        Ok(self.tasks.by_id(self.ws, id, None)?)
    }

    /// How an object id is named inside the brief: a task by `<NNN>-<slug>`, anything else
    /// by its id.
    fn name_of(&self, about: Option<&str>) -> String {
        match about {
            // A task that cannot be looked up is named by its id, like any other object.
            Some(id) => self
                .entry(id)
                .ok()
                .flatten()
                .map_or_else(|| label(id), |t| t.short()),
            None => "workspace".to_string(),
        }
    }

    /// What a note is about, as the brief names it: its object, else its project (a note
    /// without `--about` is stored with scope `project`), else the workspace.
    fn subject_of(&self, about: Option<&str>, project: Option<&str>) -> String {
        match (about, project) {
            (None, Some(slug)) => format!("project {}", label(slug)),
            _ => self.name_of(about),
        }
    }

    /// The status of a task by id, from its folder; `None` when it cannot be found.
    fn status_of(&self, id: &str) -> Option<Status> {
        self.entry(id)
            .ok()
            .flatten()
            .and_then(|t| Status::parse(t.folder()))
    }

    /// A block of text by `who`: an attributed quote, or plain text when the reader wrote it
    /// (the reader's own notes are not quoted).
    fn block(&self, who: &str, details: &str, text: &str) -> String {
        if who == self.reader.id {
            format!(
                "**you** ({}):\n{}",
                label(details),
                inert(text.trim_matches('\n'))
            )
        } else {
            quote(who, &with_role(who, details), text)
        }
    }

    /// The body of a note; `None` (with a warning) when its file went bad since it was indexed.
    fn note_body(&mut self, note: &NoteEntry) -> Result<Option<String>, Error> {
        if let Some(body) = self.bodies.get(note.id()) {
            return Ok(Some(body.clone()));
        }
        let path = self.ws.dir().join(note.file());
        let read = objects::read_document(self.ws, &path);
        let Some(doc) = warn_or_fail(&mut self.warnings, read)? else {
            return Ok(None);
        };
        self.bodies.insert(note.id().to_string(), doc.body.clone());
        Ok(Some(doc.body))
    }
}

/// Reads what the brief of `reference` needs.
pub(super) fn gather(ws: &Workspace, reader: &Reader, reference: &str) -> Result<Material, Error> {
    let mut warnings = Vec::new();
    let listing = projects::list(ws)?;
    warnings.extend(listing.warnings);
    let slugs: Vec<String> = listing.items.iter().map(|p| p.slug.clone()).collect();
    let (tasks, listed) = Lookup::load(ws, &slugs)?;
    warnings.extend(listed);
    let task = tasks.resolve(ws, reference)?.map_err(Error::Resolve)?;
    let ancestors = ancestors_of(ws, &tasks, &task)?;
    let subtree = subtree_of(ws, &tasks, &task)?;
    // The events a brief can show are about the task, its ancestors or its subtree, or
    // pending (findings on siblings), or answers to questions among those.
    let mut subjects: BTreeSet<String> = subtree.clone();
    subjects.extend(ancestors.iter().map(|a| a.id().to_string()));
    let selection = crate::journal::digest::about(ws, &subjects)?;
    let events = selection.events;
    warnings.extend(events.warnings.iter().cloned());
    let notes = Notes::load(ws, &slugs)?;
    warnings.extend(notes.warnings.iter().cloned());
    let superseded = notes.superseded.clone();
    let mut scope = Scope {
        ws,
        reader,
        task,
        tasks,
        ancestors,
        subtree,
        events,
        runs: selection.runs,
        notes: Vec::new(),
        superseded,
        finding_about: BTreeSet::new(),
        deps: Vec::new(),
        bodies: BTreeMap::new(),
        warnings,
    };
    let doc = folded_task(&mut scope)?;
    scope.deps = doc.doc.depends_on();
    // The notes the sections can show, by subject: from the note digest, a few of them;
    // without it, every note (the sections filter by the notes' own fields either way).
    let project_slug = scope.task.project().to_string();
    let named: BTreeSet<&str> = notes
        .finding_subjects
        .get(&project_slug)
        .into_iter()
        .flatten()
        .map(String::as_str)
        .chain(pending_findings(&scope).filter_map(|e| e.about()))
        .collect();
    scope.finding_about = finding_targets(&scope, named)?;
    // What was found about a predecessor holds for the work that waits on it.
    let dep_ids: Vec<String> = scope.deps.iter().map(|d| d.on.clone()).collect();
    scope.finding_about.extend(dep_ids.iter().cloned());
    let mut wanted: BTreeSet<String> = BTreeSet::from([
        note_digest::workspace(),
        note_digest::project(&project_slug),
        note_digest::about(&scope.project_id()),
        note_digest::about(scope.task.id()),
    ]);
    wanted.extend(scope.ancestors.iter().map(|a| note_digest::about(a.id())));
    wanted.extend(dep_ids.iter().map(|d| note_digest::about(d)));
    wanted.extend(scope.finding_about.iter().map(|a| note_digest::about(a)));
    wanted.extend(pending_findings(&scope).map(|e| note_digest::id(&format!("n-{}", e.id()))));
    for target in wikilinks(&link_text(&doc)) {
        wanted.insert(note_digest::id(&target));
        wanted.insert(note_digest::stem(&target));
        wanted.insert(note_digest::id(&format!("n-{target}")));
    }
    scope.notes = notes.select(ws, &slugs, &wanted)?;
    let project_path = ws.path(&["projects", scope.task.project(), "project.md"]);
    let project = objects::read_document(ws, &project_path).map_err(objects::Error::from)?;
    let task_text = searchable(&doc);
    let mut sections = vec![
        dependencies(&scope),
        why(&scope, &project),
        out_of_scope(&project, &doc),
        constraints(&mut scope, &project)?,
        risk_section(&mut scope)?,
        glossary_section(&mut scope, &task_text)?,
        answers(&mut scope)?,
        lessons(&mut scope)?,
        findings(&mut scope)?,
    ];
    // A link to a note an earlier section already shows in full would print it twice; that
    // section outranks Linked, so trimming never keeps the link and drops the original.
    let shown: BTreeSet<String> = sections
        .iter()
        .flat_map(|s| s.candidates.iter().map(|i| i.id.clone()))
        .collect();
    sections.push(linked(&mut scope, &doc, &shown)?);
    sections.push(activity(&scope)?);
    sections.push(shortcuts(&mut scope)?);
    let mut task_ref = TaskRef {
        id: scope.task.id().to_string(),
        reference: scope.task.reference(),
        project: scope.project_id(),
        number: scope.task.number(),
        title: scope.task.title().to_string(),
    };
    if !doc.doc.title().is_empty() {
        task_ref.title = doc.doc.title().to_string();
    }
    Ok(Material {
        task_block: task_block(&scope, &doc),
        task_ref,
        sections,
        warnings: scope.warnings,
    })
}

fn ancestors_of(
    ws: &Workspace,
    tasks: &Lookup,
    task: &TaskEntry,
) -> Result<Vec<Arc<TaskEntry>>, Error> {
    let mut out: Vec<Arc<TaskEntry>> = Vec::new();
    let mut seen = BTreeSet::from([task.id().to_string()]);
    let mut next = task.parent().map(str::to_string);
    while let Some(id) = next {
        let Some(parent) = tasks.by_id(ws, &id, Some(task.project()))? else {
            break;
        };
        if !seen.insert(parent.id().to_string()) {
            break;
        }
        next = parent.parent().map(str::to_string);
        out.push(parent);
    }
    Ok(out)
}

/// The reader's task with its pending events applied in memory (FORMAT §14.3).
struct FoldedTask {
    doc: TaskDoc,
    finish_requested: bool,
    /// Pending claim events the fold refused: another agent held the task.
    refused: Vec<String>,
}

fn folded_task(scope: &mut Scope<'_>) -> Result<FoldedTask, Error> {
    let path = scope.ws.dir().join(scope.task.file());
    let file = objects::read_document(scope.ws, &path).map_err(objects::Error::from)?;
    let mut doc = TaskDoc {
        front: file.front,
        body: file.body,
        status: Status::parse(scope.task.folder()).unwrap_or(Status::Open),
    };
    let pending: Vec<&EventEntry> = scope
        .events
        .entries
        .iter()
        .filter(|e| e.about() == Some(scope.task.id()))
        .filter(|e| scope.events.is_pending(e))
        .collect();
    if pending.is_empty() {
        return Ok(FoldedTask {
            doc,
            finish_requested: false,
            refused: Vec::new(),
        });
    }
    let questions: BTreeSet<&str> = pending
        .iter()
        .filter(|e| e.kind() == "help")
        .map(|e| e.id())
        .collect();
    let answers =
        scope.events.entries.iter().filter(|e| {
            e.kind() == "answer" && e.question().is_some_and(|q| questions.contains(q))
        });
    let mut heads = Vec::new();
    for e in pending.iter().copied().chain(answers) {
        match scope.events.load(scope.ws, e) {
            Ok(head) => heads.push(head),
            Err(objects::Error::Store(crate::store::Error::Malformed(p))) => scope.warnings.push(p),
            Err(err) => return Err(err.into()),
        }
    }
    heads.sort_by(|a, b| a.id.cmp(&b.id));
    let mut journal = Journal::default();
    journal.events = heads.clone();
    let mine: Vec<_> = heads
        .iter()
        .filter(|h| h.about.as_deref() == Some(scope.task.id()))
        .collect();
    // The brief does not evaluate the definition of done: a finish request stays a request
    // and is shown as such.
    let folded = fold_task(&mut doc, &mine, &journal, &mut |_| false);
    Ok(FoldedTask {
        doc,
        finish_requested: folded.finish_requested(),
        refused: folded
            .rejected
            .into_iter()
            .filter(|(_, why)| why == "claimed")
            .map(|(id, _)| id)
            .collect(),
    })
}

/// The task text that glossary terms are looked for in, lower-cased.
fn searchable(t: &FoldedTask) -> String {
    let body = &t.doc.body;
    let mut text = t.doc.title().to_string();
    for name in ["So that", "Context", "Acceptance", "Out of scope"] {
        text.push('\n');
        text.push_str(section_text(body, name).unwrap_or(""));
    }
    text.to_lowercase()
}

fn task_block(scope: &Scope<'_>, t: &FoldedTask) -> String {
    let doc = &t.doc;
    let you = |id: &str| {
        if id == scope.reader.id {
            "you".to_string()
        } else {
            label(id)
        }
    };
    let mut meta = vec![format!("priority: {}", label(doc.priority()))];
    if let Ok(Some(e)) = doc.estimate() {
        meta.push(format!(
            "estimate {}/{}/{} (mean {:.1})",
            number(e.optimistic),
            number(e.probable),
            number(e.pessimistic),
            e.expected()
        ));
    }
    let status = if t.finish_requested {
        format!("status: {} (finish requested)", doc.status)
    } else {
        format!("status: {}", doc.status)
    };
    meta.push(status);
    meta.push(format!("owner: {}", you(doc.owner())));
    meta.push(format!(
        "assignee: {}",
        doc.assignee().map_or_else(|| "none".to_string(), you)
    ));
    let mut out = format!("# Task: {}\n{}", inert(doc.title()), meta.join(" · "));
    // The reader's latest claim of this task, and whether the owner refused it or would.
    let latest = scope
        .events
        .entries
        .iter()
        .filter(|e| e.kind() == "claim" && e.about() == Some(scope.task.id()))
        .filter(|e| e.created_by() == scope.reader.id)
        .max_by(|a, b| a.id().cmp(b.id()));
    let latest = latest.map(|e| ClaimTry {
        event: e.id(),
        at: e.created(),
        refused: t.refused.iter().any(|r| r == e.id())
            || matches!(scope.events.state(e), EventState::Rejected(r) if r == "claimed"),
    });
    if doc.claim_lost(&scope.reader.id, latest) {
        // The holder's id comes from a file any clone may have written: one plain word.
        let holder = doc
            .assignee()
            .map(label)
            .and_then(|h| h.split_whitespace().next().map(str::to_string))
            .unwrap_or_else(|| "another agent".to_string());
        out.push_str(&format!(
            "\n\n**Your claim lost:** {holder} claimed this task earlier, and the earlier \
             claim wins; this task is not yours. Next: stop working on it and pick another \
             task ({}).",
            (scope.reader.commands)("`dacli next`"),
        ));
    }
    for name in ["So that", "Context"] {
        if let Some(text) = section_text(&doc.body, name).filter(|t| !t.is_empty()) {
            out.push_str(&format!("\n\n## {name}\n{}", inert(text)));
        }
    }
    let criteria = doc.criteria();
    if !criteria.is_empty() {
        out.push_str("\n\n## Acceptance");
        for c in criteria {
            let mark = if c.checked { "x" } else { " " };
            out.push_str(&format!("\n- [{mark}] {}", inert(&c.text)));
        }
    }
    out
}

/// The task's predecessors with their state: what it waits on is part of what is in force.
/// A section of its own, right after the task, so a tight budget trims it last.
fn dependencies(scope: &Scope<'_>) -> Section {
    let mut s = Section::new("depends_on", "Depends on", "dependencies");
    for d in &scope.deps {
        s.candidates.push(Item {
            id: d.on.clone(),
            text: format!("- {}", dependency_line(scope, d)),
        });
    }
    s
}

/// One dependency with its state, judged as `task show` judges it: FS and FF wait for the
/// predecessor to be done, SS and SF for it to have started.
fn dependency_line(scope: &Scope<'_>, d: &Dependency) -> String {
    let status = scope.status_of(&d.on);
    let satisfied = match d.kind.as_str() {
        "FS" | "FF" => status == Some(Status::Done),
        _ => matches!(status, Some(Status::Active | Status::Done)),
    };
    let state = match (status, satisfied) {
        (None, _) => "missing task, not satisfied".to_string(),
        (Some(st), true) => format!("{st}, satisfied"),
        (Some(st), false) => format!("{st}, not yet satisfied"),
    };
    format!(
        "{} ({}): {state}",
        scope.name_of(Some(&d.on)),
        label(&d.kind)
    )
}

/// A number as written in an estimate: no decimals when it is whole.
fn number(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

fn why(scope: &Scope<'_>, project: &Document) -> Section {
    let mut s = Section::new("why", "Why", "why lines");
    let first_line = |name: &str| {
        section_text(&project.body, name)
            .and_then(|t| t.lines().find(|l| !l.trim().is_empty()))
            .map(|l| inert(l.trim()))
    };
    let goal = first_line("Goal").unwrap_or_else(|| inert(project.title().unwrap_or("")));
    s.candidates.push(Item {
        id: "goal".into(),
        text: format!("Project **{}**: {goal}", scope.task.project()),
    });
    if let Some(vision) = first_line("Vision") {
        s.candidates.push(Item {
            id: "vision".into(),
            text: format!("Vision: {vision}"),
        });
    }
    if !scope.ancestors.is_empty() {
        let mut chain: Vec<String> = scope.ancestors.iter().rev().map(|t| t.short()).collect();
        chain.push(format!("**{}**", scope.task.short()));
        s.candidates.push(Item {
            id: "chain".into(),
            text: format!("Chain: {}", chain.join(" → ")),
        });
    }
    s
}

fn out_of_scope(project: &Document, t: &FoldedTask) -> Section {
    let mut s = Section::new("out_of_scope", "Out of scope", "out-of-scope items");
    let mut seen = BTreeSet::new();
    let items = section_items(&project.body, "Out of scope")
        .into_iter()
        .map(|i| ("project", i))
        .chain(
            section_items(&t.doc.body, "Out of scope")
                .into_iter()
                .map(|i| ("task", i)),
        );
    for (n, (whose, item)) in items.enumerate() {
        if item.is_empty() || !seen.insert(item.to_lowercase()) {
            continue;
        }
        s.candidates.push(Item {
            id: format!("{whose}-{}", n + 1),
            text: format!("- {}", inert(&item)),
        });
    }
    s
}

fn constraints(scope: &mut Scope<'_>, project: &Document) -> Result<Section, Error> {
    let mut s = Section::new("constraints", "Constraints", "constraints")
        .blocks()
        .counted(Some(9));
    for (n, item) in section_items(&project.body, "Constraints")
        .into_iter()
        .enumerate()
    {
        s.candidates.push(Item {
            id: format!("constraint-{}", n + 1),
            text: format!("- {}", inert(&item)),
        });
    }
    // Scope groups: this task, its ancestors nearest first, the project, the workspace.
    let mut groups: BTreeMap<String, usize> = BTreeMap::new();
    groups.insert(scope.task.id().to_string(), 0);
    for (i, a) in scope.ancestors.iter().enumerate() {
        groups.insert(a.id().to_string(), i + 1);
    }
    // Decisions about a predecessor bind the work that builds on it: after the ancestors,
    // before the project.
    let dep_group = scope.ancestors.len() + 1;
    for d in &scope.deps {
        groups.entry(d.on.clone()).or_insert(dep_group);
    }
    let project_group = dep_group + 1;
    let project_id = scope.project_id();
    let mut decisions: Vec<(usize, Arc<NoteEntry>)> = scope
        .notes
        .iter()
        .filter(|n| n.kind() == "decision")
        .filter_map(|n| {
            let group = if n.scope() == "workspace" {
                project_group + 1
            } else if n.project() != Some(scope.task.project()) {
                return None;
            } else {
                match n.about() {
                    None => project_group,
                    Some(a) if a == project_id => project_group,
                    Some(a) => *groups.get(a)?,
                }
            };
            Some((group, n.clone()))
        })
        .collect();
    decisions.sort_by(|(ga, a), (gb, b)| {
        ga.cmp(gb)
            .then(b.created().cmp(a.created()))
            .then(b.id().cmp(a.id()))
    });
    for (_, note) in decisions {
        let Some(body) = scope.note_body(&note)? else {
            continue;
        };
        let text = decision_text(note.title(), &body);
        let on = scope.subject_of(note.about(), note.project());
        let details = format!("decision {}, on {on}", note.id());
        let item = Item {
            id: note.id().to_string(),
            text: scope.block(note.created_by(), &details, &text),
        };
        if scope.superseded.contains(note.id()) {
            s.superseded.push(item);
        } else {
            s.candidates.push(item);
        }
    }
    Ok(s)
}

/// A decision as its title, the text written with it (an answer's words, a note's body)
/// and Chose / Rejected / Because lines.
fn decision_text(title: &str, body: &str) -> String {
    let mut text = title.to_string();
    let lead = lead_text(body);
    if !lead.is_empty() {
        text.push_str(&format!("\n\n{lead}\n"));
    }
    for name in ["Chose", "Rejected", "Because"] {
        let part = section_text(body, name).unwrap_or("");
        if part.contains('\n') {
            text.push_str(&format!("\n{name}:\n{part}"));
        } else {
            text.push_str(&format!("\n{name}: {part}"));
        }
    }
    text
}

fn risk_section(scope: &mut Scope<'_>) -> Result<Section, Error> {
    let mut s = Section::new("risks", "Risks", "risks")
        .blocks()
        .counted(Some(9));
    let listing = risks::list(scope.ws, scope.task.project())?;
    scope.warnings.extend(listing.warnings);
    let mut open: Vec<_> = listing
        .items
        .into_iter()
        .filter(|r| r.risk.status == "open" && r.risk.rank() <= 2)
        .collect();
    open.sort_by(|a, b| {
        (a.risk.rank(), a.risk.created, &a.risk.id).cmp(&(
            b.risk.rank(),
            b.risk.created,
            &b.risk.id,
        ))
    });
    for r in open {
        let h = &r.risk;
        let mut text = format!(
            "**{}** (rank {}: impact {}, likelihood {})",
            inert(&label(&h.title)),
            h.rank(),
            h.impact,
            h.likelihood
        );
        if let Some(ind) = h.indicators.as_deref().filter(|i| !i.is_empty()) {
            text.push_str(&format!("\nIndicators:\n{}", inert(ind)));
        }
        s.candidates.push(Item {
            id: h.id.clone(),
            text,
        });
    }
    Ok(s)
}

fn glossary_section(scope: &mut Scope<'_>, task_text: &str) -> Result<Section, Error> {
    let mut s = Section::new("glossary", "Glossary", "glossary terms");
    let loaded = match glossary::load(scope.ws, scope.task.project()) {
        Ok(g) => g,
        Err(objects::Error::Store(crate::store::Error::Malformed(p))) => {
            scope.warnings.push(p);
            None
        }
        Err(e) => return Err(e.into()),
    };
    let Some(g) = loaded else {
        return Ok(s);
    };
    let entries = crate::model::glossary::entries(&g.doc.body);
    let (used, rest): (Vec<_>, Vec<_>) = entries
        .into_iter()
        .partition(|e| task_text.contains(&e.term.to_lowercase()));
    for e in used.into_iter().chain(rest) {
        s.candidates.push(Item {
            text: format!(
                "- **{}** — {}",
                inert(&label(&e.term)),
                inert(&e.definition)
            ),
            id: e.term,
        });
    }
    Ok(s)
}

fn answers(scope: &mut Scope<'_>) -> Result<Section, Error> {
    let mut s = Section::new("answers", "Answers", "answers")
        .blocks()
        .counted(None);
    let mut targets = vec![scope.task.id().to_string()];
    targets.extend(scope.ancestors.iter().map(|a| a.id().to_string()));
    let mut pairs: Vec<(usize, EventEntry, EventEntry)> = Vec::new();
    for help in scope.events.entries.iter().filter(|e| e.kind() == "help") {
        let Some(rank) = targets
            .iter()
            .position(|t| help.about() == Some(t.as_str()))
        else {
            continue;
        };
        let answer = scope
            .events
            .entries
            .iter()
            .find(|e| e.kind() == "answer" && e.question() == Some(help.id()));
        if let Some(a) = answer {
            pairs.push((rank, help.clone(), a.clone()));
        }
    }
    pairs.sort_by(|(ra, _, a), (rb, _, b)| ra.cmp(rb).then(b.id().cmp(a.id())));
    for (_, help, answer) in pairs {
        let (Some(q), Some(a)) = (load(scope, &help)?, load(scope, &answer)?) else {
            continue;
        };
        let on = scope.name_of(help.about());
        let how = answer.answer_as().unwrap_or("finding");
        let reply = match (how, title_of(&a.body)) {
            ("decision", Some(title)) => decision_text(title, &a.body),
            (_, Some(title)) => titled(title, &a.body),
            (_, None) => a.body.clone(),
        };
        let text = format!(
            "{}\n\n{}",
            scope.block(&q.created_by, &format!("asked on {on}"), &q.body),
            scope.block(&a.created_by, &format!("answered as {how}"), &reply)
        );
        s.candidates.push(Item {
            id: help.id().to_string(),
            text,
        });
    }
    Ok(s)
}

/// The whole event of an entry, or `None` (with a warning) when its file went bad.
fn load(
    scope: &mut Scope<'_>,
    e: &EventEntry,
) -> Result<Option<crate::model::event::EventHead>, Error> {
    match scope.events.load(scope.ws, e) {
        Ok(h) => Ok(Some(h)),
        Err(objects::Error::Store(crate::store::Error::Malformed(p))) => {
            scope.warnings.push(p);
            Ok(None)
        }
        Err(err) => Err(err.into()),
    }
}

fn lessons(scope: &mut Scope<'_>) -> Result<Section, Error> {
    let mut s = Section::new("lessons", "Lessons from other projects", "lessons")
        .blocks()
        .counted(Some(5));
    let mut notes: Vec<Arc<NoteEntry>> = scope
        .notes
        .iter()
        .filter(|n| n.scope() == "workspace" && n.kind() != "decision")
        .cloned()
        .collect();
    notes.sort_by(|a, b| b.created().cmp(a.created()).then(b.id().cmp(a.id())));
    for note in notes {
        let Some(body) = scope.note_body(&note)? else {
            continue;
        };
        let mut details = note.kind().to_string();
        if let Some(sev) = &note.severity() {
            details.push_str(&format!(", {sev}"));
        }
        let item = Item {
            id: note.id().to_string(),
            text: scope.block(note.created_by(), &details, &titled(note.title(), &body)),
        };
        if scope.superseded.contains(note.id()) {
            s.superseded.push(item);
        } else {
            s.candidates.push(item);
        }
    }
    Ok(s)
}

/// A finding candidate before rendering.
struct Finding {
    id: String,
    severity: String,
    created: String,
    author: String,
    about: Option<String>,
    project: Option<String>,
    title: String,
    body: String,
    pending: bool,
}

fn findings(scope: &mut Scope<'_>) -> Result<Section, Error> {
    let mut s = Section::new("findings", "What siblings found", "findings")
        .blocks()
        .counted(None);
    let project = scope.task.project().to_string();
    let about = scope.finding_about.clone();
    let mut found: Vec<Finding> = Vec::new();
    let notes: Vec<Arc<NoteEntry>> = scope
        .notes
        .iter()
        .filter(|n| n.kind() == "finding" && n.project() == Some(project.as_str()))
        .filter(|n| n.about().is_none_or(|a| about.contains(a)))
        .cloned()
        .collect();
    let mut superseded = Vec::new();
    for note in notes {
        let Some(body) = scope.note_body(&note)? else {
            continue;
        };
        let f = Finding {
            id: note.id().to_string(),
            severity: note.severity().unwrap_or_default().to_string(),
            created: note.created().to_string(),
            author: note.created_by().to_string(),
            about: note.about().map(str::to_string),
            project: note.project().map(str::to_string),
            title: note.title().to_string(),
            body,
            pending: false,
        };
        if scope.superseded.contains(note.id()) {
            superseded.push(f);
        } else {
            found.push(f);
        }
    }
    // Notes are sorted by id (index::notes): a pending finding's note, if made already, is
    // found by search, not by collecting every note id on each brief.
    let materialised = |event: &str| {
        let id = format!("n-{event}");
        scope
            .notes
            .binary_search_by(|n| n.id().cmp(id.as_str()))
            .is_ok()
    };
    let pending: Vec<EventEntry> = scope
        .events
        .entries
        .iter()
        .filter(|e| e.kind() == "finding" && scope.events.is_pending(e))
        .filter(|e| e.scope() != Some("workspace"))
        .filter(|e| e.about().is_some_and(|a| about.contains(a)))
        .filter(|e| !materialised(e.id()))
        .cloned()
        .collect();
    for e in pending {
        let Some(head) = load(scope, &e)? else {
            continue;
        };
        found.push(Finding {
            id: format!("n-{}", e.id()),
            severity: e.severity().unwrap_or_default().to_string(),
            created: e.created().to_string(),
            author: e.created_by().to_string(),
            about: e.about().map(str::to_string),
            project: None,
            title: title_of(&head.body)
                .map(str::to_string)
                .or(e.title().map(str::to_string))
                .unwrap_or_default(),
            body: head.body,
            pending: true,
        });
    }
    found.sort_by(|a, b| {
        severity_rank(&a.severity)
            .cmp(&severity_rank(&b.severity))
            .then(b.created.cmp(&a.created))
            .then(b.id.cmp(&a.id))
    });
    for (list, f) in found
        .iter()
        .map(|f| (false, f))
        .chain(superseded.iter().map(|f| (true, f)))
    {
        let mut details = format!(
            "on {}",
            scope.subject_of(f.about.as_deref(), f.project.as_deref())
        );
        if !f.severity.is_empty() {
            details.push_str(&format!(", {}", f.severity));
        }
        if f.pending {
            details.push_str(", pending");
        }
        let item = Item {
            id: f.id.clone(),
            text: scope.block(&f.author, &details, &titled(&f.title, &f.body)),
        };
        if list {
            s.superseded.push(item);
        } else {
            s.candidates.push(item);
        }
    }
    Ok(s)
}

/// The objects whose findings a brief shows, among `candidates`: the task, its ancestors and
/// siblings, the project's most recently done tasks, and the project itself.
fn finding_targets(
    scope: &Scope<'_>,
    candidates: BTreeSet<&str>,
) -> Result<BTreeSet<String>, Error> {
    let task = &scope.task;
    let mut fixed = BTreeSet::from([task.id().to_string(), scope.project_id()]);
    fixed.extend(scope.ancestors.iter().map(|a| a.id().to_string()));
    fixed.extend(
        scope
            .tasks
            .recent_done(scope.ws, task.project(), RECENT_DONE)?,
    );
    let mut siblings =
        scope
            .tasks
            .with_parent(scope.ws, task.project(), task.parent(), &candidates)?;
    siblings.remove(task.id());
    Ok(candidates
        .into_iter()
        .filter(|id| fixed.contains(*id) || siblings.contains(*id))
        .map(str::to_string)
        .collect())
}

fn severity_rank(s: &str) -> usize {
    crate::model::note::SEVERITIES
        .iter()
        .position(|x| *x == s)
        .unwrap_or(crate::model::note::SEVERITIES.len())
}

/// The notes and tasks the task links to, except notes in `shown` (earlier sections).
fn linked(
    scope: &mut Scope<'_>,
    t: &FoldedTask,
    shown: &BTreeSet<String>,
) -> Result<Section, Error> {
    let mut s = Section::new("linked", "Linked", "links").blocks();
    let mut seen = BTreeSet::new();
    for target in wikilinks(&link_text(t)) {
        if !seen.insert(target.clone()) {
            continue;
        }
        if let Some(item) = link_item(scope, &target, shown)? {
            s.candidates.push(item);
        }
    }
    Ok(s)
}

fn link_item(
    scope: &mut Scope<'_>,
    target: &str,
    shown: &BTreeSet<String>,
) -> Result<Option<Item>, Error> {
    let note = scope
        .notes
        .iter()
        .find(|n| n.id() == target || n.stem() == target || n.id() == format!("n-{target}"))
        .cloned();
    if let Some(note) = note {
        if shown.contains(note.id()) {
            return Ok(None);
        }
        let Some(body) = scope.note_body(&note)? else {
            return Ok(None);
        };
        let details = format!("{} {}, linked", note.kind(), note.id());
        return Ok(Some(Item {
            id: target.to_string(),
            text: scope.block(
                note.created_by(),
                &details,
                &titled(note.title(), first_paragraph(&body)),
            ),
        }));
    }
    if let Ok(task) = scope.tasks.resolve(scope.ws, target)? {
        let path = scope.ws.dir().join(task.file());
        let read = objects::read_document(scope.ws, &path);
        let Some(doc) = warn_or_fail(&mut scope.warnings, read)? else {
            return Ok(None);
        };
        let details = format!("task {}, {}, linked", task.reference(), task.folder());
        return Ok(Some(Item {
            id: target.to_string(),
            text: scope.block(
                task.owner(),
                &details,
                &titled(task.title(), first_paragraph(&doc.body)),
            ),
        }));
    }
    Ok(None)
}

/// The sections of the task whose links the brief follows.
fn link_text(t: &FoldedTask) -> String {
    let mut text = String::new();
    for name in ["So that", "Context", "Acceptance", "Out of scope"] {
        text.push_str(section_text(&t.doc.body, name).unwrap_or(""));
        text.push('\n');
    }
    text
}

/// The pending `finding` events of the selection.
fn pending_findings<'s>(scope: &'s Scope<'_>) -> impl Iterator<Item = &'s EventEntry> {
    scope
        .events
        .entries
        .iter()
        .filter(|e| e.kind() == "finding" && scope.events.is_pending(e))
}

/// The `[[target]]` and `[[target|label]]` links of `text`, outside code spans and fenced
/// code, in order of appearance.
fn wikilinks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence = false;
    for line in text.lines() {
        if line.starts_with("```") || line.starts_with("~~~") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        // Drop code spans: every odd backtick-delimited run.
        let plain: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = plain.as_str();
        while let Some(start) = rest.find("[[") {
            let after = &rest[start + 2..];
            let Some(end) = after.find("]]") else {
                break;
            };
            let inner = &after[..end];
            let target = inner.split('|').next().unwrap_or("").trim();
            if !target.is_empty() && !target.contains('[') {
                out.push(target.to_string());
            }
            rest = &after[end + 2..];
        }
    }
    out
}

/// The text of a body between its `# ` title and its first `## ` section, trimmed.
fn lead_text(body: &str) -> String {
    let mut lines = Vec::new();
    for line in body.lines() {
        if line.starts_with("## ") {
            break;
        }
        if line.starts_with("# ") && lines.iter().all(|l: &&str| l.trim().is_empty()) {
            lines.clear();
            continue;
        }
        lines.push(line);
    }
    lines.join("\n").trim().to_string()
}

/// The first paragraph of a body after its title, skipping headings.
fn first_paragraph(body: &str) -> &str {
    let mut start = None;
    let mut offset = 0;
    for line in body.split_inclusive('\n') {
        let bare = line.trim();
        match start {
            None if bare.is_empty() || bare.starts_with('#') => {}
            None => start = Some(offset),
            Some(s) if bare.is_empty() || bare.starts_with('#') => {
                return body[s..offset].trim_end();
            }
            Some(_) => {}
        }
        offset += line.len();
    }
    start.map_or("", |s| body[s..].trim_end())
}

/// A note's title, a blank line, and its body without the title heading.
fn titled(title: &str, body: &str) -> String {
    let mut lines = body.lines().peekable();
    let mut rest = Vec::new();
    let mut dropped = false;
    while let Some(line) = lines.next() {
        if !dropped && line.starts_with("# ") {
            dropped = true;
            while lines.peek().is_some_and(|l| l.trim().is_empty()) {
                lines.next();
            }
            continue;
        }
        rest.push(line);
    }
    let rest = rest.join("\n");
    let rest = rest.trim();
    if rest.is_empty() {
        title.to_string()
    } else {
        format!("{title}\n\n{rest}")
    }
}

/// The details of an attribution, led by the author's role as its id carries it.
fn with_role(who: &str, details: &str) -> String {
    match role_of(who) {
        Some(role) => format!("{role}, {details}"),
        None => details.to_string(),
    }
}

/// The role part of an agent id (`a-<role>-<ULID>`; informational, FORMAT §3.1), `root` for
/// root and `human` for `human:<login>`.
fn role_of(agent: &str) -> Option<String> {
    if agent == ROOT_AGENT {
        return Some("root".into());
    }
    if agent.starts_with("human:") {
        return Some("human".into());
    }
    let rest = agent.strip_prefix("a-")?;
    let split = rest.len().checked_sub(27)?;
    (rest.as_bytes().get(split) == Some(&b'-')).then(|| rest[..split].to_string())
}

fn activity(scope: &Scope<'_>) -> Result<Section, Error> {
    let mut s = Section::new("activity", "Recent activity", "activity lines").counted(Some(10));
    let subtree = &scope.subtree;
    let mut events: Vec<&EventEntry> = scope
        .events
        .entries
        .iter()
        .filter(|e| e.kind() != "applied")
        .filter(|e| {
            let about = e
                .about()
                .or(if e.kind() == "run" { e.task() } else { None });
            about.is_some_and(|a| subtree.contains(a))
        })
        .collect();
    events.sort_by(|a, b| b.id().cmp(a.id()));
    for e in events {
        let mut line = format!(
            "- {} {} by {}",
            e.id(),
            label(e.kind()),
            label(e.created_by())
        );
        if e.kind() == "run" {
            line.push_str(&format!(
                " ({}, exit {})",
                label(e.shortcut().unwrap_or("?")),
                e.exit_code()
                    .map_or_else(|| "?".to_string(), |c| c.to_string())
            ));
        }
        let about = e.about().or(e.task());
        if about != Some(scope.task.id()) {
            line.push_str(&format!(" on {}", scope.name_of(about)));
        }
        if scope.events.is_pending(e) {
            line.push_str(" (pending)");
        }
        s.candidates.push(Item {
            id: e.id().to_string(),
            text: inert(&line),
        });
    }
    Ok(s)
}

/// The task and its descendants (ids).
fn subtree_of(ws: &Workspace, tasks: &Lookup, task: &TaskEntry) -> Result<BTreeSet<String>, Error> {
    let mut out = BTreeSet::from([task.id().to_string()]);
    loop {
        let before = out.len();
        let children = tasks.children_of(ws, task.project(), &out)?;
        out.extend(children.iter().map(|t| t.id().to_string()));
        if out.len() == before {
            return Ok(out);
        }
    }
}

/// A shortcut as a brief lists it.
struct Shortcut {
    name: String,
    summary: String,
    effect: String,
    roles: Vec<String>,
}

fn shortcuts(scope: &mut Scope<'_>) -> Result<Section, Error> {
    let mut s = Section::new("shortcuts", "Shortcuts", "shortcuts");
    s.cap = Some(12);
    s.more = Some((scope.reader.commands)("`dacli run --list`"));
    let ws = scope.ws;
    let mut all = Vec::new();
    for (name, path) in md_files(ws, &ws.path(&["shortcuts"]))? {
        let stem = name.trim_end_matches(".md");
        if check_slug(stem).is_err() {
            continue;
        }
        let read = objects::read_document(ws, &path);
        let Some(doc) = warn_or_fail(&mut scope.warnings, read)? else {
            continue;
        };
        let f = Fields(doc.front.as_table());
        let (Some(effect), Ok(summary)) = (shortcut_effect(&doc.front), f.str("summary")) else {
            continue;
        };
        all.push(Shortcut {
            name: stem.to_string(),
            summary: summary.to_string(),
            effect: effect.to_string(),
            roles: f
                .str_list("roles")
                .unwrap_or_default()
                .into_iter()
                .map(String::from)
                .collect(),
        });
    }
    let runnable = runnable(scope, all)?;
    let uses = &scope.runs;
    let mut ranked: Vec<(usize, &Shortcut)> = runnable
        .iter()
        .map(|sc| (uses.get(sc.name.as_str()).copied().unwrap_or(0), sc))
        .collect();
    ranked.sort_by(|(ua, a), (ub, b)| ub.cmp(ua).then(a.name.cmp(&b.name)));
    for (_, sc) in ranked {
        s.candidates.push(Item {
            id: sc.name.clone(),
            text: format!(
                "- {} — {}",
                (scope.reader.commands)(&format!("`dacli run {}`", sc.name)),
                inert(&label(&sc.summary))
            ),
        });
    }
    Ok(s)
}

/// The shortcuts the reader may run (COMMANDS.md §10 `run` gates): root runs every shortcut
/// with a valid effect; anyone else needs the toolkit of their role (empty or absent: every
/// `read` shortcut) and the shortcut's `roles`, and an ro reader runs `read` ones only.
fn runnable(scope: &mut Scope<'_>, all: Vec<Shortcut>) -> Result<Vec<Shortcut>, Error> {
    if scope.reader.id == ROOT_AGENT {
        return Ok(all);
    }
    let role = match scope.reader.role.as_deref() {
        Some(name) if name != "root" => match roles::load(scope.ws, name) {
            Ok(r) => Some(r),
            Err(objects::Error::NotFound { .. }) => None,
            Err(objects::Error::Store(crate::store::Error::Malformed(p))) => {
                scope.warnings.push(p);
                None
            }
            Err(e) => return Err(e.into()),
        },
        _ => None,
    };
    let toolkit = role
        .as_ref()
        .map(|r| r.shortcuts.clone())
        .unwrap_or_default();
    let role_name = scope.reader.role.clone().unwrap_or_default();
    Ok(all
        .into_iter()
        .filter(|sc| {
            if toolkit.is_empty() {
                sc.effect == "read"
            } else {
                toolkit.contains(&sc.name)
            }
        })
        .filter(|sc| sc.roles.is_empty() || sc.roles.contains(&role_name))
        .filter(|sc| !scope.reader.read_only || sc.effect == "read")
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wikilinks_skip_code() {
        let links = wikilinks(
            "see [[n-1]] and [[007-x|the backfill]]\n`[[not]]`\n```\n[[no]]\n```\n[[n-1]]",
        );
        assert_eq!(links, vec!["n-1", "007-x", "n-1"]);
    }

    #[test]
    fn first_paragraphs() {
        assert_eq!(
            first_paragraph("# T\n\n## Chose\nOne.\nTwo.\n\nThree.\n"),
            "One.\nTwo."
        );
        assert_eq!(first_paragraph("# T\n"), "");
    }

    #[test]
    fn roles_from_agent_ids() {
        assert_eq!(role_of("a-root").as_deref(), Some("root"));
        assert_eq!(
            role_of("a-code-review-01KJPX6ZT81TTNRTABC9KBJYTV").as_deref(),
            Some("code-review")
        );
        assert_eq!(role_of("a-01KJPX6ZT81TTNRTABC9KBJYTV"), None);
    }
}
