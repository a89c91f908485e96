//! Notes (docs/FORMAT.md §15): decisions, findings, metrics and refs. Append-only: a note is
//! corrected by a new note that `supersedes` it, never by editing.

use toml_edit::{DocumentMut, value};

use super::body::section_text;
use super::event::EventHead;
use super::fields::{FieldError, Fields};
use super::id::parse_ulid;
use super::taskdoc::{strip_wikilink, title_of};

/// Note kinds, and the directory each lives in.
pub const NOTE_KINDS: [(&str, &str); 4] = [
    ("decision", "decisions"),
    ("finding", "findings"),
    ("metric", "metrics"),
    ("ref", "refs"),
];

/// Finding severities, most severe first.
pub const SEVERITIES: [&str; 3] = ["major", "moderate", "minor"];

/// The directory of a note kind.
pub fn dir_of(kind: &str) -> Option<&'static str> {
    NOTE_KINDS.iter().find(|(k, _)| *k == kind).map(|(_, d)| *d)
}

/// The kind a note directory holds.
pub fn kind_of_dir(dir: &str) -> Option<&'static str> {
    NOTE_KINDS.iter().find(|(_, d)| *d == dir).map(|(k, _)| *k)
}

/// The parts of a note listings, briefs and the definition of done need.
#[derive(Debug, Clone)]
pub struct NoteHead {
    pub id: String,
    pub kind: String,
    pub title: String,
    pub scope: String,
    pub about: Option<String>,
    pub severity: Option<String>,
    pub private: bool,
    pub supersedes: Option<String>,
    pub source_event: Option<String>,
    pub created: jiff::Timestamp,
    pub created_by: String,
    pub tags: Vec<String>,
}

impl NoteHead {
    /// Parses a note found in directory `dir` (`decisions`, ...) with scope `scope`.
    pub fn parse(
        front: &toml_edit::Table,
        body: &str,
        dir: &str,
        scope: &str,
    ) -> Result<NoteHead, FieldError> {
        let f = Fields(front);
        f.expect_kind("note")?;
        let id = f.str("id")?;
        if id.strip_prefix("n-").and_then(parse_ulid).is_none() {
            return Err(FieldError::schema(format!(
                "`id` \"{id}\" is not `n-<ULID>`"
            )));
        }
        let kind = f.enum_str("note_kind", &["decision", "finding", "metric", "ref"])?;
        if dir_of(kind) != Some(dir) {
            return Err(FieldError::id_mismatch(format!(
                "`note_kind` \"{kind}\" does not belong in {dir}/"
            )));
        }
        let stored_scope = f.enum_str("scope", &["project", "workspace"])?;
        if stored_scope != scope {
            return Err(FieldError::id_mismatch(format!(
                "`scope` \"{stored_scope}\" does not match the location ({scope} scope)"
            )));
        }
        let severity = if kind == "finding" {
            Some(f.enum_str("severity", &SEVERITIES)?.to_string())
        } else {
            f.opt_str("severity")?.map(str::to_string)
        };
        let title = title_of(body)
            .ok_or_else(|| FieldError::schema("the body has no level-1 heading (title)"))?;
        Ok(NoteHead {
            id: id.to_string(),
            kind: kind.to_string(),
            title: title.to_string(),
            scope: scope.to_string(),
            about: f.opt_str("about")?.map(|s| strip_wikilink(s).to_string()),
            severity,
            private: f.opt_bool("private")?.unwrap_or(false),
            supersedes: f
                .opt_str("supersedes")?
                .map(|s| strip_wikilink(s).to_string()),
            source_event: f.opt_str("source_event")?.map(str::to_string),
            created: f.time("created")?,
            created_by: f.str("created_by")?.to_string(),
            tags: f.str_list("tags")?.into_iter().map(String::from).collect(),
        })
    }
}

/// Checks the structure a note kind requires (FORMAT §15 "Structure"); the error names the
/// first missing or misordered section.
pub fn check_structure(kind: &str, body: &str) -> Result<(), String> {
    let required: &[&str] = match kind {
        "decision" => &["Chose", "Rejected", "Because"],
        "metric" => &["Goal", "Question", "Metric"],
        _ => &[],
    };
    let mut last = 0;
    for name in required {
        let Some(range) = super::body::section_range(body, name) else {
            return Err(format!("no `## {name}` section"));
        };
        if section_text(body, name).is_some_and(str::is_empty) {
            return Err(format!("`## {name}` is empty"));
        }
        if range.start < last {
            return Err(format!(
                "`## {name}` is out of order (expected {})",
                required.join(", ")
            ));
        }
        last = range.start;
    }
    Ok(())
}

/// A note materialised from a `finding` or `answer` event: a pure function of the event
/// (FORMAT §15 "Authors"), so two clones write identical bytes.
#[derive(Debug, Clone)]
pub struct Materialised {
    pub id: String,
    pub kind: String,
    pub scope: String,
    /// The task or project id it is about (`None` for `workspace`).
    pub about: Option<String>,
    pub title: String,
    pub front: DocumentMut,
    pub body: String,
}

/// Builds the note of a `finding` event, or of an `answer` whose `as` is not `none`.
/// `scope` is where it goes (an answer's note has the scope of its question's project).
pub fn materialise(ev: &EventHead) -> Option<Materialised> {
    let (kind, scope) = match ev.kind.as_str() {
        "finding" => ("finding", ev.field_str("scope").unwrap_or("project")),
        "answer" => match ev.field_str("as").unwrap_or("finding") {
            "none" => return None,
            "decision" => ("decision", "project"),
            _ => ("finding", "project"),
        },
        _ => return None,
    };
    let about = ev.about.clone().filter(|a| a != "workspace");
    let scope = if about.is_none() { "workspace" } else { scope };
    let mut front = DocumentMut::new();
    front["id"] = value(format!("n-{}", ev.id));
    front["kind"] = value("note");
    front["note_kind"] = value(kind);
    if let Some(created) = ev.front.get("created") {
        front["created"] = created.clone();
    }
    front["created_by"] = value(ev.created_by.as_str());
    front["scope"] = value(scope);
    if let Some(a) = &about {
        front["about"] = value(a.as_str());
    }
    if kind == "finding" {
        front["severity"] = value(ev.field_str("severity").unwrap_or("moderate"));
    }
    if ev.field_bool("private") == Some(true) {
        front["private"] = value(true);
    }
    front["source_event"] = value(ev.id.as_str());
    let title = title_of(&ev.body)
        .map(str::to_string)
        .or_else(|| ev.field_str("title").map(str::to_string))
        .unwrap_or_else(|| format!("Note from event {}", ev.id));
    Some(Materialised {
        id: format!("n-{}", ev.id),
        kind: kind.to_string(),
        scope: scope.to_string(),
        about,
        title,
        front,
        body: ev.body.clone(),
    })
}
