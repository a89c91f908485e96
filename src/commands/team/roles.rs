//! `role add | edit | list | show | rm` (COMMANDS.md §4): what a role grants at most, which
//! paths it covers, which shortcuts it may run, where its questions escalate and how many
//! tasks its agents may hold active at once.

use serde::{Deserialize, Serialize};
use toml_edit::{DocumentMut, value};

use crate::dispatch::text::table;
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::journal::view::World;
use crate::journal::wip::{active_for_role, agent_roles};
use crate::model::agent::{AgentStatus, AgentView};
use crate::model::role::Role;
use crate::model::task::TaskRef;
use crate::model::toml_time;
use crate::objects::{agents, roles, shortcuts};
use crate::ops::{self, Decided};
use crate::policy::scope::check_glob;
use crate::store::Document;
use crate::workspace::names::check_slug;

pub(super) fn commands() -> Vec<Command> {
    vec![
        Command::new("role.add", Class::Mutate, add, render_one),
        Command::new("role.edit", Class::Mutate, edit, render_one),
        Command::new("role.list", Class::Read, list, render_list),
        Command::new("role.show", Class::Read, show, render_show),
        Command::new("role.rm", Class::Mutate, rm, render_rm),
    ]
}

/// The `role` object of COMMANDS.md §4.
#[derive(Debug, Clone, Serialize)]
struct RoleView {
    name: String,
    summary: String,
    grant: crate::model::Grant,
    scope: Vec<String>,
    out_of_scope: Vec<String>,
    shortcuts: Vec<String>,
    escalate_to: Vec<String>,
    /// The WIP cap; `null` when the role has none (0 would read as "may not claim").
    wip: Option<u32>,
    owner: String,
}

impl RoleView {
    fn of(r: &Role) -> RoleView {
        RoleView {
            name: r.name.clone(),
            summary: r.summary.clone(),
            grant: r.grant,
            scope: r.scope.clone(),
            out_of_scope: r.out_of_scope.clone(),
            shortcuts: r.shortcuts.clone(),
            escalate_to: r.escalate_to.clone(),
            wip: (r.wip > 0).then_some(r.wip),
            owner: r.owner.clone(),
        }
    }
}

/// Add a role. Agents spawned with it get at most its grant; its scope fences which tasks
/// they may claim (`out_of_scope` wins); its toolkit lists the shortcuts they may run (empty:
/// every read shortcut); `escalate_to` routes their questions; `wip` caps its active tasks.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddRequest {
    /// The role's name (a slug; `root` is reserved).
    name: String,
    /// One line saying what the role does.
    #[arg(long, value_name = "TEXT")]
    summary: String,
    /// The grant ceiling of agents holding it.
    #[arg(long, value_parser = ["rw", "ro"])]
    grant: String,
    /// A path glob the role covers (repeatable; none: every path).
    #[arg(long = "scope", value_name = "GLOB")]
    #[serde(default)]
    scope: Vec<String>,
    /// A path glob the role never covers, even inside its scope (repeatable).
    #[arg(long = "out-of-scope", value_name = "GLOB")]
    #[serde(default)]
    out_of_scope: Vec<String>,
    /// A shortcut of the toolkit (repeatable; none: every read shortcut).
    #[arg(long = "shortcut", value_name = "NAME")]
    #[serde(default)]
    shortcuts: Vec<String>,
    /// Where questions go next, in order (repeatable): a role, or `human`.
    #[arg(long = "escalate-to", value_name = "ROLE|human")]
    #[serde(default)]
    escalate_to: Vec<String>,
    /// Cap on active tasks held by agents of this role (0: no cap).
    #[arg(long, value_name = "N", default_value_t = 0)]
    #[serde(default)]
    wip: u32,
}

impl Classify for AddRequest {}

#[derive(Debug, Serialize)]
pub struct OneResponse {
    role: RoleView,
    effect: &'static str,
    /// `role edit`: the fields that changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    changed: Option<Vec<&'static str>>,
}

/// Checks the list values a role names; unknown shortcuts and roles are not found (exit 4).
fn check_lists(
    ctx: &Ctx,
    name: &str,
    globs: &[&[String]],
    shortcut_names: &[String],
    escalate_to: &[String],
) -> Result<(), Error> {
    let ws = ctx.ws()?;
    for list in globs {
        for g in *list {
            check_glob(g).map_err(|why| Error::usage(format!("--scope/--out-of-scope: {why}")))?;
        }
    }
    for s in shortcut_names {
        shortcuts::load(ws, s)
            .map_err(|e| Error::from(e).hint("list shortcuts with `dacli shortcut list`"))?;
    }
    for to in escalate_to {
        if to == name {
            return Err(Error::usage(format!(
                "--escalate-to {to}: a role cannot escalate to itself"
            )));
        }
        if to != "human" {
            roles::load(ws, to)
                .map_err(|e| Error::from(e).hint("escalate to an existing role or `human`"))?;
        }
    }
    Ok(())
}

fn one_line<'a>(flag: &str, text: &'a str) -> Result<&'a str, Error> {
    let t = text.trim();
    if t.is_empty() || t.contains('\n') {
        return Err(Error::usage(format!("{flag} must be one non-empty line")));
    }
    Ok(t)
}

fn add(ctx: &Ctx, req: AddRequest) -> Result<Outcome<OneResponse>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    check_slug(&req.name).map_err(|m| Error::bad_slug(format!("NAME: {m}")))?;
    if req.name == "root" {
        return Err(Error::usage("the role name `root` is reserved for a-root"));
    }
    let summary = one_line("--summary", &req.summary)?;
    check_lists(
        ctx,
        &req.name,
        &[&req.scope, &req.out_of_scope],
        &req.shortcuts,
        &req.escalate_to,
    )?;
    let mut front = DocumentMut::new();
    front["kind"] = value("role");
    front["name"] = value(req.name.as_str());
    front["created"] = value(toml_time(ctx.now()));
    front["created_by"] = value(me.as_str());
    front["owner"] = value(me.as_str());
    front["rev"] = value(ctx.new_ulid().to_string());
    front["summary"] = value(summary);
    front["grant"] = value(req.grant.as_str());
    for (key, list) in [
        ("scope", &req.scope),
        ("out_of_scope", &req.out_of_scope),
        ("shortcuts", &req.shortcuts),
        ("escalate_to", &req.escalate_to),
    ] {
        if !list.is_empty() {
            front[key] = value(ops::roles::strings(list));
        }
    }
    if req.wip > 0 {
        front["wip"] = value(i64::from(req.wip));
    }
    let doc = Document::new(front, format!("# {}\n", req.name));
    let role = Role::from_front(&doc.front, &req.name)
        .map_err(|e| Error::internal(format!("dacli built an invalid role: {e}")))?;
    ops::roles::create(ws, &req.name, &doc)?;
    Ok(Outcome::Done(OneResponse {
        role: RoleView::of(&role),
        effect: "created",
        changed: None,
    }))
}

/// Change a role you own. A list flag replaces the whole list; `--clear` empties one.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditRequest {
    /// The role's name.
    name: String,
    /// One line saying what the role does.
    #[arg(long, value_name = "TEXT")]
    #[serde(default)]
    summary: Option<String>,
    /// The grant ceiling (agents already spawned keep theirs).
    #[arg(long, value_parser = ["rw", "ro"])]
    #[serde(default)]
    grant: Option<String>,
    /// Replace the scope globs (repeatable).
    #[arg(long = "scope", value_name = "GLOB")]
    #[serde(default)]
    scope: Vec<String>,
    /// Replace the out-of-scope globs (repeatable).
    #[arg(long = "out-of-scope", value_name = "GLOB")]
    #[serde(default)]
    out_of_scope: Vec<String>,
    /// Replace the toolkit (repeatable).
    #[arg(long = "shortcut", value_name = "NAME")]
    #[serde(default)]
    shortcuts: Vec<String>,
    /// Replace the escalation route (repeatable): roles, or `human`.
    #[arg(long = "escalate-to", value_name = "ROLE|human")]
    #[serde(default)]
    escalate_to: Vec<String>,
    /// The cap on active tasks (0: no cap).
    #[arg(long, value_name = "N")]
    #[serde(default)]
    wip: Option<u32>,
    /// Empty a list: scope, out-of-scope, shortcuts or escalate-to (repeatable).
    #[arg(long, value_name = "LIST", value_parser = ["scope", "out-of-scope", "shortcuts", "escalate-to"])]
    #[serde(default)]
    clear: Vec<String>,
}

impl Classify for EditRequest {}

fn edit(ctx: &Ctx, req: EditRequest) -> Result<Outcome<OneResponse>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    let lists: [(&'static str, &str, &Vec<String>); 4] = [
        ("scope", "scope", &req.scope),
        ("out_of_scope", "out-of-scope", &req.out_of_scope),
        ("shortcuts", "shortcuts", &req.shortcuts),
        ("escalate_to", "escalate-to", &req.escalate_to),
    ];
    for (_, flag, list) in &lists {
        if !list.is_empty() && req.clear.iter().any(|c| c == flag) {
            return Err(Error::usage(format!(
                "--{} and --clear {flag} contradict each other",
                flag.trim_end_matches('s')
            )));
        }
    }
    let nothing = req.summary.is_none()
        && req.grant.is_none()
        && req.wip.is_none()
        && req.clear.is_empty()
        && lists.iter().all(|(_, _, l)| l.is_empty());
    if nothing {
        return Err(Error::usage(
            "nothing to change: give at least one of --summary, --grant, --scope, --out-of-scope, --shortcut, --escalate-to, --wip, --clear",
        ));
    }
    // Loading first checks the name, so the lock path is built from a slug.
    roles::load(ws, &req.name)?;
    // Checked before the transaction; not owning the role is still said first.
    let checked = (|| {
        let summary = req
            .summary
            .as_deref()
            .map(|s| one_line("--summary", s))
            .transpose()?;
        check_lists(
            ctx,
            &req.name,
            &[&req.scope, &req.out_of_scope],
            &req.shortcuts,
            &req.escalate_to,
        )?;
        Ok::<_, Error>(ops::roles::Edit {
            summary,
            grant: req.grant.as_deref(),
            lists: lists.map(|(key, flag, list)| (key, flag, list.as_slice())),
            clear: &req.clear,
            wip: req.wip,
            rev: ctx.new_ulid(),
        })
    })();
    let edited = match ops::roles::edit(ws, &me, &req.name, checked)? {
        Decided::Done(e) => e,
        Decided::Refused(r) => return Ok(Outcome::Refused(r)),
    };
    let effect = if edited.changed.is_empty() {
        "unchanged"
    } else {
        "applied"
    };
    Ok(Outcome::Done(OneResponse {
        role: RoleView::of(&edited.role),
        effect,
        changed: Some(edited.changed),
    }))
}

fn render_one(r: &OneResponse, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    let verb = match r.effect {
        "created" => "created role".to_string(),
        "unchanged" => "role unchanged:".to_string(),
        _ => format!(
            "changed {} of role",
            r.changed.as_deref().unwrap_or_default().join(", ")
        ),
    };
    format!("{verb} {} ({})\n", r.role.name, r.role.grant)
}

/// Everything the listing and `show` compute about roles: the folded tasks and who holds what.
struct Load {
    world: World,
    roles_of: std::collections::BTreeMap<String, String>,
    live: Vec<crate::model::agent::Agent>,
}

impl Load {
    fn read(ctx: &Ctx) -> Result<Load, Error> {
        let ws = ctx.ws()?;
        let world = World::load(ws, &|f| crate::policy::dod::evaluate(f).passed)?;
        ctx.warn_all(world.warnings.clone());
        let listing = agents::list(ws)?;
        ctx.warn_all(listing.warnings);
        Ok(Load {
            world,
            roles_of: agent_roles(ws)?,
            live: listing
                .items
                .into_iter()
                .filter(|a| a.status == AgentStatus::Live)
                .collect(),
        })
    }

    fn holders(&self, role: &str) -> Vec<&crate::model::agent::Agent> {
        self.live
            .iter()
            .filter(|a| a.role.as_deref() == Some(role))
            .collect()
    }
}

/// List the roles, with each one's WIP (active tasks against its cap) and live agents.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListRequest {}

impl Classify for ListRequest {}

#[derive(Debug, Serialize)]
pub struct ListResponse {
    roles: Vec<ListEntry>,
}

#[derive(Debug, Serialize)]
struct ListEntry {
    name: String,
    grant: crate::model::Grant,
    wip: Wip,
    live_agents: usize,
    summary: String,
}

#[derive(Debug, Serialize)]
struct Wip {
    /// `null`: no cap.
    cap: Option<u32>,
    active: usize,
}

fn list(ctx: &Ctx, _req: ListRequest) -> Result<Outcome<ListResponse>, Error> {
    let listing = roles::list(ctx.ws()?)?;
    ctx.warn_all(listing.warnings);
    let load = Load::read(ctx)?;
    Ok(Outcome::Done(ListResponse {
        roles: listing
            .items
            .iter()
            .map(|r| ListEntry {
                name: r.name.clone(),
                grant: r.grant,
                wip: Wip {
                    cap: (r.wip > 0).then_some(r.wip),
                    active: active_for_role(&load.world, &load.roles_of, &r.name).len(),
                },
                live_agents: load.holders(&r.name).len(),
                summary: r.summary.clone(),
            })
            .collect(),
    }))
}

fn render_list(r: &ListResponse, _ctx: &Ctx) -> String {
    if r.roles.is_empty() {
        return "no roles (add one with `dacli role add`)\n".into();
    }
    let mut rows = vec![vec![
        "ROLE".to_string(),
        "GRANT".into(),
        "WIP".into(),
        "AGENTS".into(),
        "SUMMARY".into(),
    ]];
    for e in &r.roles {
        let wip = if let Some(cap) = e.wip.cap {
            format!("{}/{cap}", e.wip.active)
        } else {
            format!("{}", e.wip.active)
        };
        rows.push(vec![
            e.name.clone(),
            e.grant.to_string(),
            wip,
            e.live_agents.to_string(),
            e.summary.clone(),
        ]);
    }
    table(&rows, &[2, 3])
}

/// Show one role: its definition, the live agents holding it and its active tasks.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShowRequest {
    /// The role's name.
    name: String,
}

impl Classify for ShowRequest {}

#[derive(Debug, Serialize)]
pub struct ShowResponse {
    role: RoleView,
    live_agents: Vec<AgentView>,
    active_tasks: Vec<TaskRef>,
}

fn show(ctx: &Ctx, req: ShowRequest) -> Result<Outcome<ShowResponse>, Error> {
    let role = roles::load(ctx.ws()?, &req.name)
        .map_err(|e| Error::from(e).hint("list roles with `dacli role list`"))?;
    let load = Load::read(ctx)?;
    let active = active_for_role(&load.world, &load.roles_of, &role.name);
    let active_tasks = load
        .world
        .tasks
        .iter()
        .filter(|t| active.contains(&t.reference()))
        .map(|t| t.task_ref_folded())
        .collect();
    Ok(Outcome::Done(ShowResponse {
        live_agents: load.holders(&role.name).iter().map(|a| a.view()).collect(),
        active_tasks,
        role: RoleView::of(&role),
    }))
}

fn render_show(r: &ShowResponse, _ctx: &Ctx) -> String {
    let role = &r.role;
    let list = |l: &[String]| {
        if l.is_empty() {
            "-".to_string()
        } else {
            l.join(", ")
        }
    };
    let mut out = format!(
        "{} ({}, owner {})\n  {}\n",
        role.name, role.grant, role.owner, role.summary
    );
    out.push_str(&format!(
        "  scope: {}\n",
        if role.scope.is_empty() {
            "every path".to_string()
        } else {
            role.scope.join(", ")
        }
    ));
    out.push_str(&format!("  out of scope: {}\n", list(&role.out_of_scope)));
    out.push_str(&format!(
        "  toolkit: {}\n",
        if role.shortcuts.is_empty() {
            "every read shortcut".to_string()
        } else {
            role.shortcuts.join(", ")
        }
    ));
    out.push_str(&format!("  escalate to: {}\n", list(&role.escalate_to)));
    let cap = match role.wip {
        None => "no cap".to_string(),
        Some(n) => format!("cap {n}"),
    };
    out.push_str(&format!("  wip: {} active ({cap})\n", r.active_tasks.len()));
    for t in &r.active_tasks {
        out.push_str(&format!("    {}  {}\n", t.reference, t.title));
    }
    out.push_str(&format!("  live agents: {}\n", r.live_agents.len()));
    for a in &r.live_agents {
        out.push_str(&format!("    {} ({})\n", a.id, a.grant));
    }
    out
}

/// Delete a role you own. A role live agents hold, other roles escalate to or shortcuts are
/// reserved for stays until those references are gone.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RmRequest {
    /// The role's name.
    name: String,
}

impl Classify for RmRequest {}

#[derive(Debug, Serialize)]
pub struct RmResponse {
    role: String,
    effect: &'static str,
}

fn rm(ctx: &Ctx, req: RmRequest) -> Result<Outcome<RmResponse>, Error> {
    let ws = ctx.ws()?;
    let me = ctx.identity()?.agent.id.clone();
    roles::load(ws, &req.name)?;
    let mut warnings = Vec::new();
    let removed = ops::roles::remove(ws, &me, &req.name, &mut warnings);
    ctx.warn_all(warnings);
    match removed? {
        Decided::Done(role) => Ok(Outcome::Done(RmResponse {
            role,
            effect: "applied",
        })),
        Decided::Refused(r) => Ok(Outcome::Refused(r)),
    }
}

fn render_rm(r: &RmResponse, ctx: &Ctx) -> String {
    if ctx.quiet() {
        return String::new();
    }
    format!("removed role {}\n", r.role)
}
