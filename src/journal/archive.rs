//! Archived events (FORMAT §20): `archive/events/<segment>/`, where settled events live once
//! they are moved out of `events/` byte for byte. A segment's `manifest.toml` is created
//! before any file moves and `sealed.toml` after the last; `restored-<ULID>.toml` records a
//! restore. Until it is sealed, every file of a segment is part of the live log
//! ([`super::read`] reads it); once sealed, its events count only in history ([`history`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use sha2::{Digest, Sha256};
use toml_edit::{ArrayOfTables, DocumentMut, InlineTable, Item, Table, value};
use ulid::Ulid;

use super::Journal;
use crate::model::id::{parse_ulid, ulid_time};
use crate::model::toml_time;
use crate::objects::{self, Listing};
use crate::store::{self, Problem, Reason, TomlRecord};
use crate::workspace::Workspace;

/// The most events one segment holds (FORMAT §20).
pub const MAX_SEGMENT_EVENTS: usize = 2000;

/// One archived file, as the manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub id: String,
    /// Relative to `events/` (and to the segment directory): `YYYY/MM/DD/<file>.md`.
    pub path: String,
    pub event_kind: String,
    pub created_by: String,
    pub bytes: u64,
    /// Lower-case hex SHA-256 of the file.
    pub sha256: String,
    /// A `run` event's `shortcut` (an additive manifest key), so `uses` survives archival.
    pub shortcut: Option<String>,
}

/// A segment's manifest.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub id: String,
    pub created_by: String,
    pub before: jiff::Timestamp,
    pub entries: Vec<Entry>,
}

impl Manifest {
    /// `root`: the SHA-256 of the lines `<sha256-hex> <path>\n`, one per entry, sorted by path.
    pub fn root(&self) -> String {
        root_of(&self.entries)
    }
}

/// The `root` of a list of entries.
pub fn root_of(entries: &[Entry]) -> String {
    let mut lines: Vec<String> = entries
        .iter()
        .map(|e| format!("{} {}\n", e.sha256, e.path))
        .collect();
    lines.sort_by(|a, b| {
        let pa = a.split_once(' ').map_or("", |(_, p)| p);
        let pb = b.split_once(' ').map_or("", |(_, p)| p);
        pa.cmp(pb)
    });
    let mut h = Sha256::new();
    for l in &lines {
        h.update(l.as_bytes());
    }
    format!("sha256:{}", hex(&h.finalize()))
}

/// Where a segment stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentState {
    /// The manifest exists, the seal does not: files may be on either side.
    Unsealed,
    Sealed,
    /// Sealed, then moved back by a restore.
    Restored,
}

impl SegmentState {
    pub fn as_str(self) -> &'static str {
        match self {
            SegmentState::Unsealed => "unsealed",
            SegmentState::Sealed => "sealed",
            SegmentState::Restored => "restored",
        }
    }
}

/// A segment read back.
#[derive(Debug, Clone)]
pub struct Segment {
    pub manifest: Manifest,
    pub state: SegmentState,
}

/// The segment directory.
pub fn segment_dir(ws: &Workspace, segment: &str) -> PathBuf {
    ws.path(&["archive", "events", segment])
}

/// The live path of an entry (under `events/`).
pub fn live_path(ws: &Workspace, entry: &Entry) -> PathBuf {
    let mut p = ws.path(&["events"]);
    p.extend(entry.path.split('/'));
    p
}

/// The archived path of an entry.
pub fn archived_path(ws: &Workspace, segment: &str, entry: &Entry) -> PathBuf {
    let mut p = segment_dir(ws, segment);
    p.extend(entry.path.split('/'));
    p
}

/// Directories of segments that are not sealed: their files belong to the live log.
pub(super) fn unsealed_dirs(ws: &Workspace) -> Result<Vec<PathBuf>, store::Error> {
    let mut out = Vec::new();
    for (name, dir) in ws.fs.list_dir(&ws.path(&["archive", "events"]))? {
        if parse_ulid(&name).is_some()
            && dir.join("manifest.toml").is_file()
            && !dir.join("sealed.toml").exists()
        {
            out.push(dir);
        }
    }
    Ok(out)
}

/// Every segment, by id; a segment whose manifest does not parse is a warning.
pub fn segments(ws: &Workspace) -> Result<Listing<Segment>, objects::Error> {
    let mut listing = Listing::default();
    for (name, _) in ws.fs.list_dir(&ws.path(&["archive", "events"]))? {
        if parse_ulid(&name).is_none() {
            continue;
        }
        match load(ws, &name) {
            Ok(Some(seg)) => listing.items.push(seg),
            Ok(None) => {}
            Err(objects::Error::Store(store::Error::Malformed(p))) => listing.warnings.push(p),
            Err(e) => return Err(e),
        }
    }
    Ok(listing)
}

/// One segment; `Ok(None)` when it has no manifest.
pub fn load(ws: &Workspace, segment: &str) -> Result<Option<Segment>, objects::Error> {
    let dir = segment_dir(ws, segment);
    let path = dir.join("manifest.toml");
    if !path.is_file() {
        return Ok(None);
    }
    let bytes = ws.fs.read(&path)?;
    let shown = ws.display(&path);
    let record = TomlRecord::parse(&shown, &bytes).map_err(objects::Error::malformed)?;
    let manifest = parse_manifest(&record.doc).map_err(|detail| {
        objects::Error::malformed(Problem {
            path: shown.clone(),
            reason: Reason::Schema,
            detail,
        })
    })?;
    if manifest.id != segment {
        return Err(objects::Error::malformed(Problem {
            path: shown,
            reason: Reason::IdMismatch,
            detail: format!("`id` is {}, the directory is {segment}", manifest.id),
        }));
    }
    let restored = ws
        .fs
        .list_dir(&dir)?
        .iter()
        .any(|(n, _)| n.starts_with("restored-") && n.ends_with(".toml"));
    let state = if !dir.join("sealed.toml").exists() {
        SegmentState::Unsealed
    } else if restored {
        SegmentState::Restored
    } else {
        SegmentState::Sealed
    };
    Ok(Some(Segment { manifest, state }))
}

fn parse_manifest(doc: &DocumentMut) -> Result<Manifest, String> {
    let s = |k: &str| {
        doc.get(k)
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .ok_or_else(|| format!("`{k}` is missing or not a string"))
    };
    if s("kind")? != "archive-segment" {
        return Err("`kind` is not \"archive-segment\"".into());
    }
    let before = doc
        .get("before")
        .and_then(|v| v.as_datetime())
        .and_then(|d| d.to_string().parse::<jiff::Timestamp>().ok())
        .ok_or("`before` is missing or not a timestamp")?;
    let mut entries = Vec::new();
    if let Some(aot) = doc.get("entry").and_then(|v| v.as_array_of_tables()) {
        for t in aot.iter() {
            let f = |k: &str| {
                t.get(k)
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
                    .ok_or_else(|| format!("an `[[entry]]` lacks `{k}`"))
            };
            entries.push(Entry {
                id: f("id")?,
                path: f("path")?,
                event_kind: f("event_kind")?,
                created_by: f("created_by")?,
                bytes: t
                    .get("bytes")
                    .and_then(|v| v.as_integer())
                    .and_then(|b| u64::try_from(b).ok())
                    .ok_or("an `[[entry]]` lacks `bytes`")?,
                sha256: f("sha256")?,
                shortcut: t
                    .get("shortcut")
                    .and_then(|v| v.as_str())
                    .map(str::to_string),
            });
        }
    }
    for e in &entries {
        if !is_safe_entry_path(&e.path) {
            return Err(format!(
                "entry path `{}` is not YYYY/MM/DD/<file>.md",
                e.path
            ));
        }
    }
    Ok(Manifest {
        id: s("id")?,
        created_by: s("created_by")?,
        before,
        entries,
    })
}

/// An entry path must stay inside its tree: four plain segments, the last an `.md` file.
fn is_safe_entry_path(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty() && *p != "." && *p != ".." && !p.contains('\\') && !p.starts_with('.')
        })
        && parts[3].ends_with(".md")
}

/// Creates the manifest (create-new: it is the intent record, written before any move).
pub fn create_manifest(
    ws: &Workspace,
    manifest: &Manifest,
    created: Ulid,
) -> Result<PathBuf, objects::Error> {
    let mut doc = DocumentMut::new();
    doc["id"] = value(manifest.id.as_str());
    doc["kind"] = value("archive-segment");
    doc["created"] = value(toml_time(ulid_time(created)));
    doc["created_by"] = value(manifest.created_by.as_str());
    doc["before"] = value(toml_time(manifest.before));
    doc["root"] = value(manifest.root());
    let entries = &manifest.entries;
    let mut summary = InlineTable::new();
    summary.insert("events", (entries.len() as i64).into());
    summary.insert(
        "bytes",
        (entries.iter().map(|e| e.bytes).sum::<u64>() as i64).into(),
    );
    if let Some(first) = entries.iter().map(|e| e.id.as_str()).min() {
        summary.insert("first", first.into());
    }
    if let Some(last) = entries.iter().map(|e| e.id.as_str()).max() {
        summary.insert("last", last.into());
    }
    doc["summary"] = value(summary);
    doc["by_kind"] = value(counts(entries.iter().map(|e| e.event_kind.as_str())));
    doc["by_agent"] = value(counts(entries.iter().map(|e| e.created_by.as_str())));
    let mut aot = ArrayOfTables::new();
    for e in entries {
        let mut t = Table::new();
        t["id"] = value(e.id.as_str());
        t["path"] = value(e.path.as_str());
        t["event_kind"] = value(e.event_kind.as_str());
        t["created_by"] = value(e.created_by.as_str());
        t["bytes"] = value(e.bytes as i64);
        t["sha256"] = value(e.sha256.as_str());
        if let Some(name) = &e.shortcut {
            t["shortcut"] = value(name.as_str());
        }
        aot.push(t);
    }
    doc["entry"] = Item::ArrayOfTables(aot);
    let path = segment_dir(ws, &manifest.id).join("manifest.toml");
    ws.fs.create_new(&path, doc.to_string().as_bytes())?;
    Ok(path)
}

fn counts<'a>(values: impl Iterator<Item = &'a str>) -> InlineTable {
    let mut map: BTreeMap<&str, i64> = BTreeMap::new();
    for v in values {
        *map.entry(v).or_default() += 1;
    }
    let mut t = InlineTable::new();
    for (k, n) in map {
        t.insert(k, n.into());
    }
    t
}

/// Creates `sealed.toml`: every entry is in the segment.
pub fn seal(
    ws: &Workspace,
    manifest: &Manifest,
    id: Ulid,
    created_by: &str,
) -> Result<PathBuf, objects::Error> {
    let mut doc = DocumentMut::new();
    doc["kind"] = value("archive-seal");
    doc["segment"] = value(manifest.id.as_str());
    doc["created"] = value(toml_time(ulid_time(id)));
    doc["created_by"] = value(created_by);
    doc["events"] = value(manifest.entries.len() as i64);
    doc["root"] = value(manifest.root());
    let path = segment_dir(ws, &manifest.id).join("sealed.toml");
    ws.fs.create_new(&path, doc.to_string().as_bytes())?;
    Ok(path)
}

/// Creates `restored-<ULID>.toml`: every entry is back in `events/`.
pub fn mark_restored(
    ws: &Workspace,
    manifest: &Manifest,
    id: Ulid,
    created_by: &str,
) -> Result<PathBuf, objects::Error> {
    let mut doc = DocumentMut::new();
    doc["id"] = value(id.to_string());
    doc["kind"] = value("archive-restore");
    doc["segment"] = value(manifest.id.as_str());
    doc["created"] = value(toml_time(ulid_time(id)));
    doc["created_by"] = value(created_by);
    doc["events"] = value(manifest.entries.len() as i64);
    doc["root"] = value(manifest.root());
    let path = segment_dir(ws, &manifest.id).join(format!("restored-{id}.toml"));
    ws.fs.create_new(&path, doc.to_string().as_bytes())?;
    Ok(path)
}

/// Where one entry's bytes are, judged by name and SHA-256.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// A file is at the live path, and whether its SHA-256 matches.
    pub live: Option<bool>,
    /// A file is at the archived path, and whether its SHA-256 matches.
    pub archived: Option<bool>,
}

/// Looks at both places of an entry.
pub fn place(ws: &Workspace, segment: &str, entry: &Entry) -> Result<Placement, objects::Error> {
    Ok(Placement {
        live: matches(ws, &live_path(ws, entry), &entry.sha256)?,
        archived: matches(ws, &archived_path(ws, segment, entry), &entry.sha256)?,
    })
}

fn matches(
    ws: &Workspace,
    path: &std::path::Path,
    sha: &str,
) -> Result<Option<bool>, objects::Error> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    match ws.fs.read(path) {
        Ok(bytes) => Ok(Some(sha256_hex(&bytes) == sha)),
        Err(store::Error::Malformed(_)) => Ok(Some(false)),
        Err(e) => Err(e.into()),
    }
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    hex::encode(bytes)
}

/// Event counts over the whole history: the live log plus every sealed (not restored)
/// segment, each event counted once by id, so a crash in the middle of a restore (some files
/// back, the restore record not yet written) counts nothing twice.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct History {
    pub events: u64,
    /// Of which in sealed segments.
    pub archived: u64,
    pub by_kind: BTreeMap<String, u64>,
    pub by_agent: BTreeMap<String, u64>,
}

/// The history counts of the workspace, given its live journal.
pub fn history(
    ws: &Workspace,
    journal: &Journal,
) -> Result<(History, Vec<Problem>), objects::Error> {
    let mut h = History::default();
    let mut seen = BTreeSet::new();
    for ev in &journal.events {
        if seen.insert(ev.id.clone()) {
            h.count(&ev.kind, &ev.created_by);
        }
    }
    let listing = segments(ws)?;
    for seg in listing
        .items
        .iter()
        .filter(|s| s.state == SegmentState::Sealed)
    {
        for e in &seg.manifest.entries {
            if seen.insert(e.id.clone()) {
                h.count(&e.event_kind, &e.created_by);
                h.archived += 1;
            }
        }
    }
    Ok((h, listing.warnings))
}

/// `run` events per shortcut in sealed (not restored) segments whose ids are not in
/// `live`: the archived part of every shortcut's `uses`.
pub(super) fn archived_runs(
    ws: &Workspace,
    live: &BTreeSet<String>,
) -> Result<(BTreeMap<String, usize>, Vec<Problem>), objects::Error> {
    let mut out = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let listing = segments(ws)?;
    for seg in listing
        .items
        .iter()
        .filter(|s| s.state == SegmentState::Sealed)
    {
        for e in &seg.manifest.entries {
            if e.event_kind == "run"
                && !live.contains(&e.id)
                && seen.insert(e.id.clone())
                && let Some(name) = &e.shortcut
            {
                *out.entry(name.clone()).or_insert(0) += 1;
            }
        }
    }
    Ok((out, listing.warnings))
}

impl History {
    fn count(&mut self, kind: &str, agent: &str) {
        self.events += 1;
        *self.by_kind.entry(kind.to_string()).or_default() += 1;
        *self.by_agent.entry(agent.to_string()).or_default() += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, sha: &str) -> Entry {
        Entry {
            id: "01KJSJCSD0D9PPNTSVE6C6J8MS".into(),
            path: path.into(),
            event_kind: "claim".into(),
            created_by: "a-root".into(),
            bytes: 1,
            sha256: sha.into(),
            shortcut: None,
        }
    }

    #[test]
    fn the_root_is_order_free_and_sorted_by_path() {
        let a = entry("2026/03/03/a.md", "11");
        let b = entry("2026/03/03/b.md", "22");
        assert_eq!(root_of(&[a.clone(), b.clone()]), root_of(&[b, a.clone()]));
        let expected = format!(
            "sha256:{}",
            sha256_hex(b"11 2026/03/03/a.md\n22 2026/03/03/b.md\n")
        );
        assert_eq!(root_of(&[entry("2026/03/03/b.md", "22"), a]), expected);
    }

    #[test]
    fn entry_paths_cannot_escape() {
        assert!(is_safe_entry_path("2026/03/03/x.md"));
        assert!(!is_safe_entry_path("../03/03/x.md"));
        assert!(!is_safe_entry_path("2026/03/x.md"));
        assert!(!is_safe_entry_path("2026/03/03/.x.md"));
    }
}
