//! The event log through the derived index ([`crate::objects::index`]): one small extract per
//! event file, so that knowing which events are pending, what a task's recent activity is or
//! how often a shortcut ran costs a directory walk and a cache lookup, not a parse of every
//! event. Whole events are loaded only where their body or kind fields are needed.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use crate::model::Grant;
use crate::model::event::{EventEnvelope, EventHead, is_journal, is_mailbox};
use crate::model::id::{ROOT_AGENT, parse_ulid, ulid_time};
use crate::objects::codec::{Buf, Input, Output, Record, RecordBuilder};
use crate::objects::index::{Extract, FileCache, Stamp, settled_pass};
use crate::objects::{self, field_problem};
use crate::store::{Document, Problem, ReadDocument, Reason};
use crate::workspace::Workspace;

use super::EventState;

/// The fields of one event that reads rank and filter by, read in place from its cache file
/// ([`Record`]).
#[derive(Clone, PartialEq)]
pub struct EventEntry(Record);

/// The owned fields an [`EventEntry`] is made from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventFields {
    pub id: String,
    pub kind: String,
    /// `created`, formatted (`2026-03-03T10:02:44Z`).
    pub created: String,
    pub created_by: String,
    pub about: Option<String>,
    /// Receipts: the ids settled as applied.
    pub applied: Vec<String>,
    /// Receipts: the ids settled as rejected, with reasons.
    pub rejected: Vec<(String, String)>,
    /// `help`: where the question is routed.
    pub to: Option<String>,
    /// `answer`: the help event answered, and how (`finding`, `decision`, `none`).
    pub question: Option<String>,
    pub answer_as: Option<String>,
    /// `run`: shortcut name, task id and exit code.
    pub shortcut: Option<String>,
    pub task: Option<String>,
    pub exit_code: Option<i64>,
    /// `finding`: title, severity and scope.
    pub title: Option<String>,
    pub severity: Option<String>,
    pub scope: Option<String>,
    /// Path relative to the workspace directory; empty when it is [`live_file`] of the
    /// event's id, author and kind (nearly every event: the extract stays small at 100,000).
    pub file: String,
    /// The file's stamp when it was extracted: a fold that reads the file is keyed by it
    /// (`journal::folds`), so the index's rule decides when the file changed.
    pub stamp: Option<Stamp>,
}

impl EventEntry {
    pub fn new(f: &EventFields) -> EventEntry {
        let stamp = match f.stamp.and_then(|s| s.to_ints()) {
            Some(ints) => ints.map(Some),
            None => [None; 4],
        };
        EventEntry(
            RecordBuilder::default()
                .str(&f.id)
                .str(&f.kind)
                .str(&f.created)
                .str(&f.created_by)
                .opt(f.about.as_deref())
                .strs(f.applied.iter().map(String::as_str))
                .strs(
                    f.rejected
                        .iter()
                        .flat_map(|(id, why)| [id.as_str(), why.as_str()]),
                )
                .opt(f.to.as_deref())
                .opt(f.question.as_deref())
                .opt(f.answer_as.as_deref())
                .opt(f.shortcut.as_deref())
                .opt(f.task.as_deref())
                .int(f.exit_code)
                .opt(f.title.as_deref())
                .opt(f.severity.as_deref())
                .opt(f.scope.as_deref())
                .str(&f.file)
                .int(stamp[0])
                .int(stamp[1])
                .int(stamp[2])
                .int(stamp[3])
                .build(),
        )
    }
    pub fn id(&self) -> &str {
        self.0.str(0)
    }
    pub fn kind(&self) -> &str {
        self.0.str(1)
    }
    /// `created`, formatted (`2026-03-03T10:02:44Z`).
    pub fn created(&self) -> &str {
        self.0.str(2)
    }
    pub fn created_by(&self) -> &str {
        self.0.str(3)
    }
    pub fn about(&self) -> Option<&str> {
        self.0.opt(4)
    }
    /// Receipts: the ids settled as applied.
    pub fn applied(&self) -> Vec<&str> {
        self.0.strs(5)
    }
    /// Receipts: the ids settled as rejected, with reasons.
    pub fn rejected(&self) -> Vec<(&str, &str)> {
        self.0
            .strs(6)
            .chunks_exact(2)
            .map(|p| (p[0], p[1]))
            .collect()
    }
    /// `help`: where the question is routed.
    pub fn to(&self) -> Option<&str> {
        self.0.opt(7)
    }
    /// `answer`: the help event answered.
    pub fn question(&self) -> Option<&str> {
        self.0.opt(8)
    }
    /// `answer`: how it was answered (`finding`, `decision`, `none`).
    pub fn answer_as(&self) -> Option<&str> {
        self.0.opt(9)
    }
    /// `run`: the shortcut.
    pub fn shortcut(&self) -> Option<&str> {
        self.0.opt(10)
    }
    /// `run`: the task.
    pub fn task(&self) -> Option<&str> {
        self.0.opt(11)
    }
    /// `run`: the exit code.
    pub fn exit_code(&self) -> Option<i64> {
        self.0.int(12)
    }
    /// `finding`: the title.
    pub fn title(&self) -> Option<&str> {
        self.0.opt(13)
    }
    /// `finding`: the severity.
    pub fn severity(&self) -> Option<&str> {
        self.0.opt(14)
    }
    /// `finding`: the scope.
    pub fn scope(&self) -> Option<&str> {
        self.0.opt(15)
    }
    /// Path relative to the workspace directory.
    pub fn file(&self) -> std::borrow::Cow<'_, str> {
        match self.0.str(16) {
            "" => live_file(self.id(), self.created_by(), self.kind())
                .unwrap_or_default()
                .into(),
            file => file.into(),
        }
    }
    /// The file's stamp when it was extracted ([`EventFields::stamp`]).
    pub fn stamp(&self) -> Option<Stamp> {
        let int = |i| self.0.int(i);
        Stamp::from_ints([int(17)?, int(18)?, int(19)?, int(20)?])
    }
}

impl std::fmt::Debug for EventEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventEntry")
            .field("id", &self.id())
            .field("kind", &self.kind())
            .finish_non_exhaustive()
    }
}

impl Extract for EventEntry {
    fn encode(&self, out: &mut Output) {
        self.0.encode(out);
    }
    fn sample() -> EventEntry {
        let o = |s: &str| Some(s.to_string());
        EventEntry::new(&EventFields {
            id: "id".into(),
            kind: "kind".into(),
            created: "created".into(),
            created_by: "created_by".into(),
            about: o("about"),
            applied: vec!["applied".into()],
            rejected: vec![("rejected".into(), "why".into())],
            to: o("to"),
            question: o("question"),
            answer_as: o("answer_as"),
            shortcut: o("shortcut"),
            task: o("task"),
            exit_code: Some(7),
            title: o("title"),
            severity: o("severity"),
            scope: o("scope"),
            file: "file".into(),
            stamp: Stamp::from_ints([1, 2, 3, 4]),
        })
    }
    fn decode(buf: &Buf, input: &mut Input<'_>) -> Option<EventEntry> {
        Record::decode(buf, input).map(EventEntry)
    }
}

/// The live event log as index entries, sorted by id, with what honoured receipts settle.
///
/// Invariant: the state of every event equals what [`super::read`] computes for it.
#[derive(Debug, Default, Clone)]
pub struct Events {
    pub entries: Vec<EventEntry>,
    pub warnings: Vec<Problem>,
    // Shared: a server hands the same settled log to every call ([`read`]).
    applied: Arc<HashSet<String>>,
    rejected: Arc<HashMap<String, String>>,
    /// Each entry's state ([`Code`]), index for index with `entries` as they were settled:
    /// readers ask the state of every event several times a call.
    codes: Arc<Vec<Code>>,
    /// What readers derived from this settled log ([`Events::derived`]), shared by every copy
    /// the server's memo hands out.
    derived: Arc<std::sync::Mutex<Vec<Arc<dyn std::any::Any + Send + Sync>>>>,
}

/// An [`EventState`] without its reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    Pending,
    Settled,
    Rejected,
    Journal,
}

impl Events {
    /// A part of the log: `entries` (sorted by id, one per id), each with the state the whole
    /// log gives it ([`Events::state`] answers exactly that for each of them).
    pub(super) fn part(entries: Vec<EventEntry>, states: Vec<EventState>) -> Events {
        let mut applied = HashSet::new();
        let mut rejected = HashMap::new();
        for (e, state) in entries.iter().zip(states) {
            match state {
                EventState::Settled => {
                    applied.insert(e.id().to_string());
                }
                EventState::Rejected(why) => {
                    rejected.insert(e.id().to_string(), why);
                }
                EventState::Pending | EventState::Journal => {}
            }
        }
        Events {
            entries,
            warnings: Vec::new(),
            applied: Arc::new(applied),
            rejected: Arc::new(rejected),
            codes: Arc::default(),
            derived: Arc::default(),
        }
        .coded()
    }

    /// The value `make` derives from this log, made once per settled log: a server asks
    /// for the same (pending events by object, events related to each task) on every call.
    /// `make` must depend on nothing but the entries and their states, which never change
    /// once the log is settled.
    pub fn derived<T: std::any::Any + Send + Sync>(
        &self,
        make: impl FnOnce(&Events) -> T,
    ) -> Arc<T> {
        if let Ok(made) = self.derived.lock() {
            for value in made.iter() {
                if let Ok(found) = Arc::clone(value).downcast::<T>() {
                    return found;
                }
            }
        }
        let value = Arc::new(make(self));
        if let Ok(mut made) = self.derived.lock() {
            made.push(Arc::clone(&value) as Arc<dyn std::any::Any + Send + Sync>);
        }
        value
    }

    /// With each entry's state worked out once.
    fn coded(mut self) -> Events {
        let codes = self
            .entries
            .iter()
            .map(|e| match self.judge(e) {
                EventState::Pending => Code::Pending,
                EventState::Settled => Code::Settled,
                EventState::Rejected(_) => Code::Rejected,
                EventState::Journal => Code::Journal,
            })
            .collect();
        self.codes = Arc::new(codes);
        self
    }

    /// The position of `ev` in `entries` when it is one of them (by address: no lookup),
    /// and the codes still match them.
    fn position(&self, ev: &EventEntry) -> Option<usize> {
        // An entry is never zero-sized, so the division is sound.
        let size = std::mem::size_of::<EventEntry>();
        let offset =
            (std::ptr::from_ref(ev) as usize).checked_sub(self.entries.as_ptr() as usize)?;
        let at = offset / size;
        (offset % size == 0 && at < self.entries.len() && self.codes.len() == self.entries.len())
            .then_some(at)
    }

    /// The state of one event.
    pub fn state(&self, ev: &EventEntry) -> EventState {
        match self.position(ev).map(|at| self.codes[at]) {
            Some(Code::Pending) => EventState::Pending,
            Some(Code::Settled) => EventState::Settled,
            Some(Code::Journal) => EventState::Journal,
            Some(Code::Rejected) | None => self.judge(ev),
        }
    }

    /// The state of one event, from the receipts and its kind.
    fn judge(&self, ev: &EventEntry) -> EventState {
        if let Some(reason) = self.rejected.get(ev.id()) {
            EventState::Rejected(reason.clone())
        } else if self.applied.contains(ev.id()) {
            EventState::Settled
        } else if is_mailbox(ev.kind()) || !is_journal(ev.kind()) {
            // Unknown kinds wait for a newer dacli, which is what "pending" means to a reader.
            EventState::Pending
        } else {
            EventState::Journal
        }
    }

    /// The receipt (its id) that settled `id`, if any: the first `applied` event naming it,
    /// as [`super::Journal::receipt_of`] answers.
    pub fn receipt_of(&self, id: &str) -> Option<&str> {
        self.entries
            .iter()
            .filter(|e| e.kind() == "applied")
            .find(|e| e.applied().contains(&id) || e.rejected().iter().any(|(r, _)| *r == id))
            .map(EventEntry::id)
    }

    /// True when the event waits for a receipt.
    pub fn is_pending(&self, ev: &EventEntry) -> bool {
        match self.position(ev) {
            Some(at) => self.codes[at] == Code::Pending,
            None => self.judge(ev) == EventState::Pending,
        }
    }

    /// The whole event (frontmatter and body) of an entry, read from its file and verified
    /// against its `checksum` in this call (FORMAT §14.1).
    ///
    /// The entry may be served from the cache, whose rule trusts a file by its stamp; what a
    /// caller applies or shows comes from here, so a file rewritten since the entry was
    /// extracted (in place, its times restored) is reported as `checksum`, never trusted. A
    /// file that now names another event is reported as `id_mismatch`.
    pub fn load(&self, ws: &Workspace, ev: &EventEntry) -> Result<EventHead, objects::Error> {
        let path = ws.dir().join(&*ev.file());
        let shown = ws.display(&path);
        let bad = |reason: Reason, detail: String| {
            objects::Error::malformed(Problem {
                path: shown.clone(),
                reason,
                detail,
            })
        };
        let bytes = ws.fs.read(&path)?;
        let doc = Document::parse(&shown, &bytes).map_err(objects::Error::malformed)?;
        if let Some(stored) = doc.front.get("checksum").and_then(|c| c.as_str())
            && stored != super::checksum(&bytes)
        {
            return Err(bad(
                Reason::Checksum,
                "the content does not match `checksum`".into(),
            ));
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let head = EventHead::parse(&doc.front, &doc.body, &name, &shown)
            .map_err(|e| objects::Error::malformed(field_problem(ws, &path, e)))?;
        if head.id != ev.id()
            || head.kind != ev.kind()
            || head.created_by != ev.created_by()
            || head.about.as_deref() != ev.about()
        {
            return Err(bad(
                Reason::IdMismatch,
                "the file no longer holds the event it was listed as".into(),
            ));
        }
        Ok(head)
    }
}

/// Reads the event log through the index: every file under `events/YYYY/MM/DD/` is listed,
/// its extract served from the cache when unchanged, and receipts of root or rw agents settle
/// the events they list (the earliest receipt counts). Bad files become warnings, exactly as
/// [`super::read`] reports them.
pub fn read(ws: &Workspace) -> Result<Events, objects::Error> {
    let (mut out, cache) = settled_pass(ws, "events", |cache| scan(ws, cache))?;
    cache.save(ws);
    objects::sort_by_str_key(&mut out.entries, |e| e.id());
    settle(ws, &mut out);
    Ok(out.coded())
}

/// One pass over the live log and the unsealed archive segments, unsorted and unsettled.
fn scan(ws: &Workspace, cache: &mut FileCache<EventEntry>) -> Result<Events, objects::Error> {
    let mut out = Events::default();
    // The files of an unsealed archive segment are part of the live log (FORMAT §20), as in
    // `super::read`; a copy of an id already read is skipped.
    let mut roots = vec![ws.path(&["events"])];
    roots.extend(super::archive::unsealed_dirs(ws)?);
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for (n, root) in roots.iter().enumerate() {
        let mut found = Vec::new();
        for (y, ydir) in ws.fs.list_dirs(root)? {
            if !digits(&y, 4) {
                continue;
            }
            for (m, mdir) in ws.fs.list_dirs(&ydir)? {
                if !digits(&m, 2) {
                    continue;
                }
                for (d, ddir) in ws.fs.list_dirs(&mdir)? {
                    if !digits(&d, 2) {
                        continue;
                    }
                    let day = format!("{y}/{m}/{d}");
                    let scanned =
                        cache.scan(ws, &ddir, &mut out.warnings, |name, path, stamp, bytes| {
                            let shown = ws.display(path);
                            let doc = ReadDocument::parse(&shown, bytes)?;
                            let file = path
                                .strip_prefix(ws.dir())
                                .map(|p| p.to_string_lossy().into_owned())
                                .unwrap_or_default();
                            let at = (file, stamp);
                            entry_of(&doc, bytes, name, &shown, &day, at).map_err(|p| match p {
                                Bad::Field(e) => field_problem(ws, path, e),
                                Bad::Problem(p) => p,
                            })
                        })?;
                    found.extend(scanned.into_iter().map(Arc::unwrap_or_clone));
                }
            }
        }
        if n == 0 {
            // Only an unsealed segment can repeat an id; without one, the ids are not kept.
            if roots.len() > 1 {
                seen.extend(found.iter().map(|e| e.id().to_string()));
            }
            out.entries.extend(found);
        } else {
            out.entries.extend(
                found
                    .into_iter()
                    .filter(|e| seen.insert(e.id().to_string())),
            );
        }
    }
    Ok(out)
}

enum Bad {
    Field(crate::model::FieldError),
    Problem(Problem),
}

fn entry_of(
    doc: &ReadDocument,
    bytes: &[u8],
    name: &str,
    shown: &str,
    day: &str,
    (file, stamp): (String, Option<Stamp>),
) -> Result<EventEntry, Bad> {
    let ev = EventEnvelope::parse(&doc.front, name).map_err(Bad::Field)?;
    let id_day = parse_ulid(&ev.id)
        .map(ulid_time)
        .unwrap_or(ev.created)
        .strftime("%Y/%m/%d")
        .to_string();
    if id_day != day {
        return Err(Bad::Problem(Problem {
            path: shown.to_string(),
            reason: Reason::IdMismatch,
            detail: format!("the id's date is {id_day}"),
        }));
    }
    if let Some(stored) = doc.front.get("checksum").and_then(|c| c.as_str())
        && stored != super::checksum(bytes)
    {
        return Err(Bad::Problem(Problem {
            path: shown.to_string(),
            reason: Reason::Checksum,
            detail: "the content does not match `checksum`".into(),
        }));
    }
    let field = |k: &str| doc.front.get(k);
    let s = |k: &str| field(k).and_then(|v| v.as_str()).map(str::to_string);
    let file = match live_file(&ev.id, &ev.created_by, &ev.kind) {
        Some(live) if live == file => String::new(),
        _ => file,
    };
    Ok(EventEntry::new(&EventFields {
        created: crate::model::format_time(ev.created),
        to: ev.to.clone(),
        question: ev.question.clone(),
        answer_as: (ev.kind == "answer").then(|| s("as")).flatten(),
        shortcut: s("shortcut"),
        task: s("task"),
        exit_code: field("exit_code").and_then(|v| v.as_integer()),
        title: s("title"),
        severity: s("severity"),
        scope: s("scope"),
        id: ev.id,
        kind: ev.kind,
        created_by: ev.created_by,
        about: ev.about,
        applied: ev.applied,
        rejected: ev.rejected,
        file,
        stamp,
    }))
}

/// Applies the honoured receipts in ULID order, as [`super::read`] does.
/// Returns the agent files consulted, each with its stamp taken before it was read.
fn settle(ws: &Workspace, events: &mut Events) -> Vec<(std::path::PathBuf, Option<Stamp>)> {
    let mut honoured: BTreeMap<String, bool> = BTreeMap::new();
    let mut consulted = Vec::new();
    let mut applied = HashSet::new();
    let mut rejected = HashMap::new();
    for ev in events.entries.iter().filter(|e| e.kind() == "applied") {
        let ok = *honoured
            .entry(ev.created_by().to_string())
            .or_insert_with(|| {
                if ev.created_by() == ROOT_AGENT {
                    return true;
                }
                if crate::model::id::is_agent_id(ev.created_by()) {
                    let path = objects::agents::file(ws, ev.created_by());
                    consulted.push((path.clone(), Stamp::of(&path)));
                }
                objects::agents::load(ws, ev.created_by()).is_ok_and(|a| a.grant == Grant::Rw)
            });
        if !ok {
            continue;
        }
        for id in ev.applied() {
            if !rejected.contains_key(id) {
                applied.insert(id.to_string());
            }
        }
        for (id, reason) in ev.rejected() {
            if !applied.contains(id) {
                rejected
                    .entry(id.to_string())
                    .or_insert_with(|| reason.to_string());
            }
        }
    }
    events.applied = Arc::new(applied);
    events.rejected = Arc::new(rejected);
    consulted
}

/// Where the live log keeps the event `id` by `created_by` of `kind`
/// (`events/YYYY/MM/DD/<ULID>-<agent-id>-<kind>.md`); `None` when `id` is no ULID.
fn live_file(id: &str, created_by: &str, kind: &str) -> Option<String> {
    let ulid = parse_ulid(id)?;
    let day = ulid_time(ulid).strftime("%Y/%m/%d");
    Some(format!("events/{day}/{ulid}-{created_by}-{kind}.md"))
}

fn digits(s: &str, n: usize) -> bool {
    s.len() == n && s.bytes().all(|b| b.is_ascii_digit())
}
