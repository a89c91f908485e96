//! L3: the append-only event log (docs/FORMAT.md §14): reading it, verifying checksums and
//! knowing which mailbox events are still pending.

pub mod archive;
pub mod digest;
pub mod evidence;
pub mod fold;
pub mod folds;
pub mod index;
pub mod record;
pub mod runs;
pub mod snapshot;
pub mod sync;
pub mod txn;
pub mod view;
pub mod wip;

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use crate::model::Grant;
use crate::model::event::{EventHead, is_journal, is_mailbox};
use crate::model::id::ROOT_AGENT;
use crate::objects::{self, Listing, field_problem, warn_or_fail};
use crate::store::{Problem, Reason, TEMP_PREFIX, canonicalize};
use crate::workspace::Workspace;

/// Where an event stands (COMMANDS.md §1.7 `EventRef.state`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventState {
    Pending,
    Settled,
    Rejected(String),
    Journal,
}

impl EventState {
    pub fn as_str(&self) -> &'static str {
        match self {
            EventState::Pending => "pending",
            EventState::Settled => "settled",
            EventState::Rejected(_) => "rejected",
            EventState::Journal => "journal",
        }
    }
}

/// The live event log, sorted by id, with what the honoured receipts settle.
#[derive(Debug, Default)]
pub struct Journal {
    pub events: Vec<EventHead>,
    pub warnings: Vec<Problem>,
    applied: BTreeSet<String>,
    rejected: BTreeMap<String, String>,
    /// `run` events per shortcut that live only in sealed archive segments (history that
    /// `uses` still counts, FORMAT §20); the fold never looks at them.
    archived_runs: BTreeMap<String, usize>,
}

impl Journal {
    /// The state of one event of this journal.
    pub fn state(&self, ev: &EventHead) -> EventState {
        if let Some(reason) = self.rejected.get(&ev.id) {
            EventState::Rejected(reason.clone())
        } else if self.applied.contains(&ev.id) {
            EventState::Settled
        } else if is_mailbox(&ev.kind) {
            EventState::Pending
        } else if is_journal(&ev.kind) {
            EventState::Journal
        } else {
            // Unknown kinds are kept and never applied (FORMAT §14.2): they wait for a newer
            // dacli, which is what "pending" means to a reader.
            EventState::Pending
        }
    }

    /// Pending events about the object `about`, in ULID order.
    pub fn pending_about<'a>(&'a self, about: &'a str) -> impl Iterator<Item = &'a EventHead> {
        self.pending()
            .filter(move |e| e.about.as_deref() == Some(about))
    }

    /// The event with this id.
    pub fn get(&self, id: &str) -> Option<&EventHead> {
        self.events
            .binary_search_by(|e| e.id.as_str().cmp(id))
            .ok()
            .map(|i| &self.events[i])
    }

    /// The receipt (its id) that settled `id`, if any.
    pub fn receipt_of(&self, id: &str) -> Option<&str> {
        self.events
            .iter()
            .filter(|e| e.kind == "applied")
            .find(|e| e.applied.iter().any(|a| a == id) || e.rejected.iter().any(|(r, _)| r == id))
            .map(|e| e.id.as_str())
    }

    /// `run` events per shortcut kept only in sealed archive segments.
    pub fn archived_runs(&self) -> &BTreeMap<String, usize> {
        &self.archived_runs
    }

    /// Mailbox events that no honoured receipt settles.
    pub fn pending(&self) -> impl Iterator<Item = &EventHead> {
        self.events
            .iter()
            .filter(|e| self.state(e) == EventState::Pending)
    }
}

/// Reads every event under `events/YYYY/MM/DD/`, verifies each checksum and computes which
/// events the receipts of root or rw agents settle. Bad files become warnings. The files of an
/// unsealed archive segment (an archival interrupted half-way, FORMAT §20) are part of the
/// live log too; a copy of an id already read is skipped.
pub fn read(ws: &Workspace) -> Result<Journal, objects::Error> {
    let mut listing: Listing<EventHead> = Listing::default();
    scan_tree(ws, &ws.path(&["events"]), &mut listing)?;
    let unsealed = archive::unsealed_dirs(ws)?;
    if !unsealed.is_empty() {
        let mut seen: BTreeSet<String> = listing.items.iter().map(|e| e.id.clone()).collect();
        for dir in unsealed {
            let mut moved: Listing<EventHead> = Listing::default();
            scan_tree(ws, &dir, &mut moved)?;
            listing.warnings.extend(moved.warnings);
            for ev in moved.items {
                if seen.insert(ev.id.clone()) {
                    listing.items.push(ev);
                }
            }
        }
    }
    listing.items.sort_by(|a, b| a.id.cmp(&b.id));
    let live: BTreeSet<String> = listing.items.iter().map(|e| e.id.clone()).collect();
    let (archived_runs, problems) = archive::archived_runs(ws, &live)?;
    listing.warnings.extend(problems);
    let mut journal = Journal {
        events: Vec::new(),
        warnings: listing.warnings,
        applied: BTreeSet::new(),
        rejected: BTreeMap::new(),
        archived_runs,
    };
    let mut honoured: BTreeMap<String, bool> = BTreeMap::new();
    // Receipts in ULID order: when receipts disagree, the earliest counts (FORMAT §14.2).
    for ev in listing.items.iter().filter(|e| e.kind == "applied") {
        let ok = *honoured
            .entry(ev.created_by.clone())
            .or_insert_with(|| is_honoured_author(ws, &ev.created_by));
        if !ok {
            continue;
        }
        for id in &ev.applied {
            if !journal.rejected.contains_key(id) {
                journal.applied.insert(id.clone());
            }
        }
        for (id, reason) in &ev.rejected {
            if !journal.applied.contains(id) {
                journal.rejected.entry(id.clone()).or_insert(reason.clone());
            }
        }
    }
    journal.events = listing.items;
    Ok(journal)
}

/// Reads the event files of one `YYYY/MM/DD/` tree (the live `events/`, or a segment).
fn scan_tree(
    ws: &Workspace,
    root: &std::path::Path,
    listing: &mut Listing<EventHead>,
) -> Result<(), objects::Error> {
    // Only `YYYY/MM/DD` directories hold events (a segment also holds its manifest).
    for (y, ydir) in ws.fs.list_dirs(root)? {
        if !is_digits(&y, 4) {
            continue;
        }
        for (m, mdir) in ws.fs.list_dirs(&ydir)? {
            if !is_digits(&m, 2) {
                continue;
            }
            for (d, ddir) in ws.fs.list_dirs(&mdir)? {
                if !is_digits(&d, 2) {
                    continue;
                }
                for (name, path) in ws.fs.list_dir(&ddir)? {
                    if name.starts_with(TEMP_PREFIX) || !name.ends_with(".md") {
                        continue;
                    }
                    let bytes = match ws.fs.read(&path) {
                        Ok(b) => b,
                        Err(e) => {
                            warn_or_fail(&mut listing.warnings, Err(e))?;
                            continue;
                        }
                    };
                    let Some(doc) = warn_or_fail(
                        &mut listing.warnings,
                        read_document_bytes(ws, &path, &bytes),
                    )?
                    else {
                        continue;
                    };
                    let ev =
                        match EventHead::parse(&doc.front, &doc.body, &name, &ws.display(&path)) {
                            Ok(ev) => ev,
                            Err(e) => {
                                listing.warnings.push(field_problem(ws, &path, e));
                                continue;
                            }
                        };
                    if format!("{y}/{m}/{d}") != ev_date(&ev) {
                        listing.warnings.push(Problem {
                            path: ws.display(&path),
                            reason: Reason::IdMismatch,
                            detail: format!("the id's date is {}", ev_date(&ev)),
                        });
                        continue;
                    }
                    if let Some(stored) = doc.front.get("checksum").and_then(|c| c.as_str())
                        && stored != checksum(&bytes)
                    {
                        listing.warnings.push(Problem {
                            path: ws.display(&path),
                            reason: Reason::Checksum,
                            detail: "the content does not match `checksum`".into(),
                        });
                        continue;
                    }
                    listing.items.push(ev);
                }
            }
        }
    }
    Ok(())
}

/// A new event to append. `fields` are the kind fields of FORMAT §14.2, in table order.
#[derive(Debug, Clone)]
pub struct NewEvent<'a> {
    pub id: ulid::Ulid,
    pub kind: &'a str,
    pub created_by: &'a str,
    pub about: Option<&'a str>,
    pub fields: Vec<(&'a str, toml_edit::Item)>,
    pub body: String,
}

/// Appends an event: one new file `events/YYYY/MM/DD/<ULID>-<agent>-<kind>.md`, created with
/// create-new (never overwriting), `checksum` last. Returns the parsed event.
pub fn append(ws: &Workspace, ev: NewEvent<'_>) -> Result<EventHead, objects::Error> {
    use toml_edit::value;
    let created = crate::model::id::ulid_time(ev.id);
    let mut front = toml_edit::DocumentMut::new();
    front["id"] = value(ev.id.to_string());
    front["kind"] = value("event");
    front["event_kind"] = value(ev.kind);
    let created_text = crate::model::format_time(created);
    let created_toml: toml_edit::Datetime =
        created_text.parse().map_err(|_| objects::Error::NotFound {
            what: "timestamp",
            id: created_text.clone(),
        })?;
    front["created"] = value(created_toml);
    front["created_by"] = value(ev.created_by);
    if let Some(about) = ev.about {
        front["about"] = value(about);
    }
    for (k, item) in ev.fields {
        front[k] = item;
    }
    let unsigned = crate::store::Document::new(front.clone(), ev.body.clone()).render();
    front["checksum"] = value(checksum(unsigned.as_bytes()));
    let doc = crate::store::Document::new(front, ev.body);
    let day = created.strftime("%Y/%m/%d").to_string();
    let name = format!("{}-{}-{}.md", ev.id, ev.created_by, ev.kind);
    let mut path = ws.path(&["events"]);
    for part in day.split('/') {
        path.push(part);
    }
    path.push(&name);
    ws.fs.create_new(&path, doc.render().as_bytes())?;
    EventHead::parse(&doc.front, &doc.body, &name, &ws.display(&path))
        .map_err(|e| objects::Error::malformed(field_problem(ws, &path, e)))
}

/// The `checksum` of an event file: SHA-256 of its canonical form with the whole `checksum`
/// line removed (FORMAT §14.1).
pub fn checksum(bytes: &[u8]) -> String {
    let text = canonicalize(&String::from_utf8_lossy(bytes));
    let mut hasher = Sha256::new();
    let mut in_front = false;
    let mut removed = false;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let bare = line.trim_end_matches('\n');
        if bare == "+++" {
            in_front = n == 0;
        }
        if in_front && !removed && bare.trim_start().starts_with("checksum") {
            let rest = bare.trim_start()["checksum".len()..].trim_start();
            if rest.starts_with('=') {
                removed = true;
                continue;
            }
        }
        hasher.update(line.as_bytes());
    }
    format!("sha256:{}", hex::encode(hasher.finalize()))
}

fn read_document_bytes(
    ws: &Workspace,
    path: &std::path::Path,
    bytes: &[u8],
) -> Result<crate::store::Document, crate::store::Error> {
    crate::store::Document::parse(&ws.display(path), bytes).map_err(crate::store::Error::Malformed)
}

fn is_honoured_author(ws: &Workspace, agent: &str) -> bool {
    agent == ROOT_AGENT || objects::agents::load(ws, agent).is_ok_and(|a| a.grant == Grant::Rw)
}

/// The `YYYY/MM/DD` directory an event belongs in: the UTC date of its ULID.
fn ev_date(ev: &EventHead) -> String {
    let t = crate::model::id::parse_ulid(&ev.id)
        .map(crate::model::id::ulid_time)
        .unwrap_or(ev.created);
    t.strftime("%Y/%m/%d").to_string()
}

fn is_digits(s: &str, n: usize) -> bool {
    s.len() == n && s.bytes().all(|b| b.is_ascii_digit())
}
