//! The review read model: what changed in a workspace between two trees, named the way a
//! reviewer reads it (task 12 moved open → done, criterion 2 checked, a decision recorded),
//! rather than as raw diffs of frontmatter and event files.
//!
//! Both sides are read through git (`git::Repo`) without a checkout; the working tree side is
//! read from disk. Every record is parsed with the same model functions every other reader
//! uses (`store::Document`, `model::{task, note, risk, event, glossary}`), so a file this page
//! cannot read is exactly one `lint` reports, with the same reason.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use crate::git::{self, Repo};
use crate::model::FieldErrorKind;
use crate::model::body::{Criterion, section_range, section_text};
use crate::model::event::{EventHead, is_journal};
use crate::model::glossary;
use crate::model::note::{NoteHead, kind_of_dir};
use crate::model::risk::RiskHead;
use crate::model::task::{Dependency, Status, TaskHead, TaskRef};
use crate::model::taskdoc::TaskDoc;
use crate::store::{DirEntryKind, Document, Problem, Reason, TEMP_PREFIX};
use crate::workspace::{STATUS_FOLDERS, Workspace};

use super::Error;

/// The directories of a workspace that hold machine-local or derived data (FORMAT §21):
/// never part of a review.
const DERIVED: [&str; 4] = ["cache", "runs", ".locks", "worktrees"];

/// One file that differs, by path relative to the workspace directory, with its bytes on each
/// side (`None`: absent there).
#[derive(Debug, Clone)]
pub struct FileChange {
    pub path: String,
    pub old: Option<Vec<u8>>,
    pub new: Option<Vec<u8>>,
}

/// Whether a path (relative to the workspace directory) is derived or machine-local data.
pub fn is_derived(path: &str) -> bool {
    let first = path.split('/').next().unwrap_or("");
    let last = path.rsplit('/').next().unwrap_or("");
    DERIVED.contains(&first) || last.starts_with(TEMP_PREFIX)
}

/// The workspace directory relative to the work-tree root, `/`-separated (`.dacli`).
pub fn ws_prefix(ws: &Workspace) -> String {
    ws.display(ws.dir()).replace('\\', "/")
}

/// The repository of the workspace's work tree, opened for reading each object about once.
pub fn open_repo(ws: &Workspace) -> Result<Repo, Error> {
    Ok(Repo::open_reading_once(ws.root())?)
}

/// The workspace's tree in commit `sha`, if the commit has one.
pub fn ws_tree(repo: &Repo, prefix: &str, sha: &str) -> Result<Option<String>, Error> {
    let info = repo.commit_info(sha)?;
    Ok(repo.subtree(&info.tree, prefix)?)
}

/// Hands `visit` each file that differs between the workspace in commit `base` and in commit
/// `head` (`None`: the working tree on disk), one at a time: a range's contents are never all
/// held at once. Two commits are compared in tree order; the working tree's changes come in
/// path order. `read` hears how many changed files were read so far (of how many), for
/// progress on a long range.
pub fn file_changes(
    ws: &Workspace,
    repo: &Repo,
    base: Option<&str>,
    head: Option<&str>,
    read: &dyn Fn(usize, usize),
    visit: &mut dyn FnMut(FileChange),
) -> Result<(), Error> {
    let prefix = ws_prefix(ws);
    let old_tree = match base {
        Some(sha) => ws_tree(repo, &prefix, sha)?,
        None => None,
    };
    let skip = |p: &str| is_derived(p);
    match head {
        Some(sha) => {
            let new_tree = ws_tree(repo, &prefix, sha)?;
            let diff = repo.diff_trees(old_tree.as_deref(), new_tree.as_deref(), &skip)?;
            let total = diff.len();
            for (n, c) in diff.into_iter().enumerate() {
                if n.is_multiple_of(64) {
                    read(n, total);
                }
                visit(FileChange {
                    old: c.old.map(|b| repo.blob(&b)).transpose()?,
                    new: c.new.map(|b| repo.blob(&b)).transpose()?,
                    path: c.path,
                });
            }
        }
        None => {
            let mut committed = match &old_tree {
                Some(t) => repo.list_tree(t, &skip)?,
                None => BTreeMap::new(),
            };
            let mut out = Vec::new();
            walk_disk(ws, ws.dir(), "", &mut |path, bytes| {
                match committed.remove(&path) {
                    Some(id) if id == git::blob_id(&bytes) => {}
                    Some(id) => out.push(FileChange {
                        path,
                        old: Some(repo.blob(&id)?),
                        new: Some(bytes),
                    }),
                    None => out.push(FileChange {
                        path,
                        old: None,
                        new: Some(bytes),
                    }),
                }
                Ok(())
            })?;
            for (path, id) in committed {
                out.push(FileChange {
                    path,
                    old: Some(repo.blob(&id)?),
                    new: None,
                });
            }
            out.sort_by(|a, b| a.path.cmp(&b.path));
            out.into_iter().for_each(visit);
        }
    }
    Ok(())
}

/// Hands `found` every regular file below `dir` but derived data, by path relative to the
/// workspace directory, with its bytes. A file that cannot be read (a FIFO, an escaping
/// symlink) is read as empty, so it is reported as unparseable rather than skipped.
fn walk_disk(
    ws: &Workspace,
    dir: &Path,
    prefix: &str,
    found: &mut dyn FnMut(String, Vec<u8>) -> Result<(), Error>,
) -> Result<(), Error> {
    for (name, path) in ws.fs.list_dir(dir)? {
        let rel = format!("{prefix}{name}");
        if is_derived(&rel) {
            continue;
        }
        match ws.fs.entry_kind(&path)? {
            DirEntryKind::Dir => walk_disk(ws, &path, &format!("{rel}/"), found)?,
            DirEntryKind::SymlinkInside if path.is_dir() => {}
            _ => found(rel, ws.fs.read(&path).unwrap_or_default())?,
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The report.

/// One piece of a word-level diff.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Segment {
    /// `equal`, `delete` or `insert`.
    pub op: &'static str,
    pub text: String,
}

/// A word-level diff of two texts (the `similar` crate), adjacent pieces of one kind merged.
pub fn word_diff(old: &str, new: &str) -> Vec<Segment> {
    use similar::{ChangeTag, TextDiff};
    let diff = TextDiff::from_words(old, new);
    let mut out: Vec<Segment> = Vec::new();
    for change in diff.iter_all_changes() {
        let op = match change.tag() {
            ChangeTag::Equal => "equal",
            ChangeTag::Delete => "delete",
            ChangeTag::Insert => "insert",
        };
        match out.last_mut() {
            Some(last) if last.op == op => last.text.push_str(change.value()),
            _ => out.push(Segment {
                op,
                text: change.value().to_string(),
            }),
        }
    }
    out
}

/// One semantic change of a task, project or risk.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    Created {
        title: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<String>,
    },
    Removed {
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<String>,
    },
    Status {
        from: String,
        to: String,
    },
    Assignee {
        from: Option<String>,
        to: Option<String>,
    },
    Owner {
        from: String,
        to: String,
    },
    CriterionChecked {
        n: u32,
        text: String,
    },
    CriterionUnchecked {
        n: u32,
        text: String,
    },
    CriterionAdded {
        n: u32,
        text: String,
        checked: bool,
    },
    CriterionRemoved {
        n: u32,
        text: String,
    },
    CriterionEdited {
        n: u32,
        diff: Vec<Segment>,
    },
    Estimate {
        from: Option<String>,
        to: Option<String>,
    },
    Priority {
        from: String,
        to: String,
    },
    Resolution {
        from: Option<String>,
        to: Option<String>,
    },
    Parent {
        from: Option<String>,
        to: Option<String>,
    },
    Title {
        from: String,
        to: String,
        diff: Vec<Segment>,
    },
    Body {
        diff: Vec<Segment>,
    },
    DependencyAdded {
        on: String,
        #[serde(rename = "type")]
        kind: String,
    },
    DependencyRemoved {
        on: String,
        #[serde(rename = "type")]
        kind: String,
    },
    /// A frontmatter field of a risk or project (`impact`, `likelihood`, `status` ...).
    Field {
        field: String,
        from: Option<String>,
        to: Option<String>,
    },
    /// Lines appended to a task's `## Log`.
    Logged {
        lines: Vec<String>,
    },
}

/// A task and what happened to it.
#[derive(Debug, Clone, Serialize)]
pub struct TaskReview {
    pub id: String,
    #[serde(rename = "ref")]
    pub reference: String,
    pub title: String,
    pub changes: Vec<Change>,
}

/// A note added, removed or edited.
#[derive(Debug, Clone, Serialize)]
pub struct NoteReview {
    pub id: String,
    /// `added`, `removed` or `edited`.
    pub change: &'static str,
    pub kind: String,
    pub title: String,
    pub about: Option<String>,
    pub severity: Option<String>,
    /// A private note (`private = true`): shown locally, never posted to a pull request.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub private: bool,
    /// A decision's `## Chose` and `## Rejected`, first lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chose: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<Vec<Segment>>,
    pub path: String,
}

/// A risk and what happened to it.
#[derive(Debug, Clone, Serialize)]
pub struct RiskReview {
    pub id: String,
    pub title: String,
    pub changes: Vec<Change>,
}

/// A glossary term added, changed or removed.
#[derive(Debug, Clone, Serialize)]
pub struct TermChange {
    pub term: String,
    /// `added`, `changed` or `removed`.
    pub change: &'static str,
    pub from: Option<String>,
    pub to: Option<String>,
}

/// What changed in one project (or, for `project = "workspace"`, in the workspace scope).
#[derive(Debug, Clone, Serialize, Default)]
pub struct ProjectReview {
    pub project: String,
    pub changes: Vec<Change>,
    pub tasks: Vec<TaskReview>,
    pub notes: Vec<NoteReview>,
    pub risks: Vec<RiskReview>,
    pub glossary: Vec<TermChange>,
}

/// One event added (or removed) in the range.
#[derive(Debug, Clone, Serialize)]
pub struct EventItem {
    pub id: String,
    pub kind: String,
    pub created: String,
    pub summary: String,
    /// `pending`, `settled` or `rejected` (on the new side), `removed`.
    pub state: &'static str,
    pub path: String,
}

/// The events of one author about one object.
#[derive(Debug, Clone, Serialize)]
pub struct AgentEvents {
    pub agent: String,
    pub events: Vec<EventItem>,
}

/// The events about one object (`about`; `None`: about nothing).
#[derive(Debug, Clone, Serialize)]
pub struct EventGroup {
    pub about: Option<String>,
    /// The task reference, when `about` is a task this review knows.
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    pub agents: Vec<AgentEvents>,
}

/// A question (a `help` event) or an answer added.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionItem {
    pub id: String,
    /// `question` or `answer`.
    pub kind: &'static str,
    pub about: Option<String>,
    /// The task reference, when `about` is a task this review knows.
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    pub by: String,
    /// The answered question's event id (answers).
    pub question: Option<String>,
    pub text: String,
    pub state: &'static str,
}

/// A file that does not parse on the new side.
#[derive(Debug, Clone, Serialize)]
pub struct Unparseable {
    pub path: String,
    pub reason: String,
    pub detail: String,
}

/// A file outside the format, or a record this review does not interpret.
#[derive(Debug, Clone, Serialize)]
pub struct PathChange {
    pub path: String,
    /// What it is (`agent`, `role`, `config` ...; `unknown` outside the format).
    pub kind: String,
    /// `added`, `modified` or `removed`.
    pub change: &'static str,
}

/// How much changed.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Counts {
    pub files: usize,
    pub tasks: usize,
    pub notes: usize,
    pub risks: usize,
    pub events: usize,
    pub pending: usize,
    pub receipts: usize,
    pub unparseable: usize,
    pub outside_format: usize,
}

/// The whole review.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Report {
    pub projects: Vec<ProjectReview>,
    pub events: Vec<EventGroup>,
    pub questions: Vec<QuestionItem>,
    pub unparseable: Vec<Unparseable>,
    pub other: Vec<PathChange>,
    pub outside_format: Vec<PathChange>,
    pub counts: Counts,
}

impl Report {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.counts.files == 0
    }
}

// ---------------------------------------------------------------------------------------------
// Reading one path.

/// What a path of the workspace holds, by the layout of FORMAT §1.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    Project(String),
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
    /// A record of the layout this review does not interpret (agents, roles, config ...).
    Other(&'static str),
    Outside,
}

fn place(path: &str) -> Place {
    let seg: Vec<&str> = path.split('/').collect();
    let md = path.ends_with(".md");
    match seg.as_slice() {
        ["config.toml"] => Place::Other("config"),
        [".gitignore"] => Place::Other("gitignore"),
        [".gitattributes"] => Place::Other("gitattributes"),
        ["projects", p, "project.md"] => Place::Project(p.to_string()),
        ["projects", p, "glossary.md"] => Place::Glossary(p.to_string()),
        ["projects", p, "tasks", folder, _] if md && STATUS_FOLDERS.contains(folder) => {
            Place::Task {
                project: p.to_string(),
                folder: folder.to_string(),
            }
        }
        ["projects", p, "notes", dir, _] if md && kind_of_dir(dir).is_some() => Place::Note {
            project: Some(p.to_string()),
            dir: dir.to_string(),
        },
        ["notes", dir, _] if md && kind_of_dir(dir).is_some() => Place::Note {
            project: None,
            dir: dir.to_string(),
        },
        ["projects", p, "risks", _] if md => Place::Risk(p.to_string()),
        ["events", _, _, _, _] if md => Place::Event,
        ["agents", _] if md => Place::Other("agent"),
        ["roles", _] if md => Place::Other("role"),
        ["shortcuts", _] if md => Place::Other("shortcut"),
        ["runtimes", _] if md => Place::Other("runtime"),
        ["queues", _] if md => Place::Other("queue"),
        ["templates", ..] => Place::Other("template"),
        ["evidence", ..] => Place::Other("evidence"),
        ["txn", ..] => Place::Other("txn"),
        ["trains", _] => Place::Other("train"),
        ["github", "consent", _] => Place::Other("consent"),
        ["archive", ..] => Place::Other("archive"),
        _ => Place::Outside,
    }
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn problem(path: &str, e: crate::model::FieldError) -> Problem {
    Problem {
        path: path.to_string(),
        reason: match e.kind {
            FieldErrorKind::Schema => Reason::Schema,
            FieldErrorKind::WrongKind => Reason::WrongKind,
            FieldErrorKind::IdMismatch => Reason::IdMismatch,
        },
        detail: e.detail,
    }
}

/// What a review compares of one task file, taken from its document as it is parsed: a
/// range's ten thousand parsed documents are not kept (a kept `TaskDoc` per side took a
/// review of 10,000 task files to 160 MiB).
pub(super) struct TaskSide {
    pub(super) project: String,
    pub(super) folder: String,
    pub(super) head: TaskHead,
    pub(super) body: String,
    estimate: Option<String>,
    parent: Option<String>,
    depends_on: Vec<Dependency>,
    criteria: Vec<Criterion>,
}

pub(super) fn parse_task(
    shown: &str,
    project: &str,
    folder: &str,
    bytes: &[u8],
) -> Result<TaskSide, Problem> {
    let doc = Document::parse(shown, bytes)?;
    let head = TaskHead::parse(&doc.front, &doc.body, file_name(shown), folder, doc.title())
        .map_err(|e| problem(shown, e))?;
    let status = Status::parse(folder).unwrap_or(Status::Open);
    let tdoc = TaskDoc {
        front: doc.front,
        body: doc.body,
        status,
    };
    tdoc.estimate().map_err(|e| problem(shown, e))?;
    Ok(TaskSide {
        project: project.to_string(),
        folder: folder.to_string(),
        head,
        estimate: estimate_text(&tdoc),
        parent: tdoc.parent().map(str::to_string),
        depends_on: tdoc.depends_on(),
        criteria: tdoc.criteria(),
        body: tdoc.body,
    })
}

pub(super) struct NoteSide {
    pub(super) head: NoteHead,
    pub(super) body: String,
}

pub(super) fn parse_note(
    shown: &str,
    project: Option<&str>,
    dir: &str,
    bytes: &[u8],
) -> Result<NoteSide, Problem> {
    let doc = Document::parse(shown, bytes)?;
    let scope = if project.is_some() {
        "project"
    } else {
        "workspace"
    };
    let head = NoteHead::parse(&doc.front, &doc.body, dir, scope).map_err(|e| problem(shown, e))?;
    Ok(NoteSide {
        head,
        body: doc.body,
    })
}

pub(super) fn parse_risk(shown: &str, bytes: &[u8]) -> Result<(RiskHead, String), Problem> {
    let doc = Document::parse(shown, bytes)?;
    let head = RiskHead::parse(&doc.front, &doc.body).map_err(|e| problem(shown, e))?;
    Ok((head, doc.body))
}

pub(super) fn parse_event(shown: &str, bytes: &[u8]) -> Result<EventHead, Problem> {
    let doc = Document::parse(shown, bytes)?;
    EventHead::parse(&doc.front, &doc.body, file_name(shown), shown).map_err(|e| problem(shown, e))
}

pub(super) fn parse_glossary(
    shown: &str,
    slug: &str,
    bytes: &[u8],
) -> Result<Vec<glossary::Entry>, Problem> {
    let doc = Document::parse(shown, bytes)?;
    glossary::GlossaryHead::parse(&doc.front, slug).map_err(|e| problem(shown, e))?;
    Ok(glossary::entries(&doc.body))
}

fn parse_project(shown: &str, bytes: &[u8]) -> Result<Document, Problem> {
    let doc = Document::parse(shown, bytes)?;
    if doc.front.get("kind").and_then(|v| v.as_str()) != Some("project") {
        return Err(Problem {
            path: shown.to_string(),
            reason: Reason::WrongKind,
            detail: "`kind` is not \"project\"".to_string(),
        });
    }
    Ok(doc)
}

// ---------------------------------------------------------------------------------------------
// Comparing.

/// The prose of a body a reviewer reads as an edit: everything but the title line and the
/// sections reported on their own (`## Acceptance`, `## Log`).
fn prose(body: &str) -> String {
    let mut cut: Vec<std::ops::Range<usize>> = Vec::new();
    for name in ["Acceptance", "Log"] {
        if let Some(r) = section_range(body, name) {
            // The heading line too: it ends where the section's content starts.
            let start = body[..r.start]
                .trim_end_matches('\n')
                .rfind('\n')
                .map_or(0, |i| i + 1);
            cut.push(start..r.end);
        }
    }
    cut.sort_by_key(|r| r.start);
    let mut out = String::new();
    let mut at = 0;
    for r in cut {
        if r.start >= at {
            out.push_str(&body[at..r.start]);
            at = r.end;
        }
    }
    out.push_str(&body[at..]);
    let mut lines: Vec<&str> = Vec::new();
    let mut title_seen = false;
    for line in out.lines() {
        if !title_seen && line.starts_with("# ") {
            title_seen = true;
            continue;
        }
        lines.push(line);
    }
    lines.join("\n").trim().to_string()
}

fn estimate_text(doc: &TaskDoc) -> Option<String> {
    doc.estimate()
        .ok()
        .flatten()
        .map(|e| format!("{}/{}/{}", e.optimistic, e.probable, e.pessimistic))
}

fn criteria_changes(old: &[Criterion], new: &[Criterion], out: &mut Vec<Change>) {
    for c in new {
        match old.iter().find(|o| o.n == c.n) {
            None => out.push(Change::CriterionAdded {
                n: c.n,
                text: c.text.clone(),
                checked: c.checked,
            }),
            Some(o) => {
                if o.text != c.text {
                    out.push(Change::CriterionEdited {
                        n: c.n,
                        diff: word_diff(&o.text, &c.text),
                    });
                }
                if !o.checked && c.checked {
                    out.push(Change::CriterionChecked {
                        n: c.n,
                        text: c.text.clone(),
                    });
                } else if o.checked && !c.checked {
                    out.push(Change::CriterionUnchecked {
                        n: c.n,
                        text: c.text.clone(),
                    });
                }
            }
        }
    }
    for o in old.iter().filter(|o| !new.iter().any(|c| c.n == o.n)) {
        out.push(Change::CriterionRemoved {
            n: o.n,
            text: o.text.clone(),
        });
    }
}

fn task_changes(old: Option<&TaskSide>, new: Option<&TaskSide>) -> Vec<Change> {
    let mut out = Vec::new();
    let (o, n) = match (old, new) {
        (None, Some(n)) => {
            out.push(Change::Created {
                title: n.head.title.clone(),
                status: Some(n.folder.clone()),
            });
            if n.head.assignee.is_some() {
                out.push(Change::Assignee {
                    from: None,
                    to: n.head.assignee.clone(),
                });
            }
            for c in n.criteria.iter().filter(|c| c.checked) {
                out.push(Change::CriterionChecked {
                    n: c.n,
                    text: c.text.clone(),
                });
            }
            return out;
        }
        (Some(o), None) => {
            out.push(Change::Removed {
                status: Some(o.folder.clone()),
            });
            return out;
        }
        (Some(o), Some(n)) => (o, n),
        (None, None) => return out,
    };
    if o.folder != n.folder {
        out.push(Change::Status {
            from: o.folder.clone(),
            to: n.folder.clone(),
        });
    }
    if o.head.assignee != n.head.assignee {
        out.push(Change::Assignee {
            from: o.head.assignee.clone(),
            to: n.head.assignee.clone(),
        });
    }
    if o.head.owner != n.head.owner {
        out.push(Change::Owner {
            from: o.head.owner.clone(),
            to: n.head.owner.clone(),
        });
    }
    if o.head.resolution != n.head.resolution {
        out.push(Change::Resolution {
            from: o.head.resolution.clone(),
            to: n.head.resolution.clone(),
        });
    }
    if o.head.title != n.head.title {
        out.push(Change::Title {
            from: o.head.title.clone(),
            to: n.head.title.clone(),
            diff: word_diff(&o.head.title, &n.head.title),
        });
    }
    if o.head.priority != n.head.priority {
        out.push(Change::Priority {
            from: o.head.priority.clone(),
            to: n.head.priority.clone(),
        });
    }
    if o.estimate != n.estimate {
        out.push(Change::Estimate {
            from: o.estimate.clone(),
            to: n.estimate.clone(),
        });
    }
    if o.parent != n.parent {
        out.push(Change::Parent {
            from: o.parent.clone(),
            to: n.parent.clone(),
        });
    }
    let (od, nd) = (&o.depends_on, &n.depends_on);
    let has = |list: &[Dependency], d: &Dependency| list.iter().any(|x| x == d);
    for d in nd.iter().filter(|d| !has(od, d)) {
        out.push(Change::DependencyAdded {
            on: d.on.clone(),
            kind: d.kind.clone(),
        });
    }
    for d in od.iter().filter(|d| !has(nd, d)) {
        out.push(Change::DependencyRemoved {
            on: d.on.clone(),
            kind: d.kind.clone(),
        });
    }
    criteria_changes(&o.criteria, &n.criteria, &mut out);
    let (ob, nb) = (prose(&o.body), prose(&n.body));
    if ob != nb {
        out.push(Change::Body {
            diff: word_diff(&ob, &nb),
        });
    }
    let (ol, nl) = (&o.head.log, &n.head.log);
    if nl.len() > ol.len() && nl[..ol.len()] == ol[..] {
        out.push(Change::Logged {
            lines: nl[ol.len()..]
                .iter()
                .map(|l| format!("{} {} {}", l.at, l.agent, l.text))
                .collect(),
        });
    }
    out
}

fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

fn note_review(path: &str, old: Option<&NoteSide>, new: Option<&NoteSide>) -> Option<NoteReview> {
    let (side, change) = match (old, new) {
        (None, Some(n)) => (n, "added"),
        (Some(o), None) => (o, "removed"),
        (Some(o), Some(n)) if o.body != n.body || o.head.id != n.head.id => (n, "edited"),
        _ => return None,
    };
    let decision = side.head.kind == "decision";
    Some(NoteReview {
        id: side.head.id.clone(),
        change,
        kind: side.head.kind.clone(),
        title: side.head.title.clone(),
        about: side.head.about.clone(),
        severity: side.head.severity.clone(),
        private: old.is_some_and(|o| o.head.private) || side.head.private,
        chose: decision
            .then(|| section_text(&side.body, "Chose").map(first_line))
            .flatten(),
        rejected: decision
            .then(|| section_text(&side.body, "Rejected").map(first_line))
            .flatten(),
        diff: match (old, new) {
            (Some(o), Some(n)) => Some(word_diff(&o.body, &n.body)),
            _ => None,
        },
        path: path.to_string(),
    })
}

fn risk_changes(old: Option<&(RiskHead, String)>, new: Option<&(RiskHead, String)>) -> Vec<Change> {
    let mut out = Vec::new();
    match (old, new) {
        (None, Some((n, _))) => {
            out.push(Change::Created {
                title: n.title.clone(),
                status: Some(n.status.clone()),
            });
            for (field, v) in [("impact", &n.impact), ("likelihood", &n.likelihood)] {
                out.push(Change::Field {
                    field: field.to_string(),
                    from: None,
                    to: Some(v.clone()),
                });
            }
        }
        (Some((o, _)), None) => out.push(Change::Removed {
            status: Some(o.status.clone()),
        }),
        (Some((o, ob)), Some((n, nb))) => {
            if o.title != n.title {
                out.push(Change::Title {
                    from: o.title.clone(),
                    to: n.title.clone(),
                    diff: word_diff(&o.title, &n.title),
                });
            }
            for (field, a, b) in [
                ("status", &o.status, &n.status),
                ("impact", &o.impact, &n.impact),
                ("likelihood", &o.likelihood, &n.likelihood),
                ("owner", &o.owner, &n.owner),
            ] {
                if a != b {
                    out.push(Change::Field {
                        field: field.to_string(),
                        from: Some(a.clone()),
                        to: Some(b.clone()),
                    });
                }
            }
            let (op, np) = (prose(ob), prose(nb));
            if op != np {
                out.push(Change::Body {
                    diff: word_diff(&op, &np),
                });
            }
        }
        (None, None) => {}
    }
    out
}

fn glossary_changes(old: &[glossary::Entry], new: &[glossary::Entry]) -> Vec<TermChange> {
    let key = |e: &glossary::Entry| e.term.to_lowercase();
    let old_by: BTreeMap<String, &glossary::Entry> = old.iter().map(|e| (key(e), e)).collect();
    let new_by: BTreeMap<String, &glossary::Entry> = new.iter().map(|e| (key(e), e)).collect();
    let mut out = Vec::new();
    for e in new {
        match old_by.get(&key(e)) {
            None => out.push(TermChange {
                term: e.term.clone(),
                change: "added",
                from: None,
                to: Some(e.definition.clone()),
            }),
            Some(o) if o.definition != e.definition => out.push(TermChange {
                term: e.term.clone(),
                change: "changed",
                from: Some(o.definition.clone()),
                to: Some(e.definition.clone()),
            }),
            Some(_) => {}
        }
    }
    for e in old.iter().filter(|e| !new_by.contains_key(&key(e))) {
        out.push(TermChange {
            term: e.term.clone(),
            change: "removed",
            from: Some(e.definition.clone()),
            to: None,
        });
    }
    out
}

/// Reads `changes` (paths relative to the workspace directory `prefix`) into a review.
/// `refs` names tasks the changes do not touch (for the events about them), by id.
pub fn analyse(
    prefix: &str,
    changes: &[FileChange],
    refs: &dyn Fn(&str) -> Option<String>,
) -> Report {
    let mut analysis = Analysis::new(prefix);
    for c in changes {
        analysis.add(c);
    }
    analysis.finish(refs)
}

type NoteAt = (String, String, NoteSide);
type RiskAt = (String, (RiskHead, String));

/// A review being read one changed file at a time, so that a long range's file contents are
/// never all held at once: a task edited in place is compared as soon as it is read; what may
/// have moved (one side only) waits to be joined by id in [`Analysis::finish`].
pub struct Analysis {
    prefix: String,
    report: Report,
    projects: BTreeMap<String, ProjectReview>,
    old_tasks: BTreeMap<String, TaskSide>,
    new_tasks: BTreeMap<String, TaskSide>,
    task_refs: BTreeMap<String, String>,
    old_events: BTreeMap<String, EventHead>,
    new_events: Vec<EventHead>,
    old_notes: BTreeMap<String, NoteAt>,
    new_notes: BTreeMap<String, NoteAt>,
    old_risks: BTreeMap<String, RiskAt>,
    new_risks: BTreeMap<String, RiskAt>,
}

fn unparseable(p: Problem, out: &mut Vec<Unparseable>) {
    out.push(Unparseable {
        path: p.path,
        reason: p.reason.as_str().to_string(),
        detail: p.detail,
    })
}

impl Analysis {
    /// An empty review of the workspace directory `prefix` (relative to the work tree).
    pub fn new(prefix: &str) -> Analysis {
        Analysis {
            prefix: prefix.to_string(),
            report: Report::default(),
            projects: BTreeMap::new(),
            old_tasks: BTreeMap::new(),
            new_tasks: BTreeMap::new(),
            task_refs: BTreeMap::new(),
            old_events: BTreeMap::new(),
            new_events: Vec::new(),
            old_notes: BTreeMap::new(),
            new_notes: BTreeMap::new(),
            old_risks: BTreeMap::new(),
            new_risks: BTreeMap::new(),
        }
    }

    fn shown(&self, p: &str) -> String {
        if self.prefix.is_empty() {
            p.to_string()
        } else {
            format!("{}/{p}", self.prefix)
        }
    }

    /// Reads one changed file into the review.
    pub fn add(&mut self, c: &FileChange) {
        self.report.counts.files += 1;
        let path = self.shown(&c.path);
        let change = match (&c.old, &c.new) {
            (None, _) => "added",
            (_, None) => "removed",
            _ => "modified",
        };
        match place(&c.path) {
            Place::Task { project, folder } => {
                let old = c
                    .old
                    .as_ref()
                    .and_then(|b| parse_task(&path, &project, &folder, b).ok());
                let new = match &c.new {
                    Some(b) => match parse_task(&path, &project, &folder, b) {
                        Ok(t) => Some(t),
                        Err(p) => {
                            unparseable(p, &mut self.report.unparseable);
                            None
                        }
                    },
                    None => None,
                };
                match (old, new) {
                    // Compared in place: a range of ten thousand edited tasks keeps their
                    // reviews, not both parsed sides of each.
                    (Some(o), Some(n)) if o.head.id == n.head.id => {
                        self.task_review(Some(&o), Some(&n));
                    }
                    (old, new) => {
                        for (side, map) in [(old, &mut self.old_tasks), (new, &mut self.new_tasks)]
                        {
                            if let Some(t) = side {
                                map.insert(t.head.id.clone(), t);
                            }
                        }
                    }
                }
            }
            Place::Note { project, dir } => {
                // Joined by id below: a note renamed or moved is one note.
                let new = match &c.new {
                    Some(b) => match parse_note(&path, project.as_deref(), &dir, b) {
                        Ok(n) => Some(n),
                        Err(p) => {
                            unparseable(p, &mut self.report.unparseable);
                            return;
                        }
                    },
                    None => None,
                };
                let key = project.clone().unwrap_or_else(|| "workspace".to_string());
                if let Some(b) = &c.old
                    && let Ok(o) = parse_note(&path, project.as_deref(), &dir, b)
                {
                    self.old_notes
                        .insert(o.head.id.clone(), (path.clone(), key.clone(), o));
                }
                if let Some(n) = new {
                    self.new_notes.insert(n.head.id.clone(), (path, key, n));
                }
            }
            Place::Risk(project) => {
                // Joined by id below, like notes.
                let new = match &c.new {
                    Some(b) => match parse_risk(&path, b) {
                        Ok(r) => Some(r),
                        Err(p) => {
                            unparseable(p, &mut self.report.unparseable);
                            return;
                        }
                    },
                    None => None,
                };
                if let Some(b) = &c.old
                    && let Ok(o) = parse_risk(&path, b)
                {
                    self.old_risks.insert(o.0.id.clone(), (project.clone(), o));
                }
                if let Some(n) = new {
                    self.new_risks.insert(n.0.id.clone(), (project, n));
                }
            }
            Place::Glossary(project) => {
                let old = c
                    .old
                    .as_ref()
                    .and_then(|b| parse_glossary(&path, &project, b).ok())
                    .unwrap_or_default();
                let new = match &c.new {
                    Some(b) => match parse_glossary(&path, &project, b) {
                        Ok(g) => g,
                        Err(p) => {
                            unparseable(p, &mut self.report.unparseable);
                            return;
                        }
                    },
                    None => Vec::new(),
                };
                let terms = glossary_changes(&old, &new);
                project_entry(&mut self.projects, &project)
                    .glossary
                    .extend(terms);
            }
            Place::Project(project) => {
                let old = c.old.as_ref().and_then(|b| parse_project(&path, b).ok());
                let new = match &c.new {
                    Some(b) => match parse_project(&path, b) {
                        Ok(d) => Some(d),
                        Err(p) => {
                            unparseable(p, &mut self.report.unparseable);
                            return;
                        }
                    },
                    None => None,
                };
                let entry = project_entry(&mut self.projects, &project);
                entry
                    .changes
                    .extend(project_changes(old.as_ref(), new.as_ref()));
            }
            Place::Event => {
                if let Some(b) = &c.old
                    && let Ok(e) = parse_event(&path, b)
                {
                    self.old_events.insert(e.id.clone(), e);
                }
                if let Some(b) = &c.new {
                    match parse_event(&path, b) {
                        Ok(e) => self.new_events.push(e),
                        Err(p) => unparseable(p, &mut self.report.unparseable),
                    }
                }
            }
            Place::Other(kind) => {
                if let Some(b) = &c.new
                    && let Err(p) = check_record(&path, b)
                {
                    unparseable(p, &mut self.report.unparseable);
                }
                self.report.other.push(PathChange {
                    path,
                    kind: kind.to_string(),
                    change,
                });
            }
            Place::Outside => self.report.outside_format.push(PathChange {
                path,
                kind: "unknown".to_string(),
                change,
            }),
        }
    }

    /// Records the review of one task from its two sides (`None`: absent there).
    fn task_review(&mut self, o: Option<&TaskSide>, n: Option<&TaskSide>) {
        let Some(side) = n.or(o) else { return };
        let id = side.head.id.clone();
        let tref = TaskRef::of(&side.project, &side.head);
        self.task_refs.insert(id.clone(), tref.reference.clone());
        let changes = task_changes(o, n);
        if changes.is_empty() {
            return;
        }
        self.report.counts.tasks += 1;
        project_entry(&mut self.projects, &side.project)
            .tasks
            .push(TaskReview {
                id,
                reference: tref.reference,
                title: side.head.title.clone(),
                changes,
            });
    }

    /// The review: the files that waited joined by id, everything sorted and counted.
    /// `refs` names tasks the changes do not touch (for the events about them), by id.
    pub fn finish(mut self, refs: &dyn Fn(&str) -> Option<String>) -> Report {
        // Tasks, joined by id across moves.
        let (old_tasks, new_tasks) = (
            std::mem::take(&mut self.old_tasks),
            std::mem::take(&mut self.new_tasks),
        );
        let ids: BTreeSet<&String> = old_tasks.keys().chain(new_tasks.keys()).collect();
        for id in ids {
            self.task_review(old_tasks.get(id), new_tasks.get(id));
        }
        let Analysis {
            mut report,
            mut projects,
            task_refs,
            old_events,
            new_events,
            old_notes,
            new_notes,
            old_risks,
            new_risks,
            ..
        } = self;
        // Notes and risks, joined by id across renames and moves.
        let note_ids: BTreeSet<&String> = old_notes.keys().chain(new_notes.keys()).collect();
        for id in note_ids {
            let (o, n) = (old_notes.get(id), new_notes.get(id));
            let Some((path, key, _)) = n.or(o) else {
                continue;
            };
            if let Some(r) = note_review(path, o.map(|x| &x.2), n.map(|x| &x.2)) {
                project_entry(&mut projects, key).notes.push(r);
            }
        }
        let risk_ids: BTreeSet<&String> = old_risks.keys().chain(new_risks.keys()).collect();
        for id in risk_ids {
            let (o, n) = (old_risks.get(id), new_risks.get(id));
            let Some((project, side)) = n.or(o) else {
                continue;
            };
            let changes = risk_changes(o.map(|x| &x.1), n.map(|x| &x.1));
            if !changes.is_empty() {
                let r = RiskReview {
                    id: side.0.id.clone(),
                    title: side.0.title.clone(),
                    changes,
                };
                project_entry(&mut projects, project).risks.push(r);
            }
        }

        // Events: settled by a receipt on the new side, grouped by what they are about and who.
        let mut applied: BTreeSet<String> = BTreeSet::new();
        let mut rejected: BTreeSet<String> = BTreeSet::new();
        for e in new_events.iter().filter(|e| e.kind == "applied") {
            applied.extend(e.applied.iter().cloned());
            rejected.extend(e.rejected.iter().map(|(id, _)| id.clone()));
            report.counts.receipts += 1;
        }
        let mut groups: BTreeMap<Option<String>, BTreeMap<String, Vec<EventItem>>> =
            BTreeMap::new();
        let new_ids: BTreeSet<String> = new_events.iter().map(|e| e.id.clone()).collect();
        for e in &new_events {
            if e.kind == "applied" || old_events.contains_key(&e.id) {
                continue;
            }
            let state = if rejected.contains(&e.id) {
                "rejected"
            } else if is_journal(&e.kind) || applied.contains(&e.id) {
                "settled"
            } else {
                "pending"
            };
            report.counts.events += 1;
            if state == "pending" {
                report.counts.pending += 1;
            }
            if e.kind == "help" || e.kind == "answer" {
                report.questions.push(QuestionItem {
                    id: e.id.clone(),
                    kind: if e.kind == "help" {
                        "question"
                    } else {
                        "answer"
                    },
                    about: e.about.clone(),
                    reference: None,
                    by: e.created_by.clone(),
                    question: e.question.clone(),
                    text: first_line(&e.body),
                    state,
                });
            }
            groups
                .entry(e.about.clone())
                .or_default()
                .entry(e.created_by.clone())
                .or_default()
                .push(event_item(e, state));
        }
        for (id, e) in &old_events {
            if new_ids.contains(id) || e.kind == "applied" {
                continue;
            }
            groups
                .entry(e.about.clone())
                .or_default()
                .entry(e.created_by.clone())
                .or_default()
                .push(event_item(e, "removed"));
        }
        for (about, agents) in groups {
            let reference = about
                .as_deref()
                .and_then(|a| task_refs.get(a).cloned().or_else(|| refs(a)));
            report.events.push(EventGroup {
                about,
                reference,
                agents: agents
                    .into_iter()
                    .map(|(agent, mut events)| {
                        events.sort_by(|a, b| a.id.cmp(&b.id));
                        AgentEvents { agent, events }
                    })
                    .collect(),
            });
        }

        for q in &mut report.questions {
            q.reference = q
                .about
                .as_deref()
                .and_then(|a| task_refs.get(a).cloned().or_else(|| refs(a)));
        }
        for p in projects.values_mut() {
            p.tasks.sort_by(|a, b| a.reference.cmp(&b.reference));
            p.notes.sort_by(|a, b| a.id.cmp(&b.id));
            p.risks.sort_by(|a, b| a.id.cmp(&b.id));
            report.counts.notes += p.notes.len();
            report.counts.risks += p.risks.len();
        }
        // The workspace scope last, after the projects in name order.
        let ws_scope = projects.remove("workspace");
        report.projects = projects.into_values().collect();
        report.projects.extend(ws_scope);
        report.counts.unparseable = report.unparseable.len();
        report.counts.outside_format = report.outside_format.len();
        report
    }
}

fn event_item(e: &EventHead, state: &'static str) -> EventItem {
    EventItem {
        id: e.id.clone(),
        kind: e.kind.clone(),
        created: crate::model::format_time(e.created),
        summary: e.summary(),
        state,
        path: e.path.clone(),
    }
}

fn project_entry<'a>(
    map: &'a mut BTreeMap<String, ProjectReview>,
    slug: &str,
) -> &'a mut ProjectReview {
    map.entry(slug.to_string())
        .or_insert_with(|| ProjectReview {
            project: slug.to_string(),
            ..ProjectReview::default()
        })
}

fn project_changes(old: Option<&Document>, new: Option<&Document>) -> Vec<Change> {
    let title = |d: &Document| d.title().unwrap_or("").to_string();
    match (old, new) {
        (None, Some(n)) => vec![Change::Created {
            title: title(n),
            status: None,
        }],
        (Some(_), None) => vec![Change::Removed { status: None }],
        (Some(o), Some(n)) => {
            let mut out = Vec::new();
            if title(o) != title(n) {
                out.push(Change::Title {
                    from: title(o),
                    to: title(n),
                    diff: word_diff(&title(o), &title(n)),
                });
            }
            let owner = |d: &Document| {
                d.front
                    .get("owner")
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
            };
            if owner(o) != owner(n) {
                out.push(Change::Field {
                    field: "owner".to_string(),
                    from: owner(o),
                    to: owner(n),
                });
            }
            let (ob, nb) = (prose(&o.body), prose(&n.body));
            if ob != nb {
                out.push(Change::Body {
                    diff: word_diff(&ob, &nb),
                });
            }
            out
        }
        (None, None) => Vec::new(),
    }
}

/// Checks that a record of the layout this review does not interpret still parses.
fn check_record(path: &str, bytes: &[u8]) -> Result<(), Problem> {
    if path.ends_with(".md") {
        Document::parse(path, bytes).map(|_| ())
    } else if path.ends_with(".toml") {
        crate::store::TomlRecord::parse(path, bytes).map(|_| ())
    } else {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// One task's history.

/// What one commit did to one task.
#[derive(Debug)]
pub struct TaskCommit {
    pub commit: git::CommitInfo,
    pub changes: Vec<Change>,
    pub events: Vec<EventItem>,
}

/// A task file by project and file name: its folder changes with its status, its name only
/// when the task is renumbered or retitled by hand.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TaskFile {
    pub project: String,
    pub file: String,
}

impl TaskFile {
    /// The task file a workspace-relative path names (`projects/<p>/tasks/<folder>/<file>`).
    pub fn of_path(path: &str) -> Option<TaskFile> {
        match place(path) {
            Place::Task { project, .. } => Some(TaskFile {
                project,
                file: file_name(path).to_string(),
            }),
            _ => None,
        }
    }
}

/// Whether `path` (a directory on the way, or a file) lies under some project's `tasks/`.
fn in_tasks(path: &str) -> bool {
    let mut s = path.split('/');
    matches!(
        (s.next(), s.next(), s.next()),
        (Some("projects"), None, _)
            | (Some("projects"), Some(_), None)
            | (Some("projects"), Some(_), Some("tasks"))
    )
}

fn in_events(path: &str) -> bool {
    path == "events" || path.starts_with("events/")
}

/// Whether `path` is a directory on the way to one of `files`, or one of them (in any status
/// folder).
fn on_the_way(path: &str, files: &BTreeSet<TaskFile>) -> bool {
    let seg: Vec<&str> = path.split('/').collect();
    files.iter().any(|f| match seg.as_slice() {
        ["projects"] => true,
        ["projects", p] | ["projects", p, "tasks"] => *p == f.project,
        ["projects", p, "tasks", folder] => *p == f.project && STATUS_FOLDERS.contains(folder),
        ["projects", p, "tasks", folder, name] => {
            *p == f.project && STATUS_FOLDERS.contains(folder) && *name == f.file
        }
        _ => false,
    })
}

/// The files of one comparison that concern task `id`: its own file (by the names it is known
/// to have had) and the events that mention it. A task file that appears without a known
/// predecessor sends the comparison looking for the file it was renamed from, among the task
/// files the same commit removed; `names` learns every name found.
fn task_files_changed(
    repo: &Repo,
    old: Option<&str>,
    new: Option<&str>,
    id: &str,
    names: &mut BTreeSet<TaskFile>,
) -> Result<Vec<FileChange>, Error> {
    let needle = id.as_bytes();
    let mentions = |b: &Option<Vec<u8>>| {
        b.as_ref()
            .is_some_and(|b| b.windows(needle.len()).any(|w| w == needle))
    };
    let discover = names.is_empty();
    let known = names.clone();
    let skip = |p: &str| {
        !(in_events(p)
            || if discover {
                in_tasks(p)
            } else {
                on_the_way(p, &known)
            })
    };
    let mut out = Vec::new();
    let mut appeared = false;
    let mut left = false;
    for c in repo.diff_trees(old, new, &skip)? {
        let task = TaskFile::of_path(&c.path);
        let is_event = matches!(place(&c.path), Place::Event);
        if task.is_none() && !is_event {
            continue;
        }
        if !discover && task.is_some() {
            appeared |= c.old.is_none();
            left |= c.new.is_none();
            out.push(FileChange {
                path: c.path,
                old: c.old.map(|b| repo.blob(&b)).transpose()?,
                new: c.new.map(|b| repo.blob(&b)).transpose()?,
            });
            continue;
        }
        let change = FileChange {
            path: c.path,
            old: c.old.map(|b| repo.blob(&b)).transpose()?,
            new: c.new.map(|b| repo.blob(&b)).transpose()?,
        };
        if mentions(&change.old) || mentions(&change.new) {
            if let Some(t) = task {
                names.insert(t);
            }
            out.push(change);
        }
    }
    if appeared && !left && old.is_some() {
        // Created here, or renamed from a file this commit removed.
        let skip = |p: &str| !in_tasks(p);
        for c in repo.diff_trees(old, new, &skip)? {
            let Some(t) = TaskFile::of_path(&c.path) else {
                continue;
            };
            if c.new.is_some() || names.contains(&t) {
                continue;
            }
            let Some(b) = c.old else { continue };
            let bytes = Some(repo.blob(&b)?);
            if mentions(&bytes) {
                names.insert(t);
                out.push(FileChange {
                    path: c.path,
                    old: bytes,
                    new: None,
                });
            }
        }
    }
    Ok(out)
}

/// The commits reachable from `HEAD` that changed task `id` or added events about it, newest
/// first, at most `limit`; `true` when more exist. A commit is compared with its first
/// parent; a merge counts only when the task differs from every parent (a resolved conflict).
/// `at` is where the task's file is now, when known: the walk then opens only that file (in
/// every status folder) and the events, and follows the file's renames; without it the first
/// commits read every changed task file until one holds the id. `walked` hears how many
/// commits were read so far, for progress on a long history.
pub fn task_history(
    ws: &Workspace,
    repo: &Repo,
    id: &str,
    at: Option<TaskFile>,
    limit: usize,
    walked: &dyn Fn(usize),
) -> Result<(Vec<TaskCommit>, bool), Error> {
    let prefix = ws_prefix(ws);
    let Ok(head) = repo.rev_parse("HEAD") else {
        return Ok((Vec::new(), false));
    };
    let mut names: BTreeSet<TaskFile> = at.into_iter().collect();
    if !names.is_empty() {
        // The file may have been renamed since HEAD: then its history is found by its id.
        let known = names.clone();
        let skip = |p: &str| !on_the_way(p, &known);
        let tree = ws_tree(repo, &prefix, &head)?;
        if repo.diff_trees(None, tree.as_deref(), &skip)?.is_empty() {
            names.clear();
        }
    }
    let mut tree_of: std::collections::HashMap<String, Option<String>> = Default::default();
    let mut ws_tree_cached = |sha: &str| -> Result<Option<String>, Error> {
        if let Some(t) = tree_of.get(sha) {
            return Ok(t.clone());
        }
        let t = ws_tree(repo, &prefix, sha)?;
        tree_of.insert(sha.to_string(), t.clone());
        Ok(t)
    };
    let mut out = Vec::new();
    for (n, sha) in repo.history(&head, None)?.into_iter().enumerate() {
        walked(n);
        let info = repo.commit_info(&sha)?;
        let tree = ws_tree_cached(&sha)?;
        let mut per_parent = Vec::new();
        let parents = if info.parents.is_empty() {
            vec![None]
        } else {
            info.parents.iter().map(Some).collect()
        };
        for parent in parents {
            let ptree = match parent {
                Some(p) => ws_tree_cached(p)?,
                None => None,
            };
            per_parent.push(task_files_changed(
                repo,
                ptree.as_deref(),
                tree.as_deref(),
                id,
                &mut names,
            )?);
        }
        if per_parent.iter().any(Vec::is_empty) {
            continue;
        }
        let report = analyse(&prefix, &per_parent[0], &|_| None);
        let changes: Vec<Change> = report
            .projects
            .iter()
            .flat_map(|p| p.tasks.iter())
            .filter(|t| t.id == id)
            .flat_map(|t| t.changes.iter().cloned())
            .collect();
        let events: Vec<EventItem> = report
            .events
            .iter()
            .filter(|g| g.about.as_deref() == Some(id))
            .flat_map(|g| g.agents.iter().flat_map(|a| a.events.iter().cloned()))
            .collect();
        if changes.is_empty() && events.is_empty() {
            continue;
        }
        if out.len() == limit {
            return Ok((out, true));
        }
        out.push(TaskCommit {
            commit: info,
            changes,
            events,
        });
    }
    Ok((out, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task file; a checked one is done (and says how).
    fn task(id: &str, title: &str, checked: bool) -> Vec<u8> {
        let (mark, resolution) = if checked {
            ("x", "resolution = \"completed\"\n")
        } else {
            (" ", "")
        };
        format!(
            "+++\nid = \"{id}\"\nkind = \"task\"\ncreated = 2026-03-02T09:20:11Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJPX6ZT80000000000000001\"\npriority = \"should\"\n{resolution}+++\n\n# {title}\n\n## Acceptance\n- [{mark}] It works\n"
        )
        .into_bytes()
    }

    fn change(path: &str, old: Option<Vec<u8>>, new: Option<Vec<u8>>) -> FileChange {
        FileChange {
            path: path.to_string(),
            old,
            new,
        }
    }

    fn reviews(report: &Report) -> Vec<(String, Vec<Change>)> {
        report
            .projects
            .iter()
            .flat_map(|p| &p.tasks)
            .map(|t| (t.id.clone(), t.changes.clone()))
            .collect()
    }

    const EDITED: &str = "t-01KJPX6ZT80000000000000010";
    const MOVED: &str = "t-01KJPX6ZT80000000000000020";

    #[test]
    fn a_task_edited_in_place_and_one_moved_between_folders_are_one_review_each() {
        let changes = [
            change(
                "projects/p/tasks/done/00002-moved.md",
                None,
                Some(task(MOVED, "Moved", true)),
            ),
            change(
                "projects/p/tasks/open/00001-edited.md",
                Some(task(EDITED, "Edited", false)),
                Some(task(EDITED, "Edited", true)),
            ),
            change(
                "projects/p/tasks/open/00002-moved.md",
                Some(task(MOVED, "Moved", false)),
                None,
            ),
        ];
        let report = analyse(".dacli", &changes, &|_| None);
        let got = reviews(&report);
        assert!(report.unparseable.is_empty(), "{:?}", report.unparseable);
        assert_eq!(got.len(), 2, "{got:?}");
        let of = |id: &str| &got.iter().find(|(i, _)| i == id).expect(id).1;
        assert!(
            of(EDITED)
                .iter()
                .any(|c| matches!(c, Change::CriterionChecked { .. })),
            "{:?}",
            of(EDITED)
        );
        assert!(
            of(EDITED)
                .iter()
                .all(|c| !matches!(c, Change::Created { .. } | Change::Removed { .. })),
            "{:?}",
            of(EDITED)
        );
        assert!(
            of(MOVED).contains(&Change::Status {
                from: "open".into(),
                to: "done".into()
            }),
            "{:?}",
            of(MOVED)
        );
        assert_eq!(report.counts.tasks, 2);
        assert_eq!(report.counts.files, 3);
    }

    #[test]
    fn a_copy_of_a_task_edited_in_place_is_reported_as_created_beside_the_edit() {
        let changes = [
            change(
                "projects/p/tasks/open/00001-edited.md",
                Some(task(EDITED, "Edited", false)),
                Some(task(EDITED, "Edited", true)),
            ),
            change(
                "projects/p/tasks/open/00009-copy.md",
                None,
                Some(task(EDITED, "Edited", true)),
            ),
        ];
        let got = reviews(&analyse(".dacli", &changes, &|_| None));
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.iter().all(|(id, _)| id == EDITED));
        assert!(
            got.iter().any(|(_, c)| c
                .iter()
                .any(|c| matches!(c, Change::CriterionChecked { .. }))),
            "the edit is kept: {got:?}"
        );
        assert!(
            got.iter()
                .any(|(_, c)| c.iter().any(|c| matches!(c, Change::Created { .. }))),
            "the copy is named: {got:?}"
        );
    }
}
