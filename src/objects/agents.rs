//! Agent records (docs/FORMAT.md §6).

use std::path::PathBuf;

use toml_edit::{DocumentMut, Item, Value, value};

use crate::model::agent::{Agent, AgentStatus};
use crate::model::fields::Fields;
use crate::model::format_time;
use crate::model::id::is_agent_id;
use crate::store::{Document, TEMP_PREFIX};
use crate::workspace::Workspace;

use super::{Error, Listing, field_problem, read_document, warn_or_fail};

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

/// The record file of agent `id` (which must be a valid agent id).
pub fn file(ws: &Workspace, id: &str) -> PathBuf {
    ws.path(&["agents", &format!("{id}.md")])
}

/// The name of the object lock of agent `id` (FORMAT §4.3), for `ws.lock_path`.
pub fn lock_name(id: &str) -> String {
    format!("agent-{id}")
}

/// Every agent record, sorted by id. A file that is not a usable record is skipped and
/// reported; files without the `.md` extension, hidden files and temp files are ignored.
pub fn list(ws: &Workspace) -> Result<Listing<Agent>, Error> {
    let mut out = Listing::default();
    for (name, path) in ws.fs.list_dir(&ws.path(&["agents"]))? {
        if name.starts_with('.') || name.starts_with(TEMP_PREFIX) {
            continue;
        }
        let Some(stem) = name.strip_suffix(".md") else {
            continue;
        };
        let Some(doc) = warn_or_fail(&mut out.warnings, read_document(ws, &path))? else {
            continue;
        };
        match Agent::from_front(&doc.front, stem) {
            Ok(agent) => out.items.push(agent),
            Err(e) => out.warnings.push(field_problem(ws, &path, e)),
        }
    }
    out.items.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

/// Creates the record of a new agent with create-new: keys in FORMAT §6 field order, `rev`
/// as given (the id's ULID at spawn), and a body titled with the role (or the id when the
/// agent has none). An existing record is never overwritten (`E_EXISTS`).
pub fn create(ws: &Workspace, agent: &Agent, rev: &str) -> Result<PathBuf, Error> {
    if !is_agent_id(&agent.id) {
        return Err(Error::NotFound {
            what: "agent",
            id: agent.id.clone(),
        });
    }
    let mut front = DocumentMut::new();
    front["id"] = value(agent.id.as_str());
    front["kind"] = value("agent");
    front["created"] = value(toml_time(agent.created));
    front["created_by"] = value(agent.created_by.as_str());
    front["owner"] = value(agent.owner.as_str());
    front["rev"] = value(rev);
    if let Some(parent) = &agent.parent {
        front["parent"] = value(parent.as_str());
    }
    front["grant"] = value(agent.grant.as_str());
    if let Some(role) = &agent.role {
        front["role"] = value(role.as_str());
    }
    if let Some(hash) = &agent.token_hash {
        front["token_hash"] = value(hash.as_str());
    }
    front["status"] = value(match agent.status {
        AgentStatus::Live => "live",
        AgentStatus::Retired => "retired",
    });
    if let (Some(at), Some(by)) = (agent.retired_at, &agent.retired_by) {
        front["retired_at"] = value(toml_time(at));
        front["retired_by"] = value(by.as_str());
    }
    let title = agent.role.as_deref().unwrap_or(&agent.id);
    let doc = Document::new(front, format!("# {title}\n"));
    let path = file(ws, &agent.id);
    ws.fs.create_new(&path, doc.render().as_bytes())?;
    Ok(path)
}

/// Marks agent `id` retired: sets `status`, `retired_at`, `retired_by` and a new `rev`, and
/// changes no other byte of the record (comments, unknown keys and `[ext]` survive). Call it
/// under the agent's lock, after re-reading the record. Returns the record as written.
pub fn retire(
    ws: &Workspace,
    id: &str,
    at: jiff::Timestamp,
    by: &str,
    rev: &str,
) -> Result<Agent, Error> {
    let agent = load(ws, id)?;
    let path = file(ws, id);
    let mut doc = read_document(ws, &path)?;
    set_keeping_decor(&mut doc.front, "status", Value::from("retired"));
    set_keeping_decor(&mut doc.front, "retired_at", Value::from(toml_time(at)));
    set_keeping_decor(&mut doc.front, "retired_by", Value::from(by));
    set_keeping_decor(&mut doc.front, "rev", Value::from(rev));
    ws.fs.replace(&path, doc.render().as_bytes())?;
    Ok(Agent {
        status: AgentStatus::Retired,
        retired_at: Some(at),
        retired_by: Some(by.to_string()),
        ..agent
    })
}

/// Whether `me` acts as the owner of an object owned by `owner`: it is the owner, or it is
/// root and the owner is retired or has no record (root acts for them, FORMAT §13.1).
pub fn acts_as_owner(ws: &Workspace, me: &str, owner: &str) -> Result<bool, Error> {
    if me == owner {
        return Ok(true);
    }
    if me != crate::model::id::ROOT_AGENT {
        return Ok(false);
    }
    match load(ws, owner) {
        Ok(a) => Ok(a.status == AgentStatus::Retired),
        Err(Error::NotFound { .. }) => Ok(true),
        Err(e) => Err(e),
    }
}

/// Ids of the queues (`queues/<slug>.md`) whose `owner` is `id`, sorted. Files that are not
/// readable queue records are skipped and reported.
pub fn owned_queues(ws: &Workspace, id: &str) -> Result<Listing<String>, Error> {
    let mut out = Listing::default();
    for (name, path) in ws.fs.list_dir(&ws.path(&["queues"]))? {
        if name.starts_with('.') || name.starts_with(TEMP_PREFIX) {
            continue;
        }
        let Some(stem) = name.strip_suffix(".md") else {
            continue;
        };
        let Some(doc) = warn_or_fail(&mut out.warnings, read_document(ws, &path))? else {
            continue;
        };
        let f = Fields(doc.front.as_table());
        match f.expect_kind("queue").and_then(|()| f.str("owner")) {
            Ok(owner) if owner == id => out.items.push(format!("q-{stem}")),
            Ok(_) => {}
            Err(e) => out.warnings.push(field_problem(ws, &path, e)),
        }
    }
    Ok(out)
}

/// Replaces the value of `key` (or appends the key), keeping the whitespace and comments
/// around an existing value so that only the value's own bytes change.
fn set_keeping_decor(front: &mut DocumentMut, key: &str, mut new: Value) {
    if let Some(old) = front.get(key).and_then(Item::as_value) {
        *new.decor_mut() = old.decor().clone();
    }
    front[key] = Item::Value(new);
}

fn toml_time(t: jiff::Timestamp) -> toml_edit::Datetime {
    format_time(t)
        .parse()
        .expect("format_time always yields a valid TOML offset date-time")
}
