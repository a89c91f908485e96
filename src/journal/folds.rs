//! Folds kept in `cache/folds.bin` (docs/PERFORMANCE.md, "Folds"): what folding a task with
//! its pending events gave, as the fields readers of many tasks use (status, listings,
//! `task add`), keyed by the stamps of the files the fold read.
//!
//! A fold is a pure function of the task's file and the event files it reads (its pending
//! events, the answers to its questions, its runs), except where a finish request's
//! definition of done is judged: those folds are never kept. Every reader of the workspace
//! folds the same few tasks; without this file each CLI call read and parsed them all again.
//!
//! Invariants:
//! - an entry is served only while the stamps of every file its fold read, in the order the
//!   fold read them, equal the files' stamps now, and each was settled (git's racy rule,
//!   [`Stamp::settled`]) when the file was written: a file changed within the clock tick of
//!   the read keeps its stamp, and such an entry is folded again;
//! - the file is derived and deletable, checksummed whole and refused whole when torn, and
//!   written by atomic replace; two writers racing leave one whole file, whose entries are
//!   judged by their stamps like any other.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use crate::model::taskdoc::TaskDoc;
use crate::objects::codec::{Buf, Input, Output, buf_of, seal, unseal};
use crate::objects::index::{Extract, Stamp, TaskEntry, cache_file_named, format_of};
use crate::workspace::Workspace;

use super::fold::Folded;

/// Layout of the file; the entry layout's fingerprint is appended ([`format_of`]).
const FORMAT: &str = "dacli-folds/1";
const FILE: &str = "folds.bin";
/// Entries kept at most: folds no reader used are dropped first.
const KEPT: usize = 4096;

/// What a reader of many tasks sees of a task pending events change: its folded fields as
/// the index would extract them from the folded file, and whether a finish request waits.
#[derive(Clone, Debug)]
pub struct View {
    pub entry: Arc<TaskEntry>,
    pub finish_requested: bool,
}

impl View {
    /// The view of `doc`, the fold of the task indexed as `t`, with what folding did. The
    /// entry keeps `t`'s place (project, number, file); `folder` holds the folded status.
    pub fn of(t: &TaskEntry, doc: &TaskDoc, folded: &Folded) -> View {
        let mut f = t.fields();
        f.folder = doc.status.as_str().to_string();
        if !doc.title().is_empty() {
            f.title = doc.title().to_string();
        }
        f.owner = doc.owner().to_string();
        f.assignee = doc.assignee().map(str::to_string);
        f.priority = doc.priority().to_string();
        let criteria = doc.criteria();
        f.checked = criteria.iter().filter(|c| c.checked).count();
        f.criteria = criteria.len();
        f.estimate = doc
            .estimate()
            .ok()
            .flatten()
            .map(|e| [e.optimistic, e.probable, e.pessimistic]);
        f.tags = doc.tags();
        f.parent = doc.parent().map(str::to_string);
        f.depends_on = doc
            .depends_on()
            .into_iter()
            .map(|d| (d.on, d.kind))
            .collect();
        let log = doc.log();
        f.last_log_at = log.last().map(|l| l.at.clone());
        f.active_since = crate::model::task::active_since(&log);
        View {
            entry: Arc::new(TaskEntry::new(&f)),
            finish_requested: folded.finish_requested(),
        }
    }
}

/// The stamps of the files one fold read: the task's, then each event's in reading order.
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs {
    pub task: Option<Stamp>,
    pub events: Vec<Option<Stamp>>,
}

impl Inputs {
    fn all(&self) -> impl Iterator<Item = &Option<Stamp>> {
        std::iter::once(&self.task).chain(&self.events)
    }

    /// True when every file existed (a fold of a vanished file is never kept).
    pub fn complete(&self) -> bool {
        self.all().all(Option::is_some)
    }
}

/// The folds file as one reader found it, and what it folded since.
pub struct FoldCache {
    /// When this reader started: every stamp it takes is younger.
    started: Instant,
    /// Entries of the file as read, by task id, each with whether it may be served.
    old: Arc<Kept>,
    /// Entries this reader used or made, by task id: what it writes back.
    used: BTreeMap<String, (Inputs, View)>,
    /// Whether `used` holds an entry the file lacks.
    made: bool,
}

impl FoldCache {
    /// Reads `cache/folds.bin`; empty when missing or refused.
    pub fn load(ws: &Workspace) -> FoldCache {
        let started = crate::objects::filed::started();
        let old = read_kept(&cache_file_named(ws, FILE)).unwrap_or_default();
        FoldCache {
            started,
            old,
            used: BTreeMap::new(),
            made: false,
        }
    }

    /// The kept view of task `id` when its fold read files stamped `inputs`.
    pub fn get(&mut self, id: &str, inputs: &Inputs) -> Option<View> {
        let (kept, view, trusted) = self.old.get(id)?;
        if !*trusted || kept != inputs || !inputs.complete() {
            return None;
        }
        self.used
            .insert(id.to_string(), (inputs.clone(), view.clone()));
        Some(view.clone())
    }

    /// Keeps the view of a fold of task `id` that read files stamped `inputs`, taken after
    /// [`FoldCache::load`].
    pub fn put(&mut self, id: &str, inputs: Inputs, view: View) {
        if inputs.complete() {
            self.used.insert(id.to_string(), (inputs, view));
            self.made = true;
        }
    }

    /// Writes the file back when this reader made a fold: the entries it used or made, then
    /// the file's other trusted entries (another reader's folds: `task add` folds fewer
    /// tasks than `status`), [`KEPT`] in all at most. Failure is ignored: the file only
    /// spares the next reader some folds.
    pub fn save(self, ws: &Workspace) {
        if !self.made {
            return;
        }
        let mut entries = self.used;
        for (id, (inputs, view, trusted)) in self.old.iter() {
            if entries.len() >= KEPT {
                break;
            }
            if *trusted {
                entries
                    .entry(id.clone())
                    .or_insert_with(|| (inputs.clone(), view.clone()));
            }
        }
        let listing_ns = i128::try_from(self.started.elapsed().as_nanos()).unwrap_or(i128::MAX);
        let bytes = encode(listing_ns, &entries);
        let _ = ws.fs.replace_derived(&cache_file_named(ws, FILE), &bytes);
    }
}

/// The entries of a folds file by task id, each with whether it may be served.
type Kept = BTreeMap<String, (Inputs, View, bool)>;

/// The entries of the folds file at `path`; in a process that keeps what it reads
/// ([`crate::objects::remembering`]), from memory while the file has the stamp it had when
/// this process last read it (a server reads it on every `status`).
fn read_kept(path: &std::path::Path) -> Option<Arc<Kept>> {
    static LAST: std::sync::Mutex<Option<(std::path::PathBuf, Stamp, Arc<Kept>)>> =
        std::sync::Mutex::new(None);
    let remember = crate::objects::remembering();
    // Taken before the read: a file replaced meanwhile is judged by its older write time,
    // which trusts fewer entries, and is kept under a stamp it no longer has.
    let stamp = Stamp::of(path)?;
    if remember
        && let Ok(last) = LAST.lock()
        && let Some((p, s, kept)) = last.as_ref()
        && *s == stamp
        && p == path
    {
        return Some(Arc::clone(kept));
    }
    let bytes = std::fs::read(path).ok()?;
    let kept = Arc::new(decode(&buf_of(bytes)?, stamp.mtime_ns())?);
    if remember && let Ok(mut last) = LAST.lock() {
        *last = Some((path.to_path_buf(), stamp, Arc::clone(&kept)));
    }
    Some(kept)
}

fn encode(listing_ns: i128, entries: &BTreeMap<String, (Inputs, View)>) -> Vec<u8> {
    let mut out = Output::default();
    out.str(&format!("{FORMAT}/{}", format_of::<TaskEntry>()));
    out.ivar(listing_ns);
    // Only complete inputs are kept ([`FoldCache::put`]): every stamp is there.
    let complete: Vec<_> = entries
        .iter()
        .filter_map(|(id, (inputs, view))| Some((id, inputs.task?, &inputs.events, view)))
        .filter(|(_, _, events, _)| events.iter().all(Option::is_some))
        .collect();
    out.var(complete.len() as u64);
    for (id, task, events, view) in complete {
        out.str(id);
        out.u8(u8::from(view.finish_requested));
        task.encode(&mut out);
        let events: Vec<&Stamp> = events.iter().flatten().collect();
        out.var(events.len() as u64);
        for s in events {
            s.encode(&mut out);
        }
        view.entry.encode(&mut out);
    }
    seal(out)
}

/// [`encode`] read back, each entry marked with whether its stamps were settled when the
/// file was written at `written_ns`; `None` for anything `encode` did not write.
fn decode(buf: &Buf, written_ns: i128) -> Option<BTreeMap<String, (Inputs, View, bool)>> {
    let body = unseal(buf.as_bytes())?;
    let mut input = Input::new(body);
    if input.str()? != format!("{FORMAT}/{}", format_of::<TaskEntry>()) {
        return None;
    }
    let listing_ns = input.ivar()?;
    let mut out = BTreeMap::new();
    for _ in 0..input.count()? {
        let id = input.str()?.to_string();
        let finish_requested = match input.u8()? {
            0 => false,
            1 => true,
            _ => return None,
        };
        let task = Stamp::decode(&mut input)?;
        let n = input.count()?;
        let mut events = Vec::with_capacity(n.min(body.len()));
        for _ in 0..n {
            events.push(Some(Stamp::decode(&mut input)?));
        }
        let entry = TaskEntry::decode(buf, &mut input)?;
        let inputs = Inputs {
            task: Some(task),
            events,
        };
        let trusted = inputs
            .all()
            .flatten()
            .all(|s| s.settled(written_ns, listing_ns));
        let view = View {
            entry: Arc::new(entry),
            finish_requested,
        };
        out.insert(id, (inputs, view, trusted));
    }
    input.at_end().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_back_and_a_damaged_file_is_refused() {
        let entry = Arc::new(TaskEntry::sample());
        let stamp = |n: u64| {
            let mut out = Output::default();
            out.var(n);
            out.ivar(1_000);
            out.ivar(1_000);
            out.var(n + 7);
            Stamp::decode(&mut Input::new(&out.0))
        };
        let inputs = Inputs {
            task: stamp(1),
            events: vec![stamp(2), stamp(3)],
        };
        let mut entries = BTreeMap::new();
        entries.insert(
            "t-1".to_string(),
            (
                inputs.clone(),
                View {
                    entry,
                    finish_requested: true,
                },
            ),
        );
        let bytes = encode(5, &entries);
        let back = decode(&buf_of(bytes.clone()).unwrap(), 10_000_000_000).unwrap();
        let (read, view, trusted) = &back["t-1"];
        assert_eq!(read, &inputs);
        assert!(view.finish_requested && *trusted);
        assert_eq!(view.entry.fields(), TaskEntry::sample().fields());
        // Stamps as young as the write are not trusted.
        let young = decode(&buf_of(bytes.clone()).unwrap(), 1_000).unwrap();
        assert!(!young["t-1"].2);
        for at in 0..bytes.len() {
            let mut b = bytes.clone();
            b[at] ^= 0x01;
            if let Some(buf) = buf_of(b) {
                assert!(decode(&buf, 10_000_000_000).is_none(), "flipped byte {at}");
            }
        }
        assert!(decode(&buf_of(bytes[..bytes.len() - 1].to_vec()).unwrap(), 0).is_none());
    }
}
