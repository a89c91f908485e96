//! Disclosure consent (FORMAT §19.2): `github consent grant|revoke`, root only, one new
//! append-only record per decision under `github/consent/`, and the reader every publishing
//! command uses. For a (project, repo) pair the record with the greatest ULID is in effect.

use serde::{Deserialize, Serialize};

use super::{
    Link, access_failure, call_failure, connect, link_of, project_list, project_slug, root_only,
    unlinked,
};
pub(super) use crate::dispatch::github::{in_effect, visibility_of};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::model::id::ROOT_AGENT;
use crate::ops;
use crate::policy::disclosure::CLASSES;

pub(super) fn commands() -> Vec<Command> {
    vec![
        Command::new("github.consent.grant", Class::Append, run_grant, render),
        Command::new("github.consent.revoke", Class::Append, run_revoke, render),
    ]
}

/// Record that a person consents to publishing these classes of a project to the linked
/// repository at its live visibility (root only). Consent covers the exact repository at that
/// visibility or a stricter one; relinking, or the repository becoming more visible, voids it.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantRequest {
    /// The project whose objects may be published.
    #[arg(long, value_name = "P")]
    project: String,
    /// Who consented: an agent id or `human:<login>`.
    #[arg(long = "granted-by", value_name = "AGENT|human:LOGIN")]
    granted_by: String,
    /// Classes consented to, comma-separated (default: the project's
    /// `github_projection.classes`): tasks, decisions, findings, metrics, refs, risks,
    /// escalations.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    #[serde(default)]
    classes: Vec<String>,
}

impl Classify for GrantRequest {}

/// Record that consent for a project is withdrawn (root only): nothing of it is published
/// to the linked repository until a new grant.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevokeRequest {
    /// The project.
    #[arg(long, value_name = "P")]
    project: String,
    /// Who withdrew it: an agent id or `human:<login>`.
    #[arg(long = "granted-by", value_name = "AGENT|human:LOGIN")]
    granted_by: String,
}

impl Classify for RevokeRequest {}

#[derive(Debug, Serialize)]
pub struct Response {
    consent: Record,
}

/// A consent record as shown.
pub(super) use crate::ops::github::ConsentRecord as Record;

fn run_grant(ctx: &Ctx, req: GrantRequest) -> Result<Outcome<Response>, Error> {
    record(ctx, "grant", &req.project, &req.granted_by, req.classes)
}

fn run_revoke(ctx: &Ctx, req: RevokeRequest) -> Result<Outcome<Response>, Error> {
    record(ctx, "revoke", &req.project, &req.granted_by, Vec::new())
}

fn record(
    ctx: &Ctx,
    action: &str,
    project: &str,
    granted_by: &str,
    classes: Vec<String>,
) -> Result<Outcome<Response>, Error> {
    let slug = project_slug(ctx, project)?;
    check_agent_ref(granted_by)?;
    let exact = format!("github consent {action} --project {slug} --granted-by {granted_by}");
    if let Some(r) = root_only(ctx, &exact)? {
        return Ok(Outcome::Refused(r));
    }
    let link = link_of(ctx)?;
    let Some(repo) = link.repo.clone() else {
        return Ok(Outcome::Refused(unlinked(&format!(
            "github consent {action}"
        ))));
    };
    let classes = if action == "grant" {
        classes_or_default(ctx, &slug, classes)?
    } else {
        Vec::new()
    };
    let visibility = match live_visibility(ctx, &link, &repo)? {
        Ok(v) => v,
        Err(out) => return Ok(out),
    };
    let rec = write(ctx, action, &slug, &repo, &visibility, &classes, granted_by)?;
    Ok(Outcome::Done(Response { consent: rec }))
}

/// `--classes`, or the project's `github_projection.classes`; checked against the vocabulary
/// and never empty (exit 2).
pub(super) fn classes_or_default(
    ctx: &Ctx,
    slug: &str,
    classes: Vec<String>,
) -> Result<Vec<String>, Error> {
    let mut classes = if classes.is_empty() {
        project_list(ctx, slug, &["github_projection", "classes"])?
    } else {
        classes
    };
    if let Some(bad) = classes.iter().find(|c| !CLASSES.contains(&c.as_str())) {
        return Err(Error::usage(format!(
            "`{bad}` is not a projection class (one of {})",
            CLASSES.join(", ")
        )));
    }
    classes.sort_by_key(|c| CLASSES.iter().position(|k| k == c));
    classes.dedup();
    if classes.is_empty() {
        return Err(Error::usage(format!(
            "no classes to consent to: pass `--classes`, or have a-root set them with `dacli project edit {slug} --projection-classes …`"
        )));
    }
    Ok(classes)
}

/// An agent id or `human:<login>`.
pub(super) fn check_agent_ref(s: &str) -> Result<(), Error> {
    let ok = match s.strip_prefix("human:") {
        Some(login) => {
            !login.is_empty()
                && login
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        }
        None => {
            s == ROOT_AGENT
                || (s.starts_with("a-")
                    && s.len() > 2
                    && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        }
    };
    if ok {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "`--granted-by {s}` is neither an agent id nor `human:<login>`"
        )))
    }
}

/// The live visibility of `repo` (`public`, `private`, `internal`), or the outcome that
/// refuses because it cannot be read.
pub(super) fn live_visibility<T>(
    ctx: &Ctx,
    link: &Link,
    repo: &str,
) -> Result<Result<String, Outcome<T>>, Error> {
    let (client, _) = connect(ctx, &link.api_url, 2)?;
    let client = match client {
        Ok(c) => c,
        Err(problem) => {
            return access_failure(&problem, &format!("reading the visibility of {repo}")).map(Err);
        }
    };
    match client.get(&format!("/repos/{repo}")) {
        Ok(body) => Ok(Ok(visibility_of(&body))),
        Err(e) => call_failure(&e, &format!("reading the visibility of {repo}")).map(Err),
    }
}

/// Creates one consent record (keys in FORMAT §19.2 order).
pub(super) fn write(
    ctx: &Ctx,
    action: &str,
    slug: &str,
    repo: &str,
    visibility: &str,
    classes: &[String],
    granted_by: &str,
) -> Result<Record, Error> {
    let ws = ctx.ws()?;
    let id = ctx.new_ulid();
    let created_by = ctx.identity()?.agent.id.clone();
    Ok(ops::github::write_consent(
        ws,
        &ops::github::NewConsent {
            id,
            created_by: &created_by,
            action,
            slug,
            repo,
            visibility,
            classes,
            granted_by,
        },
    )?)
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    let c = &r.consent;
    if c.action == "grant" {
        format!(
            "consent {} recorded: {} may publish {} to {} ({}), granted by {}\n",
            c.id,
            c.project,
            c.classes.join(", "),
            c.repo,
            c.visibility,
            c.granted_by
        )
    } else {
        format!(
            "consent {} recorded: {} publishes nothing to {} (revoked by {})\n",
            c.id, c.project, c.repo, c.granted_by
        )
    }
}
