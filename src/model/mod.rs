//! L2: the pure types of the workspace, parsed from frontmatter. No I/O happens here: callers
//! hand in parsed documents and get typed values or a [`FieldError`] naming the field.

pub mod agent;
pub mod body;
pub mod dod;
pub mod event;
pub mod fields;
pub mod glossary;
pub mod id;
pub mod lint;
pub mod merge;
pub mod note;
pub mod project;
pub mod queue;
pub mod risk;
pub mod role;
pub mod runtime;
pub mod shortcut;
pub mod task;
pub mod taskdoc;
pub mod text;

use std::fmt;

use serde::Serialize;

pub use fields::{FieldError, FieldErrorKind};

/// An agent's capability. `ro` may read and append events; `rw` may also mutate and apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Grant {
    Ro,
    Rw,
}

impl Grant {
    /// Parses `rw` or `ro`.
    pub fn parse(s: &str) -> Option<Grant> {
        match s {
            "rw" => Some(Grant::Rw),
            "ro" => Some(Grant::Ro),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Grant::Rw => "rw",
            Grant::Ro => "ro",
        }
    }
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A timestamp as the TOML offset date-time dacli writes: UTC, whole seconds, `Z`.
pub fn toml_time(t: jiff::Timestamp) -> toml_edit::Datetime {
    let dt = t.to_zoned(jiff::tz::TimeZone::UTC).datetime();
    toml_edit::Datetime {
        date: Some(toml_edit::Date {
            year: dt.year() as u16,
            month: dt.month() as u8,
            day: dt.day() as u8,
        }),
        time: Some(toml_edit::Time {
            hour: dt.hour() as u8,
            minute: dt.minute() as u8,
            second: Some(dt.second() as u8),
            nanosecond: None,
        }),
        offset: Some(toml_edit::Offset::Z),
    }
}

/// Formats a timestamp the way dacli writes and prints it: UTC, whole seconds, `Z`.
pub fn format_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A policy "no": which policy, why, and what to do instead (COMMANDS.md §2). A refusal is an
/// answer, never an error; it is never retried and nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    pub policy: String,
    pub reason: String,
    pub next: String,
}

impl Refusal {
    pub fn new(
        policy: impl Into<String>,
        reason: impl Into<String>,
        next: impl Into<String>,
    ) -> Self {
        Refusal {
            policy: policy.into(),
            reason: reason.into(),
            next: next.into(),
        }
    }
}
