//! What the three git-side tools share: how an apply starts (GIT_GITHUB.md B0), the
//! transaction runner with its test pause, the observed base branch, notices, and the map from
//! branches to tasks.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dispatch::{Ctx, Error, Outcome};
use crate::git::{self, Head, Repo};
use crate::journal::txn::{NewStep, StepStatus, Txn, TxnOutcome};
use crate::model::Refusal;
use crate::model::id::{ROOT_AGENT, parse_ulid};
use crate::objects::tasks::{self, Located};
use crate::policy::apply::{self, ApplyRequest};
use crate::store::LockGuard;

/// `--apply`, `--digest`, `--txn` of one call.
#[derive(Debug, Clone, Copy)]
pub(super) struct ApplyArgs<'a> {
    /// The previewing command, as typed (`repo cleanup`).
    pub command: &'a str,
    /// The transaction and evidence tool name (`cleanup`).
    pub tool: &'a str,
    pub apply: bool,
    pub digest: Option<&'a str>,
    pub txn: Option<&'a str>,
}

/// How a call proceeds.
pub(super) enum Start {
    /// No `--apply`: observe and return the plan; write nothing.
    Preview,
    /// The apply is refused before anything is observed.
    Refused(Refusal),
    /// A transaction with this digest already completed: return its record, do nothing.
    Completed(Txn),
    /// A transaction with this digest is open (interrupted): finish it.
    Resume(Txn),
    /// Re-observe; run the plan only if its digest is the one given.
    Fresh { digest: String },
}

/// Decides how an apply starts, before anything is observed.
pub(super) fn start(ctx: &Ctx, args: ApplyArgs<'_>) -> Result<Start, Error> {
    if !args.apply {
        if args.digest.is_some() || args.txn.is_some() {
            return Err(
                Error::usage("`--digest` and `--txn` are only taken with `--apply`")
                    .hint(format!("preview with `dacli {}`", args.command)),
            );
        }
        return Ok(Start::Preview);
    }
    let req = ApplyRequest {
        command: args.command,
        digest: args.digest,
    };
    if let Some(r) = apply::digest_required(req) {
        return Ok(Start::Refused(r));
    }
    let digest = args.digest.unwrap_or_default();
    if !apply::is_digest(digest) {
        return Err(Error::usage(format!(
            "`--digest {digest}` is not a plan digest (`sha256:` and 64 lower-case hex digits)"
        )));
    }
    let ws = ctx.ws()?;
    if let Some(id) = args.txn {
        let Some(txn) = parse_ulid(id)
            .and_then(|_| Txn::load(ws, id).transpose())
            .transpose()?
        else {
            return Err(Error::not_found(format!(
                "no transaction `{id}` under txn/"
            )));
        };
        if txn.tool() != args.tool {
            return Err(Error::usage(format!(
                "transaction {id} belongs to `{}`, not to `dacli {}`",
                txn.tool(),
                args.command
            )));
        }
        if let Some(r) = apply::drift(req, txn.plan_digest(), "the transaction's frozen plan") {
            return Ok(Start::Refused(r));
        }
        return Ok(if txn.outcome().is_some() {
            Start::Completed(txn)
        } else {
            Start::Resume(txn)
        });
    }
    let found = crate::journal::txn::with_digest(ws, args.tool, digest)?;
    ctx.warn_all(found.warnings);
    if let Some(done) = found.items.iter().rev().find(|t| t.outcome().is_some()) {
        return Ok(Start::Completed(done.clone()));
    }
    if let Some(open) = found.items.into_iter().last() {
        return Ok(Start::Resume(open));
    }
    Ok(Start::Fresh {
        digest: digest.to_string(),
    })
}

/// A transaction being applied: holds `txn-<id>.lock` for its whole life, so a concurrent
/// resume waits and then finds the outcome.
pub(super) struct Run<'c, 't> {
    ctx: &'c Ctx<'t>,
    pub txn: Txn,
    _lock: LockGuard,
}

/// A transaction id minted and locked before anything else is locked (FORMAT §4.3 orders
/// `txn-<ULID>.lock` before `archive.lock`); its plan is written by [`Reserved::begin`].
pub(super) struct Reserved {
    id: ulid::Ulid,
    lock: LockGuard,
}

impl Reserved {
    /// Opens the transaction with the frozen plan.
    pub fn begin<'c, 't>(
        self,
        ctx: &'c Ctx<'t>,
        tool: &str,
        digest: &str,
        plan: &Value,
    ) -> Result<Run<'c, 't>, Error> {
        let ws = ctx.ws()?;
        let who = ctx.identity()?.agent.id.clone();
        let txn = Txn::begin(ws, tool, self.id, &who, digest, plan)?;
        pause_if_asked(ctx, 1);
        Ok(Run {
            ctx,
            txn,
            _lock: self.lock,
        })
    }
}

impl<'c, 't> Run<'c, 't> {
    /// Mints and locks a transaction id.
    pub fn reserve(ctx: &Ctx) -> Result<Reserved, Error> {
        let ws = ctx.ws()?;
        let id = ctx.new_ulid();
        let lock = ws.fs.lock(&ws.lock_path(&format!("txn-{id}")))?;
        Ok(Reserved { id, lock })
    }

    /// Opens a new transaction with the frozen plan.
    pub fn begin(
        ctx: &'c Ctx<'t>,
        tool: &str,
        digest: &str,
        plan: &Value,
    ) -> Result<Run<'c, 't>, Error> {
        Run::reserve(ctx)?.begin(ctx, tool, digest, plan)
    }

    /// Takes the lock of an open transaction and reads it again (a concurrent run may have
    /// finished it meanwhile).
    pub fn resume(ctx: &'c Ctx<'t>, txn: &Txn) -> Result<Run<'c, 't>, Error> {
        let ws = ctx.ws()?;
        let id = txn.id().to_string();
        let lock = ws.fs.lock(&ws.lock_path(&format!("txn-{id}")))?;
        let txn = Txn::load(ws, &id)?
            .ok_or_else(|| Error::not_found(format!("transaction `{id}` vanished")))?;
        Ok(Run {
            ctx,
            txn,
            _lock: lock,
        })
    }

    /// Records one step file.
    pub fn step(
        &mut self,
        step: &str,
        status: StepStatus,
        guard: Value,
        observed: Value,
    ) -> Result<(), Error> {
        let seq = self.txn.record(
            self.ctx.ws()?,
            NewStep {
                fresh: self.ctx.new_ulid(),
                step,
                status,
                guard,
                observed,
            },
        )?;
        pause_if_asked(self.ctx, seq);
        Ok(())
    }

    /// Closes the transaction.
    pub fn finish(&mut self, outcome: TxnOutcome, observed: Value) -> Result<(), Error> {
        let fresh = self.ctx.new_ulid();
        self.txn.finish(self.ctx.ws()?, fresh, outcome, observed)?;
        Ok(())
    }
}

/// The test hook `DACLI_TEST_PAUSE_AFTER_STEP=<n>`: after writing step file `n`, stop and
/// wait to be killed (a test sends SIGKILL), so a crash can be placed between any two steps.
/// Left alone, the process aborts after two minutes: it never goes on as if nothing happened.
fn pause_if_asked(ctx: &Ctx, seq: i64) {
    let wanted = ctx
        .env()
        .get("DACLI_TEST_PAUSE_AFTER_STEP")
        .and_then(|v| v.parse::<i64>().ok());
    if wanted == Some(seq) {
        for _ in 0..1200 {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        std::process::abort();
    }
}

/// A notice for `data.notices` (and stderr): a precise warning that changed nothing.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(super) struct Notice {
    pub code: String,
    pub message: String,
}

impl Notice {
    pub fn new(code: &str, message: impl Into<String>) -> Notice {
        Notice {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// Prints notices on stderr (they are also in `data.notices`).
pub(super) fn announce(ctx: &Ctx, notices: &[Notice]) {
    for n in notices {
        ctx.notice(format!("[{}] {}", n.code, n.message));
    }
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

/// The recorded delivery of a task (FORMAT §12 `delivery`).
#[derive(Debug, Clone, Default)]
pub(super) struct Delivery {
    pub branch: Option<String>,
    pub pr: Option<i64>,
    pub commits: Vec<String>,
}

/// The `delivery` table of a task, when it has one.
pub(super) fn delivery_of(t: &Located) -> Delivery {
    let Some(d) = t.doc.front.get("delivery") else {
        return Delivery::default();
    };
    Delivery {
        branch: d.get("branch").and_then(|b| b.as_str()).map(str::to_string),
        pr: d.get("pr").and_then(|p| p.as_integer()),
        commits: d
            .get("commits")
            .and_then(|c| c.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str())
                    .filter(|s| s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit()))
                    .map(str::to_ascii_lowercase)
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// The task a branch (short name, `dacli/...`) belongs to: the one whose recorded delivery
/// names it, else the task the part after `dacli/` refers to (`002-slug`, `checkout/002-slug`).
/// `Err` carries why it is not known (no match, or several).
pub(super) fn task_of_branch<'a>(all: &'a [Located], branch: &str) -> Result<&'a Located, String> {
    let recorded: Vec<&Located> = all
        .iter()
        .filter(|t| delivery_of(t).branch.as_deref() == Some(branch))
        .collect();
    match recorded.as_slice() {
        [one] => return Ok(one),
        [] => {}
        many => {
            return Err(format!(
                "{} tasks record this branch in `delivery`",
                many.len()
            ));
        }
    }
    let Some(rest) = branch.strip_prefix("dacli/") else {
        return Err("not a `dacli/` task branch".into());
    };
    match tasks::resolve(all, rest) {
        Ok(t) => Ok(t),
        Err(tasks::ResolveError::Ambiguous { candidates, .. }) => {
            Err(format!("`{rest}` matches {} tasks", candidates.len()))
        }
        Err(_) => Err(format!("no task matches `{rest}`")),
    }
}

/// The identity whose state a task's branch and worktree are: its assignee, else its owner.
pub(super) fn state_owner(t: &Located) -> String {
    t.doc
        .assignee()
        .unwrap_or_else(|| t.doc.owner())
        .to_string()
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
