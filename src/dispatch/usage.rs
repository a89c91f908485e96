//! The MCP usage record (spec MCP.md §7): one JSON line per `tools/call` in a machine-local,
//! git-ignored log under `.dacli/runs/usage/`, and its reader for `dacli usage`. A line holds
//! the tool, the command words of a `cli` call, the outcome class and the duration; never
//! arguments, content or identity.

use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::{Ctx, Error};

/// One `tools/call`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageLine {
    /// When the call was answered (RFC 3339, UTC).
    pub at: String,
    pub tool: String,
    /// For `cli`: the command words the argv named (`task show`), never its arguments; for
    /// an argv that named no command, its words cut short and marked `(rejected)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<String>,
    /// `done`, `refused` or `error`.
    pub outcome: String,
    /// Milliseconds from request to answer.
    pub ms: u64,
}

/// A server moves to a new file past this size, so every file stays far under the store's
/// per-file read cap.
const ROLL_AT: u64 = 256 * 1024;

/// The usage log of one server process: the file it appends to and how big it has grown.
#[derive(Debug, Default)]
pub struct UsageLog {
    /// Shared by the server's call threads: one file, one line at a time.
    current: Mutex<Option<(PathBuf, u64)>>,
}

impl UsageLog {
    pub fn new() -> UsageLog {
        UsageLog::default()
    }

    /// Appends one line to this process's file (`runs/usage/<ULID>.jsonl`), starting a new
    /// file first when there is none yet or the current one is full.
    pub fn record(&self, ctx: &Ctx, line: &UsageLine) -> Result<(), Error> {
        let ws = ctx.ws()?;
        let mut text = serde_json::to_string(line)
            .map_err(|e| Error::internal(format!("cannot encode a usage line: {e}")))?;
        text.push('\n');
        let mut current = self
            .current
            .lock()
            .map_err(|_| Error::internal("the usage log's lock was poisoned"))?;
        let (path, size) = match current.take() {
            Some((path, size)) if size < ROLL_AT => (path, size),
            _ => {
                let name = format!("{}.jsonl", ctx.new_ulid());
                (ws.path(&["runs", "usage", &name]), 0)
            }
        };
        ws.fs.append(&path, text.as_bytes())?;
        *current = Some((path, size + text.len() as u64));
        Ok(())
    }
}

/// Every readable usage line in the workspace, oldest file first. A file that cannot be read
/// is reported as a warning; a line that does not parse (a crash mid-write) is skipped.
pub fn read(ctx: &Ctx) -> Result<Vec<UsageLine>, Error> {
    let ws = ctx.ws()?;
    let mut lines = Vec::new();
    for (name, path) in ws.fs.list_dir(&ws.path(&["runs", "usage"]))? {
        if !name.ends_with(".jsonl") {
            continue;
        }
        let bytes = match ws.fs.read(&path) {
            Ok(b) => b,
            Err(crate::store::Error::Malformed(problem)) => {
                ctx.warn(problem);
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let text = String::from_utf8_lossy(&bytes);
        lines.extend(
            text.lines()
                .filter_map(|l| serde_json::from_str::<UsageLine>(l).ok()),
        );
    }
    Ok(lines)
}
