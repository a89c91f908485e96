//! The issue map: which issue of a repository mirrors which projected object, as this clone
//! last saw it. It is derived data under `cache/` (gitignored, never shared): a projection
//! checks each entry against GitHub before it trusts it, and a map lost or torn costs only
//! the searches that rebuild it, so it is written without flushing and read leniently.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Error;
use crate::workspace::Workspace;

#[derive(Debug, Default, Serialize, Deserialize)]
struct MapFile {
    repo: String,
    /// Object id to issue number.
    issues: BTreeMap<String, u64>,
}

/// `cache/github/<owner>/<name>/issues.json`; `None` for a name that is not `owner/name`.
fn map_path(ws: &Workspace, repo: &str) -> Option<PathBuf> {
    if !crate::github::is_repo_name(repo) {
        return None;
    }
    let (owner, name) = repo.split_once('/')?;
    Some(ws.path(&["cache", "github", owner, name, "issues.json"]))
}

fn read_file(ws: &Workspace, path: &std::path::Path, repo: &str) -> BTreeMap<String, u64> {
    ws.fs
        .read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<MapFile>(&bytes).ok())
        .filter(|m| m.repo == repo)
        .map(|m| m.issues)
        .unwrap_or_default()
}

/// The issue numbers recorded for `repo`; empty when there is no map or it does not parse.
pub fn read_issue_map(ws: &Workspace, repo: &str) -> BTreeMap<String, u64> {
    match map_path(ws, repo) {
        Some(path) => read_file(ws, &path, repo),
        None => BTreeMap::new(),
    }
}

/// Records `found` (object id, issue number) and drops the entries of `forget` (objects whose
/// recorded issue is gone, transferred or no longer carries their marker), under a lock so two
/// projections at once do not lose each other's entries.
pub fn record_issue_map(
    ws: &Workspace,
    repo: &str,
    found: &[(String, u64)],
    forget: &[String],
) -> Result<(), Error> {
    let Some(path) = map_path(ws, repo) else {
        return Ok(());
    };
    let _lock = ws.fs.lock(&ws.lock_path("github-issue-map"))?;
    let mut issues = read_file(ws, &path, repo);
    let before = issues.clone();
    for id in forget {
        issues.remove(id);
    }
    for (id, n) in found {
        issues.insert(id.clone(), *n);
    }
    if issues == before && path.is_file() {
        return Ok(());
    }
    let file = MapFile {
        repo: repo.to_string(),
        issues,
    };
    let mut text = serde_json::to_string_pretty(&file)
        .map_err(|e| Error::internal(format!("the issue map does not serialize: {e}")))?;
    text.push('\n');
    ws.fs.replace_derived(&path, text.as_bytes())?;
    Ok(())
}
