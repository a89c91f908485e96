//! github: the GitHub-side tools of GIT_GITHUB.md B4–B6 (COMMANDS.md §12): `github link`,
//! `github consent grant|revoke`, `pr diagnose`, `release-train plan|open|resume|land|status`,
//! `github projection`, `github push` and `github pull|sync`. Reads need any identity; every
//! remote write needs rw, a linked repository and the durable record that authorizes it
//! (consent to publish, merge authority to land). Any GitHub access problem makes a gate
//! unknown, and unknown refuses.

pub(super) mod consent;
mod diagnose;
mod link;
mod projection;
mod pull;
mod train;

use std::time::Duration;

pub(super) use crate::dispatch::apply::{Notice, announce};
use crate::dispatch::{Command, Ctx, Error, ErrorKind, Outcome};
use crate::github::{self, AccessProblem, CallError, Client, Connect, Token, TokenSource};
use crate::model::Refusal;
use crate::model::id::ROOT_AGENT;

pub(super) fn commands() -> Vec<Command> {
    let mut out = vec![link::command()];
    out.extend(consent::commands());
    out.push(diagnose::command());
    out.extend(train::commands());
    out.push(projection::command());
    out.push(projection::push_command());
    out.push(pull::command());
    out.push(pull::sync_command());
    out
}

/// How long one request may wait for an answer unless `DACLI_GITHUB_TIMEOUT_MS` says
/// otherwise; the connect timeout is a fifth of it.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long one run may talk to GitHub in all unless `DACLI_GITHUB_DEADLINE_MS` says
/// otherwise.
const DEFAULT_DEADLINE: Duration = Duration::from_secs(600);

/// The workspace's link to GitHub (FORMAT §5 `[github]`).
#[derive(Debug, Clone)]
pub(super) struct Link {
    /// `owner/name`; `None` when the workspace is not linked.
    pub repo: Option<String>,
    /// The REST base: `DACLI_GITHUB_API_URL`, else `[github] api_url`, else api.github.com.
    pub api_url: String,
}

/// Reads the link from the config as it is on disk now.
pub(super) fn link_of(ctx: &Ctx) -> Result<Link, Error> {
    let ws = ctx.ws()?;
    let gh = ws.config.doc.get("github");
    let field = |k: &str| {
        gh.and_then(|g| g.get(k))
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let api_url = ctx
        .env()
        .get("DACLI_GITHUB_API_URL")
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .or_else(|| field("api_url"))
        .unwrap_or_else(|| github::DEFAULT_API_URL.to_string());
    Ok(Link {
        repo: field("repo"),
        api_url,
    })
}

/// `github.unlinked` (COMMANDS §2).
pub(super) fn unlinked(command: &str) -> Refusal {
    Refusal::new(
        "github.unlinked",
        format!(
            "`dacli {command}` needs a GitHub repository and this workspace is not linked to one (no `[github] repo` in .dacli/config.toml)"
        ),
        "Ask a-root: `dacli github link <owner>/<name>`.",
    )
}

/// The token: `GH_TOKEN`, then `GITHUB_TOKEN`, then `gh auth token --hostname <host>`.
/// Only its source is ever reported.
pub(super) fn token(ctx: &Ctx, api_url: &str) -> Token {
    for var in ["GH_TOKEN", "GITHUB_TOKEN"] {
        if let Some(v) = ctx.env().get(var).filter(|v| !v.trim().is_empty()) {
            return Token::new(v.trim().to_string(), TokenSource::Env);
        }
    }
    let host = ctx
        .env()
        .get("GH_HOST")
        .filter(|h| !h.is_empty())
        .map(str::to_string)
        .or_else(|| github::host_of(api_url))
        .unwrap_or_else(|| "github.com".to_string());
    let ran = crate::exec::run_program(
        "gh",
        &["auth", "token", "--hostname", &host],
        Duration::from_secs(10),
    );
    match ran {
        Ok(out) if out.exit_code == 0 && !out.stdout.trim().is_empty() => {
            Token::new(out.stdout.trim().to_string(), TokenSource::GhCli)
        }
        _ => Token::new(String::new(), TokenSource::None),
    }
}

/// A client of the linked API that warns, when dropped, if the token turned out to be an
/// over-scoped classic token (RELIABILITY H44). The check runs on drop because the scopes
/// are known only from GitHub's answers, and every way out of a command (a verdict, a
/// refusal, an error) passes through it.
pub(super) struct Session<'c> {
    client: Client,
    ctx: &'c Ctx<'c>,
    source: TokenSource,
    /// Reports, each second, that the GitHub calls of this session are still running, and
    /// what they are doing now ([`Session::phase`]).
    progress: std::cell::RefCell<crate::dispatch::Progress>,
}

impl Session<'_> {
    /// Names what the session does now, for a long run (a projection over many issues, a
    /// train's steps, `--watch`): the progress line on a terminal (stderr only; never with
    /// `--json`, `--quiet` or off a terminal) and the steps to an MCP client that asked.
    pub(super) fn phase(&self, label: impl Into<String>) {
        *self.progress.borrow_mut() = self.ctx.progress(label);
    }
}

impl std::ops::Deref for Session<'_> {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        let risky = overscoped(&self.client.scopes().unwrap_or_default());
        if !risky.is_empty() {
            let from = match self.source {
                TokenSource::GhCli => "`gh auth token`",
                _ => "GH_TOKEN or GITHUB_TOKEN",
            };
            self.ctx.notice(format!(
                "W_TOKEN_OVERSCOPED: the GitHub token from {from} carries {}, which dacli never \
                 needs; use a fine-grained token for this one repository or a GitHub App token \
                 (docs/GITHUB.md)",
                risky.join(", ")
            ));
        }
    }
}

/// The scopes of a classic token that can destroy or administer more than one repository's
/// issues and pull requests: `delete_repo` and every `admin:*`.
fn overscoped(scopes: &[String]) -> Vec<String> {
    scopes
        .iter()
        .filter(|s| *s == "delete_repo" || s.starts_with("admin:"))
        .cloned()
        .collect()
}

/// A client for the linked API, or the access problem that prevents one (`missing_token`).
pub(super) fn connect<'c>(
    ctx: &'c Ctx<'c>,
    api_url: &str,
    max_calls: u32,
) -> Result<(Result<Session<'c>, AccessProblem>, TokenSource), Error> {
    let token = token(ctx, api_url);
    let source = token.source;
    if source == TokenSource::None {
        return Ok((Err(AccessProblem::MissingToken), source));
    }
    let timeout = ctx
        .env()
        .get("DACLI_GITHUB_TIMEOUT_MS")
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(DEFAULT_TIMEOUT, Duration::from_millis);
    let deadline = ctx
        .env()
        .get("DACLI_GITHUB_DEADLINE_MS")
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(DEFAULT_DEADLINE, Duration::from_millis);
    let client = Client::connect(Connect {
        api_url,
        token: &token,
        timeout,
        max_calls,
        deadline,
    })
    .map_err(|e| match e {
        github::ConnectError::BadUrl(m) => Error::usage(format!("GitHub API URL: {m}")).hint(
            "set `[github] api_url` (or DACLI_GITHUB_API_URL) to e.g. https://api.github.com",
        ),
        github::ConnectError::Setup(m) => Error::new(
            ErrorKind::Operational,
            "E_GITHUB_ACCESS",
            format!("cannot set up the GitHub client: {m}"),
        ),
    })?;
    Ok((
        Ok(Session {
            client,
            ctx,
            source,
            progress: std::cell::RefCell::new(
                ctx.progress(format!("calling the GitHub API at {api_url}")),
            ),
        }),
        source,
    ))
}

/// `github.access` for a lasting problem; `E_GITHUB_ACCESS` (exit 1) for a transient one
/// (network, 5xx, rate limit), which waiting may fix (COMMANDS §12).
pub(super) fn access_failure<T>(problem: &AccessProblem, what: &str) -> Result<Outcome<T>, Error> {
    if problem.is_transient() {
        return Err(Error::new(
            ErrorKind::Operational,
            "E_GITHUB_ACCESS",
            format!("{what}: {} ({})", problem.describe(), problem.kind()),
        )
        .hint(problem.remedy()));
    }
    Ok(Outcome::Refused(Refusal::new(
        "github.access",
        format!("{what}: {} ({})", problem.describe(), problem.kind()),
        problem.remedy(),
    )))
}

/// Any call failure as the command's outcome: access problems as above; a spent budget, an
/// unexpected status or an undecodable answer as `E_GITHUB_ACCESS`.
pub(super) fn call_failure<T>(e: &CallError, what: &str) -> Result<Outcome<T>, Error> {
    match e {
        CallError::Access { problem, route } => {
            access_failure(problem, &format!("{what} ({route})"))
        }
        CallError::Budget { .. } => Err(Error::new(
            ErrorKind::Operational,
            "E_GITHUB_ACCESS",
            format!("{what}: {e}"),
        )
        .hint("raise `--max-api-calls`")),
        CallError::Deadline { .. } => Err(Error::new(
            ErrorKind::Operational,
            "E_GITHUB_ACCESS",
            format!("{what}: {e}"),
        )
        .hint("run again, or raise DACLI_GITHUB_DEADLINE_MS")),
        _ => Err(Error::new(
            ErrorKind::Operational,
            "E_GITHUB_ACCESS",
            format!("{what}: {e}"),
        )),
    }
}

/// Any call failure as an access problem, for places where a gate only needs to know that
/// GitHub could not answer: a spent budget or an unexpected answer is as unknown as a 5xx,
/// and each keeps its own cause.
pub(super) fn as_problem(e: &CallError) -> AccessProblem {
    match e {
        CallError::Access { problem, .. } => problem.clone(),
        CallError::Status { status, .. } => AccessProblem::ServerError { status: *status },
        CallError::Budget { limit, .. } => AccessProblem::BudgetSpent { limit: *limit },
        CallError::PageLimit { pages, .. } => AccessProblem::BudgetSpent { limit: *pages },
        CallError::Deadline { after_ms, .. } => AccessProblem::DeadlinePassed {
            after_ms: *after_ms,
        },
        CallError::Decode { route, .. } => AccessProblem::NetworkUnreachable {
            detail: format!("undecodable answer to {route}"),
        },
    }
}

/// `grant.root_required` unless the caller is a-root.
pub(super) fn root_only(ctx: &Ctx, exact: &str) -> Result<Option<Refusal>, Error> {
    if ctx.identity()?.agent.id == ROOT_AGENT {
        return Ok(None);
    }
    Ok(Some(Refusal::new(
        "grant.root_required",
        format!("`dacli {exact}` changes what dacli may do on GitHub, which only a-root decides"),
        format!("Ask a-root or the human to run `dacli {exact}`."),
    )))
}

/// A project slug from `P` or `p-P`, checked to exist.
pub(super) fn project_slug(ctx: &Ctx, project: &str) -> Result<String, Error> {
    let slug = project.strip_prefix("p-").unwrap_or(project);
    crate::workspace::names::check_slug(slug)
        .map_err(|_| Error::bad_slug(format!("`{project}` is not a project slug")))?;
    let ws = ctx.ws()?;
    if !ws.path(&["projects", slug, "project.md"]).is_file() {
        return Err(
            Error::not_found(format!("no project `{slug}` in this workspace"))
                .hint("list projects with `dacli project list --status all`"),
        );
    }
    Ok(slug.to_string())
}

/// A string list from a project's frontmatter (`merge_authority`, `github_projection.classes`).
pub(super) fn project_list(ctx: &Ctx, slug: &str, path: &[&str]) -> Result<Vec<String>, Error> {
    let ws = ctx.ws()?;
    let doc = crate::objects::read_document(ws, &ws.path(&["projects", slug, "project.md"]))?;
    let mut item: Option<&toml_edit::Item> = None;
    for (i, key) in path.iter().enumerate() {
        item = if i == 0 {
            doc.front.get(key)
        } else {
            item.and_then(|it| it.get(key))
        };
    }
    Ok(item
        .and_then(|i| i.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default())
}

/// The access block of a GitHub result (GIT_GITHUB.md B4 `access`).
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct Access {
    pub token_source: &'static str,
    pub problem: Option<AccessProblem>,
    pub scopes_have: Option<Vec<String>>,
    pub rate: github::Rate,
    pub calls: u32,
    /// Organizations whose results GitHub left out for SAML SSO (`sso_partial`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sso_partial: Vec<String>,
}

impl Access {
    pub fn of(
        client: Option<&Client>,
        source: TokenSource,
        problem: Option<AccessProblem>,
    ) -> Access {
        Access {
            token_source: source.as_str(),
            problem,
            scopes_have: client.and_then(Client::scopes),
            rate: client.map(Client::rate).unwrap_or_default(),
            calls: client.map_or(0, Client::calls),
            sso_partial: client.map(Client::sso_partial).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::overscoped;

    fn scopes(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_delete_repo_and_admin_scopes_are_overscoped() {
        assert!(overscoped(&scopes(&["repo", "read:org", "workflow"])).is_empty());
        assert_eq!(
            overscoped(&scopes(&[
                "repo",
                "delete_repo",
                "admin:org",
                "admin:repo_hook"
            ])),
            scopes(&["delete_repo", "admin:org", "admin:repo_hook"])
        );
    }
}
