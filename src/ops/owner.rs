//! Who rewrites an object as its owner.

use crate::model::agent::AgentStatus;
use crate::model::id::ROOT_AGENT;
use crate::objects::{self, agents};
use crate::workspace::Workspace;

/// Whether `me` rewrites an object owned by `owner` as its owner: it is the owner, or it is
/// root and the owner is retired or missing (root acts for them, FORMAT §13.1).
pub fn acts_as_owner(ws: &Workspace, me: &str, owner: &str) -> bool {
    if me == owner {
        return true;
    }
    if me != ROOT_AGENT {
        return false;
    }
    match agents::load(ws, owner) {
        Ok(agent) => agent.status == AgentStatus::Retired,
        Err(objects::Error::NotFound { .. }) => true,
        // A malformed owner record proves nothing; root does not take over on a guess.
        Err(_) => false,
    }
}
