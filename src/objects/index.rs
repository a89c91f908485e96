//! The derived index under `cache/` (docs/FORMAT.md §21): small per-file extracts of object
//! files, so that a read needing a few fields of many files parses only the files that changed,
//! and stats only the directories, not the files, of a workspace that did not change.
//!
//! Invariants, which make deleting `cache/` change nothing but speed:
//! - an extract is a pure function of the file's bytes;
//! - a directory's listing and extracts are served from the cache only while the directory's
//!   stamp (modification and change times, inode) equals the one recorded when it was listed.
//!   Every write dacli makes (atomic replace, create-new, status move), every git checkout or
//!   merge and every editor that saves by rename creates, removes or renames an entry, which
//!   changes the directory's stamp; a changed directory is listed again and each file's own
//!   stamp (size, modification and change times, inode) decides whether its extract is reused.
//!   A file rewritten in place (same inode) inside an unchanged directory keeps its extract
//!   until its directory changes or `cache/` is deleted (docs/PERFORMANCE.md);
//! - a stamp is trusted only when its change time lies before the listing that recorded it by
//!   more than the timestamp granularity (the "racy" rule git uses for its index: a change in
//!   the same timestamp tick as the listing could otherwise keep its old stamp);
//! - malformed files are never cached, so they are re-read and reported on every call;
//! - the cache is written by atomic replace, and a cache that cannot be read, parsed or written
//!   is ignored: the files are the only source of truth. A long-running process (the MCP
//!   server) keeps the last cache it read or wrote in memory and revalidates it the same way
//!   on every call.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::codec::{
    Buf, Extent, Input, Output, Record, RecordBuilder, SharedStr, buf_of, offset_at, offset_width,
};

use crate::model::task::{TaskHead, parse_task_filename};
use crate::model::taskdoc::strip_wikilink;
use crate::store::{Document, Problem, Reason, TEMP_PREFIX};
use crate::workspace::{STATUS_FOLDERS, Workspace};

use super::{Error, Listing, field_problem, warn_or_fail};

pub use super::rows::{ProjectTasks, Row, Rows};

/// The layout of cache files; with each extract type's fingerprint ([`format_of`]) it names
/// the layout a cache was written in. Bumped when bytes are read differently.
const FORMAT: &str = "dacli-index/9";

/// The timestamp granularity assumed for file systems with sub-second timestamps: two ticks
/// of the coarsest kernel clock that stamps files (HZ = 100).
const TICK_NS: i128 = 20_000_000;

/// The granularity assumed when stamps carry whole seconds only (FAT keeps two seconds).
const COARSE_TICK_NS: i128 = 2_000_000_000;

/// A directory (relative to the workspace directory) and its stamp, `None` when absent.
pub type DirStamp = (String, Option<Stamp>);

/// The metadata that identifies one version of a file or directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
}

impl Stamp {
    /// The stamp of a regular file (`lstat`); `None` for anything else, which is never cached.
    pub fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        if !meta.file_type().is_file() {
            return None;
        }
        Some(Stamp::from_meta(&meta))
    }

    /// The stamp of a real directory; `None` when absent or anything else. A directory's size
    /// is left out: it says nothing its times do not.
    pub fn of_dir(path: &Path) -> Option<Stamp> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        if !meta.file_type().is_dir() {
            return None;
        }
        Some(Stamp {
            size: 0,
            ..Stamp::from_meta(&meta)
        })
    }

    /// The size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The modification time, in nanoseconds since the epoch.
    pub fn mtime_ns(&self) -> i128 {
        self.mtime_ns
    }

    #[cfg(unix)]
    pub fn from_meta(meta: &std::fs::Metadata) -> Stamp {
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
    pub fn from_meta(meta: &std::fs::Metadata) -> Stamp {
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

    pub fn encode(&self, out: &mut Output) {
        out.var(self.size);
        out.ivar(self.mtime_ns);
        out.ivar(self.ctime_ns);
        out.var(self.ino);
    }

    pub fn decode(input: &mut Input<'_>) -> Option<Stamp> {
        Some(Stamp {
            size: input.var()?,
            mtime_ns: input.ivar()?,
            ctime_ns: input.ivar()?,
            ino: input.var()?,
        })
    }

    /// The stamp as four integers, for records that hold integers; `None` for times beyond
    /// 2262. [`Stamp::from_ints`] gives it back.
    pub fn to_ints(&self) -> Option<[i64; 4]> {
        Some([
            i64::try_from(self.size).ok()?,
            i64::try_from(self.mtime_ns).ok()?,
            i64::try_from(self.ctime_ns).ok()?,
            // An inode is a bit pattern: the cast goes both ways without loss.
            self.ino as i64,
        ])
    }

    /// The stamp [`Stamp::to_ints`] gave; `None` for a negative size.
    pub fn from_ints([size, mtime_ns, ctime_ns, ino]: [i64; 4]) -> Option<Stamp> {
        Some(Stamp {
            size: u64::try_from(size).ok()?,
            mtime_ns: i128::from(mtime_ns),
            ctime_ns: i128::from(ctime_ns),
            ino: ino as u64,
        })
    }

    /// True when this stamp was already old when the cache written at `written_ns` listed it,
    /// `listing_ns` before writing.
    pub fn settled(&self, written_ns: i128, listing_ns: i128) -> bool {
        let tick = if self.ctime_ns % 1_000_000_000 == 0 {
            COARSE_TICK_NS
        } else {
            TICK_NS
        };
        self.ctime_ns < written_ns - listing_ns - tick
    }
}

/// An extract kept in a cache file: how it is written, and read back from the buffer the
/// whole file was read into.
///
/// Invariant: `decode` reads back exactly what `encode` wrote. A cache file passes its
/// checksum whatever layout wrote it, so its format string names the layout: [`FORMAT`] and
/// a fingerprint of `sample`'s encoding ([`format_of`]). A change to `encode` changes the
/// fingerprint by itself; a change only to how bytes are read must change [`FORMAT`].
pub trait Extract: Send + Sync + Sized + 'static {
    fn encode(&self, out: &mut Output);
    fn decode(buf: &Buf, input: &mut Input<'_>) -> Option<Self>;
    /// A value with every field set, each to a different value.
    fn sample() -> Self;
}

/// The format string of a cache file of `T` extracts. (Two intermediate layouts once shared
/// one format string; a cache written by one decoded as empty events under the other.)
pub fn format_of<T: Extract>() -> String {
    let mut out = Output::default();
    T::sample().encode(&mut out);
    format!("{FORMAT}/{:08x}", crc32fast::hash(&out.0))
}

#[derive(Debug)]
struct Cached<T> {
    stamp: Stamp,
    value: Arc<T>,
}

// Not derived: sharing the extract needs no `T: Clone`.
impl<T> Clone for Cached<T> {
    fn clone(&self) -> Self {
        Cached {
            stamp: self.stamp,
            value: Arc::clone(&self.value),
        }
    }
}

/// One listed directory: its stamp when listed and each `.md` file it held, by name, with the
/// file's extract (`None` for a file that could not be cached and is read on every scan).
#[derive(Debug)]
struct DirCache<T> {
    stamp: Stamp,
    files: Vec<(SharedStr, Option<Cached<T>>)>,
}

/// What a process remembers of a cache file it read or wrote: the file's stamp then, and its
/// content, so that a long-running server does not parse the same cache on every call.
struct Memo {
    stamp: Stamp,
    listing_ns: i128,
    dirs: Box<dyn Any + Send + Sync>,
}

fn memos() -> &'static Mutex<HashMap<PathBuf, Memo>> {
    static MEMOS: OnceLock<Mutex<HashMap<PathBuf, Memo>>> = OnceLock::new();
    MEMOS.get_or_init(|| Mutex::new(HashMap::new()))
}

type Dirs<T> = BTreeMap<String, Arc<DirCache<T>>>;

/// The directories a [`FileCache`] served unchanged ([`FileCache::served_token`]), held so
/// that they stay what they were.
pub struct Served(Vec<Arc<dyn Any + Send + Sync>>);

impl Served {
    /// True when both name the very same extracts.
    pub fn same(&self, other: &Served) -> bool {
        self.0.len() == other.0.len() && self.0.iter().zip(&other.0).all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

/// One cache file of extracts, organised by directory (relative to the workspace directory).
///
/// Use: [`FileCache::load`], one [`FileCache::scan`] per directory of the scanned set, then
/// [`FileCache::save`]. Directories not scanned are dropped at save, so each cache file must
/// cover one whole scanned set (e.g. the tasks of one project).
pub struct FileCache<T> {
    name: String,
    old: Dirs<T>,
    new: Dirs<T>,
    /// The cache file's modification time (ns), `None` without a usable cache.
    written_ns: Option<i128>,
    listing_ns: i128,
    started: Instant,
    dirty: bool,
    /// Each directory scanned: its path, its stamp before it was looked at, and the names it
    /// was found to hold, so that [`FileCache::unsettled`] can tell whether it moved since.
    scanned: Vec<(PathBuf, Option<Stamp>, Seen<T>)>,
    /// A listed file was gone by the time it was read: a writer moved or removed it.
    vanished: bool,
}

/// The names a scan found in a directory: those of its cache entry when it was served whole
/// (not copied: a trusted directory of thousands of files is the common case), else the
/// names listed.
enum Seen<T> {
    Cached(Arc<DirCache<T>>),
    Listed(Vec<String>),
}

impl<T> Seen<T> {
    fn names(&self) -> Vec<&str> {
        match self {
            Seen::Cached(d) => d.files.iter().map(|(n, _)| n.as_str()).collect(),
            Seen::Listed(names) => names.iter().map(String::as_str).collect(),
        }
    }
}

impl<T: Extract> FileCache<T> {
    /// Loads `cache/<name>.bin` (from memory when this process already holds that version);
    /// a missing, unreadable or outdated cache is an empty one.
    pub fn load(ws: &Workspace, name: &str) -> FileCache<T> {
        // The listing time bounds the racy window: measure it from before anything is listed.
        #[allow(
            clippy::disallowed_methods,
            reason = "a monotonic span bounding the index's racy window; never shown or stored as a time"
        )]
        let started = Instant::now();
        let path = cache_file(ws, name);
        let (written_ns, listing_ns, old) = match load_dirs::<T>(&path) {
            Some((stamp, listing_ns, dirs)) => (Some(stamp.mtime_ns), listing_ns, dirs),
            None => (None, 0, BTreeMap::new()),
        };
        FileCache {
            name: name.to_string(),
            old,
            new: BTreeMap::new(),
            written_ns,
            listing_ns,
            started,
            dirty: false,
            scanned: Vec::new(),
            vanished: false,
        }
    }

    /// The extracts of the `.md` files of `dir` (no hidden or temporary names), in name
    /// order. An unchanged directory is served from the cache without listing it; a changed
    /// one is listed and only files whose stamp changed are parsed, by `parse` (from the
    /// file's name, path, stamp as listed, parsed document and bytes). A file that cannot be read or parsed
    /// is pushed to `warnings` and skipped; real I/O failures are errors.
    pub fn scan(
        &mut self,
        ws: &Workspace,
        dir: &Path,
        warnings: &mut Vec<Problem>,
        mut parse: impl FnMut(&str, &Path, Option<Stamp>, &Document, &[u8]) -> Result<T, Problem>,
    ) -> Result<Vec<Arc<T>>, Error> {
        let key = key_of(ws, dir);
        let stamp = Stamp::of_dir(dir);
        let old = self.old.get(&key).cloned();
        if let (Some(stamp), Some(old)) = (stamp, &old)
            && old.stamp == stamp
            && self.trusted(&stamp)
            && old.files.iter().all(|(_, c)| c.is_some())
        {
            self.new.insert(key, old.clone());
            self.scanned
                .push((dir.to_path_buf(), Some(stamp), Seen::Cached(old.clone())));
            return Ok(old
                .files
                .iter()
                .filter_map(|(_, c)| c.as_ref().map(|c| Arc::clone(&c.value)))
                .collect());
        }
        // A changed directory, or one holding files that could not be cached (reported again
        // on every call): list it and reuse the extract of every file whose stamp is unchanged.
        // Not when it is no real directory now (a symlink, perhaps leading out of `.dacli/`):
        // every file is then read, and the read enforces where files may be.
        let previous: HashMap<&str, &Cached<T>> = old
            .iter()
            .filter(|_| stamp.is_some())
            .flat_map(|d| d.files.iter())
            .filter_map(|(n, c)| c.as_ref().map(|c| (n.as_str(), c)))
            .collect();
        let mut files = Vec::new();
        let mut out = Vec::new();
        let listed = md_files(ws, dir)?;
        self.scanned.push((
            dir.to_path_buf(),
            stamp,
            Seen::Listed(listed.iter().map(|(n, _)| n.clone()).collect()),
        ));
        for (name, path) in listed {
            let file_stamp = Stamp::of(&path);
            let hit = previous
                .get(name.as_str())
                .filter(|c| Some(c.stamp) == file_stamp && self.trusted(&c.stamp));
            let cached = match hit {
                Some(c) => Some((*c).clone()),
                None => {
                    let value = match extract(ws, &path, warnings, |doc, bytes| {
                        parse(&name, &path, file_stamp, doc, bytes)
                    }) {
                        // Listed, then moved or removed by a writer before it was read: not
                        // an error of the workspace; the caller decides whether to look again.
                        Err(e) if e.is_vanished() => {
                            self.vanished = true;
                            self.dirty = true;
                            continue;
                        }
                        other => other?,
                    };
                    self.dirty = true;
                    match (value, file_stamp) {
                        (Some(v), Some(s)) => Some(Cached {
                            stamp: s,
                            value: Arc::new(v),
                        }),
                        (Some(v), None) => {
                            out.push(Arc::new(v));
                            None
                        }
                        (None, _) => None,
                    }
                }
            };
            if let Some(c) = &cached {
                out.push(Arc::clone(&c.value));
            }
            files.push((SharedStr::new(&name), cached));
        }
        match stamp {
            Some(stamp) => {
                let fresh = DirCache { stamp, files };
                let same = old.as_ref().is_some_and(|o| o.stamp == stamp);
                // A directory listed again only because its stamp was too recent to trust is
                // written back, so that the next call can trust it.
                self.dirty |= !same || !self.trusted(&stamp);
                self.new.insert(key, Arc::new(fresh));
            }
            None => self.dirty |= old.is_some(),
        }
        Ok(out)
    }

    /// What this cache served, when every directory scanned so far was served unchanged
    /// (the very extracts of the previous scan, nothing listed or parsed again): a token
    /// [`Served::same`] as one a previous scan returned means the same files, so a long-running
    /// process may reuse what it derived from them. `None` when anything was listed or parsed.
    pub fn served_token(&self) -> Option<Served> {
        let (dirs, unchanged) = self.served();
        unchanged.then(|| {
            Served(
                dirs.into_iter()
                    .map(|d| d as Arc<dyn Any + Send + Sync>)
                    .collect(),
            )
        })
    }

    /// The directories scanned so far, and whether each was served unchanged from the cache
    /// (the very extracts of the previous scan, nothing listed or parsed again).
    fn served(&self) -> (Vec<Arc<DirCache<T>>>, bool) {
        let unchanged = !self.dirty
            && self
                .new
                .iter()
                .all(|(k, d)| self.old.get(k).is_some_and(|o| Arc::ptr_eq(o, d)));
        (self.new.values().cloned().collect(), unchanged)
    }

    /// True when what [`FileCache::scan`] saw may not be one state of the scanned set: a listed
    /// file vanished before it was read, or a scanned directory changed since it was looked at
    /// (a task moved from a folder not yet scanned to one already scanned is otherwise missed).
    /// A directory whose stamp is too recent to prove it unchanged (a change within the same
    /// clock tick keeps it) is listed again and its names compared.
    ///
    /// A pass that served every directory whole from the cache needs no second look: each
    /// directory's trusted stamp was unchanged when it was looked at, and a stamp never
    /// comes back once changed, so every one of them still held its cached files when the
    /// first was looked at. That is one state; a server's warm calls are all such passes.
    pub fn unsettled(&self, ws: &Workspace) -> Result<bool, Error> {
        if self.vanished {
            return Ok(true);
        }
        if self
            .scanned
            .iter()
            .all(|(_, _, seen)| matches!(seen, Seen::Cached(_)))
        {
            return Ok(false);
        }
        for (dir, before, names) in &self.scanned {
            let now = Stamp::of_dir(dir);
            if now != *before {
                return Ok(true);
            }
            if now.is_none_or(|s| !self.trusted(&s)) {
                let again: Vec<String> = md_files(ws, dir)?.into_iter().map(|(n, _)| n).collect();
                if again.iter().map(String::as_str).ne(names.names()) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// The directories the last pass scanned and `also` (keys relative to the workspace),
    /// each with its stamp from before it was looked at, and when the pass started; `None`
    /// unless `also`'s stamp is settled. The scanned directories' stamps may be recent: a
    /// reader of the rows made from them checks such a directory's names and inodes
    /// before it trusts them ([`super::rows::Rows::open`]), so that back-to-back writers
    /// do not each make the next reader list the project.
    fn listed_dirs(
        &self,
        ws: &Workspace,
        also: (&Path, Option<Stamp>),
    ) -> Option<(Vec<DirStamp>, Instant)> {
        if !also.1.is_none_or(|s| self.trusted(&s)) {
            return None;
        }
        let dirs = std::iter::once(also)
            .chain(
                self.scanned
                    .iter()
                    .map(|(dir, stamp, _)| (dir.as_path(), *stamp)),
            )
            .map(|(dir, stamp)| (key_of(ws, dir), stamp))
            .collect();
        Some((dirs, self.started))
    }

    fn trusted(&self, stamp: &Stamp) -> bool {
        self.written_ns
            .is_some_and(|w| stamp.settled(w, self.listing_ns))
    }

    /// Writes the cache back when anything changed, and remembers it for this process. Failure
    /// is ignored: the cache is only an accelerator, and a read-only workspace must still be
    /// readable.
    pub fn save(self, ws: &Workspace) {
        let path = cache_file(ws, &self.name);
        let dropped = self.old.keys().any(|k| !self.new.contains_key(k));
        if !self.dirty && !dropped {
            return;
        }
        let listing_ns = i128::try_from(self.started.elapsed().as_nanos()).unwrap_or(i128::MAX);
        let bytes = encode_dirs(listing_ns, &self.new);
        if ws.fs.replace_derived(&path, &bytes).is_err() {
            return;
        }
        if let (Some(stamp), Ok(mut memos)) = (Stamp::of(&path), memos().lock()) {
            memos.insert(
                path,
                Memo {
                    stamp,
                    listing_ns,
                    dirs: Box::new(self.new),
                },
            );
        }
    }
}

/// The bytes of a cache file: the format first (a cache of another version is not decoded
/// at all), the listing's duration, then each directory with its files and their extracts.
fn encode_dirs<T: Extract>(listing_ns: i128, dirs: &Dirs<T>) -> Vec<u8> {
    let mut out = Output::default();
    out.str(&format_of::<T>());
    out.ivar(listing_ns);
    out.var(dirs.len() as u64);
    for (key, dir) in dirs {
        out.str(key);
        dir.stamp.encode(&mut out);
        out.var(dir.files.len() as u64);
        for (name, cached) in &dir.files {
            out.str(name);
            match cached {
                None => out.u8(0),
                Some(c) => {
                    out.u8(1);
                    c.stamp.encode(&mut out);
                    c.value.encode(&mut out);
                }
            }
        }
    }
    super::codec::seal(out)
}

/// [`encode_dirs`] read back; `None` for anything it did not write. The checksum at the end
/// covers everything before it: a cache torn by a crash (it is written without fsync) or
/// changed by hand is refused whole, which is what lets the extracts skip checking their own
/// bytes.
fn decode_dirs<T: Extract>(buf: &Buf) -> Option<(i128, Dirs<T>)> {
    let mut input = Input::new(super::codec::unseal(buf.as_bytes())?);
    if input.str()? != format_of::<T>() {
        return None;
    }
    let listing_ns = input.ivar()?;
    let mut dirs = BTreeMap::new();
    for _ in 0..input.count()? {
        let key = input.str()?.to_string();
        let stamp = Stamp::decode(&mut input)?;
        let n = input.count()?;
        // Every file takes more than one byte: a count beyond what is left is a torn file.
        let mut files = Vec::with_capacity(n.min(buf.len()));
        for _ in 0..n {
            let name = input.shared(buf)?;
            let cached = match input.u8()? {
                0 => None,
                1 => Some(Cached {
                    stamp: Stamp::decode(&mut input)?,
                    value: Arc::new(T::decode(buf, &mut input)?),
                }),
                _ => return None,
            };
            files.push((name, cached));
        }
        dirs.insert(key, Arc::new(DirCache { stamp, files }));
    }
    input.at_end().then_some((listing_ns, dirs))
}

/// The directories of a cache file: from this process's memory when the file is the version
/// it last saw, else parsed from disk.
fn load_dirs<T: Extract>(path: &Path) -> Option<(Stamp, i128, Dirs<T>)> {
    let stamp = Stamp::of(path)?;
    if let Ok(memos) = memos().lock()
        && let Some(m) = memos.get(path)
        && m.stamp == stamp
        && let Some(dirs) = m.dirs.downcast_ref::<Dirs<T>>()
    {
        return Some((stamp, m.listing_ns, dirs.clone()));
    }
    // Not `Fs::read`: the cache is dacli's own derived file, and an index of ten thousand
    // tasks is far over the object-file size limit.
    // UTF-8 throughout (objects::codec), checked here once for every field read later.
    let buf = buf_of(std::fs::read(path).ok()?)?;
    let (listing_ns, dirs) = decode_dirs::<T>(&buf)?;
    // Remembered for the rest of the process: a server's next call skips the parse, and a
    // short-lived command never pays for freeing thousands of extracts one by one.
    if let Ok(mut memos) = memos().lock() {
        memos.insert(
            path.to_path_buf(),
            Memo {
                stamp,
                listing_ns,
                dirs: Box::new(dirs.clone()),
            },
        );
    }
    Some((stamp, listing_ns, dirs))
}

/// Reads and parses one file into an extract; a bad file becomes a warning and `None`.
fn extract<T>(
    ws: &Workspace,
    path: &Path,
    warnings: &mut Vec<Problem>,
    parse: impl FnOnce(&Document, &[u8]) -> Result<T, Problem>,
) -> Result<Option<T>, Error> {
    let bytes = match ws.fs.read(path) {
        Ok(b) => b,
        Err(e) => {
            warn_or_fail(warnings, Err(e))?;
            return Ok(None);
        }
    };
    let parsed = Document::parse(&ws.display(path), &bytes).map_err(crate::store::Error::Malformed);
    let Some(doc) = warn_or_fail(warnings, parsed)? else {
        return Ok(None);
    };
    match parse(&doc, &bytes) {
        Ok(value) => Ok(Some(value)),
        Err(p) => {
            warnings.push(p);
            Ok(None)
        }
    }
}

/// `cache/<name>.bin` in the workspace, in the layout of [`encode_dirs`].
fn cache_file(ws: &Workspace, name: &str) -> std::path::PathBuf {
    cache_file_named(ws, &format!("{name}.bin"))
}

/// `cache/<file>` in the workspace.
pub fn cache_file_named(ws: &Workspace, file: &str) -> std::path::PathBuf {
    ws.path(&["cache", file])
}

/// Runs `pass` over the cache `cache/<name>.bin` until one pass saw a single state of the
/// directories it scanned ([`FileCache::unsettled`]), fifty passes at most; the last is served
/// as found. Writers move and remove files while readers list (a task changing status, an
/// event archived): without this, a reader fails on a file listed then gone, or misses one
/// moved from a directory not yet scanned to one already scanned. Five passes were not
/// enough against a writer moving one task every 0.3 ms: about one listing in seven used
/// them all, and some of those missed the task. A pass over directories served from the cache
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
        TaskEntry(Extent::own(out.0))
    }

    fn bytes(&self) -> &[u8] {
        self.0.bytes()
    }

    /// The bytes [`TaskEntry::from_bytes`] reads back.
    pub(super) fn entry_bytes(&self) -> &[u8] {
        self.0.bytes()
    }

    /// The entry whose bytes [`TaskEntry::entry_bytes`] gave; `None` when they cannot be one
    /// (not UTF-8, shorter than the fixed head).
    pub(super) fn from_bytes(bytes: Vec<u8>) -> Option<TaskEntry> {
        let buf = buf_of(bytes)?;
        (buf.len() >= TASK_HEAD).then(|| TaskEntry(Extent::whole(buf)))
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

impl super::tasks::TaskKey for TaskEntry {
    fn key_project(&self) -> &str {
        self.project()
    }
    fn key_id(&self) -> &str {
        self.id()
    }
    fn key_number(&self) -> u32 {
        self.number()
    }
    fn key_slug(&self) -> &str {
        self.slug()
    }
}

/// Every task of project `slug` as index entries, sorted by number then id, with the warnings
/// a listing reports (FORMAT §4.4), exactly as [`super::tasks::list`] reports them; of two
/// copies of one id the greater `rev` is used.
pub fn tasks(ws: &Workspace, slug: &str) -> Result<Listing<Arc<TaskEntry>>, Error> {
    let tasks_dir = ws.path(&["projects", slug, "tasks"]);
    let tasks_stamp = Stamp::of_dir(&tasks_dir);
    let (mut out, cache) = settled_pass(ws, &format!("tasks-{slug}"), |cache| {
        scan_tasks(ws, slug, cache)
    })?;
    let found = std::mem::take(&mut out.items);
    let (dirs, unchanged) = cache.served();
    let settled = cache.listed_dirs(ws, (&tasks_dir, tasks_stamp));
    cache.save(ws);
    let kept = settled.as_ref().map(|_| dirs.clone());
    let out = sorted_listing(ws, memo_key_dirs(ws, slug), dirs, unchanged, found, out);
    if let (Some((stamps, started)), Some(dirs)) = (settled, kept) {
        // Each entry's inode, by the address of the extract the listing shares.
        let inos: HashMap<usize, u64> = dirs
            .iter()
            .flat_map(|d| d.files.iter())
            .filter_map(|(_, c)| c.as_ref())
            .map(|c| (Arc::as_ptr(&c.value) as usize, c.stamp.ino))
            .collect();
        let listing_ns = i128::try_from(started.elapsed().as_nanos()).unwrap_or(i128::MAX);
        super::rows::refresh(ws, slug, &stamps, listing_ns, &out, |e| {
            inos.get(&(std::ptr::from_ref(e) as usize)).copied()
        });
    }
    Ok(out)
}

fn memo_key_dirs(ws: &Workspace, slug: &str) -> PathBuf {
    cache_file(ws, &format!("tasks-{slug}"))
}

/// The listing of `found`, the entries of a pass over `dirs`: copies of one id resolved (the
/// greater `rev` kept, each copy reported), sorted by number then id. Made once per state
/// of the directories in a long-running process.
fn sorted_listing(
    ws: &Workspace,
    memo_key: PathBuf,
    dirs: Vec<Arc<DirCache<TaskEntry>>>,
    unchanged: bool,
    found: Vec<Arc<TaskEntry>>,
    mut out: Listing<Arc<TaskEntry>>,
) -> Listing<Arc<TaskEntry>> {
    // A long-running process asks again and again of directories that did not change: the
    // listing made from these very extracts last time is the answer.
    if unchanged
        && let Ok(memos) = task_listings().lock()
        && let Some(m) = memos.get(&memo_key)
        && m.dirs.len() == dirs.len()
        && m.dirs.iter().zip(&dirs).all(|(a, b)| Arc::ptr_eq(a, b))
    {
        out.items = m.items.clone();
        out.warnings.extend(m.duplicates.iter().cloned());
        return out;
    }
    let before = out.warnings.len();
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
    if let Ok(mut memos) = task_listings().lock() {
        memos.insert(
            memo_key,
            TaskListing {
                dirs,
                items: out.items.clone(),
                duplicates: out.warnings[before..].to_vec(),
            },
        );
    }
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
        .lock_shared_if_exists(&super::tasks::moves_lock(ws, slug))?;
    super::tasks::unknown_folders(ws, &tasks_dir, &mut out.warnings)?;
    let mut found: Vec<Arc<TaskEntry>> = Vec::new();
    for folder in STATUS_FOLDERS {
        found.extend(cache.scan(
            ws,
            &tasks_dir.join(folder),
            &mut out.warnings,
            |name, path, _, doc, _| {
                task_entry(doc, slug, folder, name, key_of(ws, path))
                    .map_err(|e| field_problem(ws, path, e))
            },
        )?);
    }
    out.items = found;
    Ok(out)
}

/// A task listing as [`tasks`] last made it in this process, from these directories
/// (kept alive here, so an unchanged pointer means unchanged extracts).
struct TaskListing {
    dirs: Vec<Arc<DirCache<TaskEntry>>>,
    items: Vec<Arc<TaskEntry>>,
    /// The `duplicate_id` warnings the listing added.
    duplicates: Vec<Problem>,
}

fn task_listings() -> &'static Mutex<HashMap<PathBuf, TaskListing>> {
    static LISTINGS: OnceLock<Mutex<HashMap<PathBuf, TaskListing>>> = OnceLock::new();
    LISTINGS.get_or_init(|| Mutex::new(HashMap::new()))
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

/// The extract of a task file just parsed, as a listing would make it.
pub(super) fn entry_of(
    ws: &Workspace,
    doc: &Document,
    slug: &str,
    folder: &str,
    name: &str,
    path: &Path,
) -> Result<TaskEntry, crate::model::FieldError> {
    task_entry(doc, slug, folder, name, key_of(ws, path))
}

fn task_entry(
    doc: &Document,
    slug: &str,
    folder: &str,
    name: &str,
    file: String,
) -> Result<TaskEntry, crate::model::FieldError> {
    use crate::model::taskdoc::TaskDoc;
    let head = TaskHead::parse(&doc.front, &doc.body, name, folder, doc.title())?;
    let (number, file_slug) = parse_task_filename(name).unwrap_or((head.number, &head.slug));
    let parent = doc
        .front
        .get("parent")
        .and_then(|p| p.as_str())
        .map(|p| strip_wikilink(p).to_string());
    // The same document the full reader builds, so every derived field means the same.
    let tdoc = TaskDoc {
        front: doc.front.clone(),
        body: doc.body.clone(),
        status: crate::model::task::Status::parse(folder)
            .unwrap_or(crate::model::task::Status::Open),
    };
    let estimate = tdoc
        .estimate()?
        .map(|e| [e.optimistic, e.probable, e.pessimistic]);
    let criteria = tdoc.criteria();
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
        priority: tdoc.priority().to_string(),
        checked: criteria.iter().filter(|c| c.checked).count(),
        criteria: criteria.len(),
        estimate,
        tags: tdoc.tags(),
        depends_on: tdoc
            .depends_on()
            .into_iter()
            .map(|d| (d.on, d.kind))
            .collect(),
        last_log_at: head.log.last().map(|l| l.at.clone()),
        active_since,
        file,
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

impl NoteEntry {
    /// The entry's bytes, as [`NoteEntry::from_bytes`] takes them back.
    pub(super) fn bytes(&self) -> &[u8] {
        self.0.bytes()
    }

    pub(super) fn from_bytes(bytes: Vec<u8>) -> Option<NoteEntry> {
        Record::from_bytes(bytes).map(NoteEntry)
    }
}

/// Every note of the projects `projects` (directory names, as [`super::projects::list`]
/// gives them) and of the workspace scope, sorted by id, with the warnings of the listing.
pub fn notes(ws: &Workspace, projects: &[String]) -> Result<Listing<Arc<NoteEntry>>, Error> {
    type Sorted = (Vec<Arc<DirCache<NoteEntry>>>, Vec<Arc<NoteEntry>>);
    /// The sorted listing made last from these very directories, by cache file: a server
    /// asks on every brief, and the sort was a tenth of a warm one.
    static SORTED: Mutex<Vec<(PathBuf, Sorted)>> = Mutex::new(Vec::new());
    let (mut out, cache) = settled_pass(ws, "notes", |cache| scan_notes(ws, projects, cache))?;
    let (dirs, unchanged) = cache.served();
    cache.save(ws);
    let key = cache_file(ws, "notes");
    if unchanged
        && let Ok(memo) = SORTED.lock()
        && let Some((_, (was, items))) = memo.iter().find(|(k, _)| *k == key)
        && was.len() == dirs.len()
        && was.iter().zip(&dirs).all(|(a, b)| Arc::ptr_eq(a, b))
    {
        out.items = items.clone();
        return Ok(out);
    }
    super::sort_by_str_key(&mut out.items, |n| n.id());
    if let Ok(mut memo) = SORTED.lock() {
        memo.retain(|(k, _)| *k != key);
        memo.push((key, (dirs, out.items.clone())));
    }
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
            let found = cache.scan(ws, &base, &mut out.warnings, |name, path, _, doc, _| {
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
        }
    }

    fn dirs(n: u32) -> Dirs<TaskEntry> {
        let stamp = |i: u64| Stamp {
            size: i,
            mtime_ns: 1_700_000_000_000_000_000 + i128::from(i),
            ctime_ns: -5,
            ino: i * 7,
        };
        let files = (0..n)
            .map(|i| {
                let cached = (i != 1).then(|| Cached {
                    stamp: stamp(u64::from(i)),
                    value: Arc::new(TaskEntry::new(&fields(i))),
                });
                (SharedStr::new(&format!("{i:03}-task-{i}.md")), cached)
            })
            .collect();
        BTreeMap::from([(
            "projects/checkout/tasks/active".to_string(),
            Arc::new(DirCache {
                stamp: stamp(99),
                files,
            }),
        )])
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

    #[test]
    fn a_cache_file_reads_back_what_was_written() {
        let written = dirs(12);
        let bytes = buf_of(encode_dirs(42, &written)).expect("a cache file is UTF-8");
        let (listing_ns, read) = decode_dirs::<TaskEntry>(&bytes).expect("decodes");
        assert_eq!(listing_ns, 42);
        let (a, b) = (
            &written["projects/checkout/tasks/active"],
            &read["projects/checkout/tasks/active"],
        );
        assert_eq!(a.stamp, b.stamp);
        assert_eq!(a.files.len(), b.files.len());
        for ((na, ca), (nb, cb)) in a.files.iter().zip(&b.files) {
            assert_eq!(na, nb);
            assert_eq!(ca.as_ref().map(|c| c.stamp), cb.as_ref().map(|c| c.stamp));
            assert_eq!(
                ca.as_ref().map(|c| c.value.fields()),
                cb.as_ref().map(|c| c.value.fields())
            );
        }
    }

    #[test]
    fn a_cache_of_another_layout_is_refused() {
        let notes: Dirs<NoteEntry> = BTreeMap::from([(
            "notes/decisions".to_string(),
            Arc::new(DirCache {
                stamp: Stamp {
                    size: 0,
                    mtime_ns: 1,
                    ctime_ns: 1,
                    ino: 1,
                },
                files: vec![(
                    SharedStr::new("a.md"),
                    Some(Cached {
                        stamp: Stamp {
                            size: 1,
                            mtime_ns: 1,
                            ctime_ns: 1,
                            ino: 2,
                        },
                        value: Arc::new(NoteEntry::sample()),
                    }),
                )],
            }),
        )]);
        let bytes = buf_of(encode_dirs(1, &notes)).expect("UTF-8");
        assert!(decode_dirs::<NoteEntry>(&bytes).is_some());
        assert!(decode_dirs::<TaskEntry>(&bytes).is_none());
        assert_ne!(format_of::<NoteEntry>(), format_of::<TaskEntry>());
    }

    /// A cache torn by a crash (written without fsync) or changed by hand is refused whole,
    /// never read as other extracts.
    #[test]
    fn a_torn_or_altered_cache_file_is_refused() {
        let bytes = encode_dirs(42, &dirs(5));
        for cut in 0..bytes.len() {
            let torn = buf_of(bytes[..cut].to_vec());
            assert!(
                torn.and_then(|t| decode_dirs::<TaskEntry>(&t)).is_none(),
                "cut at {cut}"
            );
        }
        for at in (0..bytes.len()).step_by(7) {
            let mut altered = bytes.clone();
            altered[at] ^= 0x20;
            let altered = buf_of(altered);
            assert!(
                altered.and_then(|a| decode_dirs::<TaskEntry>(&a)).is_none(),
                "byte {at} flipped"
            );
        }
    }
}
