//! `dacli agent spawn`: a child identity and its token, shown once.

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Mcp, Outcome};
use crate::model::Grant;
use crate::model::agent::{AgentView, token_hash};
use crate::model::id::is_agent_id;
use crate::model::role::Role;
use crate::objects::{self, roles};
use crate::ops::{self, Decided, agents::Spawned};
use crate::workspace::Workspace;
use crate::workspace::names::check_slug;

/// Create a child agent and print its token, once.
///
/// The token goes to stdout alone (`TOKEN=$(dacli agent spawn --grant rw --role builder)`) and
/// is stored nowhere: only its hash is kept. The grant is the lowest of the one requested, the
/// parent's and the role's. Launch the child with `DACLI_AGENT=$TOKEN`.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The grant to ask for; the result never exceeds the parent's or the role's grant.
    #[arg(long, value_enum)]
    grant: GrantArg,
    /// The role the agent takes (an existing `roles/<NAME>.md`); the id becomes
    /// `a-<NAME>-<ULID>`.
    #[arg(long, value_name = "NAME")]
    #[serde(default)]
    role: Option<String>,
    /// The parent and owner of the new agent: you (the default) or a live descendant of yours.
    #[arg(long, value_name = "AGENT")]
    #[serde(default)]
    parent: Option<String>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
enum GrantArg {
    Rw,
    Ro,
}

impl From<GrantArg> for Grant {
    fn from(g: GrantArg) -> Grant {
        match g {
            GrantArg::Rw => Grant::Rw,
            GrantArg::Ro => Grant::Ro,
        }
    }
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    agent: AgentView,
    requested: Grant,
    granted: Grant,
    token: String,
    env: &'static str,
    notices: Vec<Notice>,
}

#[derive(Debug, Serialize)]
struct Notice {
    code: &'static str,
    message: String,
}

pub(super) fn command() -> Command {
    Command::new("agent.spawn", Class::Mutate, run, render).mcp(Mcp::Never)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let me = &ctx.identity()?.agent;
    let requested = Grant::from(req.grant);
    let role = req.role.as_deref().map(|r| load_role(ws, r)).transpose()?;
    let parent_id = req.parent.as_deref().unwrap_or(&me.id).to_string();
    if !is_agent_id(&parent_id) {
        return Err(Error::not_found(format!(
            "--parent: no agent `{parent_id}` in this workspace"
        )));
    }

    let ulid = ctx.new_ulid();
    let id = match &role {
        Some(r) => format!("a-{}-{ulid}", r.name),
        None => format!("a-{ulid}"),
    };
    let token = mint_token(ctx, &id);
    let mut warnings = Vec::new();
    let spawned = ops::agents::spawn(
        ws,
        me,
        ops::agents::Spawn {
            id: &id,
            ulid,
            parent: &parent_id,
            requested,
            role: role.as_ref(),
            token_hash: token_hash(&token),
        },
        &mut warnings,
    );
    ctx.warn_all(warnings);
    let Spawned {
        agent,
        granted,
        ceilings,
    } = match spawned? {
        Decided::Done(s) => s,
        Decided::Refused(r) => return Ok(Outcome::Refused(r)),
    };
    let notices = if ceilings.is_empty() {
        Vec::new()
    } else {
        vec![Notice {
            code: "grant_lowered",
            message: format!(
                "requested {requested}, granted {granted}: {}",
                ceilings.join("; ")
            ),
        }]
    };
    Ok(Outcome::Done(Response {
        agent: agent.view(),
        requested,
        granted,
        token,
        env: "DACLI_AGENT",
        notices,
    }))
}

/// Loads the role named by `--role`: a bad name is a usage error, `root` is reserved, and a
/// role without its file is not found.
fn load_role(ws: &Workspace, name: &str) -> Result<Role, Error> {
    check_slug(name).map_err(|why| Error::bad_slug(format!("--role: {why}")))?;
    if name == "root" {
        return Err(
            Error::usage("--role: the role name `root` is reserved for a-root")
                .hint("pick another role, or spawn without --role"),
        );
    }
    roles::load(ws, name).map_err(|e| match e {
        objects::Error::NotFound { .. } => {
            Error::not_found(format!("no role `{name}` in this workspace")).hint(format!(
                "create {} first, or spawn without --role",
                ws.display(&ws.path(&["roles", &format!("{name}.md")]))
            ))
        }
        other => other.into(),
    })
}

/// `dacli_<agent-id>_<64 lower-case hex>` from 32 random bytes (FORMAT §6).
fn mint_token(ctx: &Ctx, id: &str) -> String {
    let mut secret = [0u8; 32];
    ctx.fill_random(&mut secret);
    let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    format!("dacli_{id}_{hex}")
}

fn render(r: &Response, ctx: &Ctx) -> String {
    // The token is the product: alone on stdout, even with --quiet; the rest is stderr.
    if !ctx.quiet() {
        ctx.notice(format!(
            "spawned {} ({}, {})",
            r.agent.id,
            r.agent.role.as_deref().unwrap_or("no role"),
            r.granted
        ));
    }
    for n in &r.notices {
        ctx.notice(format!("{}: {}", n.code, n.message));
    }
    format!("{}\n", r.token)
}
