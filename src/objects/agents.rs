//! Agent records (docs/FORMAT.md §6).

use crate::model::agent::Agent;
use crate::model::id::is_agent_id;
use crate::workspace::Workspace;

use super::{Error, field_problem, read_document};

/// Loads the agent record `id`; an id that is not a valid agent id is not found (it could
/// otherwise name a path outside `agents/`).
pub fn load(ws: &Workspace, id: &str) -> Result<Agent, Error> {
    if !is_agent_id(id) {
        return Err(Error::NotFound {
            what: "agent",
            id: id.to_string(),
        });
    }
    let path = ws.path(&["agents", &format!("{id}.md")]);
    if std::fs::symlink_metadata(&path).is_err() {
        return Err(Error::NotFound {
            what: "agent",
            id: id.to_string(),
        });
    }
    let doc = read_document(ws, &path)?;
    Agent::from_front(&doc.front, id).map_err(|e| Error::malformed(field_problem(ws, &path, e)))
}
