//! What the three git-side tools share: the observed base branch, notices, and the map from
//! branches to tasks. How an apply starts and the transaction runner are
//! `dispatch::apply`, shared with the GitHub tools.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

pub(super) use crate::dispatch::apply::{
    ApplyArgs, Notice, Run, Start, announce, digest_of, frozen, start,
};
use crate::dispatch::{Ctx, Error, Outcome};
use crate::git::{self, Head, Repo};
use crate::journal::snapshot::Snapshot;
use crate::model::Refusal;
use crate::model::id::{ROOT_AGENT, parse_ulid};
use crate::objects::index::TaskEntry;
use crate::objects::tasks;

/// The text lines of an applied (or replayed) transaction: its outcome, its id, and the
/// evidence files it wrote.
pub(super) fn applied_text(
    outcome: &str,
    txn: Option<&str>,
    already_applied: bool,
    evidence: &[String],
) -> String {
    let again = if already_applied {
        " (already applied; nothing done)"
    } else {
        ""
    };
    let mut out = format!("{outcome}: transaction {}{again}\n", txn.unwrap_or("-"));
    for e in evidence {
        out.push_str(&format!("evidence: {e}\n"));
    }
    out
}

/// The base branch as observed: its name, commit, and where the commit came from. The commit
/// is part of every plan, so a base that moves between preview and apply is drift.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(super) struct Base {
    pub name: String,
    #[serde(default)]
    pub sha: Option<String>,
    /// `fetched` (fresh from origin into `refs/dacli/observed/`), `local` (no remote, or
    /// `--no-fetch`), `missing`, `fetch_failed`.
    pub source: String,
    /// A shallow clone: ancestry cannot be proven against it.
    #[serde(default)]
    pub shallow: bool,
}

impl Base {
    /// The commit against which ancestry may be proven, if any.
    pub fn provable(&self) -> Option<&str> {
        if self.shallow {
            None
        } else {
            self.sha.as_deref()
        }
    }
}

/// Finds and observes the base: `--base`, else the project's `landing.base`, else the
/// workspace's `[landing] base`, else the repository's default branch. With a remote `origin`
/// and fetching allowed, the branch is fetched into `refs/dacli/observed/<base>` (never
/// moving `refs/remotes/*`); otherwise the local branch is used.
pub(super) fn observe_base(
    ctx: &Ctx,
    repo: &Repo,
    requested: Option<&str>,
    project: Option<&str>,
    fetch: bool,
    notices: &mut Vec<Notice>,
) -> Result<Base, Error> {
    let ws = ctx.ws()?;
    let name = match requested {
        Some(b) => Some(b.to_string()),
        None => configured_base(ctx, project)?.or_else(|| repo.default_branch()),
    };
    let shallow = repo.is_shallow();
    if shallow {
        notices.push(Notice::new(
            "shallow_clone",
            "this is a shallow clone: history is cut, so no ancestry can be proven and every \
             candidate that needs it is kept (`git fetch --unshallow` lifts this)",
        ));
    }
    let Some(name) = name else {
        let head = repo.head()?;
        let why = match head {
            Head::Detached { .. } => "HEAD is detached",
            _ => "the repository has no default branch",
        };
        notices.push(Notice::new(
            "base_unknown",
            format!("{why} and no base is configured: pass `--base <branch>` or set `[landing] base` in .dacli/config.toml"),
        ));
        return Ok(Base {
            name: String::new(),
            sha: None,
            source: "missing".into(),
            shallow,
        });
    };
    if crate::workspace::names::check_repo_path(&name).is_err() || name.starts_with('-') {
        return Err(Error::usage(format!("`{name}` is not a branch name")));
    }
    let root = ws.root();
    if fetch && repo.remote_url("origin").is_some() {
        match git::cli::fetch_base(root, "origin", &name) {
            Ok(target) => {
                let sha = repo_at(root)?.resolve(&target)?;
                return Ok(Base {
                    name,
                    sha,
                    source: "fetched".into(),
                    shallow,
                });
            }
            Err(e) => {
                notices.push(Notice::new(
                    "fetch_failed",
                    format!("could not fetch `{name}` from origin ({e}); proofs that need a fresh base stay unknown"),
                ));
                return Ok(Base {
                    name,
                    sha: None,
                    source: "fetch_failed".into(),
                    shallow,
                });
            }
        }
    }
    let sha = match repo.resolve(&format!("refs/heads/{name}"))? {
        Some(sha) => Some(sha),
        None => repo.resolve(&format!("refs/remotes/origin/{name}"))?,
    };
    if sha.is_none() {
        notices.push(Notice::new(
            "base_missing",
            format!("the base branch `{name}` does not exist here; pass `--base <branch>` naming one that does"),
        ));
    }
    Ok(Base {
        source: if sha.is_some() { "local" } else { "missing" }.into(),
        name,
        sha,
        shallow,
    })
}

/// A fresh handle: refs written by a subprocess are read from disk, not from a cache.
fn repo_at(root: &Path) -> Result<Repo, Error> {
    Ok(Repo::open(root)?)
}

fn configured_base(ctx: &Ctx, project: Option<&str>) -> Result<Option<String>, Error> {
    let ws = ctx.ws()?;
    if let Some(slug) = project {
        let path = ws.path(&["projects", slug, "project.md"]);
        let doc = crate::objects::read_document(ws, &path)?;
        if let Some(b) = doc
            .front
            .get("landing")
            .and_then(|l| l.get("base"))
            .and_then(|b| b.as_str())
        {
            return Ok(Some(b.to_string()));
        }
    }
    Ok(ws
        .config
        .doc
        .get("landing")
        .and_then(|l| l.get("base"))
        .and_then(|b| b.as_str())
        .map(str::to_string))
}

/// A project slug from `--project` (`p-<slug>` accepted), checked to exist.
pub(super) fn project_slug(ctx: &Ctx, project: Option<&str>) -> Result<Option<String>, Error> {
    let Some(p) = project else {
        return Ok(None);
    };
    let slug = p.strip_prefix("p-").unwrap_or(p);
    crate::workspace::names::check_slug(slug)
        .map_err(|_| Error::bad_slug(format!("`{p}` is not a project slug")))?;
    let ws = ctx.ws()?;
    if !ws.path(&["projects", slug, "project.md"]).is_file() {
        return Err(
            Error::not_found(format!("no project `{slug}` in this workspace"))
                .hint("list projects with `dacli project list --status all`"),
        );
    }
    Ok(Some(slug.to_string()))
}

/// Trailer keys that name a task (`Dacli-Task: t-<ULID>`), compared case-insensitively.
pub(super) const TRAILERS: [&str; 2] = ["Dacli-Task", "Task"];

/// Trailer values are compared as lower-case ids, so `t-01KJ…` and `T-01kj…` agree.
pub(super) fn normalise_task_id(v: &str) -> String {
    v.trim().to_ascii_lowercase()
}

/// The map from branches to tasks, built once: each branch is matched through indexes of the
/// tasks' recorded branches, numbers, slugs and ids, so a repository of thousands of task
/// branches costs one lookup per branch, not a scan of every task.
pub(super) struct BranchTasks<'a> {
    /// Every task as the snapshot shows it (folded where pending events change it).
    all: Vec<&'a TaskEntry>,
    /// Tasks by the branch their recorded delivery names.
    recorded: HashMap<String, Vec<usize>>,
    by_number: HashMap<u32, Vec<usize>>,
    by_slug: HashMap<&'a str, Vec<usize>>,
    by_id: HashMap<&'a str, usize>,
    projects: HashSet<&'a str>,
}

/// A task as reference resolution sees it, for resolving among a few of them.
struct Key<'a>(&'a TaskEntry);

impl tasks::TaskKey for Key<'_> {
    fn key_project(&self) -> &str {
        self.0.project()
    }
    fn key_id(&self) -> &str {
        self.0.id()
    }
    fn key_number(&self) -> u32 {
        self.0.number()
    }
    fn key_slug(&self) -> &str {
        self.0.slug()
    }
}

impl<'a> BranchTasks<'a> {
    pub fn new(snapshot: &'a Snapshot) -> BranchTasks<'a> {
        let all: Vec<&TaskEntry> = snapshot.tasks.iter().map(|t| snapshot.shown(t)).collect();
        let mut recorded: HashMap<String, Vec<usize>> = HashMap::new();
        let mut by_number: HashMap<u32, Vec<usize>> = HashMap::new();
        let mut by_slug: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut by_id: HashMap<&str, usize> = HashMap::new();
        let mut projects = HashSet::new();
        for (i, &t) in all.iter().enumerate() {
            if let Some(b) = t.delivery().branch {
                recorded.entry(b).or_default().push(i);
            }
            by_number.entry(t.number()).or_default().push(i);
            by_slug.entry(t.slug()).or_default().push(i);
            by_id.insert(t.id(), i);
            projects.insert(t.project());
        }
        BranchTasks {
            all,
            recorded,
            by_number,
            by_slug,
            by_id,
            projects,
        }
    }

    /// The task a branch (short name, `dacli/...`) belongs to: the one whose recorded delivery
    /// names it, else the task the part after `dacli/` refers to (`002-slug`,
    /// `checkout/002-slug`). `Err` carries why it is not known (no match, or several).
    pub fn task_of(&self, branch: &str) -> Result<&'a TaskEntry, String> {
        match self.recorded.get(branch).map(Vec::as_slice) {
            Some([one]) => return Ok(self.all[*one]),
            Some(many) if many.len() > 1 => {
                return Err(format!(
                    "{} tasks record this branch in `delivery`",
                    many.len()
                ));
            }
            _ => {}
        }
        let Some(rest) = branch.strip_prefix("dacli/") else {
            return Err("not a `dacli/` task branch".into());
        };
        // Every task the reference could name by any rule of `tasks::resolve`, in workspace
        // order: the rules themselves then decide among these few.
        let few: Vec<Key<'a>> = self
            .could_name(rest)
            .into_iter()
            .map(|i| Key(self.all[i]))
            .collect();
        match tasks::resolve_among(&few, rest, |p| self.projects.contains(p)) {
            Ok(t) => Ok(t.0),
            Err(tasks::ResolveError::Ambiguous { candidates, .. }) => {
                Err(format!("`{rest}` matches {} tasks", candidates.len()))
            }
            Err(_) => Err(format!("no task matches `{rest}`")),
        }
    }

    /// The tasks whose id, number or slug a reference (`[<project>/]<rest>`) mentions.
    fn could_name(&self, reference: &str) -> Vec<usize> {
        let input = reference.trim();
        let rest = input.split_once('/').map_or(input, |(_, r)| r);
        let lower = rest.to_ascii_lowercase();
        let mut out: Vec<usize> = Vec::new();
        let mut add = |list: Option<&Vec<usize>>| out.extend(list.into_iter().flatten());
        if let Ok(n) = lower.parse::<u32>() {
            add(self.by_number.get(&n));
        }
        add(self.by_slug.get(lower.as_str()));
        if let Some((n, s)) = lower.split_once('-')
            && !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
        {
            if let Ok(n) = n.parse::<u32>() {
                add(self.by_number.get(&n));
            }
            add(self.by_slug.get(s));
        }
        let ulid = lower
            .strip_prefix("t-")
            .unwrap_or(&lower)
            .to_ascii_uppercase();
        for u in [Some(ulid.as_str()), ulid.split_once('-').map(|(u, _)| u)]
            .into_iter()
            .flatten()
        {
            if let Some(u) = parse_ulid(u)
                && let Some(i) = self.by_id.get(format!("t-{u}").as_str())
            {
                out.push(*i);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// The identity whose state a task's branch and worktree are: its assignee, else its owner.
pub(super) fn state_owner(t: &TaskEntry) -> String {
    t.assignee().unwrap_or_else(|| t.owner()).to_string()
}

/// `grant.root_required` for an apply that touches state of identities other than the caller.
pub(super) fn root_refusal(
    ctx: &Ctx,
    command: &str,
    others: &[String],
) -> Result<Option<Refusal>, Error> {
    let me = &ctx.identity()?.agent.id;
    if me == ROOT_AGENT || others.is_empty() {
        return Ok(None);
    }
    Ok(Some(Refusal::new(
        "grant.root_required",
        format!(
            "the plan touches state of {} ({}), and only a-root acts for another identity",
            if others.len() == 1 {
                "another identity"
            } else {
                "other identities"
            },
            others.join(", ")
        ),
        format!(
            "Ask a-root or the human to run `dacli {command}`, or ask {} to apply it.",
            others.join(" or ")
        ),
    )))
}

/// Paths in output are relative to the work-tree root, also for a directory outside it
/// (`../wt-x`): never absolute.
pub(super) fn relative(root: &Path, path: &Path) -> String {
    let root: Vec<_> = root.components().collect();
    let target: Vec<_> = path.components().collect();
    let common = root
        .iter()
        .zip(target.iter())
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts: Vec<String> = Vec::new();
    for _ in common..root.len() {
        parts.push("..".into());
    }
    for c in &target[common..] {
        parts.push(c.as_os_str().to_string_lossy().into_owned());
    }
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// Wraps a refusal so a command body can return it.
pub(super) fn refused<T>(r: Refusal) -> Result<Outcome<T>, Error> {
    Ok(Outcome::Refused(r))
}
