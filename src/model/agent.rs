//! Agent records (docs/FORMAT.md §6).

use serde::Serialize;
use toml_edit::DocumentMut;

use super::fields::{FieldError, Fields};
use super::id::{ROOT_AGENT, is_agent_id};
use super::{Grant, format_time};

/// Whether an agent may still act.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentStatus {
    Live,
    Retired,
}

/// A parsed agent record.
///
/// Invariants (checked by [`Agent::from_front`]): `id` equals the file stem and is a valid agent
/// id; every agent but root has a `parent` and a `token_hash`; a retired agent names when and
/// by whom.
#[derive(Debug, Clone)]
pub struct Agent {
    pub id: String,
    pub created: jiff::Timestamp,
    pub created_by: String,
    pub owner: String,
    pub parent: Option<String>,
    pub grant: Grant,
    pub role: Option<String>,
    pub token_hash: Option<String>,
    pub status: AgentStatus,
    pub retired_at: Option<jiff::Timestamp>,
    pub retired_by: Option<String>,
}

/// The `Agent` shape of COMMANDS.md §1.7.
#[derive(Debug, Clone, Serialize)]
pub struct AgentView {
    pub id: String,
    pub role: Option<String>,
    pub grant: Grant,
    pub status: AgentStatus,
    pub parent: Option<String>,
}

impl Agent {
    /// Parses an agent record whose filename stem is `stem`.
    pub fn from_front(front: &DocumentMut, stem: &str) -> Result<Agent, FieldError> {
        let f = Fields(front.as_table());
        f.expect_kind("agent")?;
        let id = f.str("id")?;
        if !is_agent_id(id) {
            return Err(FieldError::schema(format!(
                "`id` \"{id}\" is not an agent id"
            )));
        }
        if id != stem {
            return Err(FieldError::id_mismatch(format!(
                "`id` \"{id}\" does not match the filename \"{stem}.md\""
            )));
        }
        let grant = Grant::parse(f.enum_str("grant", &["rw", "ro"])?).unwrap_or(Grant::Ro);
        let status = match f.enum_str("status", &["live", "retired"])? {
            "live" => AgentStatus::Live,
            _ => AgentStatus::Retired,
        };
        let parent = f.opt_str("parent")?.map(str::to_string);
        let token_hash = f.opt_str("token_hash")?.map(str::to_string);
        if id != ROOT_AGENT {
            if parent.is_none() {
                return Err(FieldError::schema("required field `parent` is missing"));
            }
            if token_hash.is_none() {
                return Err(FieldError::schema("required field `token_hash` is missing"));
            }
        }
        if let Some(hash) = &token_hash
            && !is_digest(hash)
        {
            return Err(FieldError::schema(
                "`token_hash` must be `sha256:` and 64 lower-case hex digits",
            ));
        }
        Ok(Agent {
            id: id.to_string(),
            created: f.time("created")?,
            created_by: f.str("created_by")?.to_string(),
            owner: f.str("owner")?.to_string(),
            parent,
            grant,
            role: f.opt_str("role")?.map(str::to_string),
            token_hash,
            status,
            retired_at: f.opt_time("retired_at")?,
            retired_by: f.opt_str("retired_by")?.map(str::to_string),
        })
    }

    /// The public view; never includes the token hash.
    pub fn view(&self) -> AgentView {
        AgentView {
            id: self.id.clone(),
            role: self.role.clone(),
            grant: self.grant,
            status: self.status,
            parent: self.parent.clone(),
        }
    }

    /// When the agent was retired, as printed in refusals.
    pub fn retired_at_text(&self) -> String {
        self.retired_at.map(format_time).unwrap_or_default()
    }
}

/// True for `sha256:` followed by 64 lower-case hex digits.
pub fn is_digest(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// `sha256:` + hex of the whole token string: what `token_hash` stores (the token never is).
pub fn token_hash(token: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("sha256:{}", hex::encode(Sha256::digest(token.as_bytes())))
}
