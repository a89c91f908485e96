//! knowledge: notes, risks and the glossary (COMMANDS.md §6).
//!
//! What the commands of this slice share lives here: finding projects and the object an
//! `--about` names, the owner rule, and the checks every text flag goes through.

mod glossary;
mod note_add;
mod note_list;
mod note_show;
mod notes;
mod risk_add;
mod risk_edit;
mod risk_list;
mod risks;

use crate::dispatch::{Class, Command, Ctx, Error, ErrorKind};
use crate::model::Refusal;
use crate::model::id::ROOT_AGENT;
use crate::model::project::ProjectHead;
use crate::objects::{projects, tasks};
use crate::policy::guard::class_gate;
use crate::workspace::Workspace;
use crate::workspace::names::check_slug;

pub(super) fn commands() -> Vec<Command> {
    vec![
        note_add::command(),
        note_list::command(),
        note_show::command(),
        risk_add::command(),
        risk_edit::command(),
        risk_list::command(),
        glossary::show_command(),
        glossary::add_command(),
    ]
}

/// The longest text a flag may carry (COMMANDS.md §1.2 `<TEXT>`).
const MAX_TEXT: usize = crate::model::text::MAX_TEXT;

/// Every project of the workspace, with the skipped files reported.
fn all_projects(ctx: &Ctx, ws: &Workspace) -> Result<Vec<ProjectHead>, Error> {
    let listing = projects::list(ws)?;
    ctx.warn_all(listing.warnings);
    Ok(listing.items)
}

/// The project `input` names (a slug or `p-<slug>`); `flag` names the flag in errors.
fn find_project<'a>(
    list: &'a [ProjectHead],
    flag: &str,
    input: &str,
) -> Result<&'a ProjectHead, Error> {
    let slug = input.strip_prefix("p-").unwrap_or(input);
    check_slug(slug).map_err(|why| Error::bad_slug(format!("{flag}: {why}")))?;
    list.iter().find(|p| p.slug == slug).ok_or_else(|| {
        Error::not_found(format!("no project `{slug}` in this workspace ({flag})"))
            .hint("`dacli status` lists the projects")
    })
}

pub(super) use crate::dispatch::project::only_active;

/// What an `--about` names: a task or a project.
#[derive(Debug, Clone)]
enum About {
    Task(std::sync::Arc<crate::objects::index::TaskEntry>),
    Project(ProjectHead),
}

impl About {
    /// The full id stored in `about`.
    fn id(&self) -> String {
        match self {
            About::Task(t) => t.id().to_string(),
            About::Project(p) => p.id.clone(),
        }
    }

    /// The directory name of the project it belongs to.
    fn project(&self) -> &str {
        match self {
            About::Task(t) => t.project(),
            About::Project(p) => &p.slug,
        }
    }
}

fn ambiguous(message: String) -> Error {
    Error::new(ErrorKind::Usage, "E_AMBIGUOUS", message)
}

/// Resolves `--about`: `p-<slug>` is a project; anything else is a task reference in any
/// FORMAT §3.3 form, or else a project slug. A plain slug naming both a task and a project is
/// ambiguous.
fn resolve_about(
    ctx: &Ctx,
    ws: &Workspace,
    projects: &[ProjectHead],
    input: &str,
) -> Result<About, Error> {
    let input = input.trim();
    if let Some(slug) = input.strip_prefix("p-")
        && !slug.contains('/')
    {
        return find_project(projects, "--about", slug).map(|p| About::Project(p.clone()));
    }
    let slugs: Vec<String> = projects.iter().map(|p| p.slug.clone()).collect();
    let (found, warnings) = crate::objects::lookup::resolve(ws, &slugs, input)?;
    ctx.warn_all(warnings);
    let project = projects.iter().find(|p| p.slug == input);
    match found {
        Ok(task) => match project {
            Some(p) => Err(ambiguous(format!(
                "--about `{input}` names both task {} and project {}",
                task.reference(),
                p.id
            ))
            .hint(format!(
                "pass `{}` for the task or `{}` for the project",
                task.id(),
                p.id
            ))),
            None => Ok(About::Task(task.clone())),
        },
        Err(tasks::ResolveError::NotFound { .. }) => match project {
            Some(p) => Ok(About::Project(p.clone())),
            None => Err(Error::not_found(format!(
                "--about `{input}` is neither a task nor a project of this workspace"
            ))
            .hint("give a task reference (`<project>/<NNN>`, `t-<ULID>`, a slug) or `p-<slug>`")),
        },
        Err(tasks::ResolveError::Ambiguous {
            reference,
            candidates,
        }) => Err(ambiguous(format!(
            "--about `{reference}` matches several tasks: {}",
            candidates.join(", ")
        ))),
        Err(tasks::ResolveError::NoProject { project }) => Err(Error::not_found(format!(
            "--about `{input}`: no project `{project}` in this workspace"
        ))),
        Err(e @ tasks::ResolveError::Malformed(_)) => Err(e.into()),
    }
}

/// Whether `me` may act as the owner `owner` of an object: it is the owner, or it is root and
/// the owner is retired or has no record (FORMAT §13.1, COMMANDS.md §1.3).
fn acts_as_owner(ws: &Workspace, me: &str, owner: &str) -> bool {
    crate::ops::owner::acts_as_owner(ws, me, owner)
}

/// Checks a text flag: at most 64 KiB, and one line when it becomes a title, a list item or
/// a glossary entry. Returns the trimmed text; `None` when it is empty.
fn text(flag: &str, value: &str, one_line: bool) -> Result<Option<String>, Error> {
    // The boundary check of every front end, again here for `--body-file`, whose text does
    // not come through the arguments.
    let shape = if one_line {
        crate::model::text::Shape::OneLine
    } else {
        crate::model::text::Shape::Prose
    };
    crate::model::text::check(value, shape).map_err(|why| Error::usage(format!("{flag} {why}")))?;
    let trimmed = value.trim();
    Ok((!trimmed.is_empty()).then(|| trimmed.to_string()))
}

/// A required one-line text (a title, a term).
fn required_line(flag: &str, value: &str) -> Result<String, Error> {
    text(flag, value, true)?.ok_or_else(|| Error::usage(format!("{flag} is empty")))
}

/// Checks a text that becomes the content of a structural section: a level-1 or level-2
/// heading in it would end the section early (FORMAT §2 "Body structure").
fn section_flag(flag: &str, value: Option<&str>) -> Result<Option<String>, Error> {
    let Some(v) = value else {
        return Ok(None);
    };
    let Some(t) = text(flag, v, false)? else {
        return Ok(None);
    };
    let mut fence: Option<&str> = None;
    for line in t.lines() {
        if let Some(open) = fence {
            if line.starts_with(open) {
                fence = None;
            }
        } else if line.starts_with("```") || line.starts_with("~~~") {
            fence = Some(&line[..3]);
        } else if line.starts_with("# ") || line.starts_with("## ") {
            return Err(Error::usage(format!(
                "{flag} contains the heading `{line}`, which would end its section; use `###` or deeper"
            )));
        }
    }
    Ok(Some(t))
}

/// Checks and de-duplicates `--tag` values (each a slug), keeping their order.
fn check_tags(tags: &[String]) -> Result<Vec<String>, Error> {
    let mut out: Vec<String> = Vec::new();
    for t in tags {
        check_slug(t).map_err(|why| Error::bad_slug(format!("--tag: {why}")))?;
        if !out.contains(t) {
            out.push(t.clone());
        }
    }
    Ok(out)
}

/// A timestamp as a TOML value, written the way dacli writes them (UTC, whole seconds).
fn toml_time(t: jiff::Timestamp) -> Result<toml_edit::Item, Error> {
    let text = crate::model::format_time(t);
    text.parse::<toml_edit::Datetime>()
        .map(toml_edit::value)
        .map_err(|e| Error::internal(format!("cannot write the timestamp {text}: {e}")))
}

/// A list of strings as a TOML array value.
fn toml_list(items: &[String]) -> toml_edit::Item {
    let mut a = toml_edit::Array::new();
    for i in items {
        a.push(i.as_str());
    }
    toml_edit::value(a)
}

/// The agent an ro caller is told to ask: its parent, else root.
fn parent_of(ctx: &Ctx) -> Result<String, Error> {
    Ok(ctx
        .identity()?
        .agent
        .parent
        .clone()
        .unwrap_or_else(|| ROOT_AGENT.to_string()))
}

/// The class gate of a mutating command, applied by its body rather than by the dispatcher:
/// the refusal then names the object's owner (`ask`) and the sharper alternative COMMANDS.md
/// §6 gives, where the dispatcher only knows the caller's parent. Requests that use it report
/// [`Class::Read`] to the dispatcher's gate through `Classify::class` (see
/// [`gated_in_body`]); the command table still declares them `mutate`.
fn rw_gate(
    ctx: &Ctx,
    command: &str,
    ask: &str,
    alternative: Option<&str>,
) -> Result<Option<Refusal>, Error> {
    let me = ctx.identity()?;
    Ok(class_gate(me.agent.grant, true, command, ask, alternative))
}

/// The class a request whose body runs [`rw_gate`] reports to the dispatcher's gate.
fn gated_in_body() -> Class {
    Class::Read
}
