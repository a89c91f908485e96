//! L3: the append-only event log (docs/FORMAT.md §14): reading it, verifying checksums and
//! knowing which mailbox events are still pending.

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

    /// Mailbox events that no honoured receipt settles.
    pub fn pending(&self) -> impl Iterator<Item = &EventHead> {
        self.events
            .iter()
            .filter(|e| self.state(e) == EventState::Pending)
    }
}

/// Reads every event under `events/YYYY/MM/DD/`, verifies each checksum and computes which
/// events the receipts of root or rw agents settle. Bad files become warnings.
pub fn read(ws: &Workspace) -> Result<Journal, objects::Error> {
    let mut listing: Listing<EventHead> = Listing::default();
    let root = ws.path(&["events"]);
    for (y, ydir) in ws.fs.list_dir(&root)? {
        for (m, mdir) in ws.fs.list_dir(&ydir)? {
            for (d, ddir) in ws.fs.list_dir(&mdir)? {
                if !(is_digits(&y, 4) && is_digits(&m, 2) && is_digits(&d, 2)) {
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
                    let ev = match EventHead::from_front(&doc.front, &name) {
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
    listing.items.sort_by(|a, b| a.id.cmp(&b.id));
    let mut journal = Journal {
        events: Vec::new(),
        warnings: listing.warnings,
        applied: BTreeSet::new(),
        rejected: BTreeMap::new(),
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
    let digest = hasher.finalize();
    let mut out = String::from("sha256:");
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
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
