//! Roles' transactions: create, edit and remove under the role's lock, each deciding on the
//! record re-read under it.

use toml_edit::{Array, Value};
use ulid::Ulid;

use super::{Decided, Error};
use crate::model::Refusal;
use crate::model::agent::AgentStatus;
use crate::model::role::Role;
use crate::objects::{agents, roles, set_keeping_decor, shortcuts};
use crate::store::{Document, Problem};
use crate::workspace::Workspace;

/// Creates role `name` from `doc` (built and checked by the caller) under its lock.
pub fn create(ws: &Workspace, name: &str, doc: &Document) -> Result<(), Error> {
    let _lock = ws.fs.lock(&ws.lock_path(&roles::lock_name(name)))?;
    roles::create(ws, name, doc)?;
    Ok(())
}

/// The lists of a role `role edit` may replace: key in the file, flag, new value.
pub type Lists<'a> = [(&'static str, &'a str, &'a [String]); 4];

/// What `role edit` changes; every value is already checked.
pub struct Edit<'a> {
    pub summary: Option<&'a str>,
    pub grant: Option<&'a str>,
    pub lists: Lists<'a>,
    /// Flags of the lists to empty.
    pub clear: &'a [String],
    pub wip: Option<u32>,
    pub rev: Ulid,
}

/// A role after an edit, and the keys that changed (none: nothing was written).
pub struct Edited {
    pub role: Role,
    pub changed: Vec<&'static str>,
}

/// Edits role `name` under its lock, if `me` acts as its owner. `edit` is the caller's
/// checked request, or why it is invalid: a refusal for not owning the role is said first.
pub fn edit<E: From<Error>>(
    ws: &Workspace,
    me: &str,
    name: &str,
    edit: Result<Edit<'_>, E>,
) -> Result<Decided<Edited>, E> {
    let _lock = ws
        .fs
        .lock(&ws.lock_path(&roles::lock_name(name)))
        .map_err(Error::from)?;
    let (role, doc) = roles::load_with_doc(ws, name).map_err(Error::from)?;
    if !agents::acts_as_owner(ws, me, &role.owner).map_err(Error::from)? {
        return Ok(Decided::Refused(not_owner(&role)));
    }
    let edit = edit?;
    let mut front = doc.front.clone();
    let mut changed = Vec::new();
    if let Some(s) = edit.summary
        && s != role.summary
    {
        set_keeping_decor(&mut front, "summary", Value::from(s));
        changed.push("summary");
    }
    if let Some(g) = edit.grant
        && g != role.grant.as_str()
    {
        set_keeping_decor(&mut front, "grant", Value::from(g));
        changed.push("grant");
    }
    let current = [
        &role.scope,
        &role.out_of_scope,
        &role.shortcuts,
        &role.escalate_to,
    ];
    for ((key, flag, new), old) in edit.lists.iter().zip(current) {
        if edit.clear.iter().any(|c| c == flag) {
            if !old.is_empty() || front.contains_key(key) {
                front.remove(key);
                changed.push(*key);
            }
        } else if !new.is_empty() && *new != old.as_slice() {
            set_keeping_decor(&mut front, key, Value::Array(strings(new)));
            changed.push(*key);
        }
    }
    if let Some(w) = edit.wip
        && w != role.wip
    {
        set_keeping_decor(&mut front, "wip", Value::from(i64::from(w)));
        changed.push("wip");
    }
    if changed.is_empty() {
        return Ok(Decided::Done(Edited { role, changed }));
    }
    set_keeping_decor(&mut front, "rev", Value::from(edit.rev.to_string()));
    let doc = Document::new(front, doc.body);
    let updated = Role::from_front(&doc.front, name)
        .map_err(|e| Error::internal(format!("dacli built an invalid role: {e}")))?;
    roles::write(ws, name, &doc).map_err(Error::from)?;
    Ok(Decided::Done(Edited {
        role: updated,
        changed,
    }))
}

/// A TOML array of `list`.
pub fn strings(list: &[String]) -> Array {
    let mut a = Array::new();
    for s in list {
        a.push(s.as_str());
    }
    a
}

/// `role.not_owner` for `role`.
pub fn not_owner(role: &Role) -> Refusal {
    Refusal::new(
        "role.not_owner",
        format!("role {} belongs to {}", role.name, role.owner),
        format!("Ask {} to change role {}.", role.owner, role.name),
    )
}

/// Removes role `name` under its lock, if `me` acts as its owner and nothing uses it.
/// Returns the role's name as read. Skipped files go to `warnings`.
pub fn remove(
    ws: &Workspace,
    me: &str,
    name: &str,
    warnings: &mut Vec<Problem>,
) -> Result<Decided<String>, Error> {
    let _lock = ws.fs.lock(&ws.lock_path(&roles::lock_name(name)))?;
    let role = roles::load(ws, name)?;
    if !agents::acts_as_owner(ws, me, &role.owner)? {
        return Ok(Decided::Refused(not_owner(&role)));
    }
    if let Some(r) = in_use(ws, &role.name, warnings)? {
        return Ok(Decided::Refused(r));
    }
    roles::remove(ws, &role.name)?;
    Ok(Decided::Done(role.name))
}

/// `role.in_use`: live agents hold the role, other roles escalate to it, or shortcuts name it
/// in their `roles` (removing it would leave them runnable by root alone).
fn in_use(
    ws: &Workspace,
    name: &str,
    warnings: &mut Vec<Problem>,
) -> Result<Option<Refusal>, Error> {
    let agents_listing = agents::list(ws)?;
    warnings.extend(agents_listing.warnings);
    let holders: Vec<String> = agents_listing
        .items
        .iter()
        .filter(|a| a.status == AgentStatus::Live && a.role.as_deref() == Some(name))
        .map(|a| a.id.clone())
        .collect();
    let role_listing = roles::list(ws)?;
    warnings.extend(role_listing.warnings);
    let escalating: Vec<String> = role_listing
        .items
        .iter()
        .filter(|r| r.name != name && r.escalate_to.iter().any(|e| e == name))
        .map(|r| r.name.clone())
        .collect();
    let shortcut_listing = shortcuts::list(ws)?;
    warnings.extend(shortcut_listing.warnings);
    let reserved: Vec<String> = shortcut_listing
        .items
        .iter()
        .filter(|s| s.shortcut.roles.iter().any(|r| r == name))
        .map(|s| s.shortcut.name.clone())
        .collect();
    if holders.is_empty() && escalating.is_empty() && reserved.is_empty() {
        return Ok(None);
    }
    let mut why = Vec::new();
    let mut steps = Vec::new();
    if !holders.is_empty() {
        why.push(format!("live agents hold it ({})", holders.join(", ")));
        steps.push(format!("Retire {}", holders.join(", ")));
    }
    if !escalating.is_empty() {
        why.push(format!("roles escalate to it ({})", escalating.join(", ")));
        steps.push(format!(
            "drop {name} from `escalate_to` of {}",
            escalating.join(", ")
        ));
    }
    if !reserved.is_empty() {
        why.push(format!(
            "shortcuts are reserved for it ({})",
            reserved.join(", ")
        ));
        steps.push(format!(
            "drop {name} from `roles` of shortcuts {}",
            reserved.join(", ")
        ));
    }
    let mut next = steps.join(" / ");
    if let Some(first) = next.get(..1) {
        next = format!("{}{}", first.to_uppercase(), &next[1..]);
    }
    Ok(Some(Refusal::new(
        "role.in_use",
        format!("role {name} is in use: {}", why.join("; ")),
        format!("{next} first."),
    )))
}
