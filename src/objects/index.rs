//! The derived index (docs/DESIGN.md, "The engine"): small per-file extracts of object files
//! in the workspace's SQLite index ([`crate::store::index`]), so that a read needing a few
//! fields of many files parses only the files that changed.
//!
//! Invariants, which make deleting `cache/` change nothing but speed:
//! - an extract is a pure function of the file's bytes;
//! - every extract served is validated against its file the way git validates its index: the
//!   file's stamp (size, modification and change times to the nanosecond, inode) equals the
//!   one its row was written with, and that stamp was settled then — older than a reading of
//!   the file system's own clock taken before it ([`Stamp::settled_before`], git's racy
//!   rule). Any later write, `touch`, `cp -p` or rename gives the file a change time at least
//!   that reading, which no row holds;
//! - a directory's names come from its row only while the directory's own stamp is unchanged
//!   and was settled the same way (an entry added, removed or renamed changes it); otherwise
//!   it is listed;
//! - malformed files are indexed by name only, so they are re-read and reported on every call;
//! - an index that cannot be opened, read or written is an empty one: the files are the only
//!   source of truth.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::codec::{Buf, Extent, Input, Output, Record, RecordBuilder, offset_at, offset_width};

use crate::model::task::{TaskHead, parse_task_filename};
use crate::model::taskdoc::{Delivery, strip_wikilink};
use crate::store::index::{DirRows, DirUpdate, FileRow, Row};
use crate::store::{Problem, ReadDocument, Reason, TEMP_PREFIX};
use crate::workspace::{STATUS_FOLDERS, Workspace};

use super::{Error, Listing, field_problem, warn_or_fail};

/// The layout of extracts; with each extract type's fingerprint ([`format_of`]) it names
/// the kind rows are stored under. Bumped when bytes are read differently.
const FORMAT: &str = "dacli-index/11";

pub use crate::store::Stamp;

/// An extract kept in the index: how it is written, and read back from its row's bytes.
///
/// Invariant: `decode` reads back exactly what `encode` wrote. The kind a row is stored
/// under names the layout: [`FORMAT`] and a fingerprint of `sample`'s encoding
/// ([`format_of`]). A change to `encode` changes the fingerprint by itself; a change only to
/// how bytes are read must change [`FORMAT`].
pub trait Extract: Send + Sync + Sized + 'static {
    fn encode(&self, out: &mut Output);
    fn decode(buf: &Buf, input: &mut Input<'_>) -> Option<Self>;
    /// A value with every field set, each to a different value.
    fn sample() -> Self;
}

/// The layout name of `T` extracts. (Two intermediate layouts once shared one format
/// string; rows written by one decoded as empty events under the other.)
pub fn format_of<T: Extract>() -> String {
    let mut out = Output::default();
    T::sample().encode(&mut out);
    format!("{FORMAT}/{:08x}", crc32fast::hash(&out.0))
}

/// The rows of one kind of extract in the index ([`crate::store::index`]), read once per
/// pass, and what the pass found.
///
/// Use: [`settled_pass`] (which loads it), one [`FileCache::scan`] per directory of the
/// scanned set, then [`FileCache::save`]. Directories not scanned are dropped at save, so one
/// kind covers one whole scanned set (the tasks of one project, the notes, the event log).
pub struct FileCache<T> {
    kind: String,
    old: Arc<HashMap<String, DirRows>>,
    /// The directories of `old` scanned so far.
    seen: std::collections::HashSet<String>,
    updates: Vec<DirUpdate>,
    /// Each directory scanned: its path, its stamp before it was looked at, the names it was
    /// found to hold, and whether it was served from settled rows without listing it.
    scanned: Vec<(PathBuf, Option<Stamp>, Vec<String>, bool)>,
    /// A listed file was gone by the time it was read: a writer moved or removed it.
    vanished: bool,
    _extract: std::marker::PhantomData<T>,
}

impl<T: Extract> FileCache<T> {
    /// The rows of `name` (e.g. `tasks-<slug>`) in the workspace's index; none when the index
    /// is unusable or holds another layout.
    pub fn load(ws: &Workspace, name: &str) -> FileCache<T> {
        let kind = format!("{name}@{}", format_of::<T>());
        FileCache {
            old: ws.index.load(&kind),
            seen: std::collections::HashSet::new(),
            kind,
            updates: Vec::new(),
            scanned: Vec::new(),
            vanished: false,
            _extract: std::marker::PhantomData,
        }
    }

    /// The extracts of the `.md` files of `dir` (no hidden or temporary names), in name
    /// order, each validated against its file: a file whose stamp (size, modification and
    /// change times, inode) equals its row's, and was settled when the row was written, is
    /// served from the row; every other file is read and parsed by `parse` (from the file's
    /// name, path, stamp and bytes). The names come from the directory's row
    /// while the directory's own stamp is unchanged and settled, else from listing it. A file
    /// that cannot be read or parsed is pushed to `warnings` and skipped (and read again on
    /// every call); real I/O failures are errors.
    pub fn scan(
        &mut self,
        ws: &Workspace,
        dir: &Path,
        warnings: &mut Vec<Problem>,
        parse: impl Fn(&str, &Path, Option<Stamp>, &[u8]) -> Result<T, Problem> + Sync,
    ) -> Result<Vec<Arc<T>>, Error> {
        let key = key_of(ws, dir);
        self.seen.insert(key.clone());
        let rows_of = Arc::clone(&self.old);
        let empty = DirRows::default();
        let old = rows_of.get(&key).unwrap_or(&empty);
        let mut stamp = Stamp::of_dir(dir);
        let trusted_dir = stamp.is_some()
            && old
                .stamp
                .is_some_and(|(s, settled)| settled && Some(s) == stamp);
        let listing: Vec<String> = if trusted_dir {
            Vec::new()
        } else {
            // Listed again: the stamp that describes the listing is taken after the clock.
            let clock = ws.index.clock_ns();
            stamp = Stamp::of_dir(dir);
            let names = md_names(ws, dir)?;
            let settled = stamp.zip(clock).is_some_and(|(s, c)| s.settled_before(c));
            self.updates.push(DirUpdate {
                dir: key.clone(),
                stamp: stamp.map(|s| (s, settled)),
                upsert: Vec::new(),
                remove: Vec::new(),
            });
            names
        };
        // A trusted directory's names are borrowed from its rows: no string per file.
        let names: Vec<&str> = if trusted_dir {
            old.files.iter().map(|f| old.name(f)).collect()
        } else {
            listing.iter().map(String::as_str).collect()
        };
        // The stamps recorded with the bytes of the files read below are these, so they are
        // taken after the clock, and before the bytes.
        let clock = ws.index.clock_ns();
        // Not through a directory that is no real directory now (a symlink, perhaps leading
        // out of `.dacli/`): no row is served, every file is read, and the read enforces
        // where files may be. In two threads for a directory of thousands, where the
        // `lstat`s are most of a warm read.
        // Its descriptor serves the `lstat`s here and the opens of the files read below.
        let real_dir = stamp.is_some().then(|| crate::store::OpenDir::new(dir));
        let (stamps, rows): (Vec<Option<Stamp>>, &[Row]) = match &real_dir {
            Some(d) => {
                let threads = if names.len() >= 512 { 2 } else { 1 };
                (crate::store::stamp::of_all(d, &names, threads), &old.files)
            }
            None => (names.iter().map(|n| Stamp::of(&dir.join(n))).collect(), &[]),
        };
        // Rows are in name order, and so (almost always) are the names: the row after the
        // last one found is tried before a binary search.
        let mut next_row = 0;
        let mut row_of = |name: &str| -> Option<&Row> {
            let at = match rows.get(next_row) {
                Some(r) if old.name(r) == name => next_row,
                _ => rows.binary_search_by(|r| old.name(r).cmp(name)).ok()?,
            };
            next_row = at + 1;
            rows.get(at)
        };
        // Rows that prove their file are served; the rest are read after the loop, in
        // several threads when there are many (a cold read parses every file).
        let mut slots: Vec<Option<Arc<T>>> = Vec::with_capacity(names.len());
        let mut misses: Vec<(usize, &str, Option<&Row>, Option<Stamp>)> = Vec::new();
        for (&name, file_stamp) in names.iter().zip(stamps) {
            let row = row_of(name);
            if let (Some(row), Some(s)) = (row, file_stamp)
                && row.settled
                && row.stamp() == Some(s)
                && !old.extract(row).is_empty()
                && let Some((buf, range)) = old.extract_in(row)
                && let Some(value) = decode::<T>(buf, range)
            {
                slots.push(Some(Arc::new(value)));
                continue;
            }
            misses.push((slots.len(), name, row, file_stamp));
            slots.push(None);
        }
        // A stamp from `of_all` is an `lstat` that found a regular file, so the read need not
        // classify the file again; one taken through a directory that is no real directory
        // is not, and that read enforces where files may be itself.
        let read_one =
            |name: &str, stamp| read_file(ws, dir, name, stamp, real_dir.as_ref(), clock, &parse);
        let reads: Vec<Result<FileRead<T>, Error>> =
            if misses.len() >= PARALLEL_READS && !ws.fs.fault_armed() {
                let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
                let chunk = misses.len().div_ceil(threads);
                std::thread::scope(|scope| {
                    let parts: Vec<_> = misses
                        .chunks(chunk)
                        .map(|part| {
                            scope.spawn(move || {
                                part.iter()
                                    .map(|&(_, name, _, stamp)| read_one(name, stamp))
                                    .collect::<Vec<_>>()
                            })
                        })
                        .collect();
                    parts
                        .into_iter()
                        .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                        .collect()
                })
            } else {
                misses
                    .iter()
                    .map(|&(_, name, _, stamp)| read_one(name, stamp))
                    .collect()
            };
        let mut upsert = Vec::new();
        let mut vanished: Vec<&str> = Vec::new();
        for ((at, name, row, _), read) in misses.into_iter().zip(reads) {
            let read = match read {
                // Listed, then moved or removed by a writer before it was read: not an error
                // of the workspace; the caller decides whether to look again.
                Err(e) if e.is_vanished() => {
                    self.vanished = true;
                    vanished.push(name);
                    continue;
                }
                other => other?,
            };
            warnings.extend(read.warnings);
            // The codec writes UTF-8 only; bytes that were not would be no row to keep.
            if let (Some(s), Some(extract_text)) = (read.stamp, read.extract)
                && !(row.is_some_and(|r| {
                    r.stamp() == Some(s)
                        && r.settled == read.settled
                        && old.extract(r) == extract_text
                }))
            {
                upsert.push(FileRow {
                    name: name.to_string(),
                    stamp: s,
                    settled: read.settled,
                    extract: Arc::new(extract_text),
                });
            }
            slots[at] = read.value.map(Arc::new);
        }
        let out: Vec<Arc<T>> = slots.into_iter().flatten().collect();
        // Rows of names the directory no longer holds, or whose file vanished meanwhile. A
        // directory served from its rows holds exactly their names.
        // Both in name order: the listing is searched, not hashed.
        let listed = |name: &str| names.binary_search(&name).is_ok();
        let remove: Vec<String> = old
            .files
            .iter()
            .map(|f| old.name(f))
            .filter(|name| (!trusted_dir && !listed(name)) || vanished.contains(name))
            .map(str::to_string)
            .collect();
        if !upsert.is_empty() || !remove.is_empty() {
            match self.updates.iter_mut().find(|u| u.dir == key) {
                Some(u) => {
                    u.upsert = upsert;
                    u.remove = remove;
                }
                None => self.updates.push(DirUpdate {
                    dir: key.clone(),
                    stamp: old.stamp,
                    upsert,
                    remove,
                }),
            }
        }
        drop(names);
        self.scanned
            .push((dir.to_path_buf(), stamp, listing, trusted_dir));
        Ok(out)
    }

    /// True when what [`FileCache::scan`] saw may not be one state of the scanned set: a
    /// listed file vanished before it was read, or a scanned directory changed since it was
    /// looked at (a task moved from a folder not yet scanned to one already scanned is
    /// otherwise missed). A directory whose stamp is too recent to prove it unchanged (a
    /// change within the same clock tick keeps it) is listed again and its names compared.
    ///
    /// A pass that served every directory's names from settled rows needs no second look:
    /// each settled stamp was unchanged when it was looked at, and a settled stamp never
    /// comes back once changed, so every one of them held its indexed names when the first
    /// was looked at. That is one state; a warm read is such a pass.
    pub fn unsettled(&self, ws: &Workspace) -> Result<bool, Error> {
        if self.vanished {
            return Ok(true);
        }
        if self.scanned.iter().all(|(_, _, _, trusted)| *trusted) {
            return Ok(false);
        }
        let clock = ws.index.clock_ns();
        for (dir, before, names, _) in &self.scanned {
            let now = Stamp::of_dir(dir);
            if now != *before {
                return Ok(true);
            }
            if !now.zip(clock).is_some_and(|(s, c)| s.settled_before(c)) {
                let again = md_names(ws, dir)?;
                if again != *names {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Records what this pass found in the index (one transaction; nothing when nothing
    /// changed). Failure is ignored: the index is only an accelerator, and a read-only
    /// workspace must still be readable.
    pub fn save(mut self, ws: &Workspace) {
        // Directories indexed before but not scanned now are gone from the set.
        for dir in self.old.keys().filter(|d| !self.seen.contains(*d)) {
            self.updates.push(DirUpdate {
                dir: dir.clone(),
                stamp: None,
                upsert: Vec::new(),
                remove: Vec::new(),
            });
        }
        if self.updates.is_empty() || !ws.fs.derived_write_allowed(ws.index.path()) {
            return;
        }
        ws.index.store(&self.kind, self.updates);
    }
}

/// Misses from which [`FileCache::scan`] reads in several threads: below this, starting
/// them costs more than the parses they share.
const PARALLEL_READS: usize = 64;

/// One file read for [`FileCache::scan`]: its extract (`None` when it is bad, with why in
/// `warnings`), the extract's bytes for its row (`None` when they are no UTF-8), and the
/// stamp taken before the bytes were read, with whether it was settled against `clock`.
struct FileRead<T> {
    value: Option<T>,
    extract: Option<String>,
    stamp: Option<Stamp>,
    settled: bool,
    warnings: Vec<Problem>,
}

/// Reads and parses `dir/name`, whose stamp `stamp` was taken after `clock` was read and
/// before this read: the bytes are never older than the stamp recorded with them.
fn read_file<T: Extract>(
    ws: &Workspace,
    dir: &Path,
    name: &str,
    stamp: Option<Stamp>,
    lstated: Option<&crate::store::OpenDir>,
    clock: Option<i128>,
    parse: &impl Fn(&str, &Path, Option<Stamp>, &[u8]) -> Result<T, Problem>,
) -> Result<FileRead<T>, Error> {
    let path = dir.join(name);
    let mut warnings = Vec::new();
    let regular = lstated.zip(stamp).map(|(d, s)| (d, name, s.size()));
    let value = extract(ws, &path, regular, &mut warnings, |bytes| {
        parse(name, &path, stamp, bytes)
    })?;
    let extract = value.as_ref().map_or(Some(String::new()), |v| {
        let mut o = Output::default();
        v.encode(&mut o);
        String::from_utf8(o.0).ok()
    });
    let settled = stamp.zip(clock).is_some_and(|(s, c)| s.settled_before(c));
    Ok(FileRead {
        value,
        extract,
        stamp,
        settled,
        warnings,
    })
}

/// A row's bytes decoded; `None` for bytes this layout did not write.
fn decode<T: Extract>(buf: &Buf, range: std::ops::Range<usize>) -> Option<T> {
    let mut input = Input::within(buf.as_bytes(), range)?;
    let value = T::decode(buf, &mut input)?;
    input.at_end().then_some(value)
}

/// Reads and parses one file into an extract; a bad file becomes a warning and `None`.
/// `regular` is the file's directory, name and the length an `lstat` of a regular file just
/// gave, if one did.
fn extract<T>(
    ws: &Workspace,
    path: &Path,
    regular: Option<(&crate::store::OpenDir, &str, u64)>,
    warnings: &mut Vec<Problem>,
    parse: impl FnOnce(&[u8]) -> Result<T, Problem>,
) -> Result<Option<T>, Error> {
    let read = match regular {
        Some((dir, name, len)) => ws.fs.read_regular(dir, name, len),
        None => ws.fs.read(path),
    };
    let bytes = match read {
        Ok(b) => b,
        Err(e) => {
            warn_or_fail(warnings, Err(e))?;
            return Ok(None);
        }
    };
    match parse(&bytes) {
        Ok(value) => Ok(Some(value)),
        Err(p) => {
            warnings.push(p);
            Ok(None)
        }
    }
}

/// `cache/<file>` in the workspace.
pub fn cache_file_named(ws: &Workspace, file: &str) -> std::path::PathBuf {
    ws.path(&["cache", file])
}

/// Runs `pass` over the index's rows of `name` until one pass saw a single state of the
/// directories it scanned ([`FileCache::unsettled`]), fifty passes at most; the last is served
/// as found. Writers move and remove files while readers list (a task changing status, an
/// event archived): without this, a reader fails on a file listed then gone, or misses one
/// moved from a directory not yet scanned to one already scanned. Five passes were not
/// enough against a writer moving one task every 0.3 ms. A pass over settled directories
/// costs a few `stat`s, so the bound costs nothing unless writers never stop.
pub fn settled_pass<T, R, E>(
    ws: &Workspace,
    name: &str,
    mut pass: impl FnMut(&mut FileCache<T>) -> Result<R, E>,
) -> Result<(R, FileCache<T>), E>
where
    T: Extract,
    E: From<Error>,
{
    const ATTEMPTS: usize = 50;
    let mut attempt = 1;
    loop {
        let mut cache = FileCache::load(ws, name);
        let found = pass(&mut cache)?;
        if attempt >= ATTEMPTS || !cache.unsettled(ws)? {
            return Ok((found, cache));
        }
        attempt += 1;
    }
}

fn key_of(ws: &Workspace, path: &Path) -> String {
    path.strip_prefix(ws.dir())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_string_lossy().into_owned())
}

/// The `.md` files of `dir` that a listing reads: no hidden or temporary names, sorted.
/// The names of [`md_files`], in name order, without building a path for each: a listing of
/// a folder of ten thousand tasks costs about half as much.
pub fn md_names(ws: &Workspace, dir: &Path) -> Result<Vec<String>, Error> {
    let mut names: Vec<String> = ws
        .fs
        .names(dir)?
        .into_iter()
        .filter(|name| {
            !name.starts_with('.') && !name.starts_with(TEMP_PREFIX) && name.ends_with(".md")
        })
        .collect();
    names.sort_unstable();
    Ok(names)
}

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

/// The fields of a task that listings, status and briefs need of tasks they do not show in
/// full: enough to count, filter, sort, resolve references and summarise without the file.
///
/// A view into the bytes of its cache file (or a buffer of its own for a task just parsed):
/// reading ten thousand entries allocates nothing per string, and each accessor reads its
/// field directly. Layout: a fixed head of number, checked and total criteria (`u32` each), a
/// flag byte and the three estimates (`f64` each); the end offset of each string of
/// [`TaskField`] (`u16`, or `u32` when the flag says the strings are wider than that); the
/// strings; then the tags and the dependencies, length-prefixed. (A [`Record`] would do, but
/// its slot table and integer slots cost a third more time on the reads that walk every task.)
#[derive(Clone, PartialEq)]
pub struct TaskEntry(Extent);

/// The owned fields a [`TaskEntry`] is made from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskFields {
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
    pub priority: String,
    /// Checked and total acceptance criteria.
    pub checked: usize,
    pub criteria: usize,
    /// Optimistic, probable and pessimistic effort, when estimated.
    pub estimate: Option<[f64; 3]>,
    pub tags: Vec<String>,
    /// `(on, type)` of each dependency.
    pub depends_on: Vec<(String, String)>,
    /// Timestamp of the last `## Log` line (when the task last changed), if any.
    pub last_log_at: Option<String>,
    /// Timestamp of the last Log line that made it active (`claimed`, `assigned …`,
    /// `status open -> active`), if any.
    pub active_since: Option<String>,
    /// Path relative to the workspace directory.
    pub file: String,
    /// How many times the task was reopened.
    pub generation: i64,
    /// Timestamp of the last Log line that reopened it, if any.
    pub reopened_at: Option<String>,
    /// The recorded delivery.
    pub delivery: Delivery,
}

/// The strings of a task entry, in the order they are stored.
#[derive(Clone, Copy)]
enum TaskField {
    Project,
    Id,
    Slug,
    Title,
    Folder,
    Parent,
    Owner,
    Assignee,
    Rev,
    Priority,
    LastLogAt,
    ActiveSince,
    File,
}

const TASK_STRINGS: usize = 13;
/// number, checked, criteria (five bytes of seven bits each), flags, estimate (ten each).
const TASK_HEAD: usize = 5 + 5 + 5 + 1 + 3 * 10;
/// Where the flag byte is.
const TASK_FLAGS: usize = 15;
const HAS_ESTIMATE: u8 = 1;
const HAS_PARENT: u8 = 2;
const HAS_ASSIGNEE: u8 = 4;
const HAS_LAST_LOG: u8 = 8;
const HAS_ACTIVE_SINCE: u8 = 16;
/// The string offsets are `u32`, not `u16`.
const WIDE: u8 = 32;

/// An optional string as a list of none or one.
fn optional_str(out: &mut Output, s: Option<&str>) {
    out.var(u64::from(s.is_some()));
    if let Some(s) = s {
        out.str(s);
    }
}

fn read_optional_str<'a>(input: &mut Input<'a>) -> Option<&'a str> {
    match input.count()? {
        0 => None,
        _ => input.str(),
    }
}

impl TaskEntry {
    /// The entry holding `f`, in a buffer of its own.
    pub fn new(f: &TaskFields) -> TaskEntry {
        let mut out = Output::default();
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        out.fixed(u64::from(f.number), 5);
        out.fixed(u64::from(count(f.checked)), 5);
        out.fixed(u64::from(count(f.criteria)), 5);
        let flag = |on: bool, bit: u8| if on { bit } else { 0 };
        out.u8(flag(f.estimate.is_some(), HAS_ESTIMATE)
            | flag(f.parent.is_some(), HAS_PARENT)
            | flag(f.assignee.is_some(), HAS_ASSIGNEE)
            | flag(f.last_log_at.is_some(), HAS_LAST_LOG)
            | flag(f.active_since.is_some(), HAS_ACTIVE_SINCE));
        for x in f.estimate.unwrap_or_default() {
            out.f64(x);
        }
        let opt = |o: &Option<String>| o.as_deref().unwrap_or_default().to_string();
        let strings = [
            &f.project,
            &f.id,
            &f.slug,
            &f.title,
            &f.folder,
            &opt(&f.parent),
            &f.owner,
            &opt(&f.assignee),
            &f.rev,
            &f.priority,
            &opt(&f.last_log_at),
            &opt(&f.active_since),
            &f.file,
        ];
        let total: usize = strings.iter().map(|s| s.len()).sum();
        let width = offset_width(total);
        if width != 3 {
            out.0[TASK_FLAGS] |= WIDE;
        }
        let mut end = 0;
        for s in &strings {
            end += s.len();
            out.fixed(end as u64, width);
        }
        for s in &strings {
            out.0.extend_from_slice(s.as_bytes());
        }
        out.var(f.tags.len() as u64);
        for t in &f.tags {
            out.str(t);
        }
        out.var(f.depends_on.len() as u64);
        for (on, kind) in &f.depends_on {
            out.str(on);
            out.str(kind);
        }
        out.ivar(i128::from(f.generation));
        optional_str(&mut out, f.reopened_at.as_deref());
        optional_str(&mut out, f.delivery.branch.as_deref());
        out.var(u64::from(f.delivery.pr.is_some()));
        if let Some(pr) = f.delivery.pr {
            out.ivar(i128::from(pr));
        }
        out.var(f.delivery.commits.len() as u64);
        for c in &f.delivery.commits {
            out.str(c);
        }
        TaskEntry(Extent::own(out.0))
    }

    fn bytes(&self) -> &[u8] {
        self.0.bytes()
    }

    fn head(&self, at: usize) -> u64 {
        self.bytes()
            .get(at..at + 5)
            .and_then(|b| Input::new(b).fixed(5))
            .unwrap_or(0)
    }

    fn flags(&self) -> u8 {
        self.bytes().get(TASK_FLAGS).copied().unwrap_or(0)
    }

    /// The width of a string offset, and where the strings start.
    fn table(&self) -> (usize, usize) {
        let width = if self.flags() & WIDE != 0 { 5 } else { 3 };
        (width, TASK_HEAD + TASK_STRINGS * width)
    }

    /// The end of string `i`, relative to the start of the strings.
    fn end(&self, i: usize) -> usize {
        let (width, _) = self.table();
        offset_at(self.bytes(), TASK_HEAD, width, i)
    }

    /// A slice of the buffer, which is UTF-8 throughout: no check of the bytes per read.
    fn string(&self, field: TaskField) -> &str {
        let i = field as usize;
        let (_, data) = self.table();
        let start = if i == 0 { 0 } else { self.end(i - 1) };
        let base = self.0.range().start + data;
        self.0.text(base + start..base + self.end(i))
    }

    fn optional(&self, field: TaskField, bit: u8) -> Option<&str> {
        (self.flags() & bit != 0).then(|| self.string(field))
    }

    /// The project's directory name.
    pub fn project(&self) -> &str {
        self.string(TaskField::Project)
    }
    pub fn id(&self) -> &str {
        self.string(TaskField::Id)
    }
    pub fn number(&self) -> u32 {
        u32::try_from(self.head(0)).unwrap_or(0)
    }
    pub fn slug(&self) -> &str {
        self.string(TaskField::Slug)
    }
    pub fn title(&self) -> &str {
        self.string(TaskField::Title)
    }
    /// The status folder the file is in.
    pub fn folder(&self) -> &str {
        self.string(TaskField::Folder)
    }
    pub fn parent(&self) -> Option<&str> {
        self.optional(TaskField::Parent, HAS_PARENT)
    }
    pub fn owner(&self) -> &str {
        self.string(TaskField::Owner)
    }
    pub fn assignee(&self) -> Option<&str> {
        self.optional(TaskField::Assignee, HAS_ASSIGNEE)
    }
    pub fn rev(&self) -> &str {
        self.string(TaskField::Rev)
    }
    pub fn priority(&self) -> &str {
        self.string(TaskField::Priority)
    }
    /// Checked acceptance criteria.
    pub fn checked(&self) -> usize {
        self.head(5) as usize
    }
    /// Acceptance criteria in all.
    pub fn criteria(&self) -> usize {
        self.head(10) as usize
    }
    /// Optimistic, probable and pessimistic effort, when estimated.
    pub fn estimate(&self) -> Option<[f64; 3]> {
        if self.flags() & HAS_ESTIMATE == 0 {
            return None;
        }
        let mut input = Input::new(self.bytes());
        input.skip(TASK_FLAGS + 1)?;
        Some([input.f64()?, input.f64()?, input.f64()?])
    }
    /// Timestamp of the last `## Log` line (when the task last changed), if any.
    pub fn last_log_at(&self) -> Option<&str> {
        self.optional(TaskField::LastLogAt, HAS_LAST_LOG)
    }
    /// Timestamp of the last Log line that made it active (`claimed`, `assigned …`,
    /// `status open -> active`), if any.
    pub fn active_since(&self) -> Option<&str> {
        self.optional(TaskField::ActiveSince, HAS_ACTIVE_SINCE)
    }
    /// Path relative to the workspace directory.
    pub fn file(&self) -> &str {
        self.string(TaskField::File)
    }

    /// The input positioned after the strings, at the tags.
    fn lists(&self) -> Input<'_> {
        let (_, data) = self.table();
        let mut input = Input::new(self.bytes());
        input.skip(data + self.end(TASK_STRINGS - 1));
        input
    }

    pub fn tags(&self) -> Vec<&str> {
        let mut input = self.lists();
        let n = input.count().unwrap_or(0);
        (0..n).map_while(|_| input.str()).collect()
    }

    /// `(on, type)` of each dependency.
    pub fn depends_on(&self) -> Vec<(&str, &str)> {
        let mut input = self.lists();
        for _ in 0..input.count().unwrap_or(0) {
            input.span();
        }
        let n = input.count().unwrap_or(0);
        (0..n)
            .map_while(|_| Some((input.str()?, input.str()?)))
            .collect()
    }

    /// The input positioned after the dependencies, at the generation.
    fn after_lists(&self) -> Input<'_> {
        let mut input = self.lists();
        for _ in 0..input.count().unwrap_or(0) {
            input.span();
        }
        for _ in 0..input.count().unwrap_or(0) {
            input.span();
            input.span();
        }
        input
    }

    /// How many times the task was reopened.
    pub fn generation(&self) -> i64 {
        let v = self.after_lists().ivar().unwrap_or(0);
        i64::try_from(v).unwrap_or(0)
    }

    /// Timestamp of the last Log line that reopened it, if any.
    pub fn reopened_at(&self) -> Option<&str> {
        let mut input = self.after_lists();
        input.ivar()?;
        read_optional_str(&mut input)
    }

    /// The recorded delivery.
    pub fn delivery(&self) -> Delivery {
        let mut input = self.after_lists();
        let decoded = (|| {
            input.ivar()?;
            read_optional_str(&mut input);
            let branch = read_optional_str(&mut input).map(str::to_string);
            let pr = match input.count()? {
                0 => None,
                _ => Some(i64::try_from(input.ivar()?).ok()?),
            };
            let n = input.count()?;
            let commits = (0..n)
                .map_while(|_| input.str().map(str::to_string))
                .collect();
            Some(Delivery {
                branch,
                pr,
                commits,
            })
        })();
        decoded.unwrap_or_default()
    }

    /// All fields, owned.
    pub fn fields(&self) -> TaskFields {
        let own = |s: Option<&str>| s.map(str::to_string);
        TaskFields {
            project: self.project().to_string(),
            id: self.id().to_string(),
            number: self.number(),
            slug: self.slug().to_string(),
            title: self.title().to_string(),
            folder: self.folder().to_string(),
            parent: own(self.parent()),
            owner: self.owner().to_string(),
            assignee: own(self.assignee()),
            rev: self.rev().to_string(),
            priority: self.priority().to_string(),
            checked: self.checked(),
            criteria: self.criteria(),
            estimate: self.estimate(),
            tags: self.tags().into_iter().map(str::to_string).collect(),
            depends_on: self
                .depends_on()
                .into_iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            last_log_at: own(self.last_log_at()),
            active_since: own(self.active_since()),
            file: self.file().to_string(),
            generation: self.generation(),
            reopened_at: own(self.reopened_at()),
            delivery: self.delivery(),
        }
    }

    /// `<project>/<NNN>-<slug>`.
    pub fn reference(&self) -> String {
        format!("{}/{:03}-{}", self.project(), self.number(), self.slug())
    }

    /// `<NNN>-<slug>`, the short name used inside one project.
    pub fn short(&self) -> String {
        format!("{:03}-{}", self.number(), self.slug())
    }

    /// The `TaskRef` of this task.
    pub fn task_ref(&self) -> crate::model::task::TaskRef {
        crate::model::task::TaskRef {
            id: self.id().to_string(),
            reference: self.reference(),
            project: format!("p-{}", self.project()),
            number: self.number(),
            title: self.title().to_string(),
        }
    }

    /// The status its folder stands for.
    pub fn status(&self) -> crate::model::task::Status {
        crate::model::task::Status::parse(self.folder()).unwrap_or(crate::model::task::Status::Open)
    }
}

impl Extract for TaskEntry {
    fn encode(&self, out: &mut Output) {
        self.0.encode(out);
    }

    fn sample() -> TaskEntry {
        TaskEntry::new(&TaskFields {
            project: "project".into(),
            id: "id".into(),
            number: 1,
            slug: "slug".into(),
            title: "title".into(),
            folder: "folder".into(),
            parent: Some("parent".into()),
            owner: "owner".into(),
            assignee: Some("assignee".into()),
            rev: "rev".into(),
            priority: "priority".into(),
            checked: 2,
            criteria: 3,
            estimate: Some([4.0, 5.0, 6.0]),
            tags: vec!["tag".into()],
            depends_on: vec![("on".into(), "type".into())],
            last_log_at: Some("last_log_at".into()),
            active_since: Some("active_since".into()),
            file: "file".into(),
            generation: 1,
            reopened_at: Some("reopened_at".into()),
            delivery: Delivery {
                branch: Some("branch".into()),
                pr: Some(2),
                commits: vec!["commit".into()],
            },
        })
    }

    fn decode(buf: &Buf, input: &mut Input<'_>) -> Option<TaskEntry> {
        Extent::decode(buf, input)
            .filter(|e| e.bytes().len() >= TASK_HEAD)
            .map(TaskEntry)
    }
}

impl std::fmt::Debug for TaskEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.fields().fmt(f)
    }
}

/// Every task of project `slug` as index entries, sorted by number then id, with the warnings
/// a listing reports (FORMAT §4.4), exactly as [`super::tasks::list`] reports them; of two
/// copies of one id the greater `rev` is used.
pub fn tasks(ws: &Workspace, slug: &str) -> Result<Listing<Arc<TaskEntry>>, Error> {
    let (mut out, cache) = settled_pass(ws, &format!("tasks-{slug}"), |cache| {
        scan_tasks(ws, slug, cache)
    })?;
    cache.save(ws);
    let found = std::mem::take(&mut out.items);
    Ok(sorted_listing(ws, found, out))
}

/// The listing of `found`, the entries of one pass: copies of one id resolved (the greater
/// `rev` kept, each copy reported), sorted by number then id.
fn sorted_listing(
    ws: &Workspace,
    found: Vec<Arc<TaskEntry>>,
    mut out: Listing<Arc<TaskEntry>>,
) -> Listing<Arc<TaskEntry>> {
    // Copies of one id (a crash mid-move, or a merge) are rare: find them without building a
    // map of every id.
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let repeated: std::collections::BTreeSet<String> = found
        .iter()
        .filter(|e| !seen.insert(e.id()))
        .map(|e| e.id().to_string())
        .collect();
    let mut by_id: BTreeMap<String, Vec<Arc<TaskEntry>>> = BTreeMap::new();
    for e in found {
        if repeated.contains(e.id()) {
            by_id.entry(e.id().to_string()).or_default().push(e);
        } else {
            out.items.push(e);
        }
    }
    for (id, mut copies) in by_id {
        let shown = |e: &TaskEntry| ws.display(&ws.dir().join(e.file()));
        copies.sort_by(|a, b| b.rev().cmp(a.rev()).then(shown(a).cmp(&shown(b))));
        let paths: Vec<String> = copies.iter().map(|c| shown(c)).collect();
        for path in &paths {
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
        out.items.extend(copies.into_iter().next());
    }
    out.items
        .sort_by(|a, b| a.number().cmp(&b.number()).then_with(|| a.id().cmp(b.id())));
    out
}

/// One pass over the task folders of project `slug`: the entries found, unsorted and with
/// copies of one id not yet resolved, and the listing's warnings so far.
fn scan_tasks(
    ws: &Workspace,
    slug: &str,
    cache: &mut FileCache<TaskEntry>,
) -> Result<Listing<Arc<TaskEntry>>, Error> {
    let mut out = Listing::default();
    let tasks_dir = ws.path(&["projects", slug, "tasks"]);
    // No status move runs while the folders are listed ([`super::tasks::moves_lock`]).
    let _moves = ws
        .fs
        .lock_shared_if_exists(&super::folders::moves_lock(ws, slug))?;
    super::folders::unknown_folders(ws, &tasks_dir, &mut out.warnings)?;
    let mut found: Vec<Arc<TaskEntry>> = Vec::new();
    for folder in STATUS_FOLDERS {
        found.extend(cache.scan(
            ws,
            &tasks_dir.join(folder),
            &mut out.warnings,
            |name, path, _, bytes| {
                let doc = ReadDocument::parse(&ws.display(path), bytes)?;
                task_entry(doc, slug, folder, name, key_of(ws, path))
                    .map_err(|e| field_problem(ws, path, e))
            },
        )?);
    }
    out.items = found;
    Ok(out)
}

/// Every task of every project as index entries (projects sorted by slug, tasks by number),
/// with the warnings of both listings, exactly as [`super::tasks::list_all`] reports them.
pub fn all_tasks(ws: &Workspace) -> Result<Listing<Arc<TaskEntry>>, Error> {
    let mut out = Listing::default();
    let p = super::projects::list(ws)?;
    out.warnings.extend(p.warnings);
    for project in &p.items {
        let t = tasks(ws, &project.slug)?;
        out.warnings.extend(t.warnings);
        out.items.extend(t.items);
    }
    Ok(out)
}

fn task_entry(
    doc: ReadDocument,
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
    // The same accessors the full reader's document has, so every derived field means the
    // same.
    let front = crate::model::taskdoc::TaskFront(doc.front.as_table());
    let estimate = front
        .estimate()?
        .map(|e| [e.optimistic, e.probable, e.pessimistic]);
    let criteria = crate::model::body::criteria(&doc.body);
    let active_since = crate::model::task::active_since(&head.log);
    Ok(TaskEntry::new(&TaskFields {
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
        priority: front.priority().to_string(),
        checked: criteria.iter().filter(|c| c.checked).count(),
        criteria: criteria.len(),
        estimate,
        tags: front.tags(),
        depends_on: front
            .depends_on()
            .into_iter()
            .map(|d| (d.on, d.kind))
            .collect(),
        last_log_at: head.log.last().map(|l| l.at.clone()),
        active_since,
        file,
        generation: front.generation(),
        reopened_at: crate::model::task::reopened_at(&head.log),
        delivery: front.delivery(),
    }))
}

/// The fields of a note that a brief ranks and filters by; the body is read only for the
/// notes that make it into a brief. Read in place from its cache file ([`Record`]).
#[derive(Clone, PartialEq)]
pub struct NoteEntry(Record);

/// The owned fields a [`NoteEntry`] is made from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NoteFields {
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

impl NoteEntry {
    pub fn new(f: &NoteFields) -> NoteEntry {
        NoteEntry(
            RecordBuilder::default()
                .str(&f.id)
                .str(&f.kind)
                .str(&f.title)
                .str(&f.scope)
                .opt(f.project.as_deref())
                .opt(f.about.as_deref())
                .opt(f.severity.as_deref())
                .opt(f.supersedes.as_deref())
                .opt(f.source_event.as_deref())
                .str(&f.created)
                .str(&f.created_by)
                .str(&f.stem)
                .str(&f.file)
                .build(),
        )
    }
    pub fn id(&self) -> &str {
        self.0.str(0)
    }
    pub fn kind(&self) -> &str {
        self.0.str(1)
    }
    pub fn title(&self) -> &str {
        self.0.str(2)
    }
    pub fn scope(&self) -> &str {
        self.0.str(3)
    }
    /// The project directory for project scope; `None` for workspace scope.
    pub fn project(&self) -> Option<&str> {
        self.0.opt(4)
    }
    pub fn about(&self) -> Option<&str> {
        self.0.opt(5)
    }
    pub fn severity(&self) -> Option<&str> {
        self.0.opt(6)
    }
    pub fn supersedes(&self) -> Option<&str> {
        self.0.opt(7)
    }
    pub fn source_event(&self) -> Option<&str> {
        self.0.opt(8)
    }
    /// `created`, formatted (`2026-03-02T16:30:00Z`).
    pub fn created(&self) -> &str {
        self.0.str(9)
    }
    pub fn created_by(&self) -> &str {
        self.0.str(10)
    }
    /// The file stem (the slug made from the title).
    pub fn stem(&self) -> &str {
        self.0.str(11)
    }
    /// Path relative to the workspace directory.
    pub fn file(&self) -> &str {
        self.0.str(12)
    }
}

impl std::fmt::Debug for NoteEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoteEntry")
            .field("id", &self.id())
            .field("file", &self.file())
            .finish_non_exhaustive()
    }
}

impl Extract for NoteEntry {
    fn encode(&self, out: &mut Output) {
        self.0.encode(out);
    }
    fn sample() -> NoteEntry {
        let o = |s: &str| Some(s.to_string());
        NoteEntry::new(&NoteFields {
            id: "id".into(),
            kind: "kind".into(),
            title: "title".into(),
            scope: "scope".into(),
            project: o("project"),
            about: o("about"),
            severity: o("severity"),
            supersedes: o("supersedes"),
            source_event: o("source_event"),
            created: "created".into(),
            created_by: "created_by".into(),
            stem: "stem".into(),
            file: "file".into(),
        })
    }
    fn decode(buf: &Buf, input: &mut Input<'_>) -> Option<NoteEntry> {
        Record::decode(buf, input).map(NoteEntry)
    }
}

impl NoteEntry {}

/// Every note of the projects `projects` (directory names, as [`super::projects::list`]
/// gives them) and of the workspace scope, sorted by id, with the warnings of the listing.
pub fn notes(ws: &Workspace, projects: &[String]) -> Result<Listing<Arc<NoteEntry>>, Error> {
    let (mut out, cache) = settled_pass(ws, "notes", |cache| scan_notes(ws, projects, cache))?;
    cache.save(ws);
    super::sort_by_str_key(&mut out.items, |n| n.id());
    Ok(out)
}

fn scan_notes(
    ws: &Workspace,
    projects: &[String],
    cache: &mut FileCache<NoteEntry>,
) -> Result<Listing<Arc<NoteEntry>>, Error> {
    use crate::model::note::{NOTE_KINDS, NoteHead};
    let mut out = Listing::default();
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
            let found = cache.scan(ws, &base, &mut out.warnings, |name, path, _, bytes| {
                let doc = ReadDocument::parse(&ws.display(path), bytes)?;
                let head = NoteHead::parse(&doc.front, &doc.body, dir, scope)
                    .map_err(|e| field_problem(ws, path, e))?;
                Ok(NoteEntry::new(&NoteFields {
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
                    file: key_of(ws, path),
                }))
            })?;
            out.items.extend(found);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(n: u32) -> TaskFields {
        TaskFields {
            project: "checkout".into(),
            id: format!("t-01KJPX6ZT81TTNRTABC9KBJY{n:02}"),
            number: n,
            slug: format!("task-{n}"),
            title: format!("Tâsk {n}: totals in cents"),
            folder: "active".into(),
            parent: n.is_multiple_of(2).then(|| "t-parent".to_string()),
            owner: "a-root".into(),
            assignee: n.is_multiple_of(3).then(|| "a-builder-x".to_string()),
            rev: "01KJPX6ZT81TTNRTABC9KBJYTV".into(),
            priority: "must".into(),
            checked: 1,
            criteria: usize::try_from(n).unwrap_or(0) + 2,
            estimate: (n % 2 == 1).then_some([1.0, 2.5, 9.0]),
            tags: (0..n % 3).map(|t| format!("tag-{t}")).collect(),
            depends_on: (0..n % 4)
                .map(|d| (format!("t-dep-{d}"), "blocks".to_string()))
                .collect(),
            last_log_at: Some("2026-03-03T10:02:44Z".into()),
            active_since: n
                .is_multiple_of(5)
                .then(|| "2026-03-03T10:02:44Z".to_string()),
            file: format!("projects/checkout/tasks/active/{n:03}-task-{n}.md"),
            generation: i64::from(n % 3) - 1,
            reopened_at: n
                .is_multiple_of(4)
                .then(|| "2026-03-04T08:00:00Z".to_string()),
            delivery: Delivery {
                branch: n
                    .is_multiple_of(2)
                    .then(|| format!("dacli/{n:03}-task-{n}")),
                pr: (n % 3 == 1).then_some(i64::from(n) * 1000),
                commits: (0..n % 3).map(|c| format!("{c:040x}")).collect(),
            },
        }
    }

    #[test]
    fn task_entries_read_back_every_field() {
        for n in 0..12 {
            let f = fields(n);
            assert_eq!(TaskEntry::new(&f).fields(), f, "task {n}");
        }
        // Strings longer in all than a `u16` offset reaches.
        let mut long = fields(3);
        long.title = "é".repeat(1_100_000);
        assert_eq!(TaskEntry::new(&long).fields(), long);
    }

    fn row_of<T: Extract>(value: &T) -> Vec<u8> {
        let mut out = Output::default();
        value.encode(&mut out);
        out.0
    }

    /// Bytes as the index hands them over: UTF-8 text, or no row at all.
    fn decode_bytes<T: Extract>(bytes: &[u8]) -> Option<T> {
        let text = String::from_utf8(bytes.to_vec()).ok()?;
        decode::<T>(&Arc::new(text), 0..bytes.len())
    }

    #[test]
    fn a_row_reads_back_what_was_written() {
        for n in 0..12 {
            let bytes = row_of(&TaskEntry::new(&fields(n)));
            let read = decode_bytes::<TaskEntry>(&bytes).expect("decodes");
            assert_eq!(read.fields(), fields(n), "task {n}");
        }
    }

    /// Rows of another kind are never decoded (their kind names the layout), and bytes cut
    /// short or run on are refused rather than read as another extract.
    #[test]
    fn rows_of_another_layout_or_torn_are_refused() {
        assert_ne!(format_of::<NoteEntry>(), format_of::<TaskEntry>());
        let bytes = row_of(&TaskEntry::new(&fields(7)));
        for cut in 0..bytes.len() {
            assert!(
                decode_bytes::<TaskEntry>(&bytes[..cut]).is_none(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_bytes::<TaskEntry>(&longer).is_none());
    }
}
