//! Templates' one write: a new template folder, each file created new (dacli never
//! rewrites a template).

use std::path::{Path, PathBuf};

use super::Error;
use crate::workspace::Workspace;

/// Creates each of `files` (a path relative to `dir` with `/` separators, and its bytes)
/// under `dir`, in order; returns the paths written. An existing file is `E_EXISTS`.
pub fn create(
    ws: &Workspace,
    dir: &Path,
    files: &[(String, Vec<u8>)],
) -> Result<Vec<PathBuf>, Error> {
    let mut written = Vec::new();
    for (rel, bytes) in files {
        let mut path = dir.to_path_buf();
        for seg in rel.split('/') {
            path.push(seg);
        }
        ws.fs.create_new(&path, bytes)?;
        written.push(path);
    }
    Ok(written)
}
