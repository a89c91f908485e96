//! Role load for the guard (docs/FORMAT.md §7 `wip`): which role an agent works under, and
//! which active tasks, folded, count against that role's cap.

use std::collections::BTreeMap;

use crate::model::id::ROOT_AGENT;
use crate::model::role::Role;
use crate::model::task::Status;
use crate::objects::{self, agents, roles};
use crate::workspace::Workspace;

use super::snapshot::Snapshot;
use super::view::World;

/// The role the guard applies to `agent`: `None` for root (exempt from role checks), for an
/// agent without a role, and for one whose role file is missing (no scope, no cap, the
/// default toolkit). A malformed role file is an error naming it.
pub fn guard_role(ws: &Workspace, agent: &str) -> Result<Option<Role>, objects::Error> {
    if agent == ROOT_AGENT {
        return Ok(None);
    }
    let role = match agents::load(ws, agent) {
        Ok(a) => a.role,
        Err(objects::Error::NotFound { .. }) => None,
        Err(e) => return Err(e),
    };
    match role.as_deref() {
        None | Some("root") => Ok(None),
        Some(name) => match roles::load(ws, name) {
            Ok(r) => Ok(Some(r)),
            Err(objects::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        },
    }
}

/// The role of every readable agent record, by agent id (agents without a role are absent).
pub fn agent_roles(ws: &Workspace) -> Result<BTreeMap<String, String>, objects::Error> {
    Ok(agents::list(ws)?
        .items
        .into_iter()
        .filter_map(|a| a.role.map(|r| (a.id, r)))
        .collect())
}

/// References (`<project>/<NNN>-<slug>`) of the tasks that are active in the folded view and
/// whose assignee holds `role`: what the role's `wip` cap counts (COMMANDS.md §14.12).
pub fn active_for_role(
    world: &World,
    roles_of: &BTreeMap<String, String>,
    role: &str,
) -> Vec<String> {
    of_role(
        world
            .tasks
            .iter()
            .filter(|t| t.doc.status == Status::Active)
            .map(|t| (t.doc.assignee(), t.reference())),
        roles_of,
        role,
    )
}

/// [`active_for_role`] from the index's snapshot: the same answer without parsing any task
/// that no pending event changes.
pub fn active_for_role_in(
    snap: &Snapshot,
    roles_of: &BTreeMap<String, String>,
    role: &str,
) -> Vec<String> {
    of_role(
        snap.tasks
            .iter()
            .filter(|t| snap.status(t) == Status::Active)
            .map(|t| (snap.assignee(t), t.reference())),
        roles_of,
        role,
    )
}

/// The references of the active tasks, given with their assignees, whose assignee has `role`.
fn of_role<'a>(
    active: impl Iterator<Item = (Option<&'a str>, String)>,
    roles_of: &BTreeMap<String, String>,
    role: &str,
) -> Vec<String> {
    active
        .filter(|(a, _)| a.is_some_and(|a| roles_of.get(a).is_some_and(|r| r == role)))
        .map(|(_, r)| r)
        .collect()
}
