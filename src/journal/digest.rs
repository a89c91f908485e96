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
//!   ([`crate::objects::index::Stamp::settled`]) against this file's own write time;
//! - rows hold hashes, never answers: every entry a lookup finds is checked against the
//!   selection's own rule, so a collision costs a read, never a wrong result;
//! - header and bucket table carry one checksum, each bucket and each entry its own;
//!   anything that fails a check is a miss, and the caller reads the whole log instead.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::objects;
use crate::objects::codec::{Input, Output};
use crate::objects::filed::{self, Filed, Filing};
use crate::objects::index::{DirStamp, cache_file_named};
use crate::workspace::Workspace;

use super::EventState;
use super::index::{EventEntry, Events};

const FORMAT: &str = "dacli-digest/2";
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
    if let Some(digest) = Filed::open(ws, &file(ws), FORMAT)
        && let Some(selection) = select_filed(&digest, subjects)
    {
        return Ok(selection);
    }
    let started = filed::started();
    let before = walk(ws);
    let events = super::index::read(ws)?;
    let selection = select(&events, subjects);
    if events.warnings.is_empty()
        && let Some(before) = before
        && walk(ws).as_ref() == Some(&before)
    {
        write(ws, &events, &before, started);
    }
    Ok(selection)
}

/// The selection of [`about`], made from the whole log.
pub fn select(events: &Events, subjects: &BTreeSet<String>) -> Selection {
    let candidates = || {
        events
            .entries
            .iter()
            .filter(|e| e.kind() != "applied")
            .map(|e| (e, events.state(e)))
    };
    let none = BTreeSet::new();
    let questions = questions_among(
        candidates()
            .filter(|(e, state)| chosen(e, state, subjects, &none))
            .map(|(e, _)| e),
    );
    let (picked, states): (Vec<EventEntry>, Vec<EventState>) = candidates()
        .filter(|(e, state)| chosen(e, state, subjects, &questions))
        .map(|(e, state)| (e.clone(), state))
        .unzip();
    let mut part = Events::part(picked, states);
    part.warnings = events.warnings.clone();
    Selection {
        events: part,
        runs: run_counts(events),
    }
}

/// The rule of a selection: an event (not a receipt) in state `state` is chosen when it is
/// pending or filed under one of `subjects`, or answers one of `questions`.
fn chosen(
    e: &EventEntry,
    state: &EventState,
    subjects: &BTreeSet<String>,
    questions: &BTreeSet<String>,
) -> bool {
    filed_under(e, *state == EventState::Pending)
        .iter()
        .any(|s| *s == PENDING || subjects.contains(*s) || questions.contains(*s))
}

/// The ids of the questions (`help` events) among `events`.
fn questions_among<'e>(events: impl Iterator<Item = &'e EventEntry>) -> BTreeSet<String> {
    events
        .filter(|e| e.kind() == "help")
        .map(|e| e.id().to_string())
        .collect()
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

fn file(ws: &Workspace) -> std::path::PathBuf {
    cache_file_named(ws, "events.idx")
}

/// The stamps of every directory the log's read depends on, in a fixed order; `None` when
/// one cannot be listed (the read then reports it, and no digest is written).
fn walk(ws: &Workspace) -> Option<Vec<DirStamp>> {
    let mut out = Vec::new();
    let tree = |out: &mut Vec<DirStamp>, root: &Path| -> Option<()> {
        out.push(filed::dir_stamp(ws, root));
        for y in filed::subdirs(ws, root)? {
            out.push(filed::dir_stamp(ws, &y));
            for m in filed::subdirs(ws, &y)? {
                out.push(filed::dir_stamp(ws, &m));
                for d in filed::subdirs(ws, &m)? {
                    out.push(filed::dir_stamp(ws, &d));
                }
            }
        }
        Some(())
    };
    tree(&mut out, &ws.path(&["events"]))?;
    let archive = ws.path(&["archive", "events"]);
    out.push(filed::dir_stamp(ws, &archive));
    for segment in filed::subdirs(ws, &archive)? {
        out.push(filed::dir_stamp(ws, &segment));
        tree(&mut out, &segment)?;
    }
    out.push(filed::dir_stamp(ws, &ws.path(&["agents"])));
    Some(out)
}

fn code_of(state: &EventState) -> u8 {
    match state {
        EventState::Pending => 0,
        EventState::Settled => 1,
        EventState::Journal => 2,
        EventState::Rejected(_) => 3,
    }
}

/// Writes the digest of `events`, whose read depended on directories `dirs`.
fn write(ws: &Workspace, events: &Events, dirs: &[DirStamp], started: std::time::Instant) {
    let mut rejected: Vec<(&str, String)> = Vec::new();
    let mut items = Vec::new();
    for e in events.entries.iter().filter(|e| e.kind() != "applied") {
        let state = events.state(e);
        let subjects = filed_under(e, state == EventState::Pending);
        if subjects.is_empty() {
            continue;
        }
        let code = code_of(&state);
        if let EventState::Rejected(why) = state {
            rejected.push((e.id(), why));
        }
        items.push(Filing {
            bytes: e.bytes(),
            subjects,
            code,
        });
    }
    let mut extra = Output::default();
    let runs = run_counts(events);
    extra.var(runs.len() as u64);
    for (name, n) in &runs {
        extra.str(name);
        extra.var(*n as u64);
    }
    extra.var(rejected.len() as u64);
    for (id, why) in &rejected {
        extra.str(id);
        extra.str(why);
    }
    filed::write(ws, &file(ws), FORMAT, dirs, started, &extra.0, &items);
}

/// The runs and rejection reasons a digest's header holds.
fn header(digest: &Filed) -> Option<(BTreeMap<String, usize>, BTreeMap<String, String>)> {
    let mut input = Input::new(digest.extra());
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
    input.at_end().then_some((runs, rejected))
}

/// The entries filed under `subjects`, with their states.
fn entries<'s>(
    digest: &Filed,
    rejected: &BTreeMap<String, String>,
    subjects: impl IntoIterator<Item = &'s str>,
) -> Option<Vec<(EventEntry, EventState)>> {
    let mut out = Vec::new();
    for (bytes, code) in digest.lookup(subjects)?.into_values() {
        let entry = EventEntry::from_bytes(bytes)?;
        let state = match code {
            0 => EventState::Pending,
            1 => EventState::Settled,
            2 => EventState::Journal,
            3 => EventState::Rejected(rejected.get(entry.id())?.clone()),
            _ => return None,
        };
        out.push((entry, state));
    }
    Some(out)
}

/// [`select`] over the digest; `None` when a part of the file fails its check.
fn select_filed(digest: &Filed, subjects: &BTreeSet<String>) -> Option<Selection> {
    let (runs, rejected) = header(digest)?;
    let none = BTreeSet::new();
    let keys = subjects.iter().map(String::as_str).chain([PENDING]);
    let mut found = entries(digest, &rejected, keys)?;
    found.retain(|(e, state)| chosen(e, state, subjects, &none));
    let questions = questions_among(found.iter().map(|(e, _)| e));
    if !questions.is_empty() {
        let mut answers = entries(digest, &rejected, questions.iter().map(String::as_str))?;
        answers.retain(|(e, state)| chosen(e, state, subjects, &questions));
        found.extend(answers);
    }
    found.sort_by(|a, b| a.0.id().cmp(b.0.id()));
    found.dedup_by(|a, b| a.0.id() == b.0.id());
    let (entries, states) = found.into_iter().unzip();
    Some(Selection {
        events: Events::part(entries, states),
        runs,
    })
}
