//! `dacli init`: create `.dacli/` at the root of the current git work tree.

use serde::{Deserialize, Serialize};
use toml_edit::{DocumentMut, Item, Table, value};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, ErrorKind, Needs, Outcome};
use crate::model::agent::token_hash;
use crate::model::id::{ROOT_AGENT, ulid_time};
use crate::model::toml_time;
use crate::objects::templates;
use crate::ops;
use crate::store::{Document, TomlRecord};
use crate::workspace::SUPPORTED_FORMAT;

/// The lines of `.dacli/.gitignore` (docs/FORMAT.md §21), in order. `worktrees/` holds the
/// task worktrees, each a checkout of its own: without it a `git add -A` in the repository
/// would add each one as an embedded repository.
pub const GITIGNORE: &str =
    "# written by dacli init\nruns/\n.locks/\ncache/\n.dacli-tmp-*\nworktrees/\n";

/// Create a dacli workspace (`.dacli/`) at the root of the current git work tree.
///
/// Writes `config.toml`, `.gitignore` and the root agent record, all at once: if anything
/// fails, no `.dacli/` appears. Commit the new directory to share it with your team.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Display name of the workspace (default: the work tree's directory name).
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    name: Option<String>,
    /// Require a token from every caller, root included; prints root's token once.
    #[arg(long)]
    #[serde(default)]
    require_token: bool,
    /// Seed from a built-in template (`solo`, `standard`): its definition of done and its
    /// shortcuts.
    #[arg(long, value_name = "NAME")]
    #[serde(default)]
    template: Option<String>,
    /// Also seed the template's roles (template `standard` when --template is absent).
    #[arg(long)]
    #[serde(default)]
    roster: bool,
    /// Also create the first project, titled TEXT (as `dacli project add TEXT` would), so that
    /// `task add` and `note add` have a project to use. Without it, on a terminal, init asks
    /// for the title (Enter skips).
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    project: Option<String>,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    workspace_id: String,
    name: String,
    format: i64,
    template: Option<String>,
    seeded: Seeded,
    /// The first project's slug, with `--project`.
    project: Option<String>,
    root_token: Option<String>,
    path: String,
    created: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Seeded {
    roles: Vec<String>,
    shortcuts: Vec<String>,
    definition_of_done: bool,
}

pub(super) fn command() -> Command {
    Command::new("init", Class::Mutate, run, render).needs(Needs::WorkTree)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    if ctx.env().get("DACLI_AGENT").is_some() {
        ctx.notice("DACLI_AGENT is set; init needs no identity and ignores it");
    }
    let start = ctx.start_dir();
    let root = ops::admin::work_tree_root(start).ok_or_else(|| {
        Error::new(
            ErrorKind::Operational,
            "E_NOT_A_REPO",
            "this directory is not inside a git work tree",
        )
        .hint("run `git init` first, or pass `-C <dir>` inside a git work tree")
    })?;
    let target = root.join(".dacli");
    let fs = ctx.make_fs(root.clone(), target.clone());
    if let Some(blocked) = crate::workspace::blocking_dacli(&root) {
        return Err(blocked.into());
    }
    if ops::admin::occupied(&target) {
        return Err(Error::new(
            ErrorKind::Conflict,
            "E_EXISTS",
            ".dacli already exists: this repository has a dacli workspace",
        )
        .hint("see it with `dacli status`; nothing was written"));
    }
    let name = match req.name {
        Some(n) if n.trim().is_empty() || n.contains('\n') => {
            return Err(Error::usage("--name must be one non-empty line"));
        }
        Some(n) => n,
        None => root
            .file_name()
            .map_or_else(|| "workspace".into(), |n| n.to_string_lossy().into_owned()),
    };
    let template_name = match (&req.template, req.roster) {
        (Some(t), _) => Some(t.clone()),
        (None, true) => Some("standard".to_string()),
        (None, false) => None,
    };
    let template = match &template_name {
        Some(name) => Some(templates::builtin(name).ok_or_else(|| {
            Error::not_found(format!("no built-in template `{name}`")).hint(format!(
                "built-in templates: {}; nothing was written",
                templates::builtin_names().collect::<Vec<_>>().join(", ")
            ))
        })?),
        None => None,
    };
    let workspace_id = ctx.new_ulid();
    let root_rev = ctx.new_ulid();
    let root_token = req.require_token.then(|| {
        let mut secret = [0u8; 32];
        ctx.fill_random(&mut secret);
        let hex = hex::encode(secret);
        format!("dacli_{ROOT_AGENT}_{hex}")
    });

    let mut config = DocumentMut::new();
    config["format"] = value(SUPPORTED_FORMAT);
    config["workspace_id"] = value(workspace_id.to_string());
    config["name"] = value(name.clone());
    let mut seeded_dod = false;
    if let Some(dod) = template.as_ref().and_then(|t| t.definition_of_done.clone()) {
        config["definition_of_done"] = Item::Table(dod);
        seeded_dod = true;
    }
    if req.require_token {
        let mut policy = Table::new();
        policy["require_token"] = value(true);
        config["policy"] = Item::Table(policy);
    }

    let mut agent = DocumentMut::new();
    agent["id"] = value(ROOT_AGENT);
    agent["kind"] = value("agent");
    agent["created"] = value(toml_time(ulid_time(root_rev)));
    agent["created_by"] = value(ROOT_AGENT);
    agent["owner"] = value(ROOT_AGENT);
    agent["rev"] = value(root_rev.to_string());
    agent["grant"] = value("rw");
    agent["role"] = value("root");
    if let Some(token) = &root_token {
        agent["token_hash"] = value(token_hash(token));
    }
    agent["status"] = value("live");
    let agent = Document::new(agent, "# root\n");

    let mut files: Vec<(String, String)> = vec![
        ("config.toml".into(), TomlRecord { doc: config }.render()),
        (".gitignore".into(), GITIGNORE.to_string()),
        ("agents/a-root.md".into(), agent.render()),
    ];
    let mut seeded_roles = Vec::new();
    let mut seeded_shortcuts = Vec::new();
    if let Some(t) = &template {
        let mut subs = vec!["shortcuts"];
        if req.roster {
            subs.push("roles");
        }
        for sub in subs {
            for (name, bytes) in t.files_in(sub) {
                let shown = format!("(built-in {})/{sub}/{name}", t.name);
                let doc = templates::seed(&bytes, &shown, ROOT_AGENT, ctx.new_ulid())
                    .map_err(|p| Error::internal(format!("built-in template file {p}")))?;
                let stem = name.trim_end_matches(".md").to_string();
                if sub == "roles" {
                    seeded_roles.push(stem);
                } else {
                    seeded_shortcuts.push(stem);
                }
                files.push((format!("{sub}/{name}"), doc.render()));
            }
        }
    }
    files.push((
        ".gitattributes".to_string(),
        ops::machines::GITATTRIBUTES.to_string(),
    ));
    // A person at a terminal is offered the first project, so `task add` works next.
    let offered = match req.project {
        Some(_) => None,
        None => crate::dispatch::editor::ask_line(
            ctx,
            "Title of the first project (what you are building; Enter to skip): ",
        ),
    };
    let project = match req.project.as_ref().or(offered.as_ref()) {
        Some(title) => {
            if title.trim().is_empty() || title.contains('\n') {
                return Err(Error::usage("--project must be one non-empty line"));
            }
            let slug = crate::workspace::names::slugify(title);
            crate::workspace::names::check_slug(&slug)
                .map_err(|e| Error::bad_slug(format!("--project: {e}")))?;
            let doc = crate::objects::projects::NewProject::titled(
                &slug,
                title,
                ROOT_AGENT,
                ctx.new_ulid(),
            )
            .document();
            files.push((format!("projects/{slug}/project.md"), doc.render()));
            Some(slug)
        }
        None => None,
    };
    ops::admin::init(&fs, &root, &target, &files)?;
    // The record merge driver this clone runs (FORMAT §22); a clone without git config
    // access still gets its workspace, and `doctor` names the missing driver.
    if let Ok(exe) = std::env::current_exe() {
        let exe = ops::admin::canonical_or_same(&exe);
        if let Err(e) = ops::machines::install_driver_config(&root, &exe.to_string_lossy()) {
            ctx.notice(format!(
                "the merge driver is not configured ({e}); run `dacli doctor --fix`"
            ));
        }
    }
    let shown = fs.display(&target);
    Ok(Outcome::Done(Response {
        workspace_id: workspace_id.to_string(),
        name,
        format: SUPPORTED_FORMAT,
        template: template_name,
        seeded: Seeded {
            roles: seeded_roles,
            shortcuts: seeded_shortcuts,
            definition_of_done: seeded_dod,
        },
        project,
        root_token,
        created: files
            .iter()
            .map(|(rel, _)| format!("{shown}/{rel}"))
            .collect(),
        path: shown,
    }))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if let Some(token) = &r.root_token {
        // The token is the product: it prints even with --quiet, alone on stdout.
        return format!("{token}\n");
    }
    if ctx.quiet() {
        return String::new();
    }
    let mut out = format!("Created dacli workspace \"{}\" in {}/\n", r.name, r.path);
    for file in &r.created {
        out.push_str(&format!("  {file}\n"));
    }
    if let Some(t) = &r.template {
        out.push_str(&format!(
            "Seeded from template {t}: {} role(s), {} shortcut(s){}\n",
            r.seeded.roles.len(),
            r.seeded.shortcuts.len(),
            if r.seeded.definition_of_done {
                ", a definition of done"
            } else {
                ""
            }
        ));
    }
    out.push_str(&format!(
        "\nCommit it so your team shares it: git add {} && git commit -m \"Add dacli workspace\"\n",
        r.path
    ));
    out.push_str("\nNext:\n");
    match &r.project {
        Some(slug) => out.push_str(&format!(
            "  dacli project edit {slug} --goal \"<what done looks like>\"\n"
        )),
        None => out.push_str(
            "  dacli project add \"<what you are building>\" --goal \"<what done looks like>\"\n",
        ),
    }
    out.push_str("  dacli task add \"<first task>\" --accept \"<how you will know it is done>\"\n");
    out.push_str("  dacli context 1\n");
    out.push_str(
        "\nConnect a coding agent: dacli mcp config --client claude-code (or cursor, codex)\n",
    );
    out
}
