//! What every command that reaches GitHub shares: the workspace's link, the token, a session
//! with its budget and deadline, how access problems and failed calls become a command's
//! outcome, and the consent in effect. It sits in `dispatch` because it reads the call's
//! context (environment, identity, progress) and more than one slice of `commands/` uses it
//! (`github`, and `review --post`).

use std::time::Duration;

use crate::dispatch::{Ctx, Error, ErrorKind, Outcome};
use crate::github::{self, AccessProblem, CallError, Client, Connect, Token, TokenSource};
use crate::model::Refusal;
use crate::ops;
use crate::policy::disclosure::Consent;

/// How long one request may wait for an answer unless `DACLI_GITHUB_TIMEOUT_MS` says
/// otherwise; the connect timeout is a fifth of it.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long one run may talk to GitHub in all unless `DACLI_GITHUB_DEADLINE_MS` says
/// otherwise.
const DEFAULT_DEADLINE: Duration = Duration::from_secs(600);

/// The workspace's link to GitHub (FORMAT §5 `[github]`).
#[derive(Debug, Clone)]
pub struct Link {
    /// `owner/name`; `None` when the workspace is not linked.
    pub repo: Option<String>,
    /// The REST base: `DACLI_GITHUB_API_URL`, else `[github] api_url`, else api.github.com.
    pub api_url: String,
}

/// Reads the link from the config as it is on disk now.
pub fn link_of(ctx: &Ctx) -> Result<Link, Error> {
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
pub fn unlinked(command: &str) -> Refusal {
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
fn token(ctx: &Ctx, api_url: &str) -> Token {
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
pub struct Session<'c> {
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
    pub fn phase(&self, label: impl Into<String>) {
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
pub fn connect<'c>(
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
pub fn access_failure<T>(problem: &AccessProblem, what: &str) -> Result<Outcome<T>, Error> {
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
pub fn call_failure<T>(e: &CallError, what: &str) -> Result<Outcome<T>, Error> {
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
pub fn as_problem(e: &CallError) -> AccessProblem {
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

/// `visibility` of a repository object (older servers only say `private: true|false`).
pub fn visibility_of(repo: &serde_json::Value) -> String {
    match repo.get("visibility").and_then(|v| v.as_str()) {
        Some(v @ ("public" | "private" | "internal")) => v.to_string(),
        _ => match repo.get("private").and_then(|p| p.as_bool()) {
            Some(true) => "private".into(),
            Some(false) => "public".into(),
            None => "unknown".into(),
        },
    }
}

/// The consent in effect for (project, repo): the root-authored record with the greatest
/// ULID. Records by other authors are ignored and announced (`consent_foreign`); unreadable
/// ones are warnings.
pub fn in_effect(ctx: &Ctx, slug: &str, repo: &str) -> Result<Option<Consent>, Error> {
    let found = ops::github::consent_in_effect(ctx.ws()?, slug, repo)?;
    ctx.warn_all(found.warnings);
    for path in found.foreign {
        ctx.notice(format!(
            "notice [consent_foreign]: {path} was not written by a-root and is ignored"
        ));
    }
    Ok(found.consent)
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
