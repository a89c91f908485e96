//! The event log filed by subject (docs/PERFORMANCE.md, "The event digest"): the part of a
//! log of a hundred thousand events that a brief needs, without reading every extract.
//!
//! `cache/events.idx` holds, for the log as [`super::index::read`] settled it, one row per
//! (event, subject) pair: the hash of the subject, the state the whole log gives the event,
//! and where its [`EventEntry`] bytes lie. An event's subjects are the object it is about,
//! the task of a run, the question an answer answers, and [`PENDING`] when it waits for a
//! receipt; receipts themselves are not filed (their effect is the states). Rows are grouped
//! in buckets by hash, so a lookup reads the small header, one bucket per subject and the
//! entries it names, each by offset.
//!
//! Invariants, which make a selection from the digest equal the same selection made from the
//! whole log ([`select`]):
//! - it is written only from a read with no warnings, and records the stamps of every
//!   directory that read depends on (the log's year, month and day folders, the archive's
//!   segments, the agents whose grants decide which receipts count), taken before the read;
//!   it is used only while each is unchanged and settled by the index's rule
//!   ([`Stamp::settled`]) against this file's own write time;
//! - rows hold hashes, never answers: every entry a lookup finds is checked against the
//!   selection's own rule, so a collision costs a read, never a wrong result;
//! - header and bucket table carry one checksum, each bucket and each entry its own;
//!   anything that fails a check is a miss, and the caller reads the whole log instead.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::objects;
use crate::objects::codec::{Input, Output};
use crate::objects::index::{DirStamp, Stamp, cache_file_named};
use crate::workspace::Workspace;

use super::EventState;
use super::index::{EventEntry, Events};

const FORMAT: &str = "dacli-digest/1";
/// Buckets of rows, by subject hash: a lookup reads one of them.
const BUCKETS: usize = 1024;
/// Bytes of one row: subject hash, entry offset, entry length, entry checksum (`u32` each)
/// and the state (`u8`).
const ROW: usize = 17;
/// Bytes before the header: header length, table length, checksum of both (`u32` each).
const PREFIX: usize = 12;
/// The subject every pending event is also filed under.
const PENDING: &str = "\0pending";

/// What [`about`] selects: the events of the log about some subjects, with their states,
/// and the run counts of every shortcut over the whole log.
#[derive(Debug, Default)]
pub struct Selection {
    /// The selected events, sorted by id; [`Events::state`] gives each its state in the
    /// whole log. Warnings are those of the whole log's read.
    pub events: Events,
    /// Runs of each shortcut, in the whole log.
    pub runs: BTreeMap<String, usize>,
}

/// The events of the log (receipts aside) that are pending, or about one of `subjects`
/// (their `about`, or a run's task), and the answers to the questions among them.
///
/// Served from `cache/events.idx` when it is current; otherwise the whole log is read
/// through the index and the digest written again for the next reader.
pub fn about(ws: &Workspace, subjects: &BTreeSet<String>) -> Result<Selection, objects::Error> {
    if let Some(digest) = Digest::open(ws)
        && let Some(selection) = digest.select(subjects)
    {
        return Ok(selection);
    }
    let started = started();
    let before = walk(ws);
    let events = super::index::read(ws)?;
    let selection = select(&events, subjects);
    if events.warnings.is_empty()
        && let Some(before) = before
        && walk(ws).as_ref() == Some(&before)
    {
        let listing_ns = i128::try_from(started.elapsed().as_nanos()).unwrap_or(i128::MAX);
        let bytes = encode(&events, &before, listing_ns);
        // Derived and deletable: a failed write costs the next reader a full read, no more.
        let _ = ws.fs.replace_derived(&file(ws), &bytes);
    }
    Ok(selection)
}

/// The selection of [`about`], made from the whole log.
pub fn select(events: &Events, subjects: &BTreeSet<String>) -> Selection {
    let first: Vec<&EventEntry> = events
        .entries
        .iter()
        .filter(|e| e.kind() != "applied")
        .filter(|e| {
            filed_under(e, events.is_pending(e))
                .iter()
                .any(|s| *s == PENDING || subjects.contains(*s))
        })
        .collect();
    let questions: BTreeSet<&str> = first
        .iter()
        .filter(|e| e.kind() == "help")
        .map(|e| e.id())
        .collect();
    let picked: Vec<EventEntry> = events
        .entries
        .iter()
        .filter(|e| e.kind() != "applied")
        .filter(|e| {
            filed_under(e, events.is_pending(e))
                .iter()
                .any(|s| *s == PENDING || subjects.contains(*s) || questions.contains(*s))
        })
        .cloned()
        .collect();
    let states = picked.iter().map(|e| events.state(e)).collect();
    let mut part = Events::part(picked, states);
    part.warnings = events.warnings.clone();
    Selection {
        events: part,
        runs: run_counts(events),
    }
}

/// The subjects an event is filed under.
fn filed_under(e: &EventEntry, pending: bool) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::with_capacity(3);
    out.extend(e.about());
    if e.kind() == "run" {
        out.extend(e.task());
    }
    if e.kind() == "answer" {
        out.extend(e.question());
    }
    if pending {
        out.push(PENDING);
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn run_counts(events: &Events) -> BTreeMap<String, usize> {
    let mut runs: BTreeMap<String, usize> = BTreeMap::new();
    for e in events.entries.iter().filter(|e| e.kind() == "run") {
        if let Some(name) = e.shortcut() {
            *runs.entry(name.to_string()).or_default() += 1;
        }
    }
    runs
}

fn hash(s: &str) -> u32 {
    crc32fast::hash(s.as_bytes())
}

fn bucket_of(h: u32) -> usize {
    h as usize % BUCKETS
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

fn file(ws: &Workspace) -> std::path::PathBuf {
    cache_file_named(ws, "events.idx")
}

fn started() -> Instant {
    #[allow(
        clippy::disallowed_methods,
        reason = "a monotonic span bounding the index's racy window; never shown or stored as a time"
    )]
    let now = Instant::now();
    now
}

/// The stamps of every directory the log's read depends on, in a fixed order; `None` when
/// one cannot be listed (the read then reports it, and no digest is written).
fn walk(ws: &Workspace) -> Option<Vec<DirStamp>> {
    let mut out = Vec::new();
    let stamp = |out: &mut Vec<DirStamp>, path: &Path| {
        let key = path
            .strip_prefix(ws.dir())
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push((key, Stamp::of_dir(path)));
    };
    let listed = |path: &Path| -> Option<Vec<(String, std::path::PathBuf)>> {
        if Stamp::of_dir(path).is_none() {
            return Some(Vec::new());
        }
        let mut found: Vec<_> = ws
            .fs
            .list_dir(path)
            .ok()?
            .into_iter()
            .filter(|(_, p)| p.is_dir())
            .collect();
        found.sort();
        Some(found)
    };
    let tree = |out: &mut Vec<DirStamp>, root: &Path| -> Option<()> {
        stamp(out, root);
        for (_, y) in listed(root)? {
            stamp(out, &y);
            for (_, m) in listed(&y)? {
                stamp(out, &m);
                for (_, d) in listed(&m)? {
                    stamp(out, &d);
                }
            }
        }
        Some(())
    };
    tree(&mut out, &ws.path(&["events"]))?;
    let archive = ws.path(&["archive", "events"]);
    stamp(&mut out, &archive);
    for (_, segment) in listed(&archive)? {
        stamp(&mut out, &segment);
        tree(&mut out, &segment)?;
    }
    stamp(&mut out, &ws.path(&["agents"]));
    Some(out)
}

/// The digest file of `events`, whose read depended on directories `dirs`.
fn encode(events: &Events, dirs: &[DirStamp], listing_ns: i128) -> Vec<u8> {
    let mut entries: Vec<u8> = Vec::new();
    let mut rows: Vec<(u32, [u8; ROW])> = Vec::new();
    let mut rejected: Vec<(&str, String)> = Vec::new();
    for e in events.entries.iter().filter(|e| e.kind() != "applied") {
        let state = events.state(e);
        let under = filed_under(e, state == EventState::Pending);
        if under.is_empty() {
            continue;
        }
        let bytes = e.bytes();
        let at = u32::try_from(entries.len()).unwrap_or(u32::MAX);
        entries.extend_from_slice(bytes);
        let code = match &state {
            EventState::Pending => 0,
            EventState::Settled => 1,
            EventState::Journal => 2,
            EventState::Rejected(why) => {
                rejected.push((e.id(), why.clone()));
                3
            }
        };
        for s in under {
            let h = hash(s);
            let mut row = [0u8; ROW];
            row[0..4].copy_from_slice(&h.to_le_bytes());
            row[4..8].copy_from_slice(&at.to_le_bytes());
            row[8..12].copy_from_slice(&u32::try_from(bytes.len()).unwrap_or(0).to_le_bytes());
            row[12..16].copy_from_slice(&crc32fast::hash(bytes).to_le_bytes());
            row[16] = code;
            rows.push((h, row));
        }
    }
    rows.sort_by_key(|(h, _)| bucket_of(*h));
    let mut table = Output::default();
    let mut body = Vec::with_capacity(rows.len() * ROW);
    let mut sums = Vec::with_capacity(BUCKETS);
    let mut next = 0;
    for b in 0..BUCKETS {
        let start = body.len();
        while next < rows.len() && bucket_of(rows[next].0) == b {
            body.extend_from_slice(&rows[next].1);
            next += 1;
        }
        table
            .0
            .extend_from_slice(&u32::try_from(start).unwrap_or(0).to_le_bytes());
        sums.push(crc32fast::hash(&body[start..]));
    }
    table
        .0
        .extend_from_slice(&u32::try_from(body.len()).unwrap_or(0).to_le_bytes());
    for s in sums {
        table.0.extend_from_slice(&s.to_le_bytes());
    }
    let mut head = Output::default();
    head.str(FORMAT);
    head.ivar(listing_ns);
    head.var(dirs.len() as u64);
    for (key, stamp) in dirs {
        head.str(key);
        match stamp {
            None => head.u8(0),
            Some(s) => {
                head.u8(1);
                s.encode(&mut head);
            }
        }
    }
    let runs = run_counts(events);
    head.var(runs.len() as u64);
    for (name, n) in &runs {
        head.str(name);
        head.var(*n as u64);
    }
    head.var(rejected.len() as u64);
    for (id, why) in &rejected {
        head.str(id);
        head.str(why);
    }
    let mut sum = crc32fast::Hasher::new();
    sum.update(&head.0);
    sum.update(&table.0);
    let mut out = Vec::with_capacity(PREFIX + head.0.len() + table.0.len() + body.len());
    out.extend_from_slice(&u32::try_from(head.0.len()).unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&u32::try_from(table.0.len()).unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&sum.finalize().to_le_bytes());
    out.extend_from_slice(&head.0);
    out.extend_from_slice(&table.0);
    out.extend_from_slice(&body);
    out.extend_from_slice(&entries);
    out
}

/// A digest file, its header read and its directories checked.
struct Digest {
    head: Arc<Head>,
}

/// What a digest file's header holds, kept per process by the file's stamp (a server opens
/// the digest on every call).
struct Head {
    path: std::path::PathBuf,
    file: File,
    stamp: Stamp,
    listing_ns: i128,
    dirs: Vec<DirStamp>,
    runs: BTreeMap<String, usize>,
    rejected: BTreeMap<String, String>,
    /// Row offsets of each bucket (and the end), and each bucket's checksum.
    starts: Vec<u32>,
    sums: Vec<u32>,
    rows_at: u64,
    entries_at: u64,
}

impl Head {
    fn read(path: &Path) -> Option<Head> {
        let file = File::open(path).ok()?;
        let stamp = Stamp::from_meta(&file.metadata().ok()?);
        let mut prefix = [0u8; PREFIX];
        read_at(&file, &mut prefix, 0)?;
        let head_len = u32_at(&prefix, 0) as usize;
        let table_len = u32_at(&prefix, 4) as usize;
        if table_len != (2 * BUCKETS + 1) * 4 {
            return None;
        }
        let mut bytes = vec![0u8; head_len.checked_add(table_len)?];
        read_at(&file, &mut bytes, PREFIX as u64)?;
        if crc32fast::hash(&bytes) != u32_at(&prefix, 8) {
            return None;
        }
        let table = bytes.split_off(head_len);
        let mut input = Input::new(&bytes);
        if input.str()? != FORMAT {
            return None;
        }
        let listing_ns = input.ivar()?;
        let mut dirs = Vec::new();
        for _ in 0..input.count()? {
            let key = input.str()?.to_string();
            let recorded = match input.u8()? {
                0 => None,
                1 => Some(Stamp::decode(&mut input)?),
                _ => return None,
            };
            dirs.push((key, recorded));
        }
        let mut runs = BTreeMap::new();
        for _ in 0..input.count()? {
            let name = input.str()?.to_string();
            runs.insert(name, usize::try_from(input.var()?).ok()?);
        }
        let mut rejected = BTreeMap::new();
        for _ in 0..input.count()? {
            let id = input.str()?.to_string();
            rejected.insert(id, input.str()?.to_string());
        }
        if !input.at_end() {
            return None;
        }
        let starts: Vec<u32> = (0..=BUCKETS).map(|b| u32_at(&table, b * 4)).collect();
        let sums: Vec<u32> = (0..BUCKETS)
            .map(|b| u32_at(&table, (BUCKETS + 1 + b) * 4))
            .collect();
        if starts.windows(2).any(|w| w[0] > w[1]) {
            return None;
        }
        let rows_at = (PREFIX + head_len + table_len) as u64;
        Some(Head {
            path: path.to_path_buf(),
            entries_at: rows_at + u64::from(*starts.last()?),
            rows_at,
            file,
            stamp,
            listing_ns,
            dirs,
            runs,
            rejected,
            starts,
            sums,
        })
    }

    fn read_shared(path: &Path) -> Option<Arc<Head>> {
        static HEADS: std::sync::Mutex<Vec<Arc<Head>>> = std::sync::Mutex::new(Vec::new());
        let stamp = Stamp::of(path)?;
        if let Ok(heads) = HEADS.lock()
            && let Some(h) = heads.iter().find(|h| h.stamp == stamp && h.path == path)
        {
            return Some(Arc::clone(h));
        }
        let head = Arc::new(Head::read(path)?);
        if let Ok(mut heads) = HEADS.lock() {
            heads.retain(|h| h.path != path);
            heads.push(Arc::clone(&head));
        }
        Some(head)
    }
}

impl Digest {
    /// The digest, when its file passes its checks and every directory it records is
    /// unchanged and settled.
    fn open(ws: &Workspace) -> Option<Digest> {
        let head = Head::read_shared(&file(ws))?;
        let written = head.stamp.mtime_ns();
        let current = head.dirs.iter().all(|(key, recorded)| {
            Stamp::of_dir(&ws.dir().join(key)) == *recorded
                && recorded.is_none_or(|s| s.settled(written, head.listing_ns))
        });
        current.then_some(Digest { head })
    }

    /// The rows filed under subject `s`: (entry offset, length, checksum, state code).
    fn rows(&self, s: &str) -> Option<Vec<(u32, u32, u32, u8)>> {
        let h = hash(s);
        let b = bucket_of(h);
        let (start, end) = (self.head.starts[b], self.head.starts[b + 1]);
        let mut bytes = vec![0u8; (end - start) as usize];
        read_at(
            &self.head.file,
            &mut bytes,
            self.head.rows_at + u64::from(start),
        )?;
        if crc32fast::hash(&bytes) != self.head.sums[b] {
            return None;
        }
        Some(
            bytes
                .chunks_exact(ROW)
                .filter(|r| u32_at(r, 0) == h)
                .map(|r| (u32_at(r, 4), u32_at(r, 8), u32_at(r, 12), r[16]))
                .collect(),
        )
    }

    /// The entries filed under any of `subjects`, with their states, by entry offset.
    fn entries(&self, subjects: &[&str]) -> Option<BTreeMap<u32, (EventEntry, EventState)>> {
        let mut wanted: BTreeMap<u32, (u32, u32, u8)> = BTreeMap::new();
        for s in subjects {
            for (at, len, sum, code) in self.rows(s)? {
                wanted.insert(at, (len, sum, code));
            }
        }
        let mut out = BTreeMap::new();
        for (at, (len, sum, code)) in wanted {
            let mut bytes = vec![0u8; len as usize];
            read_at(
                &self.head.file,
                &mut bytes,
                self.head.entries_at + u64::from(at),
            )?;
            if crc32fast::hash(&bytes) != sum {
                return None;
            }
            let entry = EventEntry::from_bytes(bytes)?;
            let state = match code {
                0 => EventState::Pending,
                1 => EventState::Settled,
                2 => EventState::Journal,
                3 => EventState::Rejected(self.head.rejected.get(entry.id())?.clone()),
                _ => return None,
            };
            out.insert(at, (entry, state));
        }
        Some(out)
    }

    /// [`select`] over the digest; `None` when a part of the file fails its check.
    fn select(&self, subjects: &BTreeSet<String>) -> Option<Selection> {
        let mut keys: Vec<&str> = subjects.iter().map(String::as_str).collect();
        keys.push(PENDING);
        let mut found = self.entries(&keys)?;
        let files = |e: &EventEntry, state: &EventState, also: &BTreeSet<String>| {
            filed_under(e, *state == EventState::Pending)
                .iter()
                .any(|s| *s == PENDING || subjects.contains(*s) || also.contains(*s))
        };
        let none = BTreeSet::new();
        found.retain(|_, (e, state)| files(e, state, &none));
        let questions: BTreeSet<String> = found
            .values()
            .filter(|(e, _)| e.kind() == "help")
            .map(|(e, _)| e.id().to_string())
            .collect();
        if !questions.is_empty() {
            let keys: Vec<&str> = questions.iter().map(String::as_str).collect();
            let mut answers = self.entries(&keys)?;
            answers.retain(|_, (e, state)| files(e, state, &questions));
            found.extend(answers);
        }
        let mut picked: Vec<(EventEntry, EventState)> = found.into_values().collect();
        picked.sort_by(|a, b| a.0.id().cmp(b.0.id()));
        picked.dedup_by(|a, b| a.0.id() == b.0.id());
        let (entries, states) = picked.into_iter().unzip();
        Some(Selection {
            events: Events::part(entries, states),
            runs: self.head.runs.clone(),
        })
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> Option<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, at).ok()
}

#[cfg(not(unix))]
fn read_at(mut file: &File, buf: &mut [u8], at: u64) -> Option<()> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(at)).ok()?;
    file.read_exact(buf).ok()
}
