//! `dacli review --pr N --post [--apply]`: the review as one comment on the pull request.
//!
//! The comment is found by the marker its body starts with ([`render::MARKER`]), reading every
//! page of the pull request's comments, so a second post updates it instead of adding another.
//! Without `--apply` nothing is written anywhere: the preview names the action (create,
//! update, none), the comment and the body. Publishing follows the disclosure rules of the
//! GitHub tools: a repository that is not private needs a consent in effect for every project
//! the review names, covering the classes it shows; private notes are left out; a body a
//! content guard stops (a secret's shape, an oversized body) is never posted.

use serde::Serialize;
use serde_json::{Value, json};

use super::render::{self, MARKER};
use crate::dispatch::github::{
    access_failure, call_failure, connect, in_effect, link_of, unlinked, visibility_of,
};
use crate::dispatch::{Ctx, Error, Outcome};
use crate::github::Method;
use crate::model::Refusal;
use crate::ops::review::Report;
use crate::policy::apply::{self as contract, ApplyRequest};
use crate::policy::disclosure;

/// Pages of comments read at most (100 each).
const MAX_PAGES: u32 = 50;

/// What `--post` did or would do.
#[derive(Debug, Serialize)]
pub struct Posted {
    /// `preview` (nothing written) or `apply`.
    pub mode: &'static str,
    pub repo: String,
    pub pull: u64,
    /// The repository's live visibility.
    pub visibility: String,
    /// `create`, `update`, or `none` (the comment already says this).
    pub action: &'static str,
    /// The existing comment (found by its marker), or the one created.
    pub comment_id: Option<u64>,
    pub comment_url: Option<String>,
    /// Private notes left out of the body.
    pub private_notes_left_out: usize,
    /// The digest of (repo, pull, action, comment, body): `--apply --digest` refuses when it
    /// changed since the preview.
    pub plan_digest: String,
    /// `completed` after an apply; `null` for a preview.
    pub outcome: Option<&'static str>,
    /// The comment's body.
    pub body: String,
}

/// The options of one post.
pub struct Args<'a> {
    pub pull: u64,
    pub title: &'a str,
    pub apply: bool,
    pub digest: Option<&'a str>,
    pub max_api_calls: u32,
}

/// The report without private notes, and how many were left out.
fn publishable(report: &Report) -> (Report, usize) {
    let mut out = report.clone();
    let mut left_out = 0;
    for p in &mut out.projects {
        let before = p.notes.len();
        p.notes.retain(|n| !n.private);
        left_out += before - p.notes.len();
    }
    out.projects.retain(|p| {
        !(p.changes.is_empty()
            && p.tasks.is_empty()
            && p.notes.is_empty()
            && p.risks.is_empty()
            && p.glossary.is_empty())
    });
    out.counts.notes -= left_out;
    (out, left_out)
}

/// The projection classes each project's part of the review shows (GIT_GITHUB.md B6), by
/// project; `None` for the workspace scope and events about objects of no project.
fn classes_shown(report: &Report) -> Vec<(Option<String>, Vec<&'static str>)> {
    let mut out: Vec<(Option<String>, Vec<&'static str>)> = Vec::new();
    let mut add = |project: Option<String>, class: &'static str| match out
        .iter_mut()
        .find(|(p, _)| *p == project)
    {
        Some((_, classes)) => {
            if !classes.contains(&class) {
                classes.push(class);
            }
        }
        None => out.push((project, vec![class])),
    };
    for p in &report.projects {
        let scope = (p.project != "workspace").then(|| p.project.clone());
        if !p.changes.is_empty() || !p.tasks.is_empty() || !p.glossary.is_empty() {
            add(scope.clone(), "tasks");
        }
        if !p.risks.is_empty() {
            add(scope.clone(), "risks");
        }
        for n in &p.notes {
            let class = if n.kind == "decision" {
                "decisions"
            } else {
                "findings"
            };
            add(scope.clone(), class);
        }
    }
    let project_of = |reference: Option<&String>| {
        reference
            .and_then(|r| r.split_once('/'))
            .map(|(p, _)| p.to_string())
    };
    for g in &report.events {
        add(project_of(g.reference.as_ref()), "tasks");
    }
    for q in &report.questions {
        add(project_of(q.reference.as_ref()), "tasks");
    }
    out
}

/// The projects whose consent a post to a non-private repository needs, with the classes:
/// those the review names, and every project of the workspace when it shows anything outside
/// one (no single project's consent covers that).
fn needed(ctx: &Ctx, report: &Report) -> Result<Vec<(String, Vec<&'static str>)>, Error> {
    let shown = classes_shown(report);
    let mut out: Vec<(String, Vec<&'static str>)> = Vec::new();
    let mut push =
        |slug: String, classes: &[&'static str]| match out.iter_mut().find(|(s, _)| *s == slug) {
            Some((_, have)) => {
                for c in classes {
                    if !have.contains(c) {
                        have.push(c);
                    }
                }
            }
            None => out.push((slug, classes.to_vec())),
        };
    for (project, classes) in &shown {
        match project {
            Some(p) => push(p.clone(), classes),
            None => {
                let listing = crate::objects::projects::list(ctx.ws()?)?;
                ctx.warn_all(listing.warnings);
                for p in listing.items {
                    push(p.slug, classes);
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Posts (or previews posting) the review of pull request `args.pull`.
pub fn run(ctx: &Ctx, report: &Report, args: Args<'_>) -> Result<Outcome<Posted>, Error> {
    let command = format!("review --pr {} --post", args.pull);
    let link = link_of(ctx)?;
    let Some(repo) = link.repo.clone() else {
        return Ok(Outcome::Refused(unlinked(&command)));
    };
    let (public, left_out) = publishable(report);
    let body = render::markdown(args.title, &public);
    let guarded = disclosure::guard(&body);
    if !guarded.is_empty() {
        let reasons: Vec<String> = guarded
            .iter()
            .map(|g| format!("{} ({})", g.reason, g.detail))
            .collect();
        return Ok(Outcome::Refused(Refusal::new(
            "github.withheld",
            format!(
                "the review of pull request {} is not posted: {}",
                args.pull,
                reasons.join(", ")
            ),
            "Review a smaller range, or remove the secret-looking text from the workspace, then post again.",
        )));
    }
    let (client, _source) = connect(ctx, &link.api_url, args.max_api_calls.max(1))?;
    let client = match client {
        Ok(c) => c,
        Err(p) => return access_failure(&p, &format!("posting the review to {repo}")),
    };
    let visibility = match client.get(&format!("/repos/{repo}")) {
        Ok(v) => visibility_of(&v),
        Err(e) => return call_failure(&e, &format!("reading the visibility of {repo}")),
    };
    if disclosure::exposure(&visibility).is_none() {
        return Ok(Outcome::Refused(Refusal::new(
            "github.access",
            format!("the visibility of {repo} could not be read, so nothing may be posted"),
            "Fix the access problem, then post again.",
        )));
    }
    for (slug, classes) in needed(ctx, report)? {
        let found = in_effect(ctx, &slug, &repo)?;
        let gap = disclosure::consent_gap(found.as_ref(), &repo, &visibility).or_else(|| {
            let private = disclosure::exposure(&visibility) == Some(0);
            let consented = |c: &str| {
                found
                    .as_ref()
                    .is_some_and(|k| k.classes.iter().any(|x| x == c))
            };
            (!private && !classes.iter().all(|c| consented(c))).then_some("class_not_consented")
        });
        if let Some(gap) = gap {
            return Ok(Outcome::Refused(Refusal::new(
                "github.no_consent",
                format!(
                    "{repo} is {visibility} and no consent covers publishing the review's changes of p-{slug} ({}) to it ({gap})",
                    classes.join(", ")
                ),
                format!(
                    "Ask the human; a-root records it: `dacli github consent grant --project {slug} --classes {} --granted-by human:<login>`.",
                    classes.join(",")
                ),
            )));
        }
    }

    let route = format!("/repos/{repo}/issues/{}/comments", args.pull);
    let listing = match client.list(&route, None, MAX_PAGES) {
        Ok(l) => l,
        Err(e) => {
            return call_failure(
                &e,
                &format!("reading the comments of pull request {}", args.pull),
            );
        }
    };
    if let Some(e) = &listing.cut {
        // A comment on a page not read might be ours: posting now could add a second one.
        return call_failure(
            e,
            &format!("reading every comment of pull request {}", args.pull),
        );
    }
    let ours = listing.items.iter().find(|c| {
        c.get("body")
            .and_then(Value::as_str)
            .is_some_and(|b| b.starts_with(MARKER))
    });
    let comment_id = ours.and_then(|c| c.get("id")).and_then(Value::as_u64);
    let comment_url = ours
        .and_then(|c| c.get("html_url"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let action = match ours {
        None => "create",
        Some(c) if c.get("body").and_then(Value::as_str) == Some(body.as_str()) => "none",
        Some(_) => "update",
    };
    if action == "update" && comment_id.is_none() {
        return Err(Error::new(
            crate::dispatch::ErrorKind::Operational,
            "E_GITHUB_ACCESS",
            format!("GET {route}: the marked comment has no id"),
        ));
    }
    let plan = json!({
        "repo": repo,
        "pull": args.pull,
        "action": action,
        "comment_id": comment_id,
        "body": body,
    });
    let digest = contract::plan_digest(&plan).map_err(|e| Error::internal(e.0))?;
    let mut posted = Posted {
        mode: "preview",
        repo: repo.clone(),
        pull: args.pull,
        visibility,
        action,
        comment_id,
        comment_url,
        private_notes_left_out: left_out,
        plan_digest: digest.clone(),
        outcome: None,
        body,
    };
    if !args.apply {
        return Ok(Outcome::Done(posted));
    }
    if let Some(r) = contract::drift(
        ApplyRequest {
            command: &command,
            digest: args.digest,
        },
        &digest,
        "the review or the pull request's comment",
    ) {
        return Ok(Outcome::Refused(r));
    }
    posted.mode = "apply";
    let payload = json!({ "body": posted.body });
    let written = match (action, comment_id) {
        ("create", _) => Some(client.call(Method::Post, &route, Some(&payload))),
        ("update", Some(id)) => Some(client.call(
            Method::Patch,
            &format!("/repos/{repo}/issues/comments/{id}"),
            Some(&payload),
        )),
        _ => None,
    };
    if let Some(result) = written {
        match result {
            Ok(c) => {
                posted.comment_id = c.get("id").and_then(Value::as_u64).or(posted.comment_id);
                posted.comment_url = c
                    .get("html_url")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .or(posted.comment_url);
            }
            Err(e) => {
                return call_failure(
                    &e,
                    &format!("posting the review to pull request {}", args.pull),
                );
            }
        }
    }
    posted.outcome = Some("completed");
    Ok(Outcome::Done(posted))
}

/// The human text of a post.
pub fn text(p: &Posted) -> String {
    let what = match (p.mode, p.action) {
        (_, "none") => "the comment already shows this review; nothing to write".to_string(),
        ("preview", "create") => "would create the review comment".to_string(),
        ("preview", _) => "would update the review comment".to_string(),
        (_, "create") => "created the review comment".to_string(),
        _ => "updated the review comment".to_string(),
    };
    let mut out = format!(
        "{} pull request {} ({}): {what}",
        p.repo, p.pull, p.visibility
    );
    if let Some(id) = p.comment_id {
        out.push_str(&format!(" {id}"));
    }
    out.push('\n');
    if let Some(url) = &p.comment_url {
        out.push_str(&format!("{url}\n"));
    }
    if p.private_notes_left_out > 0 {
        out.push_str(&format!(
            "{} private note(s) left out\n",
            p.private_notes_left_out
        ));
    }
    if p.mode == "preview" {
        out.push_str(&format!(
            "plan_digest: {}\nwrite it with `dacli review --pr {} --post --apply --digest {}`\n\n{}",
            p.plan_digest, p.pull, p.plan_digest, p.body
        ));
    }
    out
}
