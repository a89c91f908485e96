//! `dacli glossary show` and `dacli glossary add`: a project's terms (FORMAT §17).

use serde::{Deserialize, Serialize};
use toml_edit::{DocumentMut, value};

use super::{
    acts_as_owner, all_projects, find_project, gated_in_body, only_active, required_line, rw_gate,
    toml_time,
};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::model::glossary::entries;
use crate::model::project::ProjectHead;
use crate::objects::glossary;
use crate::ops::Decided;
use crate::ops::glossary::{NewTerm, add_term as add_term_to, not_owner};

/// Show a project's glossary: every term with its definition, in file order.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShowRequest {
    /// The project (slug or `p-<slug>`); default: the only active project.
    #[arg(long, value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
}

impl Classify for ShowRequest {}

#[derive(Debug, Serialize)]
pub struct ShowResponse {
    project: String,
    terms: Vec<Term>,
}

#[derive(Debug, Serialize)]
struct Term {
    term: String,
    definition: String,
}

pub(super) fn show_command() -> Command {
    Command::new("glossary.show", Class::Read, show, render_show)
}

fn show(ctx: &Ctx, req: ShowRequest) -> Result<Outcome<ShowResponse>, Error> {
    let ws = ctx.ws()?;
    let projects = all_projects(ctx, ws)?;
    let project = match &req.project {
        Some(p) => find_project(&projects, "--project", p)?,
        None => only_active(&projects, "glossary show")?,
    };
    let terms = match glossary::load(ws, &project.slug)? {
        Some(g) => entries(&g.doc.body)
            .into_iter()
            .map(|e| Term {
                term: e.term,
                definition: e.definition,
            })
            .collect(),
        None => Vec::new(),
    };
    Ok(Outcome::Done(ShowResponse {
        project: project.id.clone(),
        terms,
    }))
}

fn render_show(r: &ShowResponse, _ctx: &Ctx) -> String {
    if r.terms.is_empty() {
        return format!("{}: no glossary terms\n", r.project);
    }
    let mut out = format!("{} glossary\n", r.project);
    for t in &r.terms {
        out.push_str(&format!("  {} — {}\n", t.term, t.definition));
    }
    out
}

/// Define a term in a project's glossary (the project owner only). The glossary is created on
/// first use; an existing term (case-insensitive) is refused unless --replace.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddRequest {
    /// The term (one line, without `**`).
    #[arg(value_name = "TERM")]
    term: String,
    /// Its definition (one line).
    #[arg(value_name = "DEFINITION")]
    definition: String,
    /// The project (slug or `p-<slug>`); default: the only active project.
    #[arg(long, value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
    /// Change the definition of a term that is already there.
    #[arg(long)]
    #[serde(default)]
    replace: bool,
}

impl Classify for AddRequest {
    fn class(&self, _declared: Class) -> Class {
        gated_in_body()
    }
}

#[derive(Debug, Serialize)]
pub struct AddResponse {
    project: String,
    term: String,
    effect: &'static str,
    #[serde(skip)]
    path: String,
}

pub(super) fn add_command() -> Command {
    Command::new("glossary.add", Class::Mutate, add_term, render_add)
}

fn add_term(ctx: &Ctx, req: AddRequest) -> Result<Outcome<AddResponse>, Error> {
    let term = required_line("TERM", &req.term)?;
    if term.contains("**") {
        return Err(Error::usage(
            "TERM may not contain `**`: it would end the bold term of its entry",
        ));
    }
    let definition = required_line("DEFINITION", &req.definition)?;
    let ws = ctx.ws()?;
    let projects = all_projects(ctx, ws)?;
    let project = match &req.project {
        Some(p) => find_project(&projects, "--project", p)?,
        None => only_active(&projects, "glossary add")?,
    }
    .clone();
    let owner = owner_of(ctx, &project)?;
    if let Some(r) = rw_gate(ctx, "glossary add", &owner, None)? {
        return Ok(Outcome::Refused(r));
    }
    let me = ctx.identity()?.agent.id.clone();
    if !acts_as_owner(ws, &me, &owner) {
        return Ok(Outcome::Refused(not_owner(&project, &owner)));
    }
    let new_term = NewTerm {
        term: &term,
        definition: &definition,
        replace: req.replace,
    };
    // One rev, for the new glossary or the changed one.
    let rev = ctx.new_ulid();
    let front = new_front(ctx, &project, &me, rev)?;
    let (file, effect) = match add_term_to(ws, &project, &me, &new_term, front, rev)? {
        Decided::Done(done) => done,
        Decided::Refused(refusal) => return Ok(Outcome::Refused(refusal)),
    };
    Ok(Outcome::Done(AddResponse {
        project: project.id.clone(),
        term,
        effect,
        path: ws.display(&file),
    }))
}

/// The glossary's owner: the `owner` of the file when it exists, else the project's owner,
/// who will own it (FORMAT §17).
fn owner_of(ctx: &Ctx, project: &ProjectHead) -> Result<String, Error> {
    Ok(match glossary::load(ctx.ws()?, &project.slug)? {
        Some(g) => g.head.owner,
        None => project.owner.clone(),
    })
}

/// The frontmatter of a new glossary, in FORMAT §17 field order.
fn new_front(
    ctx: &Ctx,
    project: &ProjectHead,
    me: &str,
    rev: ulid::Ulid,
) -> Result<DocumentMut, Error> {
    let mut front = DocumentMut::new();
    front["kind"] = value("glossary");
    front["project"] = value(project.id.as_str());
    front["created"] = toml_time(ctx.now())?;
    front["created_by"] = value(me);
    front["owner"] = value(project.owner.as_str());
    front["rev"] = value(rev.to_string());
    Ok(front)
}

fn render_add(r: &AddResponse, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    let verb = if r.effect == "unchanged" {
        "already defined that way:"
    } else {
        "defined"
    };
    format!("{verb} \"{}\" in {}\n  {}\n", r.term, r.project, r.path)
}
