//! Roles (docs/FORMAT.md §7): the parts identity and status need.

use toml_edit::DocumentMut;

use super::Grant;
use super::fields::{FieldError, Fields};

/// A parsed role.
#[derive(Debug, Clone)]
pub struct Role {
    pub name: String,
    pub summary: String,
    pub grant: Grant,
    pub scope: Vec<String>,
    pub out_of_scope: Vec<String>,
    pub shortcuts: Vec<String>,
    pub escalate_to: Vec<String>,
    /// 0 means no cap.
    pub wip: u32,
    pub owner: String,
}

impl Role {
    /// Parses the role file `<stem>.md`.
    pub fn from_front(front: &DocumentMut, stem: &str) -> Result<Role, FieldError> {
        let f = Fields(front.as_table());
        f.expect_kind("role")?;
        let name = f.str("name")?;
        if name != stem {
            return Err(FieldError::id_mismatch(format!(
                "`name` \"{name}\" does not match the filename \"{stem}.md\""
            )));
        }
        let wip = f.opt_int("wip")?.unwrap_or(0);
        let wip =
            u32::try_from(wip).map_err(|_| FieldError::schema("`wip` must be an integer ≥ 0"))?;
        Ok(Role {
            name: name.to_string(),
            summary: f.str("summary")?.to_string(),
            grant: Grant::parse(f.enum_str("grant", &["rw", "ro"])?).unwrap_or(Grant::Ro),
            scope: owned(f.str_list("scope")?),
            out_of_scope: owned(f.str_list("out_of_scope")?),
            shortcuts: owned(f.str_list("shortcuts")?),
            escalate_to: owned(f.str_list("escalate_to")?),
            wip,
            owner: f.str("owner")?.to_string(),
        })
    }
}

/// The effect of a shortcut, when valid (FORMAT §8: a missing or unknown one never runs).
pub fn shortcut_effect(front: &DocumentMut) -> Option<&str> {
    front
        .get("effect")
        .and_then(|e| e.as_str())
        .filter(|e| matches!(*e, "read" | "write" | "destructive"))
}

fn owned(v: Vec<&str>) -> Vec<String> {
    v.into_iter().map(String::from).collect()
}
