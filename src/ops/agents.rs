//! Agents' transactions: spawning a child under its parent's lock, retiring one under its
//! own. Each re-reads what it decides on after taking the lock.

use ulid::Ulid;

use super::lineage::Roster;
use super::{Decided, Error};
use crate::model::Grant;
use crate::model::Refusal;
use crate::model::agent::{Agent, AgentStatus};
use crate::model::format_time;
use crate::model::id::{ROOT_AGENT, ulid_time};
use crate::model::role::Role;
use crate::objects::agents;
use crate::store::Problem;
use crate::workspace::Workspace;

/// What a spawn asks for; the token is minted by the caller, only its hash is stored.
pub struct Spawn<'a> {
    /// The new agent's id (`a-<role>-<ULID>` or `a-<ULID>`).
    pub id: &'a str,
    /// The ULID the id carries; also the record's first `rev`.
    pub ulid: Ulid,
    pub parent: &'a str,
    pub requested: Grant,
    pub role: Option<&'a Role>,
    pub token_hash: String,
}

/// A spawned agent, with the grant it got and why it is lower than the one requested.
pub struct Spawned {
    pub agent: Agent,
    pub granted: Grant,
    /// One entry per ceiling that lowered the grant (`parent a-x is ro`).
    pub ceilings: Vec<String>,
}

/// Creates a child agent under `req.parent`, holding the parent's lock: that orders it
/// against a retirement of the parent, which counts live children under the same lock.
/// Skipped agent files go to `warnings`.
pub fn spawn(
    ws: &Workspace,
    me: &Agent,
    req: Spawn<'_>,
    warnings: &mut Vec<Problem>,
) -> Result<Decided<Spawned>, Error> {
    let _lock = ws.fs.lock(&ws.lock_path(&agents::lock_name(req.parent)))?;
    let parent = agents::load(ws, req.parent)?;
    let listing = agents::list(ws)?;
    warnings.extend(listing.warnings);
    let roster = Roster::new(listing.items);
    if let Some(refusal) = lineage_refusal(&roster, me, &parent) {
        return Ok(Decided::Refused(refusal));
    }
    let requested = req.requested;
    let mut granted = requested;
    let mut ceilings = Vec::new();
    if parent.grant < requested {
        granted = granted.min(parent.grant);
        ceilings.push(format!("parent {} is {}", parent.id, parent.grant));
    }
    if let Some(r) = req.role.filter(|r| r.grant < requested) {
        granted = granted.min(r.grant);
        ceilings.push(format!("role {} grants at most {}", r.name, r.grant));
    }
    let agent = Agent {
        id: req.id.to_string(),
        created: ulid_time(req.ulid),
        created_by: me.id.clone(),
        owner: parent.id.clone(),
        parent: Some(parent.id.clone()),
        grant: granted,
        role: req.role.map(|r| r.name.clone()),
        token_hash: Some(req.token_hash),
        status: AgentStatus::Live,
        retired_at: None,
        retired_by: None,
    };
    agents::create(ws, &agent, &req.ulid.to_string())?;
    Ok(Decided::Done(Spawned {
        agent,
        granted,
        ceilings,
    }))
}

/// `--parent` must be the caller or one of its live descendants; root may name any live agent.
fn lineage_refusal(roster: &Roster, me: &Agent, parent: &Agent) -> Option<Refusal> {
    if parent.id == me.id {
        return None;
    }
    let reason = if parent.status == AgentStatus::Retired {
        format!(
            "{} was retired at {}; a new agent needs a live parent",
            parent.id,
            parent.retired_at.map(format_time).unwrap_or_default()
        )
    } else if me.id == ROOT_AGENT || roster.is_within(&parent.id, &me.id) {
        return None;
    } else {
        format!("{} is not {} or one of its descendants", parent.id, me.id)
    };
    Some(Refusal::new(
        "agent.not_descendant",
        reason,
        "Spawn under yourself or one of your descendants (`dacli agent tree`).",
    ))
}

/// What retiring one agent under its lock found.
pub enum Retire {
    Retired,
    AlreadyRetired,
    NotOwner(String),
    LiveChildren(Vec<String>),
}

/// Retires `id` under `agent-<id>.lock` after re-reading it, if `me` owns it (or is root)
/// and it has no live children. Skipped agent files go to `warnings`.
pub fn retire(
    ws: &Workspace,
    me: &Agent,
    id: &str,
    at: jiff::Timestamp,
    rev: Ulid,
    warnings: &mut Vec<Problem>,
) -> Result<Retire, Error> {
    let _lock = ws.fs.lock(&ws.lock_path(&agents::lock_name(id)))?;
    let target = agents::load(ws, id)?;
    if me.id != ROOT_AGENT && target.owner != me.id {
        return Ok(Retire::NotOwner(target.owner));
    }
    if target.status == AgentStatus::Retired {
        return Ok(Retire::AlreadyRetired);
    }
    let listing = agents::list(ws)?;
    warnings.extend(listing.warnings);
    let roster = Roster::new(listing.items);
    let children: Vec<String> = roster
        .live_children(id)
        .into_iter()
        .map(|a| a.id.clone())
        .collect();
    if !children.is_empty() {
        return Ok(Retire::LiveChildren(children));
    }
    agents::retire(ws, id, at, &me.id, &rev.to_string())?;
    Ok(Retire::Retired)
}
