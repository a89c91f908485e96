//! `github link OWNER/NAME`: records the repository (and API base) in `[github]` of
//! config.toml, root only. The live visibility is read when a token is at hand; with
//! `--allow-public` it must be, because consent is recorded for exactly that visibility.

use serde::{Deserialize, Serialize};

use super::consent::{self, check_agent_ref, classes_or_default};
use super::{Link, Notice, announce, connect, link_of, project_slug, root_only};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, ErrorKind, Outcome};
use crate::github::{self, AccessProblem};

pub(super) fn command() -> Command {
    Command::new("github.link", Class::Mutate, run, render)
}

/// Link the workspace to a GitHub repository (root only). Replacing another linked repository
/// needs --relink, and consent recorded for the old one no longer applies. Linking an internal
/// or public repository without --allow-public succeeds with notice consent_missing, and
/// nothing projects until a-root records consent (`dacli github consent grant`).
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The repository, `owner/name`.
    #[arg(value_name = "OWNER/NAME")]
    repo: String,
    /// The REST API base (GitHub Enterprise Server: https://<host>/api/v3).
    #[arg(long = "api-url", value_name = "URL")]
    #[serde(default)]
    api_url: Option<String>,
    /// Replace a different linked repository.
    #[arg(long)]
    #[serde(default)]
    relink: bool,
    /// Also record consent for the live visibility, per --project.
    #[arg(long = "allow-public", requires_all = ["project", "granted_by"])]
    #[serde(default)]
    allow_public: bool,
    /// A project consent is recorded for (with --allow-public).
    #[arg(long, value_name = "P", requires = "allow_public")]
    #[serde(default)]
    project: Vec<String>,
    /// Who consented (with --allow-public): an agent id or `human:<login>`.
    #[arg(
        long = "granted-by",
        value_name = "AGENT|human:LOGIN",
        requires = "allow_public"
    )]
    #[serde(default)]
    granted_by: Option<String>,
    /// Classes consented to (default: each project's `github_projection.classes`).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "LIST",
        requires = "allow_public"
    )]
    #[serde(default)]
    classes: Vec<String>,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    repo: String,
    /// The API base this call read from.
    api_url: String,
    /// The API base kept in `.dacli/config.toml`, when DACLI_GITHUB_API_URL overrode it.
    #[serde(skip_serializing_if = "Option::is_none")]
    configured_api_url: Option<String>,
    /// `public`, `private`, `internal`, or `unknown` when it could not be read.
    visibility: String,
    token_source: &'static str,
    /// Consent records created by this call.
    consent: Vec<String>,
    effect: &'static str,
    notices: Vec<Notice>,
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    if !github::is_repo_name(&req.repo) {
        return Err(Error::usage(format!(
            "`{}` is not a repository name (`owner/name`)",
            req.repo
        )));
    }
    if let Some(by) = &req.granted_by {
        check_agent_ref(by)?;
    }
    let slugs: Vec<String> = req
        .project
        .iter()
        .map(|p| project_slug(ctx, p))
        .collect::<Result<_, _>>()?;
    if req.allow_public && (slugs.is_empty() || req.granted_by.is_none()) {
        return Err(Error::usage(
            "`--allow-public` needs `--project P` and `--granted-by AGENT|human:LOGIN`",
        ));
    }
    if let Some(r) = root_only(ctx, &format!("github link {}", req.repo))? {
        return Ok(Outcome::Refused(r));
    }
    let current = link_of(ctx)?;
    let configured_api = ctx
        .ws()?
        .config
        .doc
        .get("github")
        .and_then(|g| g.get("api_url"))
        .and_then(|v| v.as_str())
        .map(str::to_string);
    let api_url = req
        .api_url
        .clone()
        .or(configured_api.clone())
        .unwrap_or_else(|| github::DEFAULT_API_URL.to_string());
    if let Some(old) = &current.repo
        && old != &req.repo
        && !req.relink
    {
        return Err(Error::new(
            ErrorKind::Conflict,
            "E_EXISTS",
            format!("the workspace is already linked to {old}"),
        )
        .hint(format!(
            "pass `--relink` to link {} instead; consent recorded for {old} will no longer apply",
            req.repo
        )));
    }
    // Reads go where tests and GHES point (DACLI_GITHUB_API_URL), the config keeps the URL given.
    let probe = Link {
        repo: Some(req.repo.clone()),
        api_url: ctx
            .env()
            .get("DACLI_GITHUB_API_URL")
            .filter(|v| !v.is_empty())
            .map_or_else(|| api_url.clone(), str::to_string),
    };
    let mut notices = Vec::new();
    let (visibility, token_source) = match observe(ctx, &probe, &req.repo)? {
        (Ok(v), source) => (v, source),
        (Err(problem), source) => {
            if req.allow_public {
                return super::access_failure(
                    &problem,
                    &format!("reading the visibility of {}", req.repo),
                );
            }
            notices.push(Notice::new(
                "visibility_unknown",
                format!(
                    "the visibility of {} could not be read ({}); nothing projects until it can be",
                    req.repo,
                    problem.kind()
                ),
            ));
            ("unknown".to_string(), source)
        }
    };
    let same = current.repo.as_deref() == Some(req.repo.as_str())
        && configured_api.as_deref().unwrap_or(github::DEFAULT_API_URL) == api_url;
    if !same {
        write_link(ctx, &req.repo, &api_url)?;
    }
    let mut created = Vec::new();
    if req.allow_public {
        let by = req.granted_by.as_deref().unwrap_or_default();
        for slug in &slugs {
            let classes = classes_or_default(ctx, slug, req.classes.clone())?;
            let rec = consent::write(ctx, "grant", slug, &req.repo, &visibility, &classes, by)?;
            created.push(rec.id);
        }
    } else if matches!(visibility.as_str(), "public" | "internal") {
        notices.push(Notice::new(
            "consent_missing",
            format!(
                "{} is {visibility}: nothing projects until a-root records consent with `dacli github consent grant --project <p> --granted-by human:<login>`",
                req.repo
            ),
        ));
    }
    announce(ctx, &notices);
    let effect = if same && created.is_empty() {
        "unchanged"
    } else {
        "applied"
    };
    // The URL reported is the one read (DACLI_GITHUB_API_URL when set); the config keeps the
    // one given, reported beside it when they differ.
    let configured = (probe.api_url != api_url).then_some(api_url);
    Ok(Outcome::Done(Response {
        repo: req.repo,
        api_url: probe.api_url,
        configured_api_url: configured,
        visibility,
        token_source: token_source.as_str(),
        consent: created,
        effect,
        notices,
    }))
}

/// The live visibility, or the access problem that hides it.
fn observe(
    ctx: &Ctx,
    link: &Link,
    repo: &str,
) -> Result<(Result<String, AccessProblem>, github::TokenSource), Error> {
    let (client, source) = connect(ctx, &link.api_url, 1)?;
    let client = match client {
        Ok(c) => c,
        Err(p) => return Ok((Err(p), source)),
    };
    Ok(match client.get(&format!("/repos/{repo}")) {
        Ok(body) => (Ok(consent::visibility_of(&body)), source),
        Err(e) => (Err(super::as_problem(&e)), source),
    })
}

/// Sets `[github] repo` and `api_url` under the config lock, keeping every other byte.
fn write_link(ctx: &Ctx, repo: &str, api_url: &str) -> Result<(), Error> {
    Ok(crate::ops::github::write_link(ctx.ws()?, repo, api_url)?)
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    let mut out = format!(
        "linked {} ({}) via {}{}\n",
        r.repo,
        r.visibility,
        r.api_url,
        if r.effect == "unchanged" {
            "; unchanged"
        } else {
            ""
        }
    );
    if let Some(kept) = &r.configured_api_url {
        out.push_str(&format!(
            "DACLI_GITHUB_API_URL overrides the configured API base {kept} for this run\n"
        ));
    }
    for c in &r.consent {
        out.push_str(&format!("consent {c} recorded\n"));
    }
    out
}
