//! Reports a command writes to a file the caller named (`--out`).

use std::path::Path;

use super::Error;
use crate::workspace::Workspace;

/// Writes `text` to `file` whole: a reader sees the old report or the new one, never a mix.
pub fn write(ws: &Workspace, file: &Path, text: &str) -> Result<(), Error> {
    Ok(ws.fs.replace(file, text.as_bytes())?)
}
