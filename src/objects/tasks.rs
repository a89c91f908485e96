//! Tasks (docs/FORMAT.md §12): listing, loading by reference, creating with a display number
//! allocated under the project's sequence lock, and writing (atomic replace, or a status move).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::model::id::parse_ulid;
use crate::model::task::{
    Status, TaskHead, TaskRef, keyed_filename, parse_keyed_filename, parse_task_filename,
};
use crate::model::taskdoc::TaskDoc;
use crate::store::{Document, Problem, Reason, TEMP_PREFIX};
use crate::workspace::names::check_slug;
use crate::workspace::{STATUS_FOLDERS, Workspace};

pub use super::folders::{moves_lock, unknown_folders};
use super::{Error, Listing, field_problem, projects, read_document, warn_or_fail};

/// A task as found on disk: where it is and its parsed content.
///
/// Invariant: `doc.status` is the folder the file was read from until a transition changes
/// it; [`write`] then moves the file.
#[derive(Debug, Clone)]
pub struct Located {
    /// The project's directory name.
    pub project: String,
    /// The folder it was read from.
    pub folder: &'static str,
    /// Absolute path of the file.
    pub file: PathBuf,
    /// Path relative to the work-tree root, for output.
    pub path: String,
    pub task: TaskHead,
    pub doc: TaskDoc,
}

impl Located {
    /// The `TaskRef` of this task.
    pub fn task_ref(&self) -> TaskRef {
        TaskRef::of(&self.project, &self.task)
    }

    /// The `TaskRef` with the title as folded (a retitle by the owner shows at once).
    pub fn task_ref_folded(&self) -> TaskRef {
        let mut r = self.task_ref();
        let title = self.doc.title();
        if !title.is_empty() {
            r.title = title.to_string();
        }
        r
    }

    /// `<project>/<NNN>-<slug>`.
    pub fn reference(&self) -> String {
        self.task_ref().reference
    }
}

/// Every task of the project `slug`, sorted by number then id. A file that is not a usable
/// task is skipped and reported; of two copies of one id (a crash mid-move, or a merge) the
/// greater `rev` is used and both paths are reported as `duplicate_id`.
pub fn list(ws: &Workspace, slug: &str) -> Result<Listing<Located>, Error> {
    // A status move (create in the new folder, remove from the old) can run while the folders
    // are read: a file vanishes between listing and reading, or the task is read in neither
    // folder. Such a listing is read again; the folders' names decide whether one moved.
    const ATTEMPTS: usize = 5;
    let mut attempt = 1;
    loop {
        let before = folder_names(ws, slug)?;
        let (out, vanished) = list_once(ws, slug)?;
        if attempt >= ATTEMPTS || (!vanished && folder_names(ws, slug)? == before) {
            return Ok(out);
        }
        attempt += 1;
    }
}

fn folder_names(ws: &Workspace, slug: &str) -> Result<Vec<String>, Error> {
    let tasks_dir = ws.path(&["projects", slug, "tasks"]);
    let mut names = Vec::new();
    for folder in STATUS_FOLDERS {
        for (name, _) in ws.fs.list_dir(&tasks_dir.join(folder))? {
            names.push(format!("{folder}/{name}"));
        }
    }
    Ok(names)
}

/// One pass over the folders; `true` when a listed file was gone by the time it was read.
fn list_once(ws: &Workspace, slug: &str) -> Result<(Listing<Located>, bool), Error> {
    let mut vanished = false;
    let mut out = Listing::default();
    let tasks_dir = ws.path(&["projects", slug, "tasks"]);
    unknown_folders(ws, &tasks_dir, &mut out.warnings)?;
    let mut by_id: BTreeMap<String, Vec<Located>> = BTreeMap::new();
    for folder in STATUS_FOLDERS {
        for (name, path) in ws.fs.list_dir(&tasks_dir.join(folder))? {
            if name.starts_with('.') || name.starts_with(TEMP_PREFIX) || !name.ends_with(".md") {
                continue;
            }
            let read = match read_document(ws, &path) {
                Err(crate::store::Error::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    vanished = true;
                    continue;
                }
                other => other,
            };
            let Some(doc) = warn_or_fail(&mut out.warnings, read)? else {
                continue;
            };
            match located(ws, slug, folder, &name, path.clone(), doc) {
                Ok(l) => by_id.entry(l.task.id.clone()).or_default().push(l),
                Err(p) => out.warnings.push(p),
            }
        }
    }
    for (id, mut copies) in by_id {
        if copies.len() > 1 {
            copies.sort_by(|a, b| b.task.rev.cmp(&a.task.rev).then(a.path.cmp(&b.path)));
            let paths: Vec<_> = copies.iter().map(|c| c.path.clone()).collect();
            for c in &copies {
                let others: Vec<_> = paths.iter().filter(|p| **p != c.path).cloned().collect();
                out.warnings.push(Problem {
                    path: c.path.clone(),
                    reason: Reason::DuplicateId,
                    detail: format!("{id} is also at {}", others.join(", ")),
                });
            }
        }
        out.items.extend(copies.into_iter().next());
    }
    out.items
        .sort_by(|a, b| (a.task.number, &a.task.id).cmp(&(b.task.number, &b.task.id)));
    Ok((out, vanished))
}

fn located(
    ws: &Workspace,
    slug: &str,
    folder: &'static str,
    name: &str,
    file: PathBuf,
    doc: Document,
) -> Result<Located, Problem> {
    let task = TaskHead::parse(&doc.front, &doc.body, name, folder, doc.title())
        .map_err(|e| field_problem(ws, &file, e))?;
    let status = Status::parse(folder).unwrap_or(Status::Open);
    let tdoc = TaskDoc {
        front: doc.front,
        body: doc.body,
        status,
    };
    tdoc.estimate().map_err(|e| field_problem(ws, &file, e))?;
    Ok(Located {
        project: slug.to_string(),
        folder,
        path: ws.display(&file),
        file,
        task,
        doc: tdoc,
    })
}

/// Reads one task file of project `slug` found in status folder `folder` (as an index entry
/// located it); a file that is no longer a usable task is `E_MALFORMED`.
pub fn read_one(ws: &Workspace, slug: &str, folder: &str, file: PathBuf) -> Result<Located, Error> {
    let folder = STATUS_FOLDERS
        .iter()
        .find(|f| **f == folder)
        .ok_or_else(|| Error::NotFound {
            what: "status folder",
            id: folder.to_string(),
        })?;
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let doc = read_document(ws, &file)?;
    located(ws, slug, folder, &name, file, doc).map_err(Error::malformed)
}

/// Every task of every project (projects sorted by slug, tasks by number), with the warnings
/// of both listings.
pub fn list_all(ws: &Workspace) -> Result<Listing<Located>, Error> {
    let mut out = Listing::default();
    let p = projects::list(ws)?;
    out.warnings.extend(p.warnings);
    for project in &p.items {
        let t = list(ws, &project.slug)?;
        out.warnings.extend(t.warnings);
        out.items.extend(t.items);
    }
    Ok(out)
}

/// Why a task reference did not resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// Nothing matched; `searched` says where.
    NotFound { reference: String, searched: String },
    /// Several matched; each as `<project>/<NNN>-<slug>`.
    Ambiguous {
        reference: String,
        candidates: Vec<String>,
    },
    /// The reference names a project that does not exist.
    NoProject { project: String },
    /// Nothing readable matched, but the file of the task it names is unreadable: the command
    /// needs that very object (FORMAT §4.4), so it fails naming the file and the reason.
    Malformed(Problem),
}

/// Resolves a task reference in any FORMAT §3.3 form against `tasks` (a listing of the
/// workspace, or of one project). The input is matched as every form it can denote.
pub fn resolve<'a>(tasks: &'a [Located], reference: &str) -> Result<&'a Located, ResolveError> {
    resolve_keys(tasks, reference)
}

/// What reference resolution needs to know of a task, so that index entries resolve by the
/// same rules as fully parsed tasks.
pub trait TaskKey {
    /// The project's directory name.
    fn key_project(&self) -> &str;
    /// `t-<ULID>`.
    fn key_id(&self) -> &str;
    fn key_number(&self) -> u32;
    fn key_slug(&self) -> &str;
}

/// Shared entries (the index hands out `Arc`s) resolve as what they point to.
impl<T: TaskKey> TaskKey for std::sync::Arc<T> {
    fn key_project(&self) -> &str {
        self.as_ref().key_project()
    }
    fn key_id(&self) -> &str {
        self.as_ref().key_id()
    }
    fn key_number(&self) -> u32 {
        self.as_ref().key_number()
    }
    fn key_slug(&self) -> &str {
        self.as_ref().key_slug()
    }
}

impl TaskKey for Located {
    fn key_project(&self) -> &str {
        &self.project
    }
    fn key_id(&self) -> &str {
        &self.task.id
    }
    fn key_number(&self) -> u32 {
        self.task.number
    }
    fn key_slug(&self) -> &str {
        &self.task.slug
    }
}

/// [`resolve`] over any task view: every FORMAT §3.3 form, ambiguity listing each candidate
/// as `<project>/<NNN>-<slug>`.
pub fn resolve_keys<'a, T: TaskKey>(
    tasks: &'a [T],
    reference: &str,
) -> Result<&'a T, ResolveError> {
    resolve_among(tasks, reference, |p| {
        tasks.iter().any(|t| t.key_project() == p)
    })
}

/// [`resolve_keys`] over `tasks`, a subset of the workspace's tasks holding every task the
/// reference could match; `has_tasks` says whether a project has any task at all (a
/// reference into a project without tasks names no project).
pub fn resolve_among<'a, T: TaskKey>(
    tasks: &'a [T],
    reference: &str,
    has_tasks: impl Fn(&str) -> bool,
) -> Result<&'a T, ResolveError> {
    resolve_noted(tasks, reference, has_tasks).0
}

/// [`resolve_among`], with the notice a reader shows when the merge rule decided (FORMAT
/// §3.3): a number two tasks share after a merge names the one with the older ULID, and a
/// `<NNN>-<slug>` whose number a merge changed still names its task by the slug.
pub fn resolve_noted<'a, T: TaskKey>(
    tasks: &'a [T],
    reference: &str,
    has_tasks: impl Fn(&str) -> bool,
) -> (Result<&'a T, ResolveError>, Option<String>) {
    match resolve_inner(tasks, reference, &has_tasks) {
        Err(ResolveError::Ambiguous { .. }) | Err(ResolveError::NotFound { .. }) => {}
        other => return (other, None),
    }
    let input = reference.trim().to_ascii_lowercase();
    let (project, rest) = match input.split_once('/') {
        Some((p, r)) => (
            Some(p.strip_prefix("p-").unwrap_or(p).to_string()),
            r.to_string(),
        ),
        None => (None, input.clone()),
    };
    let scoped: Vec<&T> = tasks
        .iter()
        .filter(|t| project.as_deref().is_none_or(|p| t.key_project() == p))
        .collect();
    let (number, slug) = match rest.parse::<u32>() {
        Ok(n) => (Some(n), None),
        Err(_) => match rest.split_once('-') {
            Some((n, s)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                (n.parse::<u32>().ok(), Some(s.to_string()))
            }
            _ => (None, None),
        },
    };
    if let Some(n) = number {
        let mut same: Vec<&T> = scoped
            .iter()
            .copied()
            .filter(|t| t.key_number() == n && slug.as_deref().is_none_or(|s| s == t.key_slug()))
            .collect();
        let one_project = same
            .first()
            .is_some_and(|f| same.iter().all(|t| t.key_project() == f.key_project()));
        if same.len() > 1 && one_project {
            same.sort_by(|a, b| a.key_id().cmp(b.key_id()));
            let others: Vec<&str> = same[1..].iter().map(|t| t.key_id()).collect();
            let note = format!(
                "number {n:03} is shared after a merge: {} (the oldest) keeps it; {} get new numbers at their owner's next sync",
                same[0].key_id(),
                others.join(", ")
            );
            return (Ok(same[0]), Some(note));
        }
    }
    if let (Some(n), Some(s)) = (number, slug) {
        let by_slug: Vec<&T> = scoped
            .iter()
            .copied()
            .filter(|t| t.key_slug() == s && t.key_number() != n)
            .collect();
        if let [one] = by_slug.as_slice() {
            let note = format!(
                "{n:03}-{s} is now {}/{:03}-{s} (renumbered after a merge)",
                one.key_project(),
                one.key_number()
            );
            return (Ok(*one), Some(note));
        }
    }
    (resolve_inner(tasks, reference, &has_tasks), None)
}

fn resolve_inner<'a, T: TaskKey>(
    tasks: &'a [T],
    reference: &str,
    has_tasks: &impl Fn(&str) -> bool,
) -> Result<&'a T, ResolveError> {
    let input = reference.trim();
    let (project, rest) = match input.split_once('/') {
        Some((p, r)) => (Some(p.strip_prefix("p-").unwrap_or(p)), r),
        None => (None, input),
    };
    if let Some(p) = project
        && !has_tasks(p)
    {
        return Err(ResolveError::NoProject {
            project: p.to_string(),
        });
    }
    let scoped = tasks
        .iter()
        .filter(|t| project.is_none_or(|p| t.key_project() == p));
    let lower = rest.to_ascii_lowercase();
    let ulid = lower
        .strip_prefix("t-")
        .unwrap_or(&lower)
        .to_ascii_uppercase();
    // A file stem, `<ULID>-<slug>`, names its task by the ULID.
    let as_ulid = parse_ulid(&ulid)
        .or_else(|| ulid.split_once('-').and_then(|(u, _)| parse_ulid(u)))
        .map(|u| format!("t-{u}"));
    let number = lower.parse::<u32>().ok();
    let num_slug = lower.split_once('-').and_then(|(n, s)| {
        (n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty())
            .then(|| n.parse::<u32>().ok().map(|n| (n, s.to_string())))
            .flatten()
    });
    let matches: Vec<&T> = scoped
        .filter(|t| {
            as_ulid.as_deref() == Some(t.key_id())
                || number == Some(t.key_number())
                || t.key_slug() == lower
                || num_slug
                    .as_ref()
                    .is_some_and(|(n, s)| *n == t.key_number() && *s == t.key_slug())
        })
        .collect();
    match matches.as_slice() {
        [one] => Ok(one),
        [] => Err(ResolveError::NotFound {
            reference: reference.to_string(),
            searched: match project {
                Some(p) => format!("ids, numbers and slugs of project {p}"),
                None => "ids, numbers and slugs of every project".to_string(),
            },
        }),
        many => {
            let mut candidates: Vec<String> = many
                .iter()
                .map(|t| format!("{}/{:03}-{}", t.key_project(), t.key_number(), t.key_slug()))
                .collect();
            candidates.sort();
            candidates.dedup();
            Err(ResolveError::Ambiguous {
                reference: reference.to_string(),
                candidates,
            })
        }
    }
}

/// The unreadable task file a reference names by its filename (`<NNN>-<slug>.md`: a number,
/// a slug or both, optionally after `<project>/`), when exactly one does. `problems` are the
/// warnings of a task listing; duplicates and files outside the status folders are not
/// unreadable and never match.
pub fn unreadable_match(problems: &[Problem], reference: &str) -> Option<Problem> {
    let input = reference.trim().to_ascii_lowercase();
    let (project, rest) = match input.split_once('/') {
        Some((p, r)) => (Some(p.strip_prefix("p-").unwrap_or(p).to_string()), r),
        None => (None, input.as_str()),
    };
    let number = rest.parse::<u32>().ok();
    let num_slug = parse_task_filename(&format!("{rest}.md")).map(|(n, s)| (n, s.to_string()));
    let matches: Vec<&Problem> = problems
        .iter()
        .filter(|p| !matches!(p.reason, Reason::DuplicateId | Reason::UnknownFolder))
        .filter(|p| {
            let segs: Vec<&str> = p.path.split('/').collect();
            let [.., "projects", proj, "tasks", folder, file] = segs.as_slice() else {
                return false;
            };
            let (n, slug) = match parse_task_filename(file) {
                Some((n, slug)) => (Some(n), slug),
                // A format-2 name carries no number; the one unreadable task file of the
                // scope may be the one a number names.
                None => match parse_keyed_filename(file) {
                    Some((_, slug)) => (None, slug),
                    None => return false,
                },
            };
            STATUS_FOLDERS.contains(folder)
                && project.as_deref().is_none_or(|want| want == *proj)
                && ((number.is_some() && (n.is_none() || number == n))
                    || slug == rest
                    || num_slug
                        .as_ref()
                        .is_some_and(|(nn, ss)| n.is_none_or(|n| *nn == n) && ss == slug))
        })
        .collect();
    match matches.as_slice() {
        [one] => Some((*one).clone()),
        _ => None,
    }
}

/// Finds a task by full id (`t-<ULID>`).
pub fn by_id<'a>(tasks: &'a [Located], id: &str) -> Option<&'a Located> {
    tasks.iter().find(|t| t.task.id == id)
}

/// The next display number of project `slug`: one more than the highest number any of its
/// tasks has (a format-2 task's `seq`, a format-1 task's filename). Call it under
/// `seq-<slug>.lock`.
pub fn next_number(ws: &Workspace, slug: &str) -> Result<u32, Error> {
    let index = super::index::tasks(ws, slug)?;
    Ok(number_after(
        slug,
        index.items.iter().map(|e| e.number()),
        &index.warnings,
    ))
}

/// One more than the highest of `numbers` (every task project `slug` lists) and of the
/// numbers in the names of the project's format-1 task files among `warnings` (files that do
/// not parse still hold their number in their name).
pub fn number_after(
    slug: &str,
    numbers: impl Iterator<Item = u32>,
    warnings: &[crate::store::Problem],
) -> u32 {
    let unreadable = warnings.iter().filter_map(|w| {
        let segs: Vec<&str> = w.path.split('/').collect();
        match segs.as_slice() {
            [.., "projects", proj, "tasks", _, file] if *proj == slug => {
                parse_task_filename(file).map(|(n, _)| n)
            }
            _ => None,
        }
    });
    numbers.chain(unreadable).max().unwrap_or(0) + 1
}

/// Project `slug`'s sequence lock (`seq-<slug>.lock`), held while a new task is numbered and
/// created: the listing the number comes from is read under it, so no other `task add` or
/// renumbering of the project runs between the reading and the file's creation.
pub struct Numbering {
    project: String,
    _seq: crate::store::LockGuard,
}

/// Takes project `slug`'s sequence lock ([`Numbering`]).
pub fn numbering(ws: &Workspace, slug: &str) -> Result<Numbering, Error> {
    check_slug(slug).map_err(|_| Error::NotFound {
        what: "project",
        id: slug.to_string(),
    })?;
    Ok(Numbering {
        project: slug.to_string(),
        _seq: ws.fs.lock(&ws.lock_path(&format!("seq-{slug}")))?,
    })
}

/// The file task `id` (`t-<ULID>`) with slug `slug` has in `status`: `<ULID>-<slug>.md`, a
/// path no other clone can create (FORMAT §22).
pub fn file_for(ws: &Workspace, project: &str, status: Status, id: &str, slug: &str) -> PathBuf {
    let ulid = id.strip_prefix("t-").unwrap_or(id);
    ws.path(&[
        "projects",
        project,
        "tasks",
        status.as_str(),
        &keyed_filename(ulid, slug),
    ])
}

/// Sets the display number `seq` of a task's frontmatter, placed after `rev` (the field
/// table's order) when the key is new.
pub fn set_seq(front: &mut toml_edit::DocumentMut, number: u32) {
    if front.contains_key("seq") {
        front["seq"] = toml_edit::value(i64::from(number));
        return;
    }
    let old = std::mem::take(front.as_table_mut());
    let table = front.as_table_mut();
    let mut placed = false;
    for (k, v) in old.iter() {
        table.insert(k, v.clone());
        if k == "rev" {
            table.insert("seq", toml_edit::value(i64::from(number)));
            placed = true;
        }
    }
    if !placed {
        table.insert("seq", toml_edit::value(i64::from(number)));
    }
}

/// A new task for [`create`]: its document, numbered and written under the sequence lock.
pub struct NewTask {
    doc: TaskDoc,
    warning: Option<crate::store::Problem>,
}

impl NewTask {
    /// Why `cache/` (the derived index the numbering reads) is unusable, for the caller to
    /// warn: the task is created all the same, from the files.
    pub fn warning(&self) -> Option<crate::store::Problem> {
        self.warning.clone()
    }
}

/// Prepares a new task for [`create`], which numbers it and writes it.
pub fn stage(ws: &Workspace, doc: &TaskDoc) -> Result<NewTask, Error> {
    let cache = ws.path(&["cache"]);
    // `cache/` is derived: one that is a file, a dangling symlink or read-only must not stop
    // a write, but the caller hears of it.
    let warning = ws.fs.create_dir_all(&cache).err().map(|e| crate::store::Problem {
        path: ws.display(&cache),
        reason: crate::store::Reason::CacheUnusable,
        detail: format!(
            "{e}; the derived cache is skipped (results are unchanged); remove it and dacli rebuilds it"
        ),
    });
    Ok(NewTask {
        doc: doc.clone(),
        warning,
    })
}

/// Creates the file of task `new` in its status folder of the project `numbering` locks,
/// with display number `number` (`seq`), which the caller read under that lock
/// ([`number_after`]). `title_slug` must be a valid slug. Returns the located task.
pub fn create(
    ws: &Workspace,
    numbering: &Numbering,
    title_slug: &str,
    new: NewTask,
    number: u32,
) -> Result<Located, Error> {
    let project = numbering.project.as_str();
    let mut doc = new.doc;
    set_seq(&mut doc.front, number);
    let id = doc
        .front
        .get("id")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string();
    let file = file_for(ws, project, doc.status, &id, title_slug);
    let rendered = Document::new(doc.front, doc.body).render();
    ws.fs.create_new(&file, rendered.as_bytes())?;
    let parsed =
        Document::parse(&ws.display(&file), rendered.as_bytes()).map_err(Error::malformed)?;
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    located(ws, project, doc.status.as_str(), &name, file, parsed).map_err(Error::malformed)
}

/// Writes `doc` (already carrying its new `rev`) over the task found at `at`. When the status
/// changed, this is a status move (FORMAT §4.2): create-new in the destination folder, then
/// remove the old file. Call it under the task's lock. Returns the new path.
pub fn write(ws: &Workspace, at: &Located, doc: &TaskDoc) -> Result<PathBuf, Error> {
    let rendered = Document::new(doc.front.clone(), doc.body.clone()).render();
    if doc.status.as_str() == at.folder {
        ws.fs.replace(&at.file, rendered.as_bytes())?;
        return Ok(at.file.clone());
    }
    let name = at
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dest = ws.path(&["projects", &at.project, "tasks", doc.status.as_str(), &name]);
    // Listings of the project take this lock shared ([`moves_lock`]): none of them lists the
    // folders while the task is in both, or, across two folders listed one after the
    // other, in neither.
    let _moving = ws.fs.lock(&moves_lock(ws, &at.project))?;
    match ws.fs.create_new(&dest, rendered.as_bytes()) {
        Ok(()) => {}
        // A stale copy left by a crash mid-move: the writer under the lock replaces it.
        Err(crate::store::Error::Exists { .. }) => ws.fs.replace(&dest, rendered.as_bytes())?,
        Err(e) => return Err(e.into()),
    }
    ws.fs.remove(&at.file)?;
    Ok(dest)
}

/// Every copy of task `id` among the files of project `slug` named by its ULID (format 2) or
/// bearing the number the index gives it (format 1); `None` when none of those files holds it.
fn numbered_copies(ws: &Workspace, slug: &str, id: &str) -> Result<Option<Vec<Located>>, Error> {
    let index = super::index::tasks(ws, slug)?;
    let number = index
        .items
        .iter()
        .find(|e| e.id() == id)
        .map(|e| e.number());
    let ulid = id.strip_prefix("t-").unwrap_or(id);
    let mut copies = Vec::new();
    for folder in STATUS_FOLDERS {
        let dir = ws.path(&["projects", slug, "tasks", folder]);
        for name in ws.fs.names(&dir)? {
            let keyed = parse_keyed_filename(&name).is_some_and(|(u, _)| u == ulid);
            let numbered = number.is_some() && parse_task_filename(&name).map(|(n, _)| n) == number;
            if name.starts_with('.') || name.starts_with(TEMP_PREFIX) || !(keyed || numbered) {
                continue;
            }
            match read_one(ws, slug, folder, dir.join(&name)) {
                Ok(t) if t.task.id == id => copies.push(t),
                Ok(_) => {}
                // Another task's file, moved or broken: not this task's concern.
                Err(e) if e.is_vanished() => {}
                Err(Error::Store(crate::store::Error::Malformed(_))) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok((!copies.is_empty()).then_some(copies))
}

/// Re-reads one task by id from disk (after taking its lock), removing stale lower-`rev`
/// copies left by an interrupted move.
///
/// The index says which display number the task has; only the files with that number are
/// read (a copy left by an interrupted move keeps its name), so a mutation costs one listing
/// of names, not a parse of every task. When the index knows no such task, or none of those
/// files holds it (renumbered by hand since the index last saw it), every file is read.
pub fn reload(ws: &Workspace, project: &str, id: &str) -> Result<Located, Error> {
    let mut copies = match numbered_copies(ws, project, id)? {
        Some(copies) => copies,
        None => {
            let listing = list(ws, project)?;
            let Some(found) = by_id(&listing.items, id).cloned() else {
                return Err(Error::NotFound {
                    what: "task",
                    id: id.to_string(),
                });
            };
            let mut copies: Vec<Located> = listing
                .warnings
                .iter()
                .filter(|w| {
                    w.reason == Reason::DuplicateId
                        && w.path != found.path
                        && w.detail.starts_with(id)
                })
                .filter_map(|w| {
                    let file = ws.root().join(Path::new(&w.path));
                    let folder = Path::new(&w.path)
                        .parent()?
                        .file_name()?
                        .to_str()?
                        .to_string();
                    read_one(ws, project, &folder, file).ok()
                })
                .collect();
            copies.insert(0, found);
            copies
        }
    };
    // The order `list` keeps copies in: the greatest rev first, then by path.
    copies.sort_by(|a, b| b.task.rev.cmp(&a.task.rev).then(a.path.cmp(&b.path)));
    let found = copies.remove(0);
    let stale: Vec<PathBuf> = copies.into_iter().map(|c| c.file).collect();
    for copy in &stale {
        // Equal revs cannot be ordered: deleting either could drop a hand edit.
        let rev = read_document(ws, copy).ok().and_then(|d| {
            d.front
                .get("rev")
                .and_then(|v| v.as_str())
                .map(str::to_string)
        });
        if rev.as_deref() == Some(found.task.rev.as_str()) {
            return Err(Error::Conflict {
                path: found.path.clone(),
                detail: format!(
                    "{id} is also at {} with the same rev {}; keep one copy by hand, then retry",
                    ws.display(copy),
                    found.task.rev
                ),
            });
        }
    }
    for copy in &stale {
        ws.fs.remove(copy)?;
    }
    Ok(found)
}

impl TaskKey for super::index::TaskEntry {
    fn key_project(&self) -> &str {
        self.project()
    }
    fn key_id(&self) -> &str {
        self.id()
    }
    fn key_number(&self) -> u32 {
        self.number()
    }
    fn key_slug(&self) -> &str {
        self.slug()
    }
}
