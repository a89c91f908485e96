//! Release-train records (FORMAT §19.1): `trains/tr-<ULID>.toml`, created new by the run
//! that plans a train and rewritten only under `train-<ULID>.lock` with a fresh `rev`.

use std::path::PathBuf;

use toml_edit::{DocumentMut, value};
use ulid::Ulid;

use super::Error;
use super::error::Kind;
use crate::model::id::{parse_ulid, ulid_time};
use crate::model::toml_time;
use crate::store::{Problem, TEMP_PREFIX, TomlRecord};
use crate::workspace::Workspace;

/// A train record as read.
#[derive(Debug, Clone)]
pub struct TrainFile {
    pub id: String,
    pub owner: String,
    pub project: String,
    pub repo: String,
    pub source: String,
    pub target: String,
    pub sha: String,
    pub method: String,
    pub state: String,
    pub txn: Option<String>,
    pub target_before: Option<String>,
    pub pr: Option<(u64, String)>,
    pub target_after: Option<String>,
    pub merge_commit: Option<String>,
    pub doc: DocumentMut,
}

/// What a new train records.
pub struct NewTrain<'a> {
    pub project: &'a str,
    pub repo: &'a str,
    pub source: &'a str,
    pub target: &'a str,
    pub sha: &'a str,
    pub method: &'a str,
    pub target_before: &'a str,
    /// The transaction that plans it.
    pub txn: &'a str,
}

/// The file of train `id` (`tr-<ULID>`); a malformed id is a usage error.
pub fn path(ws: &Workspace, id: &str) -> Result<PathBuf, Error> {
    if id.strip_prefix("tr-").and_then(parse_ulid).is_none() {
        return Err(Error::rejected(
            Kind::Usage,
            "E_USAGE",
            format!("`{id}` is not a train id (`tr-<ULID>`)"),
        ));
    }
    Ok(ws.path(&["trains", &format!("{id}.toml")]))
}

/// Reads train `id`.
pub fn load(ws: &Workspace, id: &str) -> Result<TrainFile, Error> {
    let path = path(ws, id)?;
    if !path.is_file() {
        return Err(Error::rejected(
            Kind::NotFound,
            "E_NOT_FOUND",
            format!("no train `{id}` under trains/"),
        )
        .hint("list trains with `dacli release-train status`"));
    }
    let bytes = ws.fs.read(&path)?;
    let rec =
        TomlRecord::parse(&ws.display(&path), &bytes).map_err(crate::store::Error::Malformed)?;
    parse(rec.doc).ok_or_else(|| {
        Error::rejected(
            Kind::Operational,
            "E_MALFORMED",
            format!("{}: not a train record (FORMAT §19.1)", ws.display(&path)),
        )
    })
}

fn parse(doc: DocumentMut) -> Option<TrainFile> {
    let s = |k: &str| doc.get(k).and_then(|v| v.as_str()).map(str::to_string);
    if s("kind").as_deref() != Some("train") {
        return None;
    }
    let pr = doc.get("pr").and_then(|p| {
        Some((
            p.get("number")?.as_integer()? as u64,
            p.get("head_sha")
                .and_then(|h| h.as_str())
                .unwrap_or_default()
                .to_string(),
        ))
    });
    Some(TrainFile {
        id: s("id")?,
        owner: s("owner")?,
        project: s("project")?,
        repo: s("repo")?,
        source: s("source")?,
        target: s("target")?,
        sha: s("sha")?,
        method: s("method")?,
        state: s("state")?,
        txn: s("txn"),
        target_before: s("target_before"),
        pr,
        target_after: s("target_after"),
        merge_commit: s("merge_commit"),
        doc,
    })
}

/// Creates a train record owned by `me` (create-new, keys in field-table order); `None`
/// when the record written does not read back (a bug).
pub fn create(
    ws: &Workspace,
    ulid: Ulid,
    me: &str,
    t: &NewTrain<'_>,
) -> Result<Option<TrainFile>, Error> {
    let id = format!("tr-{ulid}");
    let mut doc = DocumentMut::new();
    doc["id"] = value(id.as_str());
    doc["kind"] = value("train");
    doc["created"] = value(toml_time(ulid_time(ulid)));
    doc["created_by"] = value(me);
    doc["owner"] = value(me);
    doc["rev"] = value(ulid.to_string());
    doc["project"] = value(t.project);
    doc["repo"] = value(t.repo);
    doc["source"] = value(t.source);
    doc["target"] = value(t.target);
    doc["sha"] = value(t.sha);
    doc["method"] = value(t.method);
    doc["state"] = value("planned");
    doc["txn"] = value(t.txn);
    doc["target_before"] = value(t.target_before);
    let path = ws.path(&["trains", &format!("{id}.toml")]);
    ws.fs.create_new(&path, doc.to_string().as_bytes())?;
    Ok(parse(doc))
}

/// Rewrites train `id` under its lock with a fresh `rev` (only the owner's runs get here);
/// `None` when the edited record does not read back (a bug).
pub fn update(
    ws: &Workspace,
    id: &str,
    fresh: &dyn Fn() -> Ulid,
    edit: impl FnOnce(&mut DocumentMut),
) -> Result<Option<TrainFile>, Error> {
    let ulid = id.trim_start_matches("tr-");
    let _lock = ws.fs.lock(&ws.lock_path(&format!("train-{ulid}")))?;
    let mut t = load(ws, id)?;
    edit(&mut t.doc);
    t.doc["rev"] = value(fresh().to_string());
    let path = path(ws, id)?;
    ws.fs.replace(&path, t.doc.to_string().as_bytes())?;
    Ok(parse(t.doc))
}

/// Every train record, by id, and the files that do not parse.
pub fn list(ws: &Workspace) -> Result<(Vec<TrainFile>, Vec<Problem>), Error> {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for (name, path) in ws.fs.list_dir(&ws.path(&["trains"]))? {
        if name.starts_with('.') || name.starts_with(TEMP_PREFIX) || !name.ends_with(".toml") {
            continue;
        }
        let bytes = ws.fs.read(&path)?;
        match TomlRecord::parse(&ws.display(&path), &bytes) {
            Ok(rec) => {
                if let Some(t) = parse(rec.doc) {
                    out.push(t);
                }
            }
            Err(p) => warnings.push(p),
        }
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok((out, warnings))
}
