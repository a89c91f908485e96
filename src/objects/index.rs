//! The derived index under `cache/` (docs/FORMAT.md §21): small per-file extracts of object
//! files, so that a read needing a few fields of many files parses only the files that changed.
//!
//! Invariants, which make deleting `cache/` change nothing but speed:
//! - an extract is a pure function of the file's bytes, and it is served from the cache only
//!   when the file's metadata stamp (size, modification and change times, inode) equals the one
//!   recorded when the extract was made, and that change time lies well before the cache was
//!   written (the "racy" rule git uses for its index: an edit in the same timestamp tick as the
//!   scan could otherwise keep its old stamp);
//! - malformed files are never cached, so they are re-read and reported on every call;
//! - the cache is written by atomic replace, and a cache that cannot be read, parsed or written
//!   is ignored: the files are the only source of truth.

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::model::task::{TaskHead, parse_task_filename};
use crate::model::taskdoc::strip_wikilink;
use crate::store::{DirEntryKind, Document, Problem, Reason, TEMP_PREFIX};
use crate::workspace::{STATUS_FOLDERS, Workspace};

use super::{Error, Listing, field_problem, warn_or_fail};

/// Bumped whenever an extract's shape or meaning changes; older caches are then ignored.
const FORMAT: &str = "dacli-index/1";

/// How long after a file's last change its stamp is trusted, measured against the time the
/// cache was written (nanoseconds). Covers the coarsest common timestamp granularity (2 s).
const RACY_NS: i128 = 2_000_000_000;

/// The metadata that identifies one version of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
}

impl Stamp {
    /// The stamp of a regular file (`lstat`); `None` for anything else, which is never cached.
    fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        if !meta.file_type().is_file() {
            return None;
        }
        Some(Stamp::from_meta(&meta))
    }

    #[cfg(unix)]
    fn from_meta(meta: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Stamp {
            size: meta.size(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
        }
    }

    #[cfg(not(unix))]
    fn from_meta(meta: &std::fs::Metadata) -> Stamp {
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        Stamp {
            size: meta.len(),
            mtime_ns,
            ctime_ns: mtime_ns,
            ino: 0,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Cached<T> {
    stamp: Stamp,
    value: T,
}

#[derive(Serialize, Deserialize)]
struct OnDisk<T> {
    format: String,
    entries: BTreeMap<String, Cached<T>>,
}

/// One cache file of extracts, keyed by the file's path relative to the workspace directory.
///
/// Use: [`FileCache::load`], one [`FileCache::extract`] per file of the scanned set, then
/// [`FileCache::save`]. Entries of files not visited are dropped at save, so each cache file
/// must cover one whole scanned set (e.g. the tasks of one project).
pub struct FileCache<T> {
    name: String,
    old: BTreeMap<String, Cached<T>>,
    new: BTreeMap<String, Cached<T>>,
    /// Stamps whose change time is before this (cache write time minus [`RACY_NS`]) are trusted.
    trusted_before_ns: i128,
    dirty: bool,
}

impl<T: Serialize + DeserializeOwned + Clone> FileCache<T> {
    /// Loads `cache/<name>.json`; a missing, unreadable or outdated cache is an empty one.
    pub fn load(ws: &Workspace, name: &str) -> FileCache<T> {
        let path = cache_file(ws, name);
        let loaded = Stamp::of(&path).and_then(|stamp| {
            let bytes = ws.fs.read(&path).ok()?;
            let disk: OnDisk<T> = serde_json::from_slice(&bytes).ok()?;
            (disk.format == FORMAT).then_some((stamp, disk.entries))
        });
        let (trusted_before_ns, old) = match loaded {
            Some((stamp, entries)) => (stamp.mtime_ns - RACY_NS, entries),
            None => (i128::MIN, BTreeMap::new()),
        };
        FileCache {
            name: name.to_string(),
            old,
            new: BTreeMap::new(),
            trusted_before_ns,
            dirty: false,
        }
    }

    /// The extract of the file at `path`: cached when its stamp is unchanged and trusted,
    /// otherwise made by `parse` from the file's parsed document and its bytes. A file that cannot be read
    /// or parsed is pushed to `warnings` and yields `None`; real I/O failures are errors.
    pub fn extract(
        &mut self,
        ws: &Workspace,
        path: &Path,
        warnings: &mut Vec<Problem>,
        parse: impl FnOnce(&Document, &[u8]) -> Result<T, Problem>,
    ) -> Result<Option<T>, Error> {
        let key = key_of(ws, path);
        let stamp = Stamp::of(path);
        if let (Some(stamp), Some(hit)) = (stamp, self.old.get(&key))
            && hit.stamp == stamp
            && hit.stamp.ctime_ns < self.trusted_before_ns
        {
            self.new.insert(key, hit.clone());
            return Ok(Some(hit.value.clone()));
        }
        let bytes = match ws.fs.read(path) {
            Ok(b) => b,
            Err(e) => {
                warn_or_fail(warnings, Err(e))?;
                return Ok(None);
            }
        };
        let parsed =
            Document::parse(&ws.display(path), &bytes).map_err(crate::store::Error::Malformed);
        let Some(doc) = warn_or_fail(warnings, parsed)? else {
            return Ok(None);
        };
        match parse(&doc, &bytes) {
            Ok(value) => {
                if let Some(stamp) = stamp {
                    self.dirty = true;
                    self.new.insert(
                        key,
                        Cached {
                            stamp,
                            value: value.clone(),
                        },
                    );
                }
                Ok(Some(value))
            }
            Err(p) => {
                warnings.push(p);
                Ok(None)
            }
        }
    }

    /// Writes the cache back when anything changed. Failure is ignored: the cache is only an
    /// accelerator, and a read-only workspace must still be readable.
    pub fn save(self, ws: &Workspace) {
        let dropped = self.old.keys().any(|k| !self.new.contains_key(k));
        if !self.dirty && !dropped {
            return;
        }
        let disk = OnDisk {
            format: FORMAT.to_string(),
            entries: self.new,
        };
        if let Ok(bytes) = serde_json::to_vec(&disk) {
            let _ = ws.fs.replace(&cache_file(ws, &self.name), &bytes);
        }
    }
}

/// `cache/<name>.json` in the workspace.
fn cache_file(ws: &Workspace, name: &str) -> std::path::PathBuf {
    ws.path(&["cache", &format!("{name}.json")])
}

fn key_of(ws: &Workspace, path: &Path) -> String {
    path.strip_prefix(ws.dir())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_string_lossy().into_owned())
}

/// The `.md` files of `dir` that a listing reads: no hidden or temporary names.
pub fn md_files(ws: &Workspace, dir: &Path) -> Result<Vec<(String, std::path::PathBuf)>, Error> {
    Ok(ws
        .fs
        .list_dir(dir)?
        .into_iter()
        .filter(|(name, _)| {
            !name.starts_with('.') && !name.starts_with(TEMP_PREFIX) && name.ends_with(".md")
        })
        .collect())
}

/// The fields of a task that a brief needs of tasks other than its own.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TaskEntry {
    /// The project's directory name.
    pub project: String,
    pub id: String,
    pub number: u32,
    pub slug: String,
    pub title: String,
    /// The status folder the file is in.
    pub folder: String,
    pub parent: Option<String>,
    pub owner: String,
    pub assignee: Option<String>,
    pub rev: String,
    /// Timestamp of the last `## Log` line (when the task last changed), if any.
    pub last_log_at: Option<String>,
    /// Path relative to the workspace directory.
    pub file: String,
}

impl TaskEntry {
    /// `<project>/<NNN>-<slug>`.
    pub fn reference(&self) -> String {
        format!("{}/{:03}-{}", self.project, self.number, self.slug)
    }

    /// `<NNN>-<slug>`, the short name used inside one project.
    pub fn short(&self) -> String {
        format!("{:03}-{}", self.number, self.slug)
    }
}

impl super::tasks::TaskKey for TaskEntry {
    fn key_project(&self) -> &str {
        &self.project
    }
    fn key_id(&self) -> &str {
        &self.id
    }
    fn key_number(&self) -> u32 {
        self.number
    }
    fn key_slug(&self) -> &str {
        &self.slug
    }
}

/// Every task of project `slug` as index entries, sorted by number then id, with the warnings
/// a listing reports (FORMAT §4.4); of two copies of one id the greater `rev` is used.
pub fn tasks(ws: &Workspace, slug: &str) -> Result<Listing<TaskEntry>, Error> {
    let mut out = Listing::default();
    let mut cache: FileCache<TaskEntry> = FileCache::load(ws, &format!("tasks-{slug}"));
    let tasks_dir = ws.path(&["projects", slug, "tasks"]);
    for (name, path) in ws.fs.list_dir(&tasks_dir)? {
        if name.starts_with('.') || STATUS_FOLDERS.contains(&name.as_str()) {
            continue;
        }
        if ws.fs.entry_kind(&path)? == DirEntryKind::Dir {
            for (_, p) in md_files(ws, &path)? {
                out.warnings.push(Problem {
                    path: ws.display(&p),
                    reason: Reason::UnknownFolder,
                    detail: format!("`{name}` is not one of open, active, blocked, done"),
                });
            }
        }
    }
    let mut by_id: BTreeMap<String, Vec<(String, TaskEntry)>> = BTreeMap::new();
    for folder in STATUS_FOLDERS {
        for (name, path) in md_files(ws, &tasks_dir.join(folder))? {
            let file = key_of(ws, &path);
            let entry = cache.extract(ws, &path, &mut out.warnings, |doc, _| {
                task_entry(doc, slug, folder, &name, file.clone())
                    .map_err(|e| field_problem(ws, &path, e))
            })?;
            if let Some(e) = entry {
                by_id
                    .entry(e.id.clone())
                    .or_default()
                    .push((ws.display(&path), e));
            }
        }
    }
    cache.save(ws);
    for (id, mut copies) in by_id {
        if copies.len() > 1 {
            copies.sort_by(|a, b| b.1.rev.cmp(&a.1.rev).then(a.0.cmp(&b.0)));
            let paths: Vec<String> = copies.iter().map(|c| c.0.clone()).collect();
            for (path, _) in &copies {
                let others: Vec<&str> = paths
                    .iter()
                    .filter(|p| *p != path)
                    .map(String::as_str)
                    .collect();
                out.warnings.push(Problem {
                    path: path.clone(),
                    reason: Reason::DuplicateId,
                    detail: format!("{id} is also at {}", others.join(", ")),
                });
            }
        }
        out.items.extend(copies.into_iter().next().map(|c| c.1));
    }
    out.items
        .sort_by(|a, b| (a.number, &a.id).cmp(&(b.number, &b.id)));
    Ok(out)
}

fn task_entry(
    doc: &Document,
    slug: &str,
    folder: &str,
    name: &str,
    file: String,
) -> Result<TaskEntry, crate::model::FieldError> {
    let head = TaskHead::parse(&doc.front, &doc.body, name, folder, doc.title())?;
    let (number, file_slug) = parse_task_filename(name).unwrap_or((head.number, &head.slug));
    let parent = doc
        .front
        .get("parent")
        .and_then(|p| p.as_str())
        .map(|p| strip_wikilink(p).to_string());
    Ok(TaskEntry {
        project: slug.to_string(),
        id: head.id,
        number,
        slug: file_slug.to_string(),
        title: head.title,
        folder: folder.to_string(),
        parent,
        owner: head.owner,
        assignee: head.assignee,
        rev: head.rev,
        last_log_at: head.log.last().map(|l| l.at.clone()),
        file,
    })
}

/// The fields of a note that a brief ranks and filters by; the body is read only for the
/// notes that make it into a brief.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NoteEntry {
    pub id: String,
    pub kind: String,
    pub title: String,
    pub scope: String,
    /// The project directory for project scope; `None` for workspace scope.
    pub project: Option<String>,
    pub about: Option<String>,
    pub severity: Option<String>,
    pub supersedes: Option<String>,
    pub source_event: Option<String>,
    /// `created`, formatted (`2026-03-02T16:30:00Z`).
    pub created: String,
    pub created_by: String,
    /// The file stem (the slug made from the title).
    pub stem: String,
    /// Path relative to the workspace directory.
    pub file: String,
}

/// Every note of the projects `projects` (directory names, as [`super::projects::list`]
/// gives them) and of the workspace scope, sorted by id, with the warnings of the listing.
pub fn notes(ws: &Workspace, projects: &[String]) -> Result<Listing<NoteEntry>, Error> {
    use crate::model::note::{NOTE_KINDS, NoteHead};
    let mut out = Listing::default();
    let mut cache: FileCache<NoteEntry> = FileCache::load(ws, "notes");
    let mut scopes: Vec<Option<String>> = projects.iter().cloned().map(Some).collect();
    scopes.push(None);
    for project in &scopes {
        for (_, dir) in NOTE_KINDS {
            let base = match project {
                Some(slug) => ws.path(&["projects", slug, "notes", dir]),
                None => ws.path(&["notes", dir]),
            };
            let scope = if project.is_some() {
                "project"
            } else {
                "workspace"
            };
            for (name, path) in md_files(ws, &base)? {
                let entry = cache.extract(ws, &path, &mut out.warnings, |doc, _| {
                    let head = NoteHead::parse(&doc.front, &doc.body, dir, scope)
                        .map_err(|e| field_problem(ws, &path, e))?;
                    Ok(NoteEntry {
                        id: head.id,
                        kind: head.kind,
                        title: head.title,
                        scope: head.scope,
                        project: project.clone(),
                        about: head.about,
                        severity: head.severity,
                        supersedes: head.supersedes,
                        source_event: head.source_event,
                        created: crate::model::format_time(head.created),
                        created_by: head.created_by,
                        stem: name.trim_end_matches(".md").to_string(),
                        file: key_of(ws, &path),
                    })
                })?;
                out.items.extend(entry);
            }
        }
    }
    cache.save(ws);
    out.items.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}
