//! `project add | list | show | edit` (COMMANDS.md §5).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toml_edit::{Array, InlineTable, Item, Value, value};

use super::common::{acts_as_owner, project_slug};
use crate::dispatch::text::fit_table;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome, Refusal};
use crate::journal::view::World;
use crate::model::body::{
    append_to_section, replace_section, replace_title, section_items, section_text,
};
use crate::model::id::{ROOT_AGENT, is_agent_id, is_human_ref};
use crate::objects::{self, projects, read_document, templates};
use crate::ops::{self, Decided};
use crate::store::Document;
use crate::workspace::names::{check_slug, slugify};
use crate::workspace::{STATUS_FOLDERS, Workspace};

/// Classes a project may allow to be projected to GitHub (FORMAT §11).
const PROJECTION_CLASSES: [&str; 7] = [
    "tasks",
    "decisions",
    "findings",
    "metrics",
    "refs",
    "risks",
    "escalations",
];

#[derive(Debug, Clone, Copy, clap::ValueEnum, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LandingMode {
    Local,
    Pr,
}

impl LandingMode {
    fn as_str(self) -> &'static str {
        match self {
            LandingMode::Local => "local",
            LandingMode::Pr => "pr",
        }
    }
}

#[derive(Debug, Clone, Copy, clap::ValueEnum, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ProjectStatus {
    Active,
    Paused,
    Done,
    Abandoned,
}

impl ProjectStatus {
    fn as_str(self) -> &'static str {
        match self {
            ProjectStatus::Active => "active",
            ProjectStatus::Paused => "paused",
            ProjectStatus::Done => "done",
            ProjectStatus::Abandoned => "abandoned",
        }
    }
}

/// Create a project: `projects/<slug>/project.md` with all five structural sections
/// (Vision, Goal, Constraints, Out of scope, Success criteria).
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddRequest {
    /// The project's title.
    title: String,
    /// Directory name and id (`p-<slug>`); default: the title's slug.
    #[arg(long, value_name = "SLUG")]
    #[serde(default)]
    slug: Option<String>,
    /// What done looks like, in one paragraph.
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    goal: Option<String>,
    /// Why the project exists.
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    vision: Option<String>,
    /// A constraint every task must respect (repeatable).
    #[arg(long = "constraint", value_name = "TEXT")]
    #[serde(default)]
    constraints: Vec<String>,
    /// Something explicitly not part of the project (repeatable; enters every brief).
    #[arg(long = "out-of-scope", value_name = "TEXT")]
    #[serde(default)]
    out_of_scope: Vec<String>,
    /// A success criterion (repeatable).
    #[arg(long = "success", value_name = "TEXT")]
    #[serde(default)]
    success: Vec<String>,
    /// Attach a template (built-in `solo`, `standard`, or one under `.dacli/templates/`).
    #[arg(long, value_name = "NAME")]
    #[serde(default)]
    template: Option<String>,
    /// Current stage (default: the template's first stage, else `build`).
    #[arg(long, value_name = "SLUG")]
    #[serde(default)]
    stage: Option<String>,
    /// Landing mode override for this project.
    #[arg(long, value_enum)]
    #[serde(default)]
    landing_mode: Option<LandingMode>,
    /// Landing base branch override for this project.
    #[arg(long, value_name = "BRANCH")]
    #[serde(default)]
    landing_base: Option<String>,
    /// A tag (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    #[serde(default)]
    tags: Vec<String>,
}

impl Classify for AddRequest {}

#[derive(Debug, Serialize)]
pub struct ProjectBrief {
    id: String,
    title: String,
    status: String,
    stage: String,
    template: Option<String>,
    owner: String,
    path: String,
}

#[derive(Debug, Serialize)]
pub struct AddResponse {
    project: ProjectBrief,
    effect: &'static str,
}

fn one_line(flag: &str, text: &str) -> Result<(), Error> {
    if text.contains('\n') || text.trim().is_empty() {
        Err(Error::usage(format!("{flag} must be one non-empty line")))
    } else {
        Ok(())
    }
}

fn template_stages(ws: &Workspace, name: &str) -> Result<Vec<String>, Error> {
    check_slug(name).map_err(Error::bad_slug)?;
    let t = templates::load(Some(ws), name).map_err(|e| match e {
        objects::Error::NotFound { .. } => Error::not_found(format!("no template `{name}`"))
            .hint("list templates with `dacli template list`"),
        other => other.into(),
    })?;
    Ok(t.stages.into_iter().map(|s| s.name).collect())
}

fn add(ctx: &Ctx, req: AddRequest) -> Result<Outcome<AddResponse>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    one_line("TITLE", &req.title)?;
    let slug = req.slug.clone().unwrap_or_else(|| slugify(&req.title));
    check_slug(&slug).map_err(|e| Error::bad_slug(format!("--slug: {e}")))?;
    for t in &req.tags {
        check_slug(t).map_err(|e| Error::bad_slug(format!("--tag: {e}")))?;
    }
    for (flag, items) in [
        ("--constraint", &req.constraints),
        ("--out-of-scope", &req.out_of_scope),
        ("--success", &req.success),
    ] {
        for i in items {
            one_line(flag, i)?;
        }
    }
    let stages = match &req.template {
        Some(t) => Some(template_stages(ws, t)?),
        None => None,
    };
    let stage = match (&req.stage, &stages) {
        (Some(s), Some(st)) if !st.contains(s) => {
            return Err(Error::usage(format!(
                "--stage `{s}` is not a stage of template `{}` ({})",
                req.template.as_deref().unwrap_or(""),
                st.join(", ")
            )));
        }
        (Some(s), _) => {
            check_slug(s).map_err(|e| Error::bad_slug(format!("--stage: {e}")))?;
            s.clone()
        }
        (None, Some(st)) => st[0].clone(),
        (None, None) => "build".to_string(),
    };
    let dir = ws.path(&["projects", &slug]);
    if dir.exists() {
        return Err(Error::new(
            crate::dispatch::ErrorKind::Conflict,
            "E_EXISTS",
            format!("project `{slug}` already exists ({})", ws.display(&dir)),
        )
        .hint("pick another --slug, or edit it with `dacli project edit`"));
    }
    let doc = document(&req, &slug, &stage, &me, ctx.new_ulid());
    let path = ops::projects::create(ws, &slug, &doc, req.template.as_deref())?;
    Ok(Outcome::Done(AddResponse {
        project: ProjectBrief {
            id: format!("p-{slug}"),
            title: req.title.trim().to_string(),
            status: "active".into(),
            stage,
            template: req.template,
            owner: me,
            path: ws.display(&path),
        },
        effect: "created",
    }))
}

/// The `project.md` of a new project: its frontmatter and the five structural sections.
fn document(req: &AddRequest, slug: &str, stage: &str, me: &str, rev: ulid::Ulid) -> Document {
    projects::NewProject {
        slug,
        title: &req.title,
        owner: me,
        rev,
        stage,
        template: req.template.as_deref(),
        landing_mode: req.landing_mode.map(LandingMode::as_str),
        landing_base: req.landing_base.as_deref(),
        tags: &req.tags,
        vision: req.vision.as_deref().unwrap_or(""),
        goal: req.goal.as_deref().unwrap_or(""),
        constraints: &req.constraints,
        out_of_scope: &req.out_of_scope,
        success: &req.success,
    }
    .document()
}

fn str_array(items: &[String]) -> Array {
    let mut a = Array::new();
    for i in items {
        a.push(i.as_str());
    }
    a
}

fn render_add(r: &AddResponse, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    format!(
        "created project {} ({}) at {}\n",
        r.project.id, r.project.title, r.project.path
    )
}

/// List projects with their task counts.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListRequest {
    /// Which projects: active (default), paused, done, abandoned, or all.
    #[arg(long, default_value = "active", value_parser = ["active", "paused", "done", "abandoned", "all"])]
    #[serde(default = "active")]
    status: String,
}

fn active() -> String {
    "active".into()
}

impl Classify for ListRequest {}

#[derive(Debug, Serialize)]
pub struct ListedProject {
    id: String,
    title: String,
    status: String,
    stage: String,
    owner: String,
    counts: BTreeMap<&'static str, usize>,
}

#[derive(Debug, Serialize)]
pub struct ListResponse {
    projects: Vec<ListedProject>,
}

/// Task counts by folded status, as every read shows them (a pending claim counts as active,
/// as in `status` and `task list`), warning about the project's skipped task files.
fn counts(world: &World, ws: &Workspace, slug: &str, ctx: &Ctx) -> BTreeMap<&'static str, usize> {
    let tasks_dir = format!("{}/", ws.display(&ws.path(&["projects", slug, "tasks"])));
    ctx.warn_all(
        world
            .warnings
            .iter()
            .filter(|w| w.path.starts_with(&tasks_dir))
            .cloned(),
    );
    let mut c: BTreeMap<&'static str, usize> = STATUS_FOLDERS.iter().map(|f| (*f, 0)).collect();
    for l in world.tasks.iter().filter(|t| t.project == slug) {
        *c.entry(l.doc.status.as_str()).or_default() += 1;
    }
    c
}

fn folded(ws: &Workspace) -> Result<World, Error> {
    Ok(World::load(ws, &|f| {
        crate::policy::dod::evaluate(f).passed
    })?)
}

fn list(ctx: &Ctx, req: ListRequest) -> Result<Outcome<ListResponse>, Error> {
    let ws = ctx.ws()?;
    let listing = projects::list(ws)?;
    ctx.warn_all(listing.warnings);
    let world = folded(ws)?;
    let mut out = Vec::new();
    for p in listing.items {
        if req.status != "all" && p.status != req.status {
            continue;
        }
        out.push(ListedProject {
            counts: counts(&world, ws, &p.slug, ctx),
            id: p.id,
            title: p.title,
            status: p.status,
            stage: p.stage,
            owner: p.owner,
        });
    }
    Ok(Outcome::Done(ListResponse { projects: out }))
}

fn render_list(r: &ListResponse, ctx: &Ctx) -> String {
    if r.projects.is_empty() {
        return "no projects\n".into();
    }
    let mut rows = vec![
        [
            "PROJECT", "STATUS", "STAGE", "OPEN", "ACTIVE", "BLOCKED", "DONE", "TITLE",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
    ];
    for p in &r.projects {
        let c = |k| p.counts.get(k).copied().unwrap_or(0).to_string();
        rows.push(vec![
            p.id.clone(),
            p.status.clone(),
            p.stage.clone(),
            c("open"),
            c("active"),
            c("blocked"),
            c("done"),
            p.title.clone(),
        ]);
    }
    fit_table(&rows, &[3, 4, 5, 6], ctx.width(), 7)
}

/// Show a project: fields, sections, task counts, open risks and notes by kind.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShowRequest {
    /// The project (slug or `p-<slug>`).
    project: String,
}

impl Classify for ShowRequest {}

#[derive(Debug, Serialize)]
pub struct ProjectView {
    id: String,
    title: String,
    status: String,
    stage: String,
    template: Option<String>,
    owner: String,
    landing: Option<serde_json::Value>,
    merge_authority: Vec<String>,
    github_projection: Option<serde_json::Value>,
    tags: Vec<String>,
    sections: Sections,
}

#[derive(Debug, Serialize)]
struct Sections {
    vision: String,
    goal: String,
    constraints: Vec<String>,
    out_of_scope: Vec<String>,
    success: Vec<SuccessItem>,
}

#[derive(Debug, Serialize)]
struct SuccessItem {
    text: String,
    checked: bool,
}

#[derive(Debug, Serialize)]
pub struct ShowResponse {
    project: ProjectView,
    counts: BTreeMap<&'static str, usize>,
    open_risks: usize,
    notes: BTreeMap<&'static str, usize>,
}

fn view(ws: &Workspace, slug: &str) -> Result<(ProjectView, Document), Error> {
    let path = ws.path(&["projects", slug, "project.md"]);
    let doc = read_document(ws, &path)?;
    let head = crate::model::project::ProjectHead::from_front(&doc.front, slug, doc.title())
        .map_err(|e| objects::Error::malformed(objects::field_problem(ws, &path, e)))?;
    let f = crate::model::fields::Fields(doc.front.as_table());
    let to_json = |key: &str| {
        doc.front.get(key).and_then(|i| {
            let text = format!("v = {}", i.to_string().trim());
            toml_edit::de::from_str::<BTreeMap<String, serde_json::Value>>(&text)
                .ok()
                .and_then(|m| m.get("v").cloned())
        })
    };
    let success = section_items(&doc.body, "Success criteria")
        .into_iter()
        .map(|i| {
            let (checked, text) = if let Some(t) = i.strip_prefix("[ ] ") {
                (false, t)
            } else if let Some(t) = i.strip_prefix("[x] ").or_else(|| i.strip_prefix("[X] ")) {
                (true, t)
            } else {
                (false, i.as_str())
            };
            SuccessItem {
                text: text.to_string(),
                checked,
            }
        })
        .collect();
    let v = ProjectView {
        id: head.id,
        title: head.title,
        status: head.status,
        stage: head.stage,
        template: f.opt_str("template").ok().flatten().map(str::to_string),
        owner: head.owner,
        landing: to_json("landing"),
        merge_authority: f
            .str_list("merge_authority")
            .unwrap_or_default()
            .into_iter()
            .map(String::from)
            .collect(),
        github_projection: to_json("github_projection"),
        tags: f
            .str_list("tags")
            .unwrap_or_default()
            .into_iter()
            .map(String::from)
            .collect(),
        sections: Sections {
            vision: section_text(&doc.body, "Vision").unwrap_or("").to_string(),
            goal: section_text(&doc.body, "Goal").unwrap_or("").to_string(),
            constraints: section_items(&doc.body, "Constraints"),
            out_of_scope: section_items(&doc.body, "Out of scope"),
            success,
        },
    };
    Ok((v, doc))
}

fn show(ctx: &Ctx, req: ShowRequest) -> Result<Outcome<ShowResponse>, Error> {
    let ws = ctx.ws()?;
    let slug = project_slug(ws, &req.project)?;
    let (project, _) = view(ws, &slug)?;
    let mut open_risks = 0;
    for (name, path) in ws.fs.list_dir(&ws.path(&["projects", &slug, "risks"]))? {
        if !name.ends_with(".md") || name.starts_with('.') {
            continue;
        }
        match read_document(ws, &path) {
            Ok(d) if d.front.get("status").and_then(Item::as_str) == Some("open") => {
                open_risks += 1
            }
            Ok(_) => {}
            Err(crate::store::Error::Malformed(p)) => ctx.warn(p),
            Err(e) => return Err(e.into()),
        }
    }
    let notes = objects::notes::list(ws)?;
    ctx.warn_all(notes.warnings);
    let mut by_kind: BTreeMap<&'static str, usize> =
        [("decision", 0), ("finding", 0), ("metric", 0), ("ref", 0)].into();
    for n in notes
        .items
        .iter()
        .filter(|n| n.project.as_deref() == Some(slug.as_str()))
    {
        if let Some(c) = by_kind.get_mut(n.note.kind.as_str()) {
            *c += 1;
        }
    }
    Ok(Outcome::Done(ShowResponse {
        counts: counts(&folded(ws)?, ws, &slug, ctx),
        project,
        open_risks,
        notes: by_kind,
    }))
}

fn render_show(r: &ShowResponse, _ctx: &Ctx) -> String {
    let p = &r.project;
    let mut out = format!("{} — {}\n", p.id, p.title);
    out.push_str(&format!(
        "status {}, stage {}, owner {}\n",
        p.status, p.stage, p.owner
    ));
    let c = |k| r.counts.get(k).copied().unwrap_or(0);
    out.push_str(&format!(
        "tasks: {} open, {} active, {} blocked, {} done; {} open risks\n",
        c("open"),
        c("active"),
        c("blocked"),
        c("done"),
        r.open_risks
    ));
    if !p.sections.goal.is_empty() {
        out.push_str(&format!("\nGoal: {}\n", p.sections.goal));
    }
    for (label, items) in [
        ("Constraints", &p.sections.constraints),
        ("Out of scope", &p.sections.out_of_scope),
    ] {
        if !items.is_empty() {
            out.push_str(&format!("\n{label}:\n"));
            for i in items {
                out.push_str(&format!("  - {i}\n"));
            }
        }
    }
    out
}

/// Edit a project (owner only; `--merge-authority` and `--projection-classes` root only).
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditRequest {
    /// The project (slug or `p-<slug>`).
    project: String,
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    title: Option<String>,
    #[arg(long, value_enum)]
    #[serde(default)]
    status: Option<ProjectStatus>,
    #[arg(long, value_name = "SLUG")]
    #[serde(default)]
    stage: Option<String>,
    /// Replace the Goal section.
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    goal: Option<String>,
    /// Replace the Vision section.
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    vision: Option<String>,
    #[arg(long = "add-constraint", value_name = "TEXT")]
    #[serde(default)]
    add_constraint: Vec<String>,
    #[arg(long = "add-out-of-scope", value_name = "TEXT")]
    #[serde(default)]
    add_out_of_scope: Vec<String>,
    #[arg(long = "add-success", value_name = "TEXT")]
    #[serde(default)]
    add_success: Vec<String>,
    #[arg(long, value_enum)]
    #[serde(default)]
    landing_mode: Option<LandingMode>,
    #[arg(long, value_name = "BRANCH")]
    #[serde(default)]
    landing_base: Option<String>,
    /// Replace the tags (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    #[serde(default)]
    tags: Vec<String>,
    /// Who may land release trains: agent ids, `human:<login>`, or `none` (root only).
    #[arg(long = "merge-authority", value_name = "AGENT|human:LOGIN|none")]
    #[serde(default)]
    merge_authority: Vec<String>,
    /// Classes that may be projected to GitHub, comma-separated, or `none` (root only).
    #[arg(long = "projection-classes", value_name = "LIST|none")]
    #[serde(default)]
    projection_classes: Option<String>,
}

impl Classify for EditRequest {}

#[derive(Debug, Serialize)]
pub struct EditResponse {
    project: ProjectView,
    changed: Vec<&'static str>,
    effect: &'static str,
}

fn edit(ctx: &Ctx, req: EditRequest) -> Result<Outcome<EditResponse>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    let slug = project_slug(ws, &req.project)?;
    let root_only = !req.merge_authority.is_empty() || req.projection_classes.is_some();
    if root_only && me != ROOT_AGENT {
        let mut cmd = format!("dacli project edit {slug}");
        for m in &req.merge_authority {
            cmd.push_str(&format!(" --merge-authority {m}"));
        }
        if let Some(c) = &req.projection_classes {
            cmd.push_str(&format!(" --projection-classes {c}"));
        }
        return Ok(Outcome::Refused(Refusal::new(
            "grant.root_required",
            "merge authority and GitHub projection classes are set by a-root only",
            format!("Ask a-root or the human to run `{cmd}`."),
        )));
    }
    let decided = ops::projects::edit(ws, &slug, || -> Result<_, Error> {
        let (_, doc) = view(ws, &slug)?;
        let owner = doc
            .front
            .get("owner")
            .and_then(Item::as_str)
            .unwrap_or("")
            .to_string();
        let root_setting_root_fields = root_only && me == ROOT_AGENT && only_root_fields(&req);
        if !root_setting_root_fields && !acts_as_owner(ctx, &owner)? {
            return Ok(Decided::Refused(Refusal::new(
                "project.not_owner",
                format!("project {slug} belongs to {owner}"),
                format!("Ask {owner} to edit project {slug}."),
            )));
        }
        let mut doc = doc;
        let mut changed = Vec::new();
        if let Some(t) = &req.title {
            one_line("--title", t)?;
            doc.body = replace_title(&doc.body, t.trim());
            changed.push("title");
        }
        if let Some(s) = req.status {
            doc.front["status"] = value(s.as_str());
            changed.push("status");
        }
        if let Some(s) = &req.stage {
            check_slug(s).map_err(|e| Error::bad_slug(format!("--stage: {e}")))?;
            if let Some(t) = doc.front.get("template").and_then(Item::as_str) {
                let stages = template_stages(ws, t)?;
                if !stages.contains(s) {
                    return Err(Error::usage(format!(
                        "--stage `{s}` is not a stage of template `{t}` ({})",
                        stages.join(", ")
                    )));
                }
            }
            doc.front["stage"] = value(s.as_str());
            changed.push("stage");
        }
        if let Some(g) = &req.goal {
            doc.body = replace_section(&doc.body, "Goal", g.trim());
            changed.push("goal");
        }
        if let Some(v) = &req.vision {
            doc.body = replace_section(&doc.body, "Vision", v.trim());
            changed.push("vision");
        }
        for (flag, items, section, prefix, name) in [
            (
                "--add-constraint",
                &req.add_constraint,
                "Constraints",
                "- ",
                "constraints",
            ),
            (
                "--add-out-of-scope",
                &req.add_out_of_scope,
                "Out of scope",
                "- ",
                "out_of_scope",
            ),
            (
                "--add-success",
                &req.add_success,
                "Success criteria",
                "- [ ] ",
                "success",
            ),
        ] {
            for i in items.iter() {
                one_line(flag, i)?;
                doc.body = append_to_section(&doc.body, section, &format!("{prefix}{}", i.trim()));
            }
            if !items.is_empty() {
                changed.push(name);
            }
        }
        if req.landing_mode.is_some() || req.landing_base.is_some() {
            let mut l = doc
                .front
                .get("landing")
                .and_then(Item::as_inline_table)
                .cloned()
                .unwrap_or_default();
            if let Some(m) = req.landing_mode {
                l.insert("mode", Value::from(m.as_str()));
            }
            if let Some(b) = &req.landing_base {
                l.insert("base", Value::from(b.as_str()));
            }
            doc.front["landing"] = value(l);
            changed.push("landing");
        }
        if !req.tags.is_empty() {
            for t in &req.tags {
                check_slug(t).map_err(|e| Error::bad_slug(format!("--tag: {e}")))?;
            }
            doc.front["tags"] = value(str_array(&req.tags));
            changed.push("tags");
        }
        if !req.merge_authority.is_empty() {
            let list: Vec<String> = if req.merge_authority.iter().any(|m| m == "none") {
                Vec::new()
            } else {
                for m in &req.merge_authority {
                    if !is_agent_id(m) && !is_human_ref(m) {
                        return Err(Error::usage(format!(
                            "--merge-authority `{m}` is neither an agent id nor `human:<login>`"
                        )));
                    }
                }
                req.merge_authority.clone()
            };
            doc.front["merge_authority"] = value(str_array(&list));
            changed.push("merge_authority");
        }
        if let Some(c) = &req.projection_classes {
            let classes: Vec<String> = if c == "none" {
                Vec::new()
            } else {
                c.split(',').map(|s| s.trim().to_string()).collect()
            };
            for class in &classes {
                if !PROJECTION_CLASSES.contains(&class.as_str()) {
                    return Err(Error::usage(format!(
                        "--projection-classes: `{class}` is not one of {}",
                        PROJECTION_CLASSES.join(", ")
                    )));
                }
            }
            let mut t = InlineTable::new();
            t.insert("classes", Value::Array(str_array(&classes)));
            doc.front["github_projection"] = value(t);
            changed.push("github_projection");
        }
        if changed.is_empty() {
            return Ok(Decided::Done((None, changed)));
        }
        doc.front["rev"] = value(ctx.new_ulid().to_string());
        Ok(Decided::Done((Some(doc), changed)))
    })?;
    let changed = match decided {
        Decided::Done(changed) => changed,
        Decided::Refused(refusal) => return Ok(Outcome::Refused(refusal)),
    };
    let (project, _) = view(ws, &slug)?;
    Ok(Outcome::Done(EditResponse {
        project,
        effect: if changed.is_empty() {
            "unchanged"
        } else {
            "applied"
        },
        changed,
    }))
}

/// True when the request sets nothing but the root-only fields.
fn only_root_fields(r: &EditRequest) -> bool {
    r.title.is_none()
        && r.status.is_none()
        && r.stage.is_none()
        && r.goal.is_none()
        && r.vision.is_none()
        && r.add_constraint.is_empty()
        && r.add_out_of_scope.is_empty()
        && r.add_success.is_empty()
        && r.landing_mode.is_none()
        && r.landing_base.is_none()
        && r.tags.is_empty()
}

fn render_edit(r: &EditResponse, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    if r.changed.is_empty() {
        return format!("{}: nothing to change\n", r.project.id);
    }
    format!("{}: changed {}\n", r.project.id, r.changed.join(", "))
}

pub(super) fn commands() -> Vec<Command> {
    vec![
        Command::new("project.add", Class::Mutate, add, render_add),
        Command::new("project.list", Class::Read, list, render_list),
        Command::new("project.show", Class::Read, show, render_show),
        Command::new("project.edit", Class::Mutate, edit, render_edit),
    ]
}
