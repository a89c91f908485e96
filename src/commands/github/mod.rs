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

pub(super) use crate::dispatch::apply::{Notice, announce};
pub(super) use crate::dispatch::github::{
    Link, Session, access_failure, as_problem, call_failure, connect, link_of, unlinked,
};
use crate::dispatch::{Command, Ctx, Error};
use crate::github::{self, AccessProblem, Client, TokenSource};
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
