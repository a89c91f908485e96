//! Runtime adapters' transactions: create and remove under the runtime's lock, and route
//! roles to one under the roles' locks and the runtime's.

use std::path::{Path, PathBuf};

use toml_edit::Value;
use ulid::Ulid;

use super::{Decided, Error};
use crate::exec::{self, Stamp};
use crate::model::Refusal;
use crate::model::runtime::{Probe, role_runtime};
use crate::objects::runtimes::ProbeCache;
use crate::objects::{self, agents, field_problem, roles, runtimes, set_keeping_decor};
use crate::store::{Document, Problem};
use crate::workspace::Workspace;

/// Creates runtime `name` from `doc` (built and checked by the caller) under its lock;
/// returns the file written.
pub fn create(ws: &Workspace, name: &str, doc: &Document) -> Result<PathBuf, Error> {
    let _lock = ws.fs.lock(&ws.lock_path(&runtimes::lock_name(name)))?;
    Ok(runtimes::create(ws, name, doc)?)
}

/// Removes runtime `name` under its lock, if `me` acts as its owner and no role routes to
/// it. Skipped role files go to `warnings`.
pub fn remove(
    ws: &Workspace,
    me: &str,
    name: &str,
    warnings: &mut Vec<Problem>,
) -> Result<Decided<()>, Error> {
    let _lock = ws.fs.lock(&ws.lock_path(&runtimes::lock_name(name)))?;
    let located = runtimes::load(ws, name)?;
    let owner = &located.runtime.owner;
    if !agents::acts_as_owner(ws, me, owner)? {
        return Ok(Decided::Refused(Refusal::new(
            "runtime.not_owner",
            format!("runtime {name} belongs to {owner}"),
            format!("Ask {owner} to remove runtime {name}."),
        )));
    }
    let routes = runtimes::routes(ws)?;
    warnings.extend(routes.warnings);
    let roles: Vec<String> = routes
        .items
        .iter()
        .filter(|r| r.runtime == name)
        .map(|r| r.role.clone())
        .collect();
    if !roles.is_empty() {
        let flags: Vec<String> = roles.iter().map(|r| format!("--role {r}")).collect();
        return Ok(Decided::Refused(Refusal::new(
            "runtime.in_use",
            format!(
                "runtime {name} is routed to by roles {} (their `runtime` key)",
                roles.join(", ")
            ),
            format!(
                "Clear the routes first: `dacli runtime route --clear {}` (or route those roles to another runtime).",
                flags.join(" ")
            ),
        )));
    }
    runtimes::remove(ws, name)?;
    Ok(Decided::Done(()))
}

/// One role's route before and after.
pub struct Change {
    pub role: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// Sets (or, with `target` none, clears) the `runtime` key of `names` (sorted, distinct,
/// existing roles), if `me` acts as the owner of each. Takes the role locks in name order,
/// then the runtime's (the order `runtime rm` agrees with). `revs` holds one fresh ULID per
/// role. Returns each role's change and whether anything was written.
pub fn route(
    ws: &Workspace,
    me: &str,
    names: &[String],
    target: Option<&str>,
    revs: &[Ulid],
) -> Result<Decided<(Vec<Change>, bool)>, Error> {
    let mut locks = Vec::new();
    for r in names {
        locks.push(ws.fs.lock(&ws.lock_path(&roles::lock_name(r)))?);
    }
    if let Some(t) = target {
        locks.push(ws.fs.lock(&ws.lock_path(&runtimes::lock_name(t)))?);
        runtimes::load(ws, t)?;
    }
    let mut loaded = Vec::new();
    for r in names {
        let (role, doc) = roles::load_with_doc(ws, r)?;
        if !agents::acts_as_owner(ws, me, &role.owner)? {
            return Ok(Decided::Refused(Refusal::new(
                "role.not_owner",
                format!("role {} belongs to {}", role.name, role.owner),
                format!(
                    "Ask {} to route role {} (`dacli runtime route …`).",
                    role.owner, role.name
                ),
            )));
        }
        let before = role_runtime(&doc.front)
            .map_err(|e| objects::Error::malformed(field_problem(ws, &roles::file(ws, r), e)))?
            .map(String::from);
        loaded.push((r.clone(), doc, before));
    }
    let target = target.map(str::to_string);
    let mut changes = Vec::new();
    let mut wrote = false;
    for ((name, doc, before), rev) in loaded.into_iter().zip(revs) {
        if before != target {
            let mut front = doc.front.clone();
            match &target {
                Some(t) => set_keeping_decor(&mut front, "runtime", Value::from(t.as_str())),
                None => {
                    front.remove("runtime");
                }
            }
            set_keeping_decor(&mut front, "rev", Value::from(rev.to_string()));
            roles::write(ws, &name, &Document::new(front, doc.body))?;
            wrote = true;
        }
        changes.push(Change {
            role: name,
            before,
            after: target.clone(),
        });
    }
    drop(locks);
    Ok(Decided::Done((changes, wrote)))
}

/// Caches the probes when every one may be cached and the binary did not change while they
/// ran. Cache trouble is not the caller's: the next doctor simply probes again.
pub fn remember_probes(ws: &Workspace, program: &Path, before: &Stamp, probes: &[Probe], at: &str) {
    if !probes.iter().all(Probe::cacheable) || exec::stamp(program).as_ref() != Some(before) {
        return;
    }
    // Keep probes other adapters of the same binary made, when they are of this version.
    let mut all: Vec<Probe> = runtimes::read_cache(ws, &before.real_path)
        .filter(|c| c.size == before.size && c.mtime_ns == before.mtime_ns)
        .map(|c| c.probes)
        .unwrap_or_default();
    all.retain(|old| !probes.iter().any(|p| p.args == old.args));
    all.extend(probes.iter().cloned());
    let cache = ProbeCache {
        binary: before.real_path.to_string_lossy().into_owned(),
        size: before.size,
        mtime_ns: before.mtime_ns,
        probed_at: at.to_string(),
        probes: all,
    };
    let _ = runtimes::write_cache(ws, &before.real_path, &cache);
}
