//! The task index laid out for lookups (docs/PERFORMANCE.md, "Rows"): what a command about a
//! few tasks needs, without reading every task's extract.
//!
//! `cache/tasks-<slug>.idx` holds, for one project's listing as [`super::index::tasks`] made
//! it, one fixed-width row per task (number, folder, assignee, and hashes of the id, slug,
//! title slug and parent), in listing order, followed by each task's [`TaskEntry`] bytes.
//! A reader reads the small header and the rows whole, and then only the entries it needs,
//! each by offset (one `pread`). At ten thousand tasks the rows are 400 KB against 4.4 MB
//! of extracts.
//!
//! Invariants, which make it answer exactly as the listing would:
//! - it is written from a listing with no warnings, of a tasks directory holding nothing
//!   but the status folders (every other case is served by the listing, which reports it);
//! - it records the stamps of the tasks directory and of each status folder, taken before
//!   they were listed, and is used only while each is unchanged and settled by the rule of
//!   the index ([`Stamp::settled`]), applied to this file's own write time, or, for a status
//!   folder whose stamp is too recent for that rule, after a listing of it finds exactly
//!   the files the rows name, by name and inode (a writer that just changed it is then no
//!   reason for every next reader to list the whole project);
//! - rows hold hashes, never answers: a lookup fetches the entries whose hashes match and
//!   compares their fields, so a collision costs a read, never a wrong result;
//! - header and rows are checksummed together, each entry on its own; anything that fails
//!   a check is a miss, and the caller falls back to the listing.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;

use super::filed::read_at;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::model::task::Status;
use crate::store::{Problem, TEMP_PREFIX};
use crate::workspace::names::slugify;
use crate::workspace::{STATUS_FOLDERS, Workspace};

use super::codec::{Input, Output};
use super::index::{DirStamp, Stamp, TaskEntry, cache_file_named};
use super::tasks::{ResolveError, resolve_among};
use super::{Error, Listing};

/// Layout of the files; bumped whenever it changes.
const FORMAT: &str = "dacli-rows/4";

/// The most tasks an overlay records: each `task add` copies it whole.
const OVERLAY_MOST: usize = 1000;

/// Bytes of one row; see [`Row`] for the fields.
const ROW: usize = 52;
/// Bytes before the header: header length, rows length, checksum of both (`u32` each).
const PREFIX: usize = 12;
const NONE16: u16 = u16::MAX;
const NONE32: u32 = u32::MAX;

fn hash(s: &str) -> u32 {
    crc32fast::hash(s.as_bytes())
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// A rows file's header up to its directories: the stamp of the base it extends (`None` for
/// a base), how long the listing it was made from took, the directories and their stamps.
/// A header's base, listing duration, directories, and the directory recorded exact.
type Head = (Option<Stamp>, i128, Vec<DirStamp>, Option<String>);

/// One rows file read: its header, its rows, and the file, from which entries are read.
struct Part {
    path: std::path::PathBuf,
    file: File,
    /// The file's own stamp when opened (an overlay names the base it extends by it).
    stamp: Stamp,
    /// Where the entries start in the file.
    entries_at: u64,
    /// The header and the rows, as read (kept whole: splitting off the rows would copy
    /// hundreds of kilobytes on every read of a base).
    head_rows: Vec<u8>,
    /// Where the rows start in `head_rows`.
    rows_at: usize,
    /// Assignees, indexed by the rows.
    agents: Vec<String>,
    /// The stamp of the base this file extends; `None` for a base.
    base: Option<Stamp>,
    listing_ns: i128,
    dirs: Vec<DirStamp>,
    /// The directory whose stamp the writer recorded exact (see [`Rows::record_created`]):
    /// trusted while unchanged, however recent.
    exact: Option<String>,
    /// The entries read from this version of the file so far, by where they start: kept
    /// only in a process that serves many calls ([`super::remembering`]), where every
    /// `status` reads the same active tasks again.
    kept: std::sync::Mutex<HashMap<u64, Arc<TaskEntry>>>,
}

impl Part {
    fn read(path: &Path, slug: &str) -> Option<Part> {
        let file = File::open(path).ok()?;
        let stamp = Stamp::from_meta(&file.metadata().ok()?);
        let mut prefix = [0u8; PREFIX];
        read_at(&file, &mut prefix, 0)?;
        let head_len = u32_at(&prefix, 0) as usize;
        let rows_len = u32_at(&prefix, 4) as usize;
        let len = head_len.checked_add(rows_len)?;
        // A damaged length must not size the buffer beyond the file.
        if !rows_len.is_multiple_of(ROW) || len as u64 > stamp.size() {
            return None;
        }
        let mut head = vec![0u8; len];
        read_at(&file, &mut head, PREFIX as u64)?;
        if crc32fast::hash(&head) != u32_at(&prefix, 8) {
            return None;
        }
        let mut input = Input::new(&head[..head_len]);
        let (base, listing_ns, dirs, exact) = Part::decode_head(&mut input, slug)?;
        let agents = (0..input.count()?)
            .map(|_| input.str().map(str::to_string))
            .collect::<Option<Vec<_>>>()?;
        if !input.at_end() {
            return None;
        }
        Some(Part {
            path: path.to_path_buf(),
            file,
            stamp,
            entries_at: (PREFIX + head_len + rows_len) as u64,
            head_rows: head,
            rows_at: head_len,
            agents,
            base,
            listing_ns,
            dirs,
            exact,
            kept: Default::default(),
        })
    }

    /// The entry starting at `start`, when this process kept it.
    fn kept(&self, start: u64) -> Option<Arc<TaskEntry>> {
        if !super::remembering() {
            return None;
        }
        self.kept.lock().ok()?.get(&start).cloned()
    }

    /// Keeps `entries` (by where each starts) when this process keeps what it reads.
    fn keep(&self, entries: impl Iterator<Item = (u64, Arc<TaskEntry>)>) {
        if super::remembering()
            && let Ok(mut kept) = self.kept.lock()
        {
            kept.extend(entries);
        }
    }

    /// The header up to the directories: the base extended, the listing's duration, the
    /// directories and their stamps.
    fn decode_head(input: &mut Input<'_>, slug: &str) -> Option<Head> {
        if input.str()? != FORMAT || input.str()? != slug {
            return None;
        }
        let base = match input.u8()? {
            0 => None,
            1 => Some(Stamp::decode(input)?),
            _ => return None,
        };
        let listing_ns = input.ivar()?;
        let mut dirs = Vec::new();
        let mut exact = None;
        for _ in 0..input.count()? {
            let key = input.str()?.to_string();
            let recorded = match input.u8()? {
                0 => None,
                1 => Some(Stamp::decode(input)?),
                2 if exact.is_none() => {
                    exact = Some(key.clone());
                    Some(Stamp::decode(input)?)
                }
                _ => return None,
            };
            dirs.push((key, recorded));
        }
        Some((base, listing_ns, dirs, exact))
    }

    /// The header of the file at `path` and its write time, read without the rows and
    /// unchecked (the checksum covers the rows): a hint of what [`Rows::open`] will verify.
    fn peek(path: &Path, slug: &str) -> Option<(Head, i128)> {
        let file = File::open(path).ok()?;
        let stamp = Stamp::from_meta(&file.metadata().ok()?);
        let mut prefix = [0u8; PREFIX];
        read_at(&file, &mut prefix, 0)?;
        let head_len = u64::from(u32_at(&prefix, 0));
        // A damaged length must not size the buffer beyond the file.
        if head_len > stamp.size() {
            return None;
        }
        let mut head = vec![0u8; usize::try_from(head_len).ok()?];
        read_at(&file, &mut head, PREFIX as u64)?;
        Some((
            Part::decode_head(&mut Input::new(&head), slug)?,
            stamp.mtime_ns(),
        ))
    }

    fn rows(&self) -> &[u8] {
        &self.head_rows[self.rows_at..]
    }

    fn len(&self) -> usize {
        self.rows().len() / ROW
    }

    /// [`Part::read`], from this process's memory when the file is the version it last
    /// read: a server asks on every call, and a base is hundreds of kilobytes.
    fn read_shared(path: &Path, slug: &str) -> Option<Arc<Part>> {
        static BASES: std::sync::Mutex<Vec<Arc<Part>>> = std::sync::Mutex::new(Vec::new());
        let stamp = Stamp::of(path)?;
        if let Ok(bases) = BASES.lock()
            && let Some(p) = bases.iter().find(|p| p.stamp == stamp && p.path == path)
        {
            return Some(Arc::clone(p));
        }
        let part = Arc::new(Part::read(path, slug)?);
        if let Ok(mut bases) = BASES.lock() {
            bases.retain(|p| p.path != path);
            bases.push(Arc::clone(&part));
        }
        Some(part)
    }
}

/// One project's rows, read and validated: a base written from a listing, and the tasks
/// `task add` created since (an overlay naming that base); entries are read on demand.
pub struct Rows {
    slug: String,
    parts: Vec<Arc<Part>>,
    /// The directories and stamps the rows describe (the overlay's when there is one).
    dirs: Vec<DirStamp>,
}

/// One task as its row describes it.
#[derive(Clone, Copy)]
pub struct Row<'a> {
    part: &'a Part,
    local: usize,
    /// Position in listing order.
    pub at: usize,
}

impl<'a> Row<'a> {
    fn bytes(&self) -> &'a [u8] {
        &self.part.rows()[self.local * ROW..(self.local + 1) * ROW]
    }
    pub fn number(&self) -> u32 {
        u32_at(self.bytes(), 0)
    }
    /// The status folder the file is in.
    pub fn folder(&self) -> &'static str {
        self.status().as_str()
    }
    /// The status of that folder (folders and statuses are in the same order).
    pub fn status(&self) -> Status {
        Status::ALL
            .get(usize::from(self.bytes()[4]))
            .copied()
            .unwrap_or(Status::Open)
    }
    pub fn assignee(&self) -> Option<&'a str> {
        let b = self.bytes();
        let i = u16::from_le_bytes([b[5], b[6]]);
        (i != NONE16)
            .then(|| self.part.agents.get(usize::from(i)).map(String::as_str))
            .flatten()
    }
    fn id_hash(&self) -> u32 {
        u32_at(self.bytes(), 7)
    }
    fn slug_hash(&self) -> u32 {
        u32_at(self.bytes(), 11)
    }
    fn title_hash(&self) -> u32 {
        u32_at(self.bytes(), 15)
    }
    fn parent_hash(&self) -> Option<u32> {
        (self.bytes()[39] & 1 != 0).then(|| u32_at(self.bytes(), 19))
    }
    /// Among the project's done tasks, the place of this one by last Log line, most recent
    /// first (then by id, greatest first); `None` when not done.
    pub fn done_rank(&self) -> Option<u32> {
        Some(u32_at(self.bytes(), 35)).filter(|r| *r != NONE32)
    }
    /// The file's inode and a hash of its name, as listed.
    fn file_key(&self) -> (u32, u64) {
        (u32_at(self.bytes(), 48), u64_at(self.bytes(), 40))
    }

    /// Where the entry's bytes are among the part's entries, how many, and their checksum.
    fn extent(&self) -> (u64, usize, u32) {
        let b = self.bytes();
        (
            u64::from(u32_at(b, 23)),
            u32_at(b, 27) as usize,
            u32_at(b, 31),
        )
    }

    /// The entry, read from the file; `None` when its bytes fail their check.
    fn entry(&self) -> Option<Arc<TaskEntry>> {
        let (start, len, sum) = self.extent();
        if let Some(kept) = self.part.kept(start) {
            return Some(kept);
        }
        let mut bytes = vec![0u8; len];
        read_at(&self.part.file, &mut bytes, self.part.entries_at + start)?;
        if crc32fast::hash(&bytes) != sum {
            return None;
        }
        let entry = Arc::new(TaskEntry::from_bytes(bytes)?);
        self.part.keep(std::iter::once((start, Arc::clone(&entry))));
        Some(entry)
    }
}

impl Rows {
    /// The rows of project `slug`, when the files exist, pass their checks and every
    /// directory they record is unchanged and settled, or is a status folder whose stamp is
    /// too recent to prove anything (a writer just changed it) and holds exactly the files
    /// the rows name; `None` otherwise.
    pub fn open(ws: &Workspace, slug: &str) -> Option<Rows> {
        // The verification of a recent directory is a listing: measure from before it.
        let started = super::filed::started();
        let base = Part::read_shared(&base_file(ws, slug), slug)?;
        if base.base.is_some() {
            return None;
        }
        // The base alone, when no directory changed since it was written.
        let mut base_recent = Vec::new();
        let mut unchanged = true;
        for (key, recorded) in &base.dirs {
            if Stamp::of_dir(&ws.dir().join(key)) != *recorded {
                unchanged = false;
                break;
            }
            if !recorded.is_none_or(|s| s.settled(base.stamp.mtime_ns(), base.listing_ns)) {
                base_recent.push(key.clone());
            }
        }
        if unchanged && base_recent.is_empty() {
            return Some(Rows {
                slug: slug.to_string(),
                dirs: base.dirs.clone(),
                parts: vec![base],
            });
        }
        // Else the overlay that extends it (what `task add` created since, or a record that
        // a reader verified the base's recent folders); a base whose folders are unchanged
        // but recent, without one, is verified here and such a record written.
        let path = overlay_file(ws, slug);
        let over = Part::read(&path, slug).filter(|o| o.base == Some(base.stamp));
        let (rows, recent) = match over {
            Some(over) => {
                let mut recent = Vec::new();
                for (key, recorded) in &over.dirs {
                    if Stamp::of_dir(&ws.dir().join(key)) != *recorded {
                        return None;
                    }
                    if over.exact.as_ref() != Some(key)
                        && !current(ws, key, *recorded, over.stamp.mtime_ns(), over.listing_ns)
                    {
                        recent.push(key.clone());
                    }
                }
                let rows = Rows {
                    slug: slug.to_string(),
                    dirs: over.dirs.clone(),
                    parts: vec![base, Arc::new(over)],
                };
                (rows, recent)
            }
            None if unchanged => {
                let rows = Rows {
                    slug: slug.to_string(),
                    dirs: base.dirs.clone(),
                    parts: vec![base],
                };
                (rows, base_recent)
            }
            None => return None,
        };
        // What was verified: the overlay, or the lone base.
        let verified = match rows.parts.as_slice() {
            [_, over] => (path.clone(), over.stamp),
            [base, ..] => (base.path.clone(), base.stamp),
            [] => return None,
        };
        if recent.is_empty() || verified_here(&verified.0, verified.1) {
            return Some(rows);
        }
        let mut started = started;
        for key in &recent {
            let recorded = rows.dirs.iter().find(|(k, _)| k == key).and_then(|d| d.1);
            if !is_status_folder(key) || !rows.holds_exactly(ws, key, recorded, &mut started) {
                return None;
            }
        }
        // Verified by listing: written again, the overlay's stamps become trusted once they
        // are older than this listing by a tick, and the next reader lists nothing. A caller
        // about to record a task writes the overlay itself ([`deferring_rewrite`]).
        let verified = if DEFER_REWRITE.get() {
            Some(verified)
        } else {
            rows.rewrite_overlay(ws, elapsed_ns(started));
            Stamp::of(&path).map(|stamp| (path, stamp))
        };
        if let (Some(v), Ok(mut memo)) = (verified, VERIFIED.lock()) {
            *memo = Some(v);
        }
        Some(rows)
    }

    /// True when directory `key`, recorded with stamp `recorded`, holds exactly the `.md`
    /// files the rows put in its folder (same names, same inodes), as listed now or by a
    /// listing [`prefetch_from`] started in this command while the folder had that stamp;
    /// `started` is moved back to the start of the listing used.
    fn holds_exactly(
        &self,
        ws: &Workspace,
        key: &str,
        recorded: Option<Stamp>,
        started: &mut Instant,
    ) -> bool {
        let folder = key.rsplit('/').next().unwrap_or_default();
        let Some(status) = Status::ALL.into_iter().find(|s| s.as_str() == folder) else {
            return false;
        };
        let dir = ws.dir().join(key);
        let found = match take_prefetched(&dir) {
            Some(p) if p.before.is_some() && p.before == recorded => {
                *started = (*started).min(p.started);
                p.keys
            }
            _ => file_keys(&dir),
        };
        let Some(found) = found else {
            return false;
        };
        // Equal as multisets: each row's key takes an equal one of the sorted listing not
        // taken yet, and none is left over. (Searching the listing spares sorting a copy of
        // thousands of rows, a third of a `task add` after another's.)
        let mut taken = vec![false; found.len()];
        let mut rows = 0;
        for row in self.iter().filter(|r| r.status() == status) {
            let key = row.file_key();
            let mut at = found.partition_point(|k| *k < key);
            while taken.get(at) == Some(&true) && found[at] == key {
                at += 1;
            }
            if found.get(at) != Some(&key) {
                return false;
            }
            taken[at] = true;
            rows += 1;
        }
        rows == found.len()
    }

    /// Writes the overlay again as it is (an empty one over a lone base), timed by a
    /// listing that started `listing_ns` ago.
    fn rewrite_overlay(&self, ws: &Workspace, listing_ns: i128) {
        let (base, over) = match self.parts.as_slice() {
            [base] => {
                let head = header(
                    &self.slug,
                    Some(base.stamp),
                    listing_ns,
                    &base.dirs,
                    None,
                    &[],
                );
                let bytes = wrap(&head, &[], &[]);
                let _ = ws.fs.replace_derived(&overlay_file(ws, &self.slug), &bytes);
                return;
            }
            [base, over] => (base, over),
            _ => return,
        };
        let mut entries = Vec::new();
        if (read_at(
            &over.file,
            {
                let len = over.file.metadata().map_or(0, |m| m.len());
                entries.resize(len.saturating_sub(over.entries_at) as usize, 0);
                &mut entries
            },
            over.entries_at,
        ))
        .is_none()
        {
            return;
        }
        let head = header(
            &self.slug,
            Some(base.stamp),
            listing_ns,
            &over.dirs,
            over.exact.as_deref(),
            &over.agents,
        );
        let bytes = wrap(&head, over.rows(), &entries);
        let _ = ws.fs.replace_derived(&overlay_file(ws, &self.slug), &bytes);
    }

    pub fn len(&self) -> usize {
        self.parts.iter().map(|p| p.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn row(&self, at: usize) -> Row<'_> {
        let mut local = at;
        for part in &self.parts {
            if local < part.len() {
                return Row { part, local, at };
            }
            local -= part.len();
        }
        // Out of range: the last row of the last part stands in (never asked by callers,
        // who iterate below `len`).
        let part = &self.parts[self.parts.len() - 1];
        Row {
            part,
            local: part.len().saturating_sub(1),
            at,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = Row<'_>> {
        let mut at = 0;
        self.parts.iter().flat_map(move |part| {
            let first = at;
            at += part.len();
            (0..part.len()).map(move |local| Row {
                part,
                local,
                at: first + local,
            })
        })
    }

    /// The entry of row `at`, read from the file; `None` when its bytes fail their check.
    pub fn entry(&self, at: usize) -> Option<Arc<TaskEntry>> {
        self.row(at).entry()
    }

    /// The entries of the rows `keep` selects, in listing order; `None` when one fails its
    /// check.
    pub fn select(&self, mut keep: impl FnMut(&Row<'_>) -> bool) -> Option<Vec<Arc<TaskEntry>>> {
        let ats: Vec<usize> = self.iter().filter(|r| keep(r)).map(|r| r.at).collect();
        self.entries(&ats)
    }

    /// The entries of rows `ats`, in that order; `None` when one fails its check. Entries
    /// lying close together in a file are read together: the entries of a base are laid
    /// out by folder, so every active task, say, is one read.
    pub fn entries(&self, ats: &[usize]) -> Option<Vec<Arc<TaskEntry>>> {
        /// Bytes between two entries read in one go rather than two.
        const GAP: u64 = 4096;
        let mut out: Vec<Option<Arc<TaskEntry>>> = vec![None; ats.len()];
        let mut wanted: Vec<(usize, u64, usize, u32, usize)> = Vec::with_capacity(ats.len());
        for (i, &at) in ats.iter().enumerate() {
            let (p, local) = self.locate(at)?;
            let row = Row {
                part: &self.parts[p],
                local,
                at,
            };
            let (start, len, sum) = row.extent();
            match row.part.kept(start) {
                Some(kept) => out[i] = Some(kept),
                None => wanted.push((p, start, len, sum, i)),
            }
        }
        wanted.sort_unstable_by_key(|w| (w.0, w.1));
        let mut next = 0;
        while next < wanted.len() {
            let (p, first, ..) = wanted[next];
            let mut end = next;
            let mut stop = first + wanted[next].2 as u64;
            while end + 1 < wanted.len()
                && wanted[end + 1].0 == p
                && wanted[end + 1].1 <= stop + GAP
            {
                end += 1;
                stop = stop.max(wanted[end].1 + wanted[end].2 as u64);
            }
            let part = &self.parts[p];
            let mut buf = vec![0u8; usize::try_from(stop - first).ok()?];
            read_at(&part.file, &mut buf, part.entries_at + first)?;
            for &(_, start, len, sum, i) in &wanted[next..=end] {
                let at = usize::try_from(start - first).ok()?;
                let bytes = buf.get(at..at + len)?;
                if crc32fast::hash(bytes) != sum {
                    return None;
                }
                out[i] = Some(Arc::new(TaskEntry::from_bytes(bytes.to_vec())?));
            }
            part.keep(
                wanted[next..=end]
                    .iter()
                    .filter_map(|&(_, start, .., i)| Some((start, Arc::clone(out[i].as_ref()?)))),
            );
            next = end + 1;
        }
        out.into_iter().collect()
    }

    /// The part holding row `at`, and the row's place in it.
    fn locate(&self, at: usize) -> Option<(usize, usize)> {
        let mut local = at;
        for (p, part) in self.parts.iter().enumerate() {
            if local < part.len() {
                return Some((p, local));
            }
            local -= part.len();
        }
        None
    }

    /// The entries a reference in any form could name, by their hashes: a superset of the
    /// matches [`resolve_among`] finds among all of them.
    fn candidates(&self, keys: &Keys) -> Option<Vec<Arc<TaskEntry>>> {
        self.select(|r| {
            keys.id == Some(r.id_hash())
                || keys.number == Some(r.number())
                || r.slug_hash() == keys.slug
        })
    }

    /// Tasks whose parent is `id`.
    pub fn children(&self, id: &str) -> Option<Vec<Arc<TaskEntry>>> {
        let h = hash(id);
        Some(
            self.select(|r| r.parent_hash() == Some(h))?
                .into_iter()
                .filter(|e| e.parent() == Some(id))
                .collect(),
        )
    }

    /// The task with this id, if the project has it.
    pub fn by_id(&self, id: &str) -> Option<Option<Arc<TaskEntry>>> {
        let h = hash(id);
        Some(
            self.select(|r| r.id_hash() == h)?
                .into_iter()
                .find(|e| e.id() == id),
        )
    }

    /// Tasks whose folder is not `done` and whose title makes `title_slug`.
    pub fn open_titled(&self, title_slug: &str) -> Option<Vec<Arc<TaskEntry>>> {
        let h = hash(title_slug);
        Some(
            self.select(|r| r.folder() != "done" && r.title_hash() == h)?
                .into_iter()
                .filter(|e| slugify(e.title()) == title_slug)
                .collect(),
        )
    }

    /// The greatest task number in use, 0 without tasks.
    pub fn max_number(&self) -> u32 {
        self.iter().map(|r| r.number()).max().unwrap_or(0)
    }

    pub fn slug(&self) -> &str {
        &self.slug
    }

    /// Records task `entry`, just created as `name` in `open/` under the project's sequence
    /// lock, in the overlay, so that the next reader need not list the project again. `self`
    /// must have been opened under the same lock, before the task was created, and `watch`
    /// started on `open/` before `self` was opened.
    ///
    /// The new stamp of `open/` is recorded exact, trusted by the next reader for as long as
    /// it is unchanged, when the watch (given only where it can prove that) saw no change
    /// there but this task's arrival. Otherwise it is too recent to be
    /// trusted: the next reader checks that `open/` holds exactly the files of the rows
    /// ([`Rows::open`]), which catches any other change made there meanwhile. Failure is
    /// ignored: the next reader lists the project.
    pub fn record_created(
        &self,
        ws: &Workspace,
        entry: &TaskEntry,
        name: &str,
        watch: Option<crate::store::DirWatch>,
    ) {
        let started = super::filed::started();
        let open = ws.path(&["projects", &self.slug, "tasks", "open"]);
        let key = format!("projects/{}/tasks/open", self.slug);
        // The stamp first, then the watch's reports: a change the stamp shows is reported.
        let (Some(now), Some(ino)) = (Stamp::of_dir(&open), file_ino(&open.join(name))) else {
            return;
        };
        let exact = watch.is_some_and(|w| w.only_arrived(name));
        let Some(base) = self.parts.first() else {
            return;
        };
        let mut dirs = self.dirs.clone();
        match dirs.iter_mut().find(|(k, _)| *k == key) {
            Some(d) => d.1 = Some(now),
            None => return,
        }
        // The overlay so far, copied as it is, and the new task after it (its number is the
        // greatest: listing order holds). A task just created has no assignee, so the
        // assignee table stays the overlay's; past `OVERLAY_MOST` tasks the next reader lists
        // the project and writes a base holding them all, rather than every add copying more.
        if entry.assignee().is_some() {
            return;
        }
        let (agents, mut rows, mut blob) = match self.parts.get(1) {
            Some(over) if over.len() >= OVERLAY_MOST => return,
            Some(over) => {
                let len = over.file.metadata().map_or(0, |m| m.len());
                let Some(blob_len) = len.checked_sub(over.entries_at) else {
                    return;
                };
                let mut blob = vec![0u8; usize::try_from(blob_len).unwrap_or(0)];
                if read_at(&over.file, &mut blob, over.entries_at).is_none() {
                    return;
                }
                (over.agents.clone(), over.rows().to_vec(), blob)
            }
            None => (Vec::new(), Vec::new(), Vec::new()),
        };
        push_row(&mut rows, entry, NONE16, blob.len(), NONE32, ino);
        blob.extend_from_slice(entry.entry_bytes());
        let head = header(
            &self.slug,
            Some(base.stamp),
            elapsed_ns(started),
            &dirs,
            exact.then_some(key.as_str()),
            &agents,
        );
        let bytes = wrap(&head, &rows, &blob);
        let _ = ws.fs.replace_derived(&overlay_file(ws, &self.slug), &bytes);
    }
}

/// The `.md` files directly in `dir` (no hidden or temporary file), as the hash of the name
/// and the inode, sorted; `None` when it cannot be listed whole.
#[cfg(target_os = "linux")]
fn file_keys(dir: &Path) -> Option<Vec<(u32, u64)>> {
    // One buffer for the whole folder: each `getdents` call on an indexed ext4 directory
    // rebuilds part of its hash tree, so 32 KiB calls cost a fifth more than one large one.
    let folder = File::open(dir).ok()?;
    let mut buf = Vec::with_capacity(1 << 20);
    let mut listing = rustix::fs::RawDir::new(&folder, buf.spare_capacity_mut());
    let mut found = Vec::new();
    while let Some(entry) = listing.next() {
        let entry = entry.ok()?;
        let name = entry.file_name().to_str().ok()?;
        if is_task_file(name) {
            found.push((hash(name), entry.ino()));
        }
    }
    found.sort_unstable();
    Some(found)
}

/// True for the name of a task file a listing counts (`.`, `..`, hidden and temporary
/// files are not).
#[cfg(unix)]
fn is_task_file(name: &str) -> bool {
    !name.starts_with('.') && !name.starts_with(TEMP_PREFIX) && name.ends_with(".md")
}

#[cfg(all(unix, not(target_os = "linux")))]
fn file_keys(dir: &Path) -> Option<Vec<(u32, u64)>> {
    use std::os::unix::fs::DirEntryExt;
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).ok()? {
        let entry = entry.ok()?;
        let name = entry.file_name();
        let name = name.to_str()?;
        if is_task_file(name) {
            found.push((hash(name), entry.ino()));
        }
    }
    found.sort_unstable();
    Some(found)
}

#[cfg(not(unix))]
fn file_keys(_dir: &Path) -> Option<Vec<(u32, u64)>> {
    None
}

/// A listing of a status folder made on a helper thread ([`prefetch_from`]).
struct Prefetched {
    /// The folder's stamp, taken before it was listed.
    before: Option<Stamp>,
    started: Instant,
    keys: Option<Vec<(u32, u64)>>,
}

/// Listings, by the folder's path.
type Listings = Vec<(std::path::PathBuf, Prefetched)>;

/// This thread's prefetch: the helper making the listings, then what it made.
#[derive(Default)]
struct Prefetch {
    helper: Option<std::thread::JoinHandle<Listings>>,
    made: Listings,
}

thread_local! {
    /// The listings [`prefetch_from`] started for this thread's command, taken by
    /// [`Rows::open`].
    static PREFETCH: std::cell::RefCell<Prefetch> = std::cell::RefCell::default();
}

/// Forgets, when dropped, the listings of [`prefetch_from`] not taken: a listing serves
/// only the command that started it (a later one must see what changed since).
pub struct Prefetching(());

impl Drop for Prefetching {
    fn drop(&mut self) {
        PREFETCH.take();
    }
}

/// Starts, on a helper thread, the listings [`Rows::open`] is about to need in the
/// workspace found from `start`: the status folders whose rows record them with a stamp too
/// recent to be trusted, that still have it (a `task add` leaves `open/` so for the next
/// command). A command starts it before its arguments are parsed and reads other files
/// meanwhile; on two cores the listing of a folder of 5,000 tasks, as dear as the rest of a
/// `task add`, is then mostly hidden. Only a hint: a listing is used only if its folder
/// had, before it was listed, the stamp the verified rows record. Finding nothing starts
/// no listing. (A server's calls do not start one: a thread per call would cost every call
/// to spare the few that follow another process's write.)
pub fn prefetch_from(start: std::path::PathBuf) -> Prefetching {
    let helper = std::thread::Builder::new()
        .name("dacli-list".into())
        .spawn(move || {
            let Some(dir) = crate::workspace::locate_dir(&start) else {
                return Vec::new();
            };
            let Ok(projects) = std::fs::read_dir(dir.join("projects")) else {
                return Vec::new();
            };
            let slugs: Vec<String> = projects
                .filter_map(|p| p.ok()?.file_name().into_string().ok())
                .filter(|s| !s.starts_with('.'))
                .collect();
            recent_listings(&dir, &slugs)
        })
        .ok();
    PREFETCH.set(Prefetch {
        helper,
        made: Vec::new(),
    });
    Prefetching(())
}

/// The listings of the status folders of `slugs`, in workspace directory `dir`, whose rows
/// record them with a stamp they still have and that is too recent to be trusted.
fn recent_listings(dir: &Path, slugs: &[String]) -> Listings {
    let mut made = Vec::new();
    for slug in slugs {
        let cache = dir.join("cache");
        let head = Part::peek(&cache.join(overlay_name(slug)), slug)
            .or_else(|| Part::peek(&cache.join(base_name(slug)), slug));
        let Some(((_, listing_ns, dirs, exact), written)) = head else {
            continue;
        };
        for (key, recorded) in dirs {
            if !is_status_folder(&key)
                || exact.as_ref() == Some(&key)
                || recorded.is_none_or(|r| r.settled(written, listing_ns))
            {
                continue;
            }
            let folder = dir.join(&key);
            let started = super::filed::started();
            let before = Stamp::of_dir(&folder);
            if before != recorded {
                continue;
            }
            let keys = file_keys(&folder);
            made.push((
                folder,
                Prefetched {
                    before,
                    started,
                    keys,
                },
            ));
        }
    }
    made
}

/// The listing [`prefetch_from`] made of `dir`, waited for.
fn take_prefetched(dir: &Path) -> Option<Prefetched> {
    PREFETCH.with_borrow_mut(|p| {
        if let Some(helper) = p.helper.take()
            && let Ok(made) = helper.join()
        {
            p.made = made;
        }
        let at = p.made.iter().position(|(d, _)| d == dir)?;
        Some(p.made.swap_remove(at).1)
    })
}

/// The overlay (or lone base) this process last checked against its folders, as it wrote it
/// back: a command opening the rows twice (`task add`: to judge, then under the sequence
/// lock) lists the folder once. Its folders' stamps are compared on every open all the same.
static VERIFIED: std::sync::Mutex<Option<(std::path::PathBuf, Stamp)>> =
    std::sync::Mutex::new(None);

thread_local! {
    /// Set by [`deferring_rewrite`].
    static DEFER_REWRITE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with the rows it opens not written back after a verification: for `task add`,
/// which records its new task in a new overlay right after (a rewrite first would cost one
/// more file created, the dearest operation of an add on a file system with many freed
/// inodes). Should the add stop short, the next reader verifies again.
pub fn deferring_rewrite<R>(f: impl FnOnce() -> R) -> R {
    /// Clears the flag however `f` ends: a server catches a command's panic and goes on.
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            DEFER_REWRITE.set(false);
        }
    }
    DEFER_REWRITE.set(true);
    let _reset = Reset;
    f()
}

fn verified_here(path: &Path, stamp: Stamp) -> bool {
    VERIFIED
        .lock()
        .is_ok_and(|m| m.as_ref().is_some_and(|(p, s)| p == path && *s == stamp))
}

fn elapsed_ns(started: Instant) -> i128 {
    i128::try_from(started.elapsed().as_nanos()).unwrap_or(i128::MAX)
}

/// True when `key` names a status folder (`…/tasks/<folder>`), not the tasks directory,
/// whose folders the names of its `.md` files say nothing about.
fn is_status_folder(key: &str) -> bool {
    key.rsplit_once('/').is_some_and(|(parent, folder)| {
        parent.ends_with("/tasks") && STATUS_FOLDERS.contains(&folder)
    })
}

/// True when directory `key` still has stamp `recorded`, settled as of a file written at
/// `written_ns` by a listing that took `listing_ns`.
fn current(
    ws: &Workspace,
    key: &str,
    recorded: Option<Stamp>,
    written_ns: i128,
    listing_ns: i128,
) -> bool {
    Stamp::of_dir(&ws.dir().join(key)) == recorded
        && recorded.is_none_or(|s| s.settled(written_ns, listing_ns))
}

#[cfg(unix)]
fn file_ino(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).ok().map(|m| m.ino())
}

#[cfg(not(unix))]
fn file_ino(_path: &Path) -> Option<u64> {
    None
}

fn base_file(ws: &Workspace, slug: &str) -> std::path::PathBuf {
    cache_file_named(ws, &base_name(slug))
}

fn overlay_file(ws: &Workspace, slug: &str) -> std::path::PathBuf {
    cache_file_named(ws, &overlay_name(slug))
}

fn base_name(slug: &str) -> String {
    format!("tasks-{slug}.idx")
}

fn overlay_name(slug: &str) -> String {
    format!("tasks-{slug}.add")
}

/// The assignee table, the rows and the entry bytes of `listing` (sorted, one entry per
/// id), whose files have the inodes `inos`; done ranks only when `rank_done`.
fn encode_rows(
    listing: &[Arc<TaskEntry>],
    inos: &[u64],
    rank_done: bool,
) -> (Vec<String>, Vec<u8>, Vec<u8>) {
    let mut agents: Vec<&str> = listing.iter().filter_map(|e| e.assignee()).collect();
    agents.sort_unstable();
    agents.dedup();
    let mut rank = vec![NONE32; listing.len()];
    if rank_done {
        let mut done: Vec<(Option<&str>, &str, usize)> = listing
            .iter()
            .enumerate()
            .filter(|(_, e)| e.folder() == "done")
            .map(|(i, e)| (e.last_log_at(), e.id(), i))
            .collect();
        done.sort_by(|a, b| b.cmp(a));
        for (r, (_, _, i)) in done.iter().enumerate() {
            rank[*i] = u32::try_from(r).unwrap_or(NONE32);
        }
    }
    // Entries laid out by folder (then in listing order), so that the tasks of one folder
    // are read in one go; rows stay in listing order and point at them.
    let folder_of = |e: &TaskEntry| {
        STATUS_FOLDERS
            .iter()
            .position(|f| *f == e.folder())
            .unwrap_or(0)
    };
    let mut order: Vec<usize> = (0..listing.len()).collect();
    order.sort_by_key(|&i| folder_of(&listing[i]));
    let mut offsets = vec![0usize; listing.len()];
    let mut entries = Vec::new();
    for &i in &order {
        offsets[i] = entries.len();
        entries.extend_from_slice(listing[i].entry_bytes());
    }
    let mut rows = Vec::with_capacity(listing.len() * ROW);
    for (i, e) in listing.iter().enumerate() {
        let assignee = e
            .assignee()
            .and_then(|a| agents.binary_search(&a).ok())
            .and_then(|i| u16::try_from(i).ok())
            .filter(|i| *i != NONE16)
            .unwrap_or(NONE16);
        let ino = inos.get(i).copied().unwrap_or(0);
        push_row(&mut rows, e, assignee, offsets[i], rank[i], ino);
    }
    let agents = agents.into_iter().map(str::to_string).collect();
    (agents, rows, entries)
}

/// Appends the row of `e`, whose entry bytes lie at `offset` among the entries, whose
/// assignee is at `assignee` in the assignee table, and whose file has inode `ino`.
fn push_row(rows: &mut Vec<u8>, e: &TaskEntry, assignee: u16, offset: usize, rank: u32, ino: u64) {
    let bytes = e.entry_bytes();
    let folder = STATUS_FOLDERS
        .iter()
        .position(|f| *f == e.folder())
        .unwrap_or(0);
    let name = e.file().rsplit('/').next().unwrap_or_default();
    rows.extend_from_slice(&e.number().to_le_bytes());
    rows.push(u8::try_from(folder).unwrap_or(0));
    rows.extend_from_slice(&assignee.to_le_bytes());
    rows.extend_from_slice(&hash(e.id()).to_le_bytes());
    rows.extend_from_slice(&hash(e.slug()).to_le_bytes());
    rows.extend_from_slice(&hash(&slugify(e.title())).to_le_bytes());
    rows.extend_from_slice(&e.parent().map_or(0, hash).to_le_bytes());
    rows.extend_from_slice(&u32::try_from(offset).unwrap_or(NONE32).to_le_bytes());
    rows.extend_from_slice(&u32::try_from(bytes.len()).unwrap_or(NONE32).to_le_bytes());
    rows.extend_from_slice(&crc32fast::hash(bytes).to_le_bytes());
    rows.extend_from_slice(&rank.to_le_bytes());
    rows.push(u8::from(e.parent().is_some()));
    rows.extend_from_slice(&ino.to_le_bytes());
    rows.extend_from_slice(&hash(name).to_le_bytes());
}

/// The header of a rows file: a base (`base` is `None`) or an overlay naming its base.
fn header(
    slug: &str,
    base: Option<Stamp>,
    listing_ns: i128,
    dirs: &[DirStamp],
    exact: Option<&str>,
    agents: &[String],
) -> Vec<u8> {
    let mut head = Output::default();
    head.str(FORMAT);
    head.str(slug);
    match base {
        None => head.u8(0),
        Some(s) => {
            head.u8(1);
            s.encode(&mut head);
        }
    }
    head.ivar(listing_ns);
    head.var(dirs.len() as u64);
    for (key, stamp) in dirs {
        head.str(key);
        match stamp {
            None => head.u8(0),
            Some(s) => {
                head.u8(if exact == Some(key.as_str()) { 2 } else { 1 });
                s.encode(&mut head);
            }
        }
    }
    head.var(agents.len() as u64);
    for a in agents {
        head.str(a);
    }
    head.0
}

/// A rows file: the prefix (lengths and the checksum of header and rows), then each part.
fn wrap(head: &[u8], rows: &[u8], entries: &[u8]) -> Vec<u8> {
    let mut sum = crc32fast::Hasher::new();
    sum.update(head);
    sum.update(rows);
    let mut out = Vec::with_capacity(PREFIX + head.len() + rows.len() + entries.len());
    out.extend_from_slice(&u32::try_from(head.len()).unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&u32::try_from(rows.len()).unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&sum.finalize().to_le_bytes());
    out.extend_from_slice(head);
    out.extend_from_slice(rows);
    out.extend_from_slice(entries);
    out
}

/// One task of a [`ProjectTasks`]: what its row tells without reading its entry.
#[derive(Clone, Copy)]
pub struct Item<'a> {
    tasks: &'a ProjectTasks,
    at: usize,
}

impl<'a> Item<'a> {
    /// The status folder the file is in.
    pub fn folder(&self) -> &'a str {
        match self.tasks {
            ProjectTasks::Listed(items) => items[self.at].folder(),
            ProjectTasks::Rows(rows) => rows.row(self.at).folder(),
        }
    }

    pub fn assignee(&self) -> Option<&'a str> {
        match self.tasks {
            ProjectTasks::Listed(items) => items[self.at].assignee(),
            ProjectTasks::Rows(rows) => rows.row(self.at).assignee(),
        }
    }

    /// A hash of the id ([`id_hash`]): equal for the same id, rarely for two.
    pub fn id_hash(&self) -> u32 {
        match self.tasks {
            ProjectTasks::Listed(items) => hash(items[self.at].id()),
            ProjectTasks::Rows(rows) => rows.row(self.at).id_hash(),
        }
    }

    /// The entry; `None` when its bytes in the rows file fail their check.
    pub fn entry(&self) -> Option<Arc<TaskEntry>> {
        match self.tasks {
            ProjectTasks::Listed(items) => Some(Arc::clone(&items[self.at])),
            ProjectTasks::Rows(rows) => rows.entry(self.at),
        }
    }
}

/// What a walk over every task of a project reads of each ([`ProjectTasks::walk`]).
#[derive(Clone, Copy)]
pub struct Walked<'a> {
    pub id_hash: u32,
    /// The status of the folder the file is in.
    pub status: Status,
    pub assignee: Option<&'a str>,
}

impl ProjectTasks {
    /// Each task's id hash, folder and assignee, in listing order: what a reader that walks
    /// every task (status counts, listings) asks of each, read in one pass over the rows.
    pub fn walk(&self) -> Vec<Walked<'_>> {
        match self {
            ProjectTasks::Listed(items) => items
                .iter()
                .map(|e| Walked {
                    id_hash: hash(e.id()),
                    status: Status::parse(e.folder()).unwrap_or(Status::Open),
                    assignee: e.assignee(),
                })
                .collect(),
            ProjectTasks::Rows(rows) => rows
                .iter()
                .map(|r| Walked {
                    id_hash: r.id_hash(),
                    status: r.status(),
                    assignee: r.assignee(),
                })
                .collect(),
        }
    }
}

/// A few hashes looked for among thousands of rows: a bit per value of a hash's low 16 bits
/// turns most rows away with one load; the rest are found by binary search. (A few hundred
/// hashes set a few hundred bits of 65,536: nearly every row is turned away.)
pub struct Hashes {
    bits: Vec<u64>,
    sorted: Vec<u32>,
}

impl Hashes {
    fn slot(h: u32) -> (usize, u64) {
        let low = (h & 0xffff) as usize;
        (low / 64, 1 << (low % 64))
    }

    pub fn contains(&self, h: u32) -> bool {
        let (word, bit) = Hashes::slot(h);
        self.bits[word] & bit != 0 && self.sorted.binary_search(&h).is_ok()
    }

    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }
}

impl ProjectTasks {
    /// The positions of the tasks whose id hashes to `h`, in listing order: one pass over
    /// the rows, nothing allocated per row.
    fn positions_of(&self, h: u32) -> Vec<usize> {
        match self {
            ProjectTasks::Rows(rows) => rows
                .iter()
                .filter(|r| r.id_hash() == h)
                .map(|r| r.at)
                .collect(),
            ProjectTasks::Listed(items) => items
                .iter()
                .enumerate()
                .filter(|(_, e)| hash(e.id()) == h)
                .map(|(at, _)| at)
                .collect(),
        }
    }
}

/// The positions `index` (sorted (id hash, position) pairs) holds for hash `h`, in order.
fn hashed(index: &[(u32, usize)], h: u32) -> Vec<usize> {
    let start = index.partition_point(|&(x, _)| x < h);
    index[start..]
        .iter()
        .take_while(|&&(x, _)| x == h)
        .map(|&(_, at)| at)
        .collect()
}

/// The hashes to look for, in a [`Hashes`].
pub fn sorted(hashes: impl Iterator<Item = u32>) -> Hashes {
    let mut sorted: Vec<u32> = hashes.collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut bits = vec![0u64; 1 << 10];
    for &h in &sorted {
        let (word, bit) = Hashes::slot(h);
        bits[word] |= bit;
    }
    Hashes { bits, sorted }
}

/// The hash the rows keep of a task id.
pub fn id_hash(id: &str) -> u32 {
    hash(id)
}

/// What a reference can denote, hashed as the rows hold it.
struct Keys {
    id: Option<u32>,
    number: Option<u32>,
    slug: u32,
}

impl Keys {
    fn of(rest: &str) -> Keys {
        let lower = rest.trim().to_ascii_lowercase();
        let ulid = lower
            .strip_prefix("t-")
            .unwrap_or(&lower)
            .to_ascii_uppercase();
        let id = crate::model::id::parse_ulid(&ulid).map(|u| hash(&format!("t-{u}")));
        let number = lower.parse::<u32>().ok().or_else(|| {
            lower
                .split_once('-')
                .filter(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|(n, _)| n.parse().ok())
        });
        Keys {
            id,
            number,
            slug: hash(&lower),
        }
    }
}

/// The tasks of one project: its rows when they are current, else its listing.
pub enum ProjectTasks {
    Rows(Rows),
    Listed(Vec<Arc<TaskEntry>>),
}

impl ProjectTasks {
    /// The rows of `slug` when current, else its listing (which refreshes them), with the
    /// listing's warnings (none with rows: they are written for listings without any).
    pub fn load(ws: &Workspace, slug: &str) -> Result<(ProjectTasks, Vec<Problem>), Error> {
        if let Some(rows) = Rows::open(ws, slug) {
            return Ok((ProjectTasks::Rows(rows), Vec::new()));
        }
        let listed = super::index::tasks(ws, slug)?;
        Ok((ProjectTasks::Listed(listed.items), listed.warnings))
    }

    /// True when the project has no task.
    pub fn is_empty(&self) -> bool {
        match self {
            ProjectTasks::Listed(items) => items.is_empty(),
            ProjectTasks::Rows(rows) => rows.is_empty(),
        }
    }

    /// The number of tasks.
    pub fn len(&self) -> usize {
        match self {
            ProjectTasks::Listed(items) => items.len(),
            ProjectTasks::Rows(rows) => rows.len(),
        }
    }

    /// The task at position `at` of the listing, as far as its row tells.
    pub fn item(&self, at: usize) -> Item<'_> {
        Item { tasks: self, at }
    }

    /// The entries at positions `ats`, in that order; `None` when a rows file failed a
    /// check.
    pub fn entries(&self, ats: &[usize]) -> Option<Vec<Arc<TaskEntry>>> {
        match self {
            ProjectTasks::Listed(items) => ats.iter().map(|&at| items.get(at).cloned()).collect(),
            ProjectTasks::Rows(rows) => rows.entries(ats),
        }
    }

    /// Every task, read in full: what a caller that needs them all pays for.
    pub fn all(&self, ws: &Workspace) -> Result<Vec<Arc<TaskEntry>>, Error> {
        match self {
            ProjectTasks::Listed(items) => Ok(items.clone()),
            ProjectTasks::Rows(rows) => match rows.select(|_| true) {
                Some(all) => Ok(all),
                None => Ok(super::index::tasks(ws, rows.slug())?.items),
            },
        }
    }

    /// The entries whose number, folder and assignee `keep` accepts, in listing order.
    pub fn select(
        &self,
        ws: &Workspace,
        mut keep: impl FnMut(u32, &str, Option<&str>) -> bool,
    ) -> Result<Vec<Arc<TaskEntry>>, Error> {
        match self {
            ProjectTasks::Listed(items) => Ok(items
                .iter()
                .filter(|e| keep(e.number(), e.folder(), e.assignee()))
                .cloned()
                .collect()),
            ProjectTasks::Rows(rows) => {
                match rows.select(|r| keep(r.number(), r.folder(), r.assignee())) {
                    Some(found) => Ok(found),
                    None => Ok(super::index::tasks(ws, rows.slug())?
                        .items
                        .into_iter()
                        .filter(|e| keep(e.number(), e.folder(), e.assignee()))
                        .collect()),
                }
            }
        }
    }

    /// Calls `f` with the number, folder and assignee of every task, reading no entry.
    pub fn each(&self, mut f: impl FnMut(u32, &str, Option<&str>)) {
        match self {
            ProjectTasks::Listed(items) => items
                .iter()
                .for_each(|e| f(e.number(), e.folder(), e.assignee())),
            ProjectTasks::Rows(rows) => rows
                .iter()
                .for_each(|r| f(r.number(), r.folder(), r.assignee())),
        }
    }
}

/// What a reference resolved to.
pub type Resolved = Result<Arc<TaskEntry>, ResolveError>;

/// Resolves a task reference (any FORMAT §3.3 form) across every project as
/// [`super::tasks::resolve_keys`] over the whole listing would, reading only the entries it
/// could name where a project's rows are current. Returns the answer and the warnings of the
/// projects that had to be listed.
pub fn resolve(
    ws: &Workspace,
    projects: &[String],
    reference: &str,
) -> Result<(Resolved, Vec<Problem>), Error> {
    let input = reference.trim();
    let (scope, rest) = match input.split_once('/') {
        Some((p, r)) => (Some(p.strip_prefix("p-").unwrap_or(p)), r),
        None => (None, input),
    };
    let keys = Keys::of(rest);
    let mut warnings = Vec::new();
    let mut candidates = Vec::new();
    let mut populated: Vec<&str> = Vec::new();
    for slug in projects {
        if scope.is_some_and(|p| p != slug) {
            continue;
        }
        let (tasks, found) = ProjectTasks::load(ws, slug)?;
        warnings.extend(found);
        if !tasks.is_empty() {
            populated.push(slug);
        }
        candidates.extend(match &tasks {
            ProjectTasks::Listed(items) => items.clone(),
            ProjectTasks::Rows(rows) => match rows.candidates(&keys) {
                Some(c) => c,
                None => super::index::tasks(ws, slug)?.items,
            },
        });
    }
    let answer = resolve_among(&candidates, reference, |p| populated.contains(&p)).cloned();
    Ok((answer, warnings))
}

/// Writes the rows of project `slug` from its listing when they are not current: called by
/// the listing, whose directories' stamps `dirs` were taken before they were listed (the
/// tasks directory's settled, a status folder's perhaps too recent to trust: a reader then
/// verifies it, [`Rows::open`]); `ino` gives each listed entry's inode. Nothing is written for a listing with
/// warnings or a tasks directory holding anything but the status folders (a folder that is
/// not one is listed, and reported, every time). Failure is ignored: the rows are only an
/// accelerator.
pub(super) fn refresh(
    ws: &Workspace,
    slug: &str,
    dirs: &[DirStamp],
    listing_ns: i128,
    listing: &Listing<Arc<TaskEntry>>,
    ino: impl Fn(&TaskEntry) -> Option<u64>,
) {
    if !listing.warnings.is_empty() || Rows::open(ws, slug).is_some() {
        return;
    }
    let tasks_dir = ws.path(&["projects", slug, "tasks"]);
    let Ok(names) = ws.fs.list_dir(&tasks_dir) else {
        return;
    };
    let only_folders = names.iter().all(|(name, path)| {
        name.starts_with('.')
            || STATUS_FOLDERS.contains(&name.as_str())
            || !Path::is_dir(path)
            || path.is_symlink()
    });
    if !only_folders {
        return;
    }
    let Some(inos) = listing
        .items
        .iter()
        .map(|e| ino(e))
        .collect::<Option<Vec<u64>>>()
    else {
        return;
    };
    let (agents, rows, entries) = encode_rows(&listing.items, &inos, true);
    let head = header(slug, None, listing_ns, dirs, None, &agents);
    let _ = ws
        .fs
        .replace_derived(&base_file(ws, slug), &wrap(&head, &rows, &entries));
}

/// Every project's tasks for a reader that looks up a few of them by id, parent or
/// reference, as the brief does: rows where current (entries read as asked, each once),
/// listings elsewhere. Answers as the same lookups over the whole listing would.
pub struct Lookup {
    projects: Vec<(String, ProjectTasks)>,
    /// Per project, (id hash, position) sorted; made after a few lookups by id. (One
    /// allocation: a map of ten thousand vectors was most of the lookups' cost.)
    by_hash: Vec<std::cell::OnceCell<Vec<(u32, usize)>>>,
    /// Per project, lookups by id answered by scanning the rows so far.
    scans: Vec<std::cell::Cell<usize>>,
    /// Entries read so far, by project and position.
    read: std::cell::RefCell<std::collections::HashMap<(usize, usize), Arc<TaskEntry>>>,
    /// Answers of [`Lookup::find`] so far, by id and project: a brief names the same few
    /// objects on many of its lines.
    found: FoundMemo,
}

type FoundMemo =
    std::cell::RefCell<std::collections::HashMap<(String, Option<String>), Option<Arc<TaskEntry>>>>;

impl Lookup {
    /// The tasks of projects `slugs` (in that order), with the warnings of those listed.
    pub fn load(ws: &Workspace, slugs: &[String]) -> Result<(Lookup, Vec<Problem>), Error> {
        let mut warnings = Vec::new();
        let mut projects = Vec::new();
        for slug in slugs {
            let (tasks, found) = ProjectTasks::load(ws, slug)?;
            warnings.extend(found);
            projects.push((slug.clone(), tasks));
        }
        let by_hash = projects
            .iter()
            .map(|_| std::cell::OnceCell::new())
            .collect();
        let scans = projects.iter().map(|_| std::cell::Cell::new(0)).collect();
        let lookup = Lookup {
            projects,
            by_hash,
            scans,
            read: std::cell::RefCell::new(std::collections::HashMap::new()),
            found: std::cell::RefCell::new(std::collections::HashMap::new()),
        };
        Ok((lookup, warnings))
    }

    /// The entry at position `at` of project `p`; a rows file that fails its check makes
    /// the project listed instead.
    fn entry(&self, ws: &Workspace, p: usize, at: usize) -> Result<Arc<TaskEntry>, Error> {
        if let Some(e) = self.read.borrow().get(&(p, at)) {
            return Ok(Arc::clone(e));
        }
        let (slug, tasks) = &self.projects[p];
        let e = match tasks.item(at).entry() {
            Some(e) => e,
            None => super::index::tasks(ws, slug)?
                .items
                .get(at)
                .cloned()
                .ok_or_else(|| Error::NotFound {
                    what: "task",
                    id: format!("{slug} #{at}"),
                })?,
        };
        self.read.borrow_mut().insert((p, at), Arc::clone(&e));
        Ok(e)
    }

    /// The first task with this id, in project order; only in project `only` when given.
    pub fn by_id(
        &self,
        ws: &Workspace,
        id: &str,
        only: Option<&str>,
    ) -> Result<Option<Arc<TaskEntry>>, Error> {
        self.find(ws, id, only)
    }

    /// The ids among `ids` of tasks of project `slug` whose parent is `parent` (`None`: tasks
    /// at the top). One pass over the rows compares hashes; only likely matches are read.
    pub fn with_parent(
        &self,
        ws: &Workspace,
        slug: &str,
        parent: Option<&str>,
        ids: &BTreeSet<&str>,
    ) -> Result<BTreeSet<String>, Error> {
        let want = parent.map(hash);
        let hashes = sorted(ids.iter().map(|id| hash(id)));
        let mut out = BTreeSet::new();
        for (p, (s, tasks)) in self.projects.iter().enumerate() {
            if s != slug {
                continue;
            }
            // Rows in one pass (no part located per row), ids by their hashes ([`Hashes`]).
            let likely: Vec<bool> = match tasks {
                ProjectTasks::Rows(rows) => rows
                    .iter()
                    .map(|r| r.parent_hash() == want && hashes.contains(r.id_hash()))
                    .collect(),
                ProjectTasks::Listed(items) => items
                    .iter()
                    .map(|e| e.parent() == parent && ids.contains(e.id()))
                    .collect(),
            };
            for (at, likely) in likely.into_iter().enumerate() {
                if likely {
                    let e = self.entry(ws, p, at)?;
                    if e.parent() == parent && ids.contains(e.id()) {
                        out.insert(e.id().to_string());
                    }
                }
            }
        }
        Ok(out)
    }

    /// The first task with this id, in project order; only in project `only` when given.
    fn find(
        &self,
        ws: &Workspace,
        id: &str,
        only: Option<&str>,
    ) -> Result<Option<Arc<TaskEntry>>, Error> {
        let key = (id.to_string(), only.map(str::to_string));
        if let Some(found) = self.found.borrow().get(&key) {
            return Ok(found.clone());
        }
        let found = self.find_uncached(ws, id, only)?;
        self.found.borrow_mut().insert(key, found.clone());
        Ok(found)
    }

    fn find_uncached(
        &self,
        ws: &Workspace,
        id: &str,
        only: Option<&str>,
    ) -> Result<Option<Arc<TaskEntry>>, Error> {
        /// Lookups in one project before its positions are indexed by id hash: a scan of
        /// the rows costs less than building the index for a few.
        const SCANS: usize = 16;
        let h = hash(id);
        for (p, (slug, tasks)) in self.projects.iter().enumerate() {
            if only.is_some_and(|o| o != slug) {
                continue;
            }
            let scans = self.scans[p].get();
            let positions: Vec<usize> = match self.by_hash[p].get() {
                Some(index) => hashed(index, h),
                None if scans < SCANS => {
                    self.scans[p].set(scans + 1);
                    tasks.positions_of(h)
                }
                None => {
                    let index = self.by_hash[p].get_or_init(|| {
                        let mut index: Vec<(u32, usize)> = tasks
                            .walk()
                            .iter()
                            .enumerate()
                            .map(|(at, w)| (w.id_hash, at))
                            .collect();
                        index.sort_unstable();
                        index
                    });
                    hashed(index, h)
                }
            };
            for at in positions {
                let e = self.entry(ws, p, at)?;
                if e.id() == id {
                    return Ok(Some(e));
                }
            }
        }
        Ok(None)
    }

    /// Resolves a reference as [`resolve`] does, among these projects.
    pub fn resolve(&self, ws: &Workspace, reference: &str) -> Result<Resolved, Error> {
        let input = reference.trim();
        let (scope, rest) = match input.split_once('/') {
            Some((p, r)) => (Some(p.strip_prefix("p-").unwrap_or(p)), r),
            None => (None, input),
        };
        let keys = Keys::of(rest);
        let mut candidates = Vec::new();
        let mut populated: Vec<&str> = Vec::new();
        for (p, (slug, tasks)) in self.projects.iter().enumerate() {
            if scope.is_some_and(|s| s != slug) {
                continue;
            }
            if !tasks.is_empty() {
                populated.push(slug);
            }
            for at in 0..tasks.len() {
                let may = match tasks {
                    ProjectTasks::Listed(_) => true,
                    ProjectTasks::Rows(rows) => {
                        let r = rows.row(at);
                        keys.id == Some(r.id_hash())
                            || keys.number == Some(r.number())
                            || r.slug_hash() == keys.slug
                    }
                };
                if may {
                    candidates.push(self.entry(ws, p, at)?);
                }
            }
        }
        Ok(resolve_among(&candidates, reference, |p| populated.contains(&p)).cloned())
    }

    /// The tasks of project `slug` whose parent is in `parents`, in listing order.
    pub fn children_of(
        &self,
        ws: &Workspace,
        slug: &str,
        parents: &BTreeSet<String>,
    ) -> Result<Vec<Arc<TaskEntry>>, Error> {
        let hashes = sorted(parents.iter().map(|p| hash(p)));
        let mut out = Vec::new();
        for (p, (s, tasks)) in self.projects.iter().enumerate() {
            if s != slug {
                continue;
            }
            let may: Vec<bool> = match tasks {
                ProjectTasks::Listed(items) => items
                    .iter()
                    .map(|e| e.parent().is_some_and(|x| parents.contains(x)))
                    .collect(),
                ProjectTasks::Rows(rows) => rows
                    .iter()
                    .map(|r| r.parent_hash().is_some_and(|h| hashes.contains(h)))
                    .collect(),
            };
            for (at, may) in may.into_iter().enumerate() {
                if may {
                    let e = self.entry(ws, p, at)?;
                    if e.parent().is_some_and(|x| parents.contains(x)) {
                        out.push(e);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The ids of the `n` done tasks of project `slug` whose last Log line is the most
    /// recent (then the greatest ids).
    pub fn recent_done(&self, ws: &Workspace, slug: &str, n: usize) -> Result<Vec<String>, Error> {
        for (p, (s, tasks)) in self.projects.iter().enumerate() {
            if s != slug {
                continue;
            }
            return match tasks {
                ProjectTasks::Listed(items) => {
                    let mut done: Vec<(Option<&str>, &str)> = items
                        .iter()
                        .filter(|t| t.folder() == "done")
                        .map(|t| (t.last_log_at(), t.id()))
                        .collect();
                    done.sort_by(|a, b| b.cmp(a));
                    Ok(done
                        .into_iter()
                        .take(n)
                        .map(|(_, id)| id.to_string())
                        .collect())
                }
                ProjectTasks::Rows(rows) => {
                    let mut ranked: Vec<(u32, usize)> = rows
                        .iter()
                        .filter_map(|r| r.done_rank().map(|k| (k, r.at)))
                        .filter(|(k, _)| (*k as usize) < n)
                        .collect();
                    ranked.sort_unstable();
                    ranked
                        .into_iter()
                        .map(|(_, at)| Ok(self.entry(ws, p, at)?.id().to_string()))
                        .collect()
                }
            };
        }
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::sorted;

    #[test]
    fn hashes_answer_exactly_the_set_they_were_made_of() {
        // Hashes sharing their low 16 bits (one bit of the filter) must still differ.
        let set = [7u32, 7 | 1 << 16, 7 | 2 << 20, 65_535, 1 << 31];
        let hashes = sorted(set.iter().copied().chain([7]));
        for h in set {
            assert!(hashes.contains(h), "{h} was put in");
        }
        for h in [7 | 3 << 16, 8, 0, 65_535 | 1 << 16, u32::MAX] {
            assert!(!hashes.contains(h), "{h} was not put in");
        }
        assert!(!hashes.is_empty());
        assert!(sorted(std::iter::empty()).is_empty());
        assert!(!sorted(std::iter::empty()).contains(0));
    }
}
