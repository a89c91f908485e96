//! Frozen briefs: what a `context --record` leaves under `runs/briefs/<ULID>/`.

use std::path::PathBuf;

use super::Error;
use crate::workspace::Workspace;

/// Freezes brief `id`: `brief.md` holding `markdown` and `run.toml` holding `meta`, both
/// created new (runtime data, git-ignored, FORMAT §21). Returns the path of `brief.md`.
pub fn freeze(
    ws: &Workspace,
    id: ulid::Ulid,
    markdown: &str,
    meta: &toml_edit::DocumentMut,
) -> Result<PathBuf, Error> {
    let dir = ws.path(&["runs", "briefs", &id.to_string()]);
    let brief_path = dir.join("brief.md");
    ws.fs.create_new(&brief_path, markdown.as_bytes())?;
    ws.fs
        .create_new(&dir.join("run.toml"), meta.to_string().as_bytes())?;
    Ok(brief_path)
}
