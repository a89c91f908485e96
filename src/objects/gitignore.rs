//! `.dacli/.gitignore`: the lines dacli needs there (derived data, locks, task worktrees),
//! checked and added without touching the lines a person wrote.

use std::collections::BTreeSet;

use crate::store;
use crate::workspace::Workspace;

use super::Error;

/// The lines of `wanted` (comments aside) that `.dacli/.gitignore` lacks; all of them when the
/// file is missing or unreadable.
pub fn missing<'w>(ws: &Workspace, wanted: &'w str) -> Result<Vec<&'w str>, Error> {
    let present = present(ws)?.unwrap_or_default();
    Ok(wanted
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty() && !present.contains(*l))
        .collect())
}

/// Appends the lines of `wanted` that `.dacli/.gitignore` lacks, keeping every line it has,
/// under the config lock (a new file starts with `wanted`'s first comment line). Returns how
/// many lines were added.
pub fn add_missing(ws: &Workspace, wanted: &str) -> Result<usize, Error> {
    let path = ws.path(&[".gitignore"]);
    let _lock = ws.fs.lock(&ws.lock_path("config"))?;
    let mut text = match ws.fs.read(&path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(store::Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            String::new()
        }
        Err(e) => return Err(e.into()),
    };
    let lacking = missing(ws, wanted)?;
    if lacking.is_empty() {
        return Ok(0);
    }
    if text.is_empty() {
        text.push_str(wanted.lines().next().unwrap_or_default());
        text.push('\n');
    }
    for line in &lacking {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(line);
        text.push('\n');
    }
    ws.fs.replace(&path, text.as_bytes())?;
    Ok(lacking.len())
}

/// The trimmed lines of `.dacli/.gitignore`; `None` when it cannot be read.
fn present(ws: &Workspace) -> Result<Option<BTreeSet<String>>, Error> {
    match ws.fs.read(&ws.path(&[".gitignore"])) {
        Ok(bytes) => Ok(Some(
            String::from_utf8_lossy(&bytes)
                .lines()
                .map(|l| l.trim().to_string())
                .collect(),
        )),
        Err(store::Error::Io { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
