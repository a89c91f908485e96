//! templates: built-in and hand-kept templates (COMMANDS.md §13).

use serde::{Deserialize, Serialize};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Value, value};

use crate::dispatch::text::table;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, ErrorKind, Outcome};
use crate::objects::templates::{self, Stage, Template};
use crate::store::Document;
use crate::workspace::names::check_slug;

pub(super) fn commands() -> Vec<Command> {
    vec![
        Command::new("template.list", Class::Read, list, render_list),
        Command::new("template.show", Class::Read, show, render_show),
        Command::new("template.add", Class::Mutate, add, render_add),
    ]
}

/// List templates: the built-ins and `.dacli/templates/*` (a workspace template shadows a
/// built-in of the same name).
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListRequest {}

impl Classify for ListRequest {}

#[derive(Debug, Serialize)]
pub struct Listed {
    name: String,
    source: &'static str,
    summary: String,
    stages: Vec<String>,
    roles: usize,
    shortcuts: usize,
    docs: usize,
    definition_of_done: bool,
}

#[derive(Debug, Serialize)]
pub struct ListResponse {
    templates: Vec<Listed>,
}

fn list(ctx: &Ctx, _req: ListRequest) -> Result<Outcome<ListResponse>, Error> {
    let ws = ctx.ws()?;
    let listing = templates::list(ws)?;
    ctx.warn_all(listing.warnings);
    Ok(Outcome::Done(ListResponse {
        templates: listing
            .items
            .iter()
            .map(|t| Listed {
                name: t.name.clone(),
                source: t.source,
                summary: t.summary.clone(),
                stages: t.stages.iter().map(|s| s.name.clone()).collect(),
                roles: t.names_in("roles").len(),
                shortcuts: t.names_in("shortcuts").len(),
                docs: t.names_in("docs").len(),
                definition_of_done: t.definition_of_done.is_some(),
            })
            .collect(),
    }))
}

fn render_list(r: &ListResponse, _ctx: &Ctx) -> String {
    let mut rows = vec![
        [
            "TEMPLATE",
            "SOURCE",
            "STAGES",
            "ROLES",
            "SHORTCUTS",
            "SUMMARY",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
    ];
    for t in &r.templates {
        rows.push(vec![
            t.name.clone(),
            t.source.to_string(),
            t.stages.join(" → "),
            t.roles.to_string(),
            t.shortcuts.to_string(),
            t.summary.clone(),
        ]);
    }
    table(&rows, &[3, 4])
}

/// Show one template: stages with their gates, definition of done, roles, shortcuts, docs.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShowRequest {
    name: String,
}

impl Classify for ShowRequest {}

#[derive(Debug, Serialize)]
pub struct Shown {
    name: String,
    source: &'static str,
    summary: String,
    stages: Vec<Stage>,
    definition_of_done: Option<serde_json::Value>,
    roles: Vec<String>,
    shortcuts: Vec<String>,
    docs: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct ShowResponse {
    template: Shown,
}

fn load(ctx: &Ctx, name: &str) -> Result<Template, Error> {
    check_slug(name).map_err(Error::bad_slug)?;
    templates::load(Some(ctx.ws()?), name).map_err(|e| match e {
        crate::objects::Error::NotFound { .. } => Error::not_found(format!("no template `{name}`"))
            .hint("list templates with `dacli template list`"),
        other => other.into(),
    })
}

fn show(ctx: &Ctx, req: ShowRequest) -> Result<Outcome<ShowResponse>, Error> {
    let t = load(ctx, &req.name)?;
    let dod = t.definition_of_done.as_ref().and_then(|d| {
        let mut doc = DocumentMut::new();
        doc["v"] = Item::Table(d.clone());
        toml_edit::de::from_str::<std::collections::BTreeMap<String, serde_json::Value>>(
            &doc.to_string(),
        )
        .ok()
        .and_then(|m| m.get("v").cloned())
    });
    Ok(Outcome::Done(ShowResponse {
        template: Shown {
            roles: t.names_in("roles"),
            shortcuts: t.names_in("shortcuts"),
            docs: t.names_in("docs"),
            name: t.name,
            source: t.source,
            summary: t.summary,
            stages: t.stages,
            definition_of_done: dod,
        },
    }))
}

fn render_show(r: &ShowResponse, _ctx: &Ctx) -> String {
    let t = &r.template;
    let mut out = format!("{} ({}) — {}\n", t.name, t.source, t.summary);
    for s in &t.stages {
        out.push_str(&format!("  stage {}", s.name));
        if !s.gates.is_empty() {
            out.push_str(&format!(" (gates: {})", s.gates.join("; ")));
        }
        out.push('\n');
    }
    if let Some(d) = &t.definition_of_done {
        out.push_str(&format!("  definition of done: {d}\n"));
    }
    for (label, items) in [
        ("roles", &t.roles),
        ("shortcuts", &t.shortcuts),
        ("docs", &t.docs),
    ] {
        if !items.is_empty() {
            out.push_str(&format!("  {label}: {}\n", items.join(", ")));
        }
    }
    out
}

/// Create a hand-kept template under `.dacli/templates/<NAME>/` (dacli never rewrites it), or
/// vendor an existing one for editing with `--from`.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddRequest {
    name: String,
    /// One line for catalogs (default with --from: the source's summary).
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    summary: Option<String>,
    /// A stage, in order (repeatable; default with --from: the source's stages).
    #[arg(long = "stage", value_name = "SLUG")]
    #[serde(default)]
    stages: Vec<String>,
    /// Copy this template's files (vendoring a built-in).
    #[arg(long, value_name = "TEMPLATE")]
    #[serde(default)]
    from: Option<String>,
}

impl Classify for AddRequest {}

#[derive(Debug, Serialize)]
pub struct AddResponse {
    template: String,
    path: String,
    files: Vec<String>,
    effect: &'static str,
}

fn add(ctx: &Ctx, req: AddRequest) -> Result<Outcome<AddResponse>, Error> {
    let ws = ctx.ws()?;
    check_slug(&req.name).map_err(|e| Error::bad_slug(format!("NAME: {e}")))?;
    for s in &req.stages {
        check_slug(s).map_err(|e| Error::bad_slug(format!("--stage: {e}")))?;
    }
    let dir = ws.path(&["templates", &req.name]);
    if dir.exists() {
        return Err(Error::new(
            ErrorKind::Conflict,
            "E_EXISTS",
            format!(
                "template `{}` already exists ({})",
                req.name,
                ws.display(&dir)
            ),
        )
        .hint("edit its files by hand: dacli never rewrites a template"));
    }
    let source = match &req.from {
        Some(f) => Some(load(ctx, f)?),
        None => None,
    };
    let summary = match (&req.summary, &source) {
        (Some(s), _) => s.trim().to_string(),
        (None, Some(t)) => t.summary.clone(),
        (None, None) => return Err(Error::usage("--summary is required without --from")),
    };
    if summary.is_empty() || summary.contains('\n') {
        return Err(Error::usage("--summary must be one non-empty line"));
    }
    let stages: Vec<Stage> = match (&req.stages, &source) {
        (s, _) if !s.is_empty() => s
            .iter()
            .map(|n| {
                let gates = source
                    .as_ref()
                    .and_then(|t| t.stages.iter().find(|x| &x.name == n))
                    .map(|x| x.gates.clone())
                    .unwrap_or_default();
                Stage {
                    name: n.clone(),
                    gates,
                }
            })
            .collect(),
        (_, Some(t)) => t.stages.clone(),
        _ => {
            return Err(Error::usage(
                "give at least one --stage (or --from a template)",
            ));
        }
    };
    // template.md: the source's frontmatter (unknown keys kept) with this name, summary and
    // stages; the source's body, or a heading.
    let (mut front, body) = match &source {
        Some(t) => {
            let main = t
                .files
                .iter()
                .find(|(p, _)| p == "template.md")
                .map(|(_, b)| b.clone())
                .unwrap_or_default();
            let doc = Document::parse("template.md", &main)
                .map_err(|p| Error::internal(p.to_string()))?;
            (
                doc.front,
                doc.body
                    .replacen(&format!("# {}", t.name), &format!("# {}", req.name), 1),
            )
        }
        None => (DocumentMut::new(), format!("# {}\n", req.name)),
    };
    front["kind"] = value("template");
    front["name"] = value(req.name.as_str());
    front["summary"] = value(summary.as_str());
    let mut arr = Array::new();
    for s in &stages {
        let mut t = InlineTable::new();
        t.insert("name", Value::from(s.name.as_str()));
        let mut g = Array::new();
        for gate in &s.gates {
            g.push(gate.as_str());
        }
        t.insert("gates", Value::Array(g));
        arr.push(Value::InlineTable(t));
    }
    front["stages"] = value(arr);
    let mut files = vec![(
        "template.md".to_string(),
        Document::new(front, body).render().into_bytes(),
    )];
    if let Some(t) = &source {
        files.extend(t.files.iter().filter(|(p, _)| p != "template.md").cloned());
    }
    let written: Vec<String> = crate::ops::templates::create(ws, &dir, &files)?
        .iter()
        .map(|p| ws.display(p))
        .collect();
    Ok(Outcome::Done(AddResponse {
        template: req.name,
        path: ws.display(&dir.join("template.md")),
        files: written,
        effect: "created",
    }))
}

fn render_add(r: &AddResponse, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    let mut out = format!("created template {} at {}\n", r.template, r.path);
    for f in r.files.iter().skip(1) {
        out.push_str(&format!("  {f}\n"));
    }
    out
}
