//! Drafts a user edits in `$EDITOR` (`task add -e`, `task edit`, `note add -e`): kept under
//! `runs/drafts/` (runtime data, git-ignored, FORMAT §21) until the edit is applied, so what
//! was typed survives a parse error, an editor that fails, or a rejected save.

use std::path::PathBuf;

use super::Error;
use crate::workspace::Workspace;

/// Writes draft `name` holding `text` (replacing an earlier version of it). Returns its path.
pub fn write(ws: &Workspace, name: &str, text: &str) -> Result<PathBuf, Error> {
    let path = ws.path(&["runs", "drafts", name]);
    ws.fs.replace(&path, text.as_bytes())?;
    Ok(path)
}

/// Removes a draft once its edit is applied.
pub fn remove(ws: &Workspace, path: &std::path::Path) -> Result<(), Error> {
    ws.fs.remove(path)?;
    Ok(())
}
