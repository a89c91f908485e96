//! `dacli review [<rev> | <rev>..<rev>]`: the workspace's changes, named semantically.

use serde::{Deserialize, Serialize};

use super::{post, render};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::git::Repo;
use crate::objects::{lookup::Lookup, projects};
use crate::ops::review::{self as model, Report};
use crate::workspace::Workspace;

/// Review the workspace's changes the way a reviewer reads them: tasks created and moved,
/// criteria checked, assignees, estimates, title and body edits (word by word), dependencies,
/// notes, risks, glossary terms, questions and events (pending or settled), and the files that
/// do not parse or lie outside the format. With no revision: the working tree against `HEAD`;
/// `<rev>`: the working tree against that commit; `<a>..<b>`: commit `b` against commit `a`.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// `<rev>` or `<rev>..<rev>` (default: the working tree against `HEAD`).
    #[arg(value_name = "RANGE")]
    #[serde(default)]
    range: Option<String>,
    /// Review pull request N: its head and GitHub's test merge are fetched from `--remote` into
    /// `refs/dacli/review/pr-N/` (no ref of yours moves), and the head is compared with where it
    /// left the base branch.
    #[arg(long, value_name = "N", conflicts_with = "range")]
    #[serde(default)]
    pr: Option<u64>,
    /// The remote `--pr` fetches from.
    #[arg(long, value_name = "NAME", default_value = "origin", requires = "pr")]
    #[serde(default = "origin")]
    remote: String,
    /// `text` (default) or `markdown` (for a pull request comment); `--json` gives the data.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    #[serde(default)]
    format: Format,
    /// Post the review (as `--format markdown` shows it) as one comment on the pull request,
    /// updating the comment an earlier post made. Without `--apply` only previews: writes
    /// nothing, names the action (create, update, none) and shows the body.
    #[arg(long, requires = "pr")]
    #[serde(default)]
    post: bool,
    /// Write the comment `--post` previews.
    #[arg(long, requires = "post")]
    #[serde(default)]
    apply: bool,
    /// The plan_digest of the reviewed preview: the apply is refused if it changed since.
    #[arg(long, value_name = "DIGEST", requires = "apply")]
    #[serde(default)]
    digest: Option<String>,
    /// At most this many GitHub API calls for `--post`.
    #[arg(
        long = "max-api-calls",
        value_name = "N",
        default_value_t = 60,
        requires = "post"
    )]
    #[serde(default = "default_calls")]
    max_api_calls: u32,
}

fn default_calls() -> u32 {
    60
}

fn origin() -> String {
    "origin".to_string()
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    #[default]
    Text,
    Markdown,
}

impl Classify for Request {
    fn class(&self, declared: Class) -> Class {
        if self.apply { Class::Apply } else { declared }
    }
}

/// One side of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    /// What the user named (`HEAD`, `main`, `working tree`).
    pub rev: String,
    /// The commit, `null` for the working tree (or a repository without commits).
    pub commit: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Response {
    pub base: Side,
    pub head: Side,
    #[serde(flatten)]
    pub report: Report,
    /// What `--post` did or would do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub post: Option<post::Posted>,
    #[serde(skip)]
    format: Format,
}

pub(super) fn command() -> Command {
    Command::new("review", Class::Read, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    // clap enforces these for the CLI; a JSON request (MCP `cli`) is checked here.
    if req.post && req.pr.is_none() {
        return Err(Error::usage("`--post` needs `--pr N`"));
    }
    if req.apply && !req.post {
        return Err(Error::usage("`--apply` needs `--post`"));
    }
    if req.digest.is_some() && !req.apply {
        return Err(Error::usage("`--digest` is only taken with `--apply`"));
    }
    let ws = ctx.ws()?;
    let repo = model::open_repo(ws)?;
    // A long range or a pull request's fetch takes a while: a spinner on a terminal names the
    // phase and counts the files read.
    let progress = ctx.progress(match req.pr {
        Some(n) => format!("fetching pull request {n} from {}", req.remote),
        None => "resolving the range".to_string(),
    });
    let (base, head) = match req.pr {
        Some(n) => pr_sides(ws, &repo, &req.remote, n)?,
        None => sides(&repo, req.range.as_deref())?,
    };
    let title = title(&base, &head);
    progress.relabel(format!("comparing {title}"));
    let read = |n: usize, total: usize| {
        progress.relabel(format!(
            "comparing {title}: {n} of {total} changed file(s) read"
        ));
    };
    let report = review(ws, &repo, &base, &head, &read)?;
    progress.relabel(format!("reviewed {title}"));
    drop(progress);
    let post = match req.pr.filter(|_| req.post) {
        Some(pull) => {
            if req
                .digest
                .as_deref()
                .is_some_and(|d| !crate::policy::apply::is_digest(d))
            {
                return Err(Error::usage(format!(
                    "`--digest {}` is not a plan digest (`sha256:` and 64 lower-case hex digits)",
                    req.digest.as_deref().unwrap_or_default()
                )));
            }
            let args = post::Args {
                pull,
                title: &title,
                apply: req.apply,
                digest: req.digest.as_deref(),
                max_api_calls: req.max_api_calls,
            };
            match post::run(ctx, &report, args)? {
                Outcome::Done(p) => Some(p),
                Outcome::Refused(r) => return Ok(Outcome::Refused(r)),
            }
        }
        None => None,
    };
    Ok(Outcome::Done(Response {
        base,
        head,
        report,
        post,
        format: req.format,
    }))
}

/// Fetches pull request `n` and names its sides: the head, and where it left the base (the
/// merge base of the head and the base tip GitHub's test merge was made on).
fn pr_sides(ws: &Workspace, repo: &Repo, remote: &str, n: u64) -> Result<(Side, Side), Error> {
    if n == 0 {
        return Err(Error::usage("--pr: a pull request number is at least 1"));
    }
    let (head_ref, merge_ref) = crate::git::cli::fetch_pull(ws.root(), remote, n)?;
    let head = repo.rev_parse(&head_ref)?;
    let Some(merge_ref) = merge_ref else {
        return Err(Error::not_found(format!(
            "pull request {n} has no test merge on `{remote}` (refs/pull/{n}/merge): it may conflict with its base"
        ))
        .hint(format!("compare by hand: `dacli review <base>..{head_ref}`")));
    };
    let merge = repo.rev_parse(&merge_ref)?;
    let info = repo.commit_info(&merge)?;
    let tip = info.parents.first().cloned().unwrap_or(merge);
    let base = repo.merge_base(&tip, &head)?.unwrap_or(tip);
    Ok((
        Side {
            rev: format!("pr {n} base"),
            commit: Some(base),
        },
        Side {
            rev: format!("pr {n}"),
            commit: Some(head),
        },
    ))
}

/// Reads the two sides a range names.
fn sides(repo: &Repo, range: Option<&str>) -> Result<(Side, Side), Error> {
    let resolve = |rev: &str| -> Result<Side, Error> {
        // The parent of a root commit is the empty tree: `<root>^..<rev>` reviews everything
        // up to `<rev>`, the way a first commit's own diff shows every file added.
        let parent_of = rev.strip_suffix('^').or_else(|| rev.strip_suffix("~1"));
        if let Some(child) = parent_of
            && let Ok(sha) = repo.rev_parse(child)
            && repo.commit_info(&sha).is_ok_and(|c| c.parents.is_empty())
        {
            return Ok(Side {
                rev: rev.to_string(),
                commit: None,
            });
        }
        let commit = repo.rev_parse(rev).map_err(|e| {
            Error::not_found(format!("RANGE: {e}")).hint("name a commit, branch or tag")
        })?;
        Ok(Side {
            rev: rev.to_string(),
            commit: Some(commit),
        })
    };
    let worktree = Side {
        rev: "working tree".to_string(),
        commit: None,
    };
    match range {
        None => {
            // A repository without commits: everything in the working tree is new.
            let base = resolve("HEAD").unwrap_or(Side {
                rev: "HEAD".to_string(),
                commit: None,
            });
            Ok((base, worktree))
        }
        Some(r) => match r.split_once("..") {
            Some((a, b)) => {
                if a.is_empty() && b.is_empty() || b.starts_with('.') {
                    return Err(Error::usage(format!("RANGE: `{r}` is not `<rev>..<rev>`")));
                }
                let a = if a.is_empty() { "HEAD" } else { a };
                let b = if b.is_empty() { "HEAD" } else { b };
                Ok((resolve(a)?, resolve(b)?))
            }
            None => Ok((resolve(r)?, worktree)),
        },
    }
}

/// The review of `head` against `base`.
pub(super) fn review(
    ws: &Workspace,
    repo: &Repo,
    base: &Side,
    head: &Side,
    read: &dyn Fn(usize, usize),
) -> Result<Report, Error> {
    let mut analysis = model::Analysis::new(&model::ws_prefix(ws));
    model::file_changes(
        ws,
        repo,
        base.commit.as_deref(),
        head.commit.as_deref(),
        read,
        &mut |c| analysis.add(&c),
    )?;
    let lookup = std::cell::OnceCell::new();
    let refs = |id: &str| -> Option<String> {
        let l: &Option<Lookup> = lookup.get_or_init(|| {
            let slugs: Vec<String> = projects::list(ws)
                .ok()?
                .items
                .into_iter()
                .map(|p| p.slug)
                .collect();
            Lookup::load(ws, &slugs).ok().map(|(l, _)| l)
        });
        l.as_ref()?
            .by_id(ws, id, None)
            .ok()
            .flatten()
            .map(|e| e.reference())
    };
    Ok(analysis.finish(&refs))
}

fn title(base: &Side, head: &Side) -> String {
    format!("{} → {}", side_label(base), side_label(head))
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    if let Some(p) = &r.post {
        return post::text(p);
    }
    let title = title(&r.base, &r.head);
    match r.format {
        Format::Text => render::text(&title, &r.report),
        Format::Markdown => render::markdown(&title, &r.report),
    }
}

fn side_label(s: &Side) -> String {
    match &s.commit {
        Some(c) if s.rev != *c => format!("{} ({})", s.rev, &c[..c.len().min(10)]),
        Some(c) => c[..c.len().min(10)].to_string(),
        None => s.rev.clone(),
    }
}
