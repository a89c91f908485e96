//! Lookups among a project's tasks as the index lists them ([`super::index::tasks`]): by
//! reference, by id, by parent. Every answer comes from the validated listing, so it is the
//! answer the whole listing gives.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::model::task::Status;
use crate::store::Problem;
use crate::workspace::Workspace;

use super::Error;
use super::index::TaskEntry;
use super::tasks::{ResolveError, resolve_noted};

/// The tasks of one project, sorted by number then id.
pub struct ProjectTasks(Vec<Arc<TaskEntry>>);

/// One task of a [`ProjectTasks`].
#[derive(Clone, Copy)]
pub struct Item<'a> {
    entry: &'a Arc<TaskEntry>,
}

impl<'a> Item<'a> {
    pub fn entry(&self) -> Option<Arc<TaskEntry>> {
        Some(Arc::clone(self.entry))
    }
}

/// What a walk over every task of a project reads of each ([`ProjectTasks::walk`]).
#[derive(Clone, Copy)]
pub struct Walked<'a> {
    pub id_hash: u32,
    /// The status of the folder the file is in.
    pub status: Status,
    pub assignee: Option<&'a str>,
}

impl ProjectTasks {
    /// The listing of `slug`, with its warnings.
    pub fn load(ws: &Workspace, slug: &str) -> Result<(ProjectTasks, Vec<Problem>), Error> {
        let listed = super::index::tasks(ws, slug)?;
        Ok((ProjectTasks(listed.items), listed.warnings))
    }

    /// True when the project has no task.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The number of tasks.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The task at position `at`.
    pub fn item(&self, at: usize) -> Item<'_> {
        Item { entry: &self.0[at] }
    }

    /// The entries at positions `ats`, in that order.
    pub fn entries(&self, ats: &[usize]) -> Option<Vec<Arc<TaskEntry>>> {
        ats.iter().map(|&at| self.0.get(at).cloned()).collect()
    }

    /// The entries whose number, folder and assignee `keep` accepts, in listing order.
    pub fn select(
        &self,
        _ws: &Workspace,
        mut keep: impl FnMut(u32, &str, Option<&str>) -> bool,
    ) -> Result<Vec<Arc<TaskEntry>>, Error> {
        Ok(self
            .0
            .iter()
            .filter(|e| keep(e.number(), e.folder(), e.assignee()))
            .cloned()
            .collect())
    }

    /// Calls `f` with the number, folder and assignee of every task.
    pub fn each(&self, mut f: impl FnMut(u32, &str, Option<&str>)) {
        self.0
            .iter()
            .for_each(|e| f(e.number(), e.folder(), e.assignee()));
    }

    /// Each task's id hash, folder and assignee, in listing order.
    pub fn walk(&self) -> Vec<Walked<'_>> {
        self.0
            .iter()
            .map(|e| Walked {
                id_hash: id_hash(e.id()),
                status: Status::parse(e.folder()).unwrap_or(Status::Open),
                assignee: e.assignee(),
            })
            .collect()
    }

    /// The open tasks whose file slug is `title_slug`.
    pub fn open_titled(&self, title_slug: &str) -> Vec<Arc<TaskEntry>> {
        self.0
            .iter()
            .filter(|e| e.folder() == "open" && e.slug() == title_slug)
            .cloned()
            .collect()
    }
}

/// A set of id hashes, asked for membership.
pub struct Hashes(BTreeSet<u32>);

impl Hashes {
    pub fn contains(&self, h: u32) -> bool {
        self.0.contains(&h)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The hashes to look for, in a [`Hashes`].
pub fn sorted(hashes: impl Iterator<Item = u32>) -> Hashes {
    Hashes(hashes.collect())
}

/// A hash of a task id: equal for the same id, rarely for two; a match is always confirmed
/// on the id itself.
pub fn id_hash(id: &str) -> u32 {
    crc32fast::hash(id.as_bytes())
}

/// What a reference resolved to.
pub type Resolved = Result<Arc<TaskEntry>, ResolveError>;

/// Resolves a task reference (any FORMAT §3.3 form) across `projects`, with the warnings of
/// their listings.
pub fn resolve(
    ws: &Workspace,
    projects: &[String],
    reference: &str,
) -> Result<(Resolved, Vec<Problem>), Error> {
    let (lookup, mut warnings) = Lookup::load(ws, projects)?;
    let (found, note) = lookup.resolve_noted(reference);
    if let (Ok(entry), Some(detail)) = (&found, note) {
        warnings.push(Problem {
            path: ws.display(&ws.dir().join(entry.file())),
            reason: crate::store::Reason::Renumbered,
            detail,
        });
    }
    Ok((found, warnings))
}

/// Every listed project's tasks, for a reader that looks up a few of them by id, parent or
/// reference, as the brief does.
pub struct Lookup {
    projects: Vec<(String, ProjectTasks)>,
    by_id: HashMap<String, Vec<(usize, Arc<TaskEntry>)>>,
}

impl Lookup {
    /// The tasks of projects `slugs` (in that order), with the warnings of their listings.
    pub fn load(ws: &Workspace, slugs: &[String]) -> Result<(Lookup, Vec<Problem>), Error> {
        let mut warnings = Vec::new();
        let mut projects = Vec::new();
        let mut by_id: HashMap<String, Vec<(usize, Arc<TaskEntry>)>> = HashMap::new();
        for (p, slug) in slugs.iter().enumerate() {
            let (tasks, found) = ProjectTasks::load(ws, slug)?;
            warnings.extend(found);
            for e in &tasks.0 {
                by_id
                    .entry(e.id().to_string())
                    .or_default()
                    .push((p, Arc::clone(e)));
            }
            projects.push((slug.clone(), tasks));
        }
        Ok((Lookup { projects, by_id }, warnings))
    }

    /// The first task with this id, in project order; only in project `only` when given.
    pub fn by_id(
        &self,
        _ws: &Workspace,
        id: &str,
        only: Option<&str>,
    ) -> Result<Option<Arc<TaskEntry>>, Error> {
        Ok(self.by_id.get(id).and_then(|found| {
            found
                .iter()
                .find(|(p, _)| only.is_none_or(|o| o == self.projects[*p].0))
                .map(|(_, e)| Arc::clone(e))
        }))
    }

    /// The ids among `ids` of tasks of project `slug` whose parent is `parent` (`None`: tasks
    /// at the top).
    pub fn with_parent(
        &self,
        _ws: &Workspace,
        slug: &str,
        parent: Option<&str>,
        ids: &BTreeSet<&str>,
    ) -> Result<BTreeSet<String>, Error> {
        Ok(self
            .tasks_of(slug)
            .filter(|e| e.parent() == parent && ids.contains(e.id()))
            .map(|e| e.id().to_string())
            .collect())
    }

    fn tasks_of<'s>(&'s self, slug: &'s str) -> impl Iterator<Item = &'s Arc<TaskEntry>> + 's {
        self.projects
            .iter()
            .filter(move |(s, _)| s == slug)
            .flat_map(|(_, t)| t.0.iter())
    }

    pub fn resolve(&self, _ws: &Workspace, reference: &str) -> Result<Resolved, Error> {
        Ok(self.resolve_noted(reference).0)
    }

    /// [`Lookup::resolve`], with the notice of the merge rule when it decided.
    pub fn resolve_noted(&self, reference: &str) -> (Resolved, Option<String>) {
        let input = reference.trim();
        let scope = input
            .split_once('/')
            .map(|(p, _)| p.strip_prefix("p-").unwrap_or(p));
        let mut candidates = Vec::new();
        let mut populated: Vec<&str> = Vec::new();
        for (slug, tasks) in &self.projects {
            if scope.is_some_and(|s| s != slug) {
                continue;
            }
            if !tasks.is_empty() {
                populated.push(slug);
            }
            candidates.extend(tasks.0.iter().cloned());
        }
        let (found, note) = resolve_noted(&candidates, reference, |p| populated.contains(&p));
        (found.cloned(), note)
    }

    pub fn children_of(
        &self,
        _ws: &Workspace,
        slug: &str,
        parents: &BTreeSet<String>,
    ) -> Result<Vec<Arc<TaskEntry>>, Error> {
        Ok(self
            .tasks_of(slug)
            .filter(|e| e.parent().is_some_and(|x| parents.contains(x)))
            .cloned()
            .collect())
    }

    /// The ids of the `n` tasks of `slug` most recently done (by last Log line, then by id,
    /// greatest first).
    pub fn recent_done(&self, _ws: &Workspace, slug: &str, n: usize) -> Result<Vec<String>, Error> {
        let mut done: Vec<(Option<&str>, &str)> = self
            .tasks_of(slug)
            .filter(|t| t.folder() == "done")
            .map(|t| (t.last_log_at(), t.id()))
            .collect();
        done.sort_by(|a, b| b.cmp(a));
        Ok(done
            .into_iter()
            .take(n)
            .map(|(_, id)| id.to_string())
            .collect())
    }
}
