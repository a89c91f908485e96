//! `dacli note add`: an rw agent writes a note file; an ro agent records a finding as a
//! `finding` event, which the owner of its `about` materialises (COMMANDS.md §6).

use std::io::Read;

use serde::{Deserialize, Serialize};
use toml_edit::{DocumentMut, value};

use super::notes::{self, NoteRef};
use super::{
    About, all_projects, check_tags, find_project, only_active, required_line, resolve_about,
    section_flag, text, toml_list, toml_time,
};
use crate::dispatch::editor::Checked as Saved;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Mcp, Outcome};
use crate::model::id::ulid_time;
use crate::model::note::{check_structure, dir_of};
use crate::model::{Grant, Refusal};
use crate::ops;
use crate::store::Document;

/// The kinds of note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Kind {
    Decision,
    Finding,
    Metric,
    Ref,
}

impl Kind {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Kind::Decision => "decision",
            Kind::Finding => "finding",
            Kind::Metric => "metric",
            Kind::Ref => "ref",
        }
    }
}

/// Finding severities (FORMAT §15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Severity {
    /// The right fix is not obvious and needs investigation.
    Major,
    /// The fix is clear but needs review.
    Moderate,
    /// The fix is obvious or optional.
    Minor,
}

impl Severity {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Severity::Major => "major",
            Severity::Moderate => "moderate",
            Severity::Minor => "minor",
        }
    }
}

/// Where a note lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Scope {
    /// In its project (`projects/<slug>/notes/`).
    #[default]
    Project,
    /// For lessons that reach every project (`notes/`).
    Workspace,
}

impl Scope {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::Workspace => "workspace",
        }
    }
}

/// Record a decision, finding, metric or ref. A decision needs --chose, --rejected and
/// --because; a metric --goal, --question and --metric; a finding --severity. An ro agent
/// records findings only, as an event the owner of --about materialises.
///
/// With -e (on a terminal) the note is written in $VISUAL/$EDITOR: a template of its fields
/// and its kind's sections, starting from the flags given, checked on save (the editor
/// reopens with the error on top), kept under `.dacli/runs/drafts/` until it is recorded.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// What kind of note.
    #[arg(value_enum)]
    kind: Kind,
    /// The title (one line; with -e, the template starts from it).
    #[arg(default_value = "", required_unless_present = "edit")]
    title: String,
    /// Write the note in $VISUAL/$EDITOR.
    #[arg(short = 'e', long = "edit")]
    #[serde(skip)]
    edit: bool,
    /// The project (slug or `p-<slug>`); default: the project of --about, else the only
    /// active project.
    #[arg(long, value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
    /// The task or project the note is about (stored as its full id).
    #[arg(long, value_name = "REF|PROJECT")]
    #[serde(default)]
    about: Option<String>,
    /// `workspace` for lessons that reach every project.
    #[arg(long, value_enum, default_value_t)]
    #[serde(default)]
    scope: Scope,
    /// Free text after the sections.
    #[arg(long, value_name = "TEXT", conflicts_with = "body_file")]
    #[serde(default)]
    body: Option<String>,
    /// Read the free text from a file (`-`: standard input).
    #[arg(long, value_name = "PATH|-")]
    #[serde(default)]
    body_file: Option<String>,
    /// Decision: what was chosen.
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    chose: Option<String>,
    /// Decision: what was considered and not chosen, and why.
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    rejected: Option<String>,
    /// Decision: why the choice holds.
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    because: Option<String>,
    /// Metric: the goal it serves.
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    goal: Option<String>,
    /// Metric: the question it answers.
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    question: Option<String>,
    /// Metric: what is measured, and how.
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    metric: Option<String>,
    /// Finding: how hard the fix is.
    #[arg(long, value_enum)]
    #[serde(default)]
    severity: Option<Severity>,
    /// Never project this note to GitHub.
    #[arg(long)]
    #[serde(default)]
    private: bool,
    /// An older note this one replaces (id, unique slug or path).
    #[arg(long, value_name = "NOTE")]
    #[serde(default)]
    supersedes: Option<String>,
    /// A label (a slug); repeatable.
    #[arg(long = "tag", value_name = "TAG")]
    #[serde(default)]
    tags: Vec<String>,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    /// `None` only when `-e` ended without a change (`effect` "unchanged").
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<NoteRef>,
    effect: &'static str,
    event: Option<String>,
}

pub(super) fn command() -> Command {
    Command::new("note.add", Class::Append, run, render).mcp(Mcp::Tier1("add_note"))
}

/// The section flags of each kind, in the order FORMAT §15 writes them.
fn sections(req: &Request) -> [(&'static str, &'static str, Option<&str>); 6] {
    [
        ("--chose", "Chose", req.chose.as_deref()),
        ("--rejected", "Rejected", req.rejected.as_deref()),
        ("--because", "Because", req.because.as_deref()),
        ("--goal", "Goal", req.goal.as_deref()),
        ("--question", "Question", req.question.as_deref()),
        ("--metric", "Metric", req.metric.as_deref()),
    ]
}

fn owns_section(kind: Kind, section: &str) -> bool {
    match kind {
        Kind::Decision => matches!(section, "Chose" | "Rejected" | "Because"),
        Kind::Metric => matches!(section, "Goal" | "Question" | "Metric"),
        Kind::Finding | Kind::Ref => false,
    }
}

/// The input, checked: title, the kind's sections in order (`None` when missing or empty),
/// tags.
struct Checked {
    title: String,
    sections: Vec<(&'static str, &'static str, Option<String>)>,
    tags: Vec<String>,
}

fn check_input(req: &Request) -> Result<Checked, Error> {
    let title = required_line("TITLE", &req.title)?;
    let mut kept = Vec::new();
    for (flag, name, v) in sections(req) {
        if owns_section(req.kind, name) {
            kept.push((flag, name, section_flag(flag, v)?));
        } else if v.is_some() {
            return Err(Error::usage(format!(
                "{flag} belongs to {} notes; a {} has no `## {name}`",
                if matches!(name, "Chose" | "Rejected" | "Because") {
                    "decision"
                } else {
                    "metric"
                },
                req.kind.as_str()
            )));
        }
    }
    if req.severity.is_some() && req.kind != Kind::Finding {
        return Err(Error::usage(format!(
            "--severity is for findings only; a {} has none",
            req.kind.as_str()
        )));
    }
    if req.body.is_some() && req.body_file.is_some() {
        return Err(Error::usage("give --body or --body-file, not both"));
    }
    Ok(Checked {
        title,
        sections: kept,
        tags: check_tags(&req.tags)?,
    })
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    if req.edit {
        return add_in_editor(ctx, &req);
    }
    let checked = check_input(&req)?;
    let me = ctx.identity()?;
    let ro = me.agent.grant == Grant::Ro;
    if ro && req.kind != Kind::Finding {
        return Ok(Outcome::Refused(read_only(&req)));
    }
    if let Some(r) = incomplete(&req, &checked) {
        return Ok(Outcome::Refused(r));
    }
    if ro && (req.supersedes.is_some() || !checked.tags.is_empty()) {
        return Err(Error::usage(
            "a finding recorded by an ro agent is an event, which keeps title, severity, scope, private and body only: drop --supersedes and --tag",
        ));
    }
    let ws = ctx.ws()?;
    let projects = all_projects(ctx, ws)?;
    let about = req
        .about
        .as_deref()
        .map(|a| resolve_about(ctx, ws, &projects, a))
        .transpose()?;
    let project = match req.scope {
        Scope::Workspace => {
            if req.project.is_some() {
                return Err(Error::usage(
                    "--project places a note in a project, --scope workspace in notes/: drop one (attach a workspace note to a project with --about p-<slug>)",
                ));
            }
            None
        }
        Scope::Project => Some(note_project(&req, &projects, about.as_ref())?),
    };
    let free = free_body(ctx, &req)?;
    let body = compose(&checked.title, &checked.sections, free.as_deref());
    if ro {
        return record_finding(ctx, &req, &checked, about.as_ref(), project, body);
    }
    if let Err(why) = check_structure(req.kind.as_str(), &body) {
        return Ok(Outcome::Refused(structure_refusal(req.kind, &why)));
    }
    let supersedes = match &req.supersedes {
        Some(s) => Some(
            notes::find(&notes::gather(ctx, ws)?, "--supersedes", s)?
                .note
                .id
                .clone(),
        ),
        None => None,
    };
    let ulid = ctx.new_ulid();
    let id = format!("n-{ulid}");
    let mut front = DocumentMut::new();
    front["id"] = value(id.as_str());
    front["kind"] = value("note");
    front["note_kind"] = value(req.kind.as_str());
    front["created"] = toml_time(ulid_time(ulid))?;
    front["created_by"] = value(me.agent.id.as_str());
    front["scope"] = value(req.scope.as_str());
    if let Some(a) = &about {
        front["about"] = value(a.id());
    }
    if let Some(s) = req.severity {
        front["severity"] = value(s.as_str());
    }
    if req.private {
        front["private"] = value(true);
    }
    if let Some(s) = &supersedes {
        front["supersedes"] = value(s.as_str());
    }
    if !checked.tags.is_empty() {
        front["tags"] = toml_list(&checked.tags);
    }
    let dir = dir_of(req.kind.as_str()).expect("every Kind has a directory");
    let path = ops::notes::create(
        ws,
        project.as_deref(),
        dir,
        &id,
        &checked.title,
        &Document::new(front, body),
    )?;
    Ok(Outcome::Done(Response {
        note: Some(NoteRef {
            id,
            kind: req.kind.as_str().to_string(),
            title: checked.title,
            scope: req.scope.as_str().to_string(),
            about: about.map(|a| a.id()),
            severity: req.severity.map(|s| s.as_str().to_string()),
            path: Some(ws.display(&path)),
            pending: false,
        }),
        effect: "created",
        event: None,
    }))
}

/// The project a project-scope note goes to: `--project`, else the project of `--about`,
/// else the only active project. `--project` and `--about` must agree.
fn note_project(
    req: &Request,
    projects: &[crate::model::project::ProjectHead],
    about: Option<&About>,
) -> Result<String, Error> {
    match (&req.project, about) {
        (Some(p), about) => {
            let p = find_project(projects, "--project", p)?;
            if let Some(a) = about
                && a.project() != p.slug
            {
                return Err(Error::usage(format!(
                    "--about {} belongs to project {}, but --project is {}: a note lives in the project it is about",
                    a.id(),
                    a.project(),
                    p.slug
                )));
            }
            Ok(p.slug.clone())
        }
        (None, Some(a)) => Ok(a.project().to_string()),
        (None, None) => Ok(only_active(projects, "a project-scope note")?.slug.clone()),
    }
}

/// `--body`, or the contents of `--body-file` (`-`: standard input), trimmed at the end.
fn free_body(ctx: &Ctx, req: &Request) -> Result<Option<String>, Error> {
    if let Some(b) = &req.body {
        return text("--body", b, false);
    }
    let Some(path) = &req.body_file else {
        return Ok(None);
    };
    let cap = super::MAX_TEXT as u64 + 1;
    let mut bytes = Vec::new();
    let read = if path == "-" {
        std::io::stdin().take(cap).read_to_end(&mut bytes)
    } else {
        std::fs::File::open(ctx.env().cwd.join(path))
            .and_then(|f| f.take(cap).read_to_end(&mut bytes))
    };
    read.map_err(|e| Error::usage(format!("--body-file {path}: cannot read it: {e}")))?;
    let s = String::from_utf8(bytes)
        .map_err(|_| Error::usage(format!("--body-file {path} is not UTF-8 text")))?;
    text("--body-file", &s, false)
}

/// The body dacli writes: the title, the kind's sections in FORMAT §15 order, then the free
/// text.
fn compose(
    title: &str,
    sections: &[(&'static str, &'static str, Option<String>)],
    free: Option<&str>,
) -> String {
    let mut out = format!("# {title}\n");
    for (_, name, content) in sections {
        if let Some(c) = content {
            out.push_str(&format!("\n## {name}\n{c}\n"));
        }
    }
    if let Some(f) = free {
        out.push_str(&format!("\n{f}\n"));
    }
    out
}

/// The refusal for a decision, metric or finding missing what its kind requires.
fn incomplete(req: &Request, checked: &Checked) -> Option<Refusal> {
    let missing: Vec<&str> = checked
        .sections
        .iter()
        .filter(|(_, _, c)| c.is_none())
        .map(|(flag, _, _)| *flag)
        .collect();
    match req.kind {
        Kind::Decision if !missing.is_empty() => Some(decision_incomplete(&missing)),
        Kind::Metric if !missing.is_empty() => Some(Refusal::new(
            "note.metric_incomplete",
            format!(
                "a metric states the goal it serves, the question it answers and the metric that answers it (`## Goal`, `## Question`, `## Metric`); missing: {}",
                flags(&missing)
            ),
            "Give `--goal`, then `--question`, then `--metric`.",
        )),
        Kind::Finding if req.severity.is_none() => Some(Refusal::new(
            "note.finding_incomplete",
            "a finding needs a severity: it tells the reader whether the fix needs investigation, review, or nothing",
            "Add `--severity major` (fix not obvious), `moderate` (clear, needs review) or `minor`.",
        )),
        _ => None,
    }
}

fn flags(missing: &[&str]) -> String {
    missing
        .iter()
        .map(|f| format!("`{f}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A decision without what was chosen, rejected or why. The text says why the rejected
/// alternatives matter: they are what the next agent needs to revisit the decision safely.
fn decision_incomplete(missing: &[&str]) -> Refusal {
    const REJECTED: &str = "Add `--rejected`: what you considered and did not choose, and why; it is what makes the decision safe to revisit.";
    let others: Vec<&str> = missing
        .iter()
        .copied()
        .filter(|f| *f != "--rejected")
        .collect();
    let also = others
        .iter()
        .map(|f| match *f {
            "--chose" => "`--chose` (what you decided)",
            _ => "`--because` (why it holds)",
        })
        .collect::<Vec<_>>()
        .join(" and ");
    let next = match (missing.contains(&"--rejected"), others.is_empty()) {
        (true, true) => REJECTED.to_string(),
        (true, false) => format!("{REJECTED} Also give {also}."),
        (false, _) => {
            format!("Give {also}; with `--rejected` they make the decision safe to revisit.")
        }
    };
    let why = if missing.contains(&"--rejected") {
        "without the rejected alternatives the next agent cannot tell an option that was weighed from one that was overlooked, and may reopen it blind"
    } else {
        "without what was chosen and why, the rejected alternatives have nothing to be weighed against"
    };
    Refusal::new(
        "note.decision_incomplete",
        format!(
            "a decision records what was chosen, what was rejected and why (`## Chose`, `## Rejected`, `## Because`); missing: {}; {why}",
            flags(missing)
        ),
        next,
    )
}

/// A composed body that still breaks FORMAT §15 structure.
fn structure_refusal(kind: Kind, why: &str) -> Refusal {
    match kind {
        Kind::Metric => Refusal::new(
            "note.metric_incomplete",
            format!("the metric's body breaks the required structure: {why}"),
            "Give `--goal`, then `--question`, then `--metric`.",
        ),
        _ => Refusal::new(
            "note.decision_incomplete",
            format!("the decision's body breaks the required structure: {why}"),
            "Add `--rejected`: what you considered and did not choose, and why; it is what makes the decision safe to revisit.",
        ),
    }
}

/// An ro agent asked for a note file of a kind it may not create (FORMAT §15 "Authors").
fn read_only(req: &Request) -> Refusal {
    let target = req
        .about
        .clone()
        .or_else(|| {
            req.project.as_ref().map(|p| {
                if p.starts_with("p-") {
                    p.clone()
                } else {
                    format!("p-{p}")
                }
            })
        })
        .unwrap_or_else(|| "workspace".to_string());
    Refusal::new(
        "grant.read_only",
        format!(
            "your grant is ro: an ro agent records findings only, as events; a {} note needs rw",
            req.kind.as_str()
        ),
        format!(
            "Record it as a finding, or `dacli ask {target} \"…\"` so an rw agent answers with `--as decision`."
        ),
    )
}

/// The ro path: one `finding` event keeping title, severity, scope, private and body. Its
/// `about` is the task, else the project, else `workspace`, so it always has an owner to
/// materialise it.
fn record_finding(
    ctx: &Ctx,
    req: &Request,
    checked: &Checked,
    about: Option<&About>,
    project: Option<String>,
    body: String,
) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?;
    let about = match (about, &project) {
        (Some(a), _) => a.id(),
        (None, Some(slug)) => format!("p-{slug}"),
        (None, None) => "workspace".to_string(),
    };
    let severity = req
        .severity
        .expect("incomplete() refuses a finding without severity");
    let mut fields = vec![
        ("title", value(checked.title.as_str())),
        ("severity", value(severity.as_str())),
        ("scope", value(req.scope.as_str())),
    ];
    if req.private {
        fields.push(("private", value(true)));
    }
    let ulid = ctx.new_ulid();
    let ev = ops::notes::record_finding(ws, ulid, &me.agent.id, &about, fields, body)?;
    Ok(Outcome::Done(Response {
        note: Some(NoteRef {
            id: format!("n-{}", ev.id),
            kind: "finding".into(),
            title: checked.title.clone(),
            scope: req.scope.as_str().to_string(),
            about: (about != "workspace").then_some(about),
            severity: Some(severity.as_str().to_string()),
            path: None,
            pending: true,
        }),
        effect: "proposed",
        event: Some(ev.envelope.id),
    }))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    let Some(n) = &r.note else {
        return String::new();
    };
    if ctx.quiet() {
        return String::new();
    }
    match (&r.event, &n.path) {
        (Some(ev), _) => format!(
            "recorded finding {} as event {ev}: it becomes a note when the owner of {} syncs\n  {}\n",
            n.id,
            n.about.as_deref().unwrap_or("the workspace (a-root)"),
            n.title
        ),
        (None, path) => format!(
            "created {} {}\n  {}\n  {}\n",
            n.kind,
            n.id,
            n.title,
            path.as_deref().unwrap_or("")
        ),
    }
}

/// The sections of each kind's template, in FORMAT §15 order, with the request field each
/// fills.
fn kind_sections(kind: Kind) -> &'static [(&'static str, &'static str)] {
    match kind {
        Kind::Decision => &[
            ("Chose", "chose"),
            ("Rejected", "rejected"),
            ("Because", "because"),
        ],
        Kind::Metric => &[
            ("Goal", "goal"),
            ("Question", "question"),
            ("Metric", "metric"),
        ],
        Kind::Finding | Kind::Ref => &[],
    }
}

/// The heading the free text sits under in the template (not kept in the note).
const BODY: &str = "Body";

fn toml_str(s: &str) -> String {
    toml_edit::Value::from(s).to_string().trim().to_string()
}

/// The template `note add KIND -e` opens, starting from the flags given.
fn template(req: &Request) -> String {
    let kind = req.kind.as_str();
    let mut out = format!(
        "#! A {kind} note. Its text goes under `## {BODY}` (that heading is not kept).\n+++\n"
    );
    out.push_str(&format!("title = {}\n", toml_str(&req.title)));
    out.push_str(&format!(
        "project = {}   # default: the project of `about`, else the only active project\n",
        toml_str(req.project.as_deref().unwrap_or(""))
    ));
    out.push_str(&format!(
        "about = {}   # the task (e.g. \"core/3\") or project the note is about\n",
        toml_str(req.about.as_deref().unwrap_or(""))
    ));
    out.push_str(&format!(
        "scope = {}   # project, or workspace for lessons that reach every project\n",
        toml_str(req.scope.as_str())
    ));
    if req.kind == Kind::Finding {
        out.push_str(&format!(
            "severity = {}   # major (fix not obvious), moderate (clear, needs review) or minor\n",
            toml_str(req.severity.map_or("", |s| s.as_str()))
        ));
    }
    out.push_str(&format!(
        "private = {}   # true: never projected to GitHub\n",
        req.private
    ));
    out.push_str(&format!(
        "supersedes = {}   # an older note this one replaces\n",
        toml_str(req.supersedes.as_deref().unwrap_or(""))
    ));
    let tags: Vec<String> = req.tags.iter().map(|t| toml_str(t)).collect();
    out.push_str(&format!("tags = [{}]\n+++\n", tags.join(", ")));
    for ((name, _), (_, _, given)) in kind_sections(req.kind).iter().zip(
        sections(req)
            .into_iter()
            .filter(|(_, n, _)| owns_section(req.kind, n)),
    ) {
        out.push_str(&format!("\n## {name}\n"));
        if let Some(g) = given {
            out.push_str(&format!("{}\n", g.trim()));
        }
    }
    out.push_str(&format!("\n## {BODY}\n"));
    if let Some(b) = &req.body {
        out.push_str(&format!("{}\n", b.trim()));
    }
    out
}

/// The request a saved template makes (the JSON form `note add` takes), or what is wrong.
/// Under `## Body` everything is free text, headings included.
fn parse(kind: Kind, text: &str) -> Result<serde_json::Value, String> {
    use serde_json::{Value, json};
    let (front, body) = crate::dispatch::editor::frontmatter(text)?;
    let mut fields = serde_json::Map::new();
    fields.insert("kind".into(), json!(kind.as_str()));
    let known = "title, project, about, scope, severity, private, supersedes, tags";
    for (key, value) in front {
        match key.as_str() {
            "severity" if kind != Kind::Finding => {
                return Err(format!(
                    "frontmatter: `severity` is for findings only; a {} has none",
                    kind.as_str()
                ));
            }
            _ if value == json!("") => {}
            "title" | "project" | "about" | "scope" | "severity" | "private" | "supersedes"
            | "tags" => {
                fields.insert(key, value);
            }
            other => {
                return Err(format!(
                    "frontmatter: unknown field `{other}` (fields: {known})"
                ));
            }
        }
    }
    fields.entry("title").or_insert(json!(""));
    let names = kind_sections(kind);
    let mut current: Option<&str> = None;
    let mut texts: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for line in body.lines().skip(1) {
        if current != Some(BODY)
            && let Some(h) = line.strip_prefix("## ")
        {
            let h = h.trim();
            if h.eq_ignore_ascii_case(BODY) {
                current = Some(BODY);
            } else if let Some((_, field)) = names.iter().find(|(n, _)| n.eq_ignore_ascii_case(h)) {
                current = Some(field);
            } else {
                let mut all: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
                all.push(BODY);
                return Err(format!(
                    "unknown section `## {h}`: a {} has {}",
                    kind.as_str(),
                    all.join(", ")
                ));
            }
            if texts.insert(current.unwrap_or(BODY), Vec::new()).is_some() {
                return Err(format!("section `## {h}` appears twice"));
            }
            continue;
        }
        match current {
            Some(c) => texts.entry(c).or_default().push(line),
            None if line.trim().is_empty() => {}
            None => {
                return Err(format!(
                    "`{line}` is outside a section: free text goes under `## {BODY}`"
                ));
            }
        }
    }
    for (field, lines) in texts {
        let t = lines.join("\n").trim().to_string();
        if !t.is_empty() {
            fields.insert(
                if field == BODY {
                    "body".into()
                } else {
                    field.into()
                },
                json!(t),
            );
        }
    }
    Ok(Value::Object(fields))
}

/// `note add KIND -e`: the note written in the editor; a save that misses what its kind
/// requires reopens with the refusal on top.
fn add_in_editor(ctx: &Ctx, req: &Request) -> Result<Outcome<Response>, Error> {
    if req.body_file.is_some() {
        return Err(Error::usage(
            "give --body-file or -e, not both: with -e the text is written in the editor",
        ));
    }
    let kind = req.kind;
    let name = format!("note-{}", kind.as_str());
    let done = crate::dispatch::editor::edit_until_valid(ctx, &name, &template(req), |text| {
        let fields = match parse(kind, text) {
            Ok(f) => f,
            Err(why) => return Ok(Saved::Again(why)),
        };
        let again: Request = match serde_json::from_value(fields) {
            Ok(r) => r,
            Err(e) => return Ok(Saved::Again(e.to_string())),
        };
        match run(ctx, again) {
            Ok(Outcome::Refused(r)) if r.policy.ends_with("_incomplete") => {
                Ok(Saved::Again(format!("{} ({})", r.reason, r.next)))
            }
            Ok(done) => Ok(Saved::Done(done)),
            Err(e) => match crate::dispatch::editor::as_retry(&e) {
                Some(why) => Ok(Saved::Again(why)),
                None => Err(e),
            },
        }
    })?;
    Ok(done.unwrap_or(Outcome::Done(Response {
        note: None,
        effect: "unchanged",
        event: None,
    })))
}
