//! Events (docs/FORMAT.md §14): the envelope fields that folding and status need.

use toml_edit::{DocumentMut, Table};

use super::fields::{FieldError, Fields};
use super::id::{is_agent_id, parse_ulid};

/// Mailbox kinds: pending until a receipt settles them.
pub const MAILBOX_KINDS: [&str; 10] = [
    "claim",
    "release",
    "check",
    "finish",
    "block",
    "unblock",
    "comment",
    "finding",
    "propose-status",
    "help",
];

/// Whether an event kind waits for a receipt. `answer` is a mailbox kind too.
pub fn is_mailbox(kind: &str) -> bool {
    MAILBOX_KINDS.contains(&kind) || kind == "answer"
}

/// Journal kinds: settled at birth.
pub fn is_journal(kind: &str) -> bool {
    matches!(kind, "run" | "advance" | "applied")
}

/// One event: its envelope, and the kind fields and body folding and status read.
#[derive(Debug, Clone)]
pub struct EventHead {
    pub envelope: EventEnvelope,
    /// The whole frontmatter, for the kind fields folding reads.
    pub front: DocumentMut,
    /// The body (text of a comment, a finding's note body, a question, an answer).
    pub body: String,
    /// Path relative to the work-tree root.
    pub path: String,
}

/// The envelope fields read through the event that carries them (`ev.id`, `ev.kind`).
impl std::ops::Deref for EventHead {
    type Target = EventEnvelope;

    fn deref(&self) -> &EventEnvelope {
        &self.envelope
    }
}

/// The envelope fields of an event, without its frontmatter and body: what an index of the
/// journal keeps of each event, read from any table (an editable document's, or the
/// read-only one of a file parsed only to be indexed).
#[derive(Debug, Clone)]
pub struct EventEnvelope {
    pub id: String,
    pub kind: String,
    pub created: jiff::Timestamp,
    pub created_by: String,
    pub about: Option<String>,
    /// `applied` receipts: the ids they settle as applied.
    pub applied: Vec<String>,
    /// `applied` receipts: the ids they settle as rejected, with reasons.
    pub rejected: Vec<(String, String)>,
    /// `help`: where the question goes.
    pub to: Option<String>,
    /// `answer`: the help event it answers.
    pub question: Option<String>,
}

impl EventEnvelope {
    /// Parses the envelope of an event whose filename is `<ULID>-<agent-id>-<kind>.md`.
    pub fn parse(front: &Table, filename: &str) -> Result<EventEnvelope, FieldError> {
        let f = Fields(front);
        f.expect_kind("event")?;
        let id = f.str("id")?;
        let ulid = parse_ulid(id)
            .ok_or_else(|| FieldError::schema(format!("`id` \"{id}\" is not a ULID")))?;
        let kind = f.str("event_kind")?;
        let created_by = f.str("created_by")?;
        if !is_agent_id(created_by) {
            return Err(FieldError::schema(format!(
                "`created_by` \"{created_by}\" is not an agent id"
            )));
        }
        let expected = format!("{}-{created_by}-{kind}.md", ulid);
        if filename != expected {
            return Err(FieldError::id_mismatch(format!(
                "the filename should be \"{expected}\""
            )));
        }
        let mut applied = Vec::new();
        let mut rejected = Vec::new();
        if kind == "applied" {
            applied = f
                .str_list("applied")?
                .into_iter()
                .map(String::from)
                .collect();
            if let Some(item) = f.get("rejected") {
                let bad = || FieldError::schema("`rejected` must be an array of {id, reason}");
                let arr = item.as_array().ok_or_else(bad)?;
                for v in arr {
                    let t = v.as_inline_table().ok_or_else(bad)?;
                    let id = t.get("id").and_then(|v| v.as_str()).ok_or_else(bad)?;
                    let reason = t.get("reason").and_then(|v| v.as_str()).unwrap_or("");
                    rejected.push((id.to_string(), reason.to_string()));
                }
            }
        }
        Ok(EventEnvelope {
            id: ulid.to_string(),
            kind: kind.to_string(),
            created: f.time("created")?,
            created_by: created_by.to_string(),
            about: f.opt_str("about")?.map(str::to_string),
            applied,
            rejected,
            to: f.opt_str("to")?.map(str::to_string),
            question: f.opt_str("question")?.map(str::to_string),
        })
    }
}

impl EventHead {
    /// Parses an event whose filename is `<ULID>-<agent-id>-<kind>.md`.
    pub fn parse(
        front: &DocumentMut,
        body: &str,
        filename: &str,
        path: &str,
    ) -> Result<EventHead, FieldError> {
        Ok(EventHead {
            envelope: EventEnvelope::parse(front, filename)?,
            front: front.clone(),
            body: body.to_string(),
            path: path.to_string(),
        })
    }
}

impl EventHead {
    /// A string kind field.
    pub fn field_str(&self, key: &str) -> Option<&str> {
        self.front.get(key).and_then(|v| v.as_str())
    }

    /// A boolean kind field.
    pub fn field_bool(&self, key: &str) -> Option<bool> {
        self.front.get(key).and_then(|v| v.as_bool())
    }

    /// An integer kind field.
    pub fn field_int(&self, key: &str) -> Option<i64> {
        self.front.get(key).and_then(|v| v.as_integer())
    }

    /// The first line of the body (or of the title field), for summaries.
    pub fn summary(&self) -> String {
        let first = self
            .body
            .lines()
            .map(|l| l.trim_start_matches('#').trim())
            .find(|l| !l.is_empty())
            .unwrap_or("");
        match self.field_str("title").or(self.field_str("reason")) {
            Some(t) if first.is_empty() => t.to_string(),
            _ => first.to_string(),
        }
    }
}
