//! `repo cleanup`'s workspace files: the run records it considers, and retiring one to
//! `archive/runs/<id>/` byte for byte with a manifest of each file's SHA-256 written first.

use std::path::{Path, PathBuf};

use toml_edit::{ArrayOfTables, DocumentMut, Item, Table, value};

use super::Error;
use crate::journal::archive::sha256_hex;
use crate::model::id::parse_ulid;
use crate::model::toml_time;
use crate::policy::apply::sha256_digest;
use crate::store::{Problem, Reason, TomlRecord};
use crate::workspace::Workspace;

/// A run record (`runs/<id>/` or `runs/<group>/<id>/` with a `run.toml`).
pub struct RunRecord {
    pub id: String,
    pub dir: PathBuf,
    /// `run.toml`, when it parses.
    pub meta: Option<TomlRecord>,
}

/// Every run record, newest first.
pub fn run_records(ws: &Workspace) -> Result<Vec<RunRecord>, Error> {
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    for (name, path) in ws.fs.list_dir(&ws.path(&["runs"]))? {
        if parse_ulid(&name).is_some() {
            found.push((name, path));
        } else if path.is_dir() {
            for (inner, p) in ws.fs.list_dir(&path)? {
                if parse_ulid(&inner).is_some() {
                    found.push((inner, p));
                }
            }
        }
    }
    found.retain(|(_, p)| p.join("run.toml").is_file());
    found.sort_by(|a, b| b.0.cmp(&a.0));
    Ok(found
        .into_iter()
        .map(|(id, dir)| {
            let meta = ws
                .fs
                .read(&dir.join("run.toml"))
                .ok()
                .and_then(|b| TomlRecord::parse(&ws.display(&dir.join("run.toml")), &b).ok());
            RunRecord { id, dir, meta }
        })
        .collect())
}

/// One file of a run record: name, SHA-256 (hex) and length.
pub type RunFile = (String, String, u64);

/// The files of run record `src` as its archive manifest at `manifest` lists them: read back
/// when a resumed retire already wrote it, else observed and written (create-new) by `who`.
pub fn run_files(
    ws: &Workspace,
    src: &Path,
    manifest: &Path,
    id: &str,
    who: &str,
    now: jiff::Timestamp,
) -> Result<Vec<RunFile>, Error> {
    if manifest.is_file() {
        return read_run_manifest(ws, manifest);
    }
    let mut files = Vec::new();
    for (name, path) in ws.fs.list_dir(src)? {
        if !path.is_file() {
            continue;
        }
        let bytes = ws.fs.read(&path)?;
        files.push((name, sha256_hex(&bytes), bytes.len() as u64));
    }
    write_run_manifest(ws, manifest, id, &files, who, now)?;
    Ok(files)
}

/// Moves one file of a run record, resuming safely: the right bytes at `to` mean done (the
/// original at `from` is then removed); `false` when neither place holds them.
pub fn move_run_file(ws: &Workspace, from: &Path, to: &Path, sha: &str) -> Result<bool, Error> {
    let there = ws.fs.read(to).ok().map(|b| sha256_hex(&b));
    match there {
        Some(s) if s == sha => ws.fs.remove(from)?,
        Some(_) => return Ok(false),
        None if from.is_file() => ws.fs.move_file(from, to)?,
        None => return Ok(false),
    }
    Ok(true)
}

/// Removes the run record's directory once every file left it.
pub fn remove_run_dir(ws: &Workspace, src: &Path) -> Result<(), Error> {
    ws.fs.remove_empty_dir(src)?;
    Ok(())
}

/// `sha256:` over the lines `<sha256> <file>\n` sorted by file: the run archive's root.
pub fn run_root(files: &[RunFile]) -> String {
    let mut lines: Vec<String> = files.iter().map(|(n, s, _)| format!("{s} {n}\n")).collect();
    lines.sort_by(|a, b| {
        a.split_once(' ')
            .map(|x| x.1)
            .cmp(&b.split_once(' ').map(|x| x.1))
    });
    sha256_digest(lines.concat().as_bytes())
}

fn write_run_manifest(
    ws: &Workspace,
    path: &Path,
    id: &str,
    files: &[RunFile],
    who: &str,
    now: jiff::Timestamp,
) -> Result<(), Error> {
    let mut doc = DocumentMut::new();
    doc["id"] = value(id);
    doc["kind"] = value("run-archive");
    doc["created"] = value(toml_time(now));
    doc["created_by"] = value(who);
    doc["root"] = value(run_root(files));
    let mut aot = ArrayOfTables::new();
    for (name, sha, bytes) in files {
        let mut t = Table::new();
        t["path"] = value(name.as_str());
        t["bytes"] = value(*bytes as i64);
        t["sha256"] = value(sha.as_str());
        aot.push(t);
    }
    doc["file"] = Item::ArrayOfTables(aot);
    ws.fs.create_new(path, doc.to_string().as_bytes())?;
    Ok(())
}

fn read_run_manifest(ws: &Workspace, path: &Path) -> Result<Vec<RunFile>, Error> {
    let bytes = ws.fs.read(path)?;
    let record =
        TomlRecord::parse(&ws.display(path), &bytes).map_err(crate::store::Error::Malformed)?;
    let mut out = Vec::new();
    if let Some(aot) = record.doc.get("file").and_then(|f| f.as_array_of_tables()) {
        for t in aot.iter() {
            let name = t.get("path").and_then(|v| v.as_str()).unwrap_or_default();
            let sha = t.get("sha256").and_then(|v| v.as_str()).unwrap_or_default();
            let bytes = t.get("bytes").and_then(|v| v.as_integer()).unwrap_or(0);
            if name.is_empty() || name.contains('/') || name.starts_with('.') {
                return Err(crate::store::Error::Malformed(Problem {
                    path: ws.display(path),
                    reason: Reason::Schema,
                    detail: format!("file entry `{name}` is not a plain file name"),
                })
                .into());
            }
            out.push((name.to_string(), sha.to_string(), bytes as u64));
        }
    }
    Ok(out)
}
