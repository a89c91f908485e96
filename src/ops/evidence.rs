//! Evidence records (FORMAT §18.1) are written here, so a tool's command reaches the
//! `evidence/` folder only through this layer.

use std::path::PathBuf;

use super::Error;
use crate::journal::evidence::{self, Evidence};
use crate::workspace::Workspace;

/// Creates the record `ev` (create-new, never changed); returns its path.
pub fn write(ws: &Workspace, ev: &Evidence<'_>) -> Result<PathBuf, Error> {
    Ok(evidence::write(ws, ev)?)
}
