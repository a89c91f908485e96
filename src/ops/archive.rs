//! The event archive's writes (FORMAT §17): the `archive.lock`, the segment manifest (the
//! intent record), moving one event between `events/` and its segment, and the seal or
//! restore record that closes the move.

use ulid::Ulid;

use super::Error;
use crate::journal::archive::{self, Entry, Manifest};
use crate::model::event::EventHead;
use crate::store::LockGuard;
use crate::workspace::Workspace;

/// Takes `archive.lock` (after the transaction's own lock, FORMAT §4.3).
pub fn lock(ws: &Workspace) -> Result<LockGuard, Error> {
    Ok(ws.fs.lock(&ws.lock_path("archive"))?)
}

/// Creates the segment's manifest (create-new, before any move).
pub fn create_manifest(ws: &Workspace, manifest: &Manifest, created: Ulid) -> Result<(), Error> {
    archive::create_manifest(ws, manifest, created)?;
    Ok(())
}

/// Seals the segment (every entry is in it) unless it already is; `fresh` mints the seal's
/// ULID.
pub fn seal(
    ws: &Workspace,
    manifest: &Manifest,
    fresh: &dyn Fn() -> Ulid,
    who: &str,
) -> Result<(), Error> {
    let sealed = archive::segment_dir(ws, &manifest.id).join("sealed.toml");
    if !sealed.exists() {
        archive::seal(ws, manifest, fresh(), who)?;
    }
    Ok(())
}

/// Records that every entry of the segment is back in `events/`.
pub fn mark_restored(
    ws: &Workspace,
    manifest: &Manifest,
    id: Ulid,
    who: &str,
) -> Result<(), Error> {
    archive::mark_restored(ws, manifest, id, who)?;
    Ok(())
}

/// The bytes of a live event file, as the archive records them: its length and SHA-256.
pub fn event_bytes(ws: &Workspace, ev: &EventHead) -> Result<(u64, String), Error> {
    let bytes = ws.fs.read(&ws.root().join(&ev.path))?;
    Ok((bytes.len() as u64, archive::sha256_hex(&bytes)))
}

/// The SHA-256 of a regular file at `rel` under the work-tree root, when it is one and reads.
pub fn file_sha256(ws: &Workspace, rel: &str) -> Option<String> {
    let path = ws.root().join(rel);
    std::fs::symlink_metadata(&path)
        .ok()
        .filter(|m| m.is_file())
        .and_then(|_| ws.fs.read(&path).ok())
        .map(|b| format!("sha256:{}", archive::sha256_hex(&b)))
}

/// Moves one entry, resuming safely: a copy with the right bytes at the destination means
/// done (an original left at the source by a crash between link and unlink is then removed);
/// the right bytes at the source mean move; anything else is an integrity failure, returned
/// as why.
pub fn move_one(
    ws: &Workspace,
    segment: &str,
    e: &Entry,
    restoring: bool,
) -> Result<Result<(), String>, Error> {
    let place = archive::place(ws, segment, e)?;
    let live = archive::live_path(ws, e);
    let archived = archive::archived_path(ws, segment, e);
    let (from, to, at_from, at_to) = if restoring {
        (archived, live, place.archived, place.live)
    } else {
        (live, archived, place.live, place.archived)
    };
    match (at_from, at_to) {
        (_, Some(true)) => {
            if at_from == Some(true) {
                ws.fs.remove(&from)?;
            }
        }
        (Some(true), None) => ws.fs.move_file(&from, &to)?,
        (Some(false), _) => return Ok(Err("its bytes do not match the manifest's SHA-256".into())),
        (_, Some(false)) => return Ok(Err("the destination holds other bytes".into())),
        (None, None) => {
            return Ok(Err(
                "it is neither at its source nor at its destination".into()
            ));
        }
    }
    // Drop the date directories the move emptied.
    let mut dir = from.parent().map(std::path::Path::to_path_buf);
    for _ in 0..3 {
        let Some(d) = dir else { break };
        ws.fs.remove_empty_dir(&d)?;
        dir = d.parent().map(std::path::Path::to_path_buf);
    }
    Ok(Ok(()))
}
