//! An MCP client's own configuration file (`mcp install`): outside the workspace, written
//! through the store's atomic replace in a store jailed to the folder that holds it.

use std::path::Path;

use crate::store::Fs;

use super::Error;

/// Replaces `path` (inside `fs`'s root) with `text`; a file that holds a token is created
/// readable by its owner only.
pub fn replace(fs: &Fs, path: &Path, text: &str, holds_token: bool) -> Result<(), Error> {
    if holds_token {
        fs.replace_private(path, text.as_bytes())?;
    } else {
        fs.replace(path, text.as_bytes())?;
    }
    Ok(())
}
