//! Tasks (docs/FORMAT.md §12): the parts that listings and status need.

use super::fields::{FieldError, Fields};
use super::id::parse_ulid;

/// MoSCoW priorities, highest first.
pub const PRIORITIES: [&str; 4] = ["must", "should", "could", "wont"];
/// Ways a done task was closed.
pub const RESOLUTIONS: [&str; 3] = ["completed", "unverified", "abandoned"];

/// The display number and slug a format-1 task filename carries: `<NNN>-<slug>.md`. A
/// format-2 filename (`<ULID>-<slug>.md`, [`parse_keyed_filename`]) carries no number: its
/// number is the `seq` key.
pub fn parse_task_filename(name: &str) -> Option<(u32, &str)> {
    let stem = name.strip_suffix(".md")?;
    let (num, slug) = stem.split_once('-')?;
    if num.len() < 3 || !num.bytes().all(|b| b.is_ascii_digit()) || slug.is_empty() {
        return None;
    }
    Some((num.parse().ok()?, slug))
}

/// The ULID and slug of a format-2 record filename, `<ULID>-<slug>.md` (tasks, notes and
/// risks): the ULID is the record's own, so no other clone can create the path.
pub fn parse_keyed_filename(name: &str) -> Option<(String, &str)> {
    let stem = name.strip_suffix(".md")?;
    let (ulid, slug) = stem.split_once('-')?;
    if slug.is_empty() {
        return None;
    }
    Some((parse_ulid(ulid)?.to_string(), slug))
}

/// The format-2 filename of a record with id ULID `ulid` and slug `slug`.
pub fn keyed_filename(ulid: &str, slug: &str) -> String {
    format!("{ulid}-{slug}.md")
}

/// One `## Log` line: `- <timestamp> <agent-id> <text>[ (event <ULID>)]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub at: String,
    pub agent: String,
    pub text: String,
    pub event: Option<String>,
}

/// When the task last became active: the time of the last Log line that made it so
/// (`claimed`, `assigned …`, `status open -> active`), if any.
pub fn active_since(log: &[LogLine]) -> Option<String> {
    log.iter()
        .rev()
        .find(|l| {
            l.text == "claimed"
                || l.text.starts_with("assigned ")
                || l.text.starts_with("status open -> active")
        })
        .map(|l| l.at.clone())
}

/// Timestamp of the last Log line that reopened the task, if any.
pub fn reopened_at(log: &[LogLine]) -> Option<String> {
    log.iter()
        .rev()
        .find(|l| l.text.starts_with("reopened"))
        .map(|l| l.at.clone())
}

/// The parts of a task that status and listings need.
#[derive(Debug, Clone)]
pub struct TaskHead {
    pub id: String,
    pub number: u32,
    pub slug: String,
    pub title: String,
    pub owner: String,
    pub rev: String,
    pub assignee: Option<String>,
    pub priority: String,
    pub resolution: Option<String>,
    pub log: Vec<LogLine>,
}

impl TaskHead {
    /// Parses a task file named `filename` in the status folder `folder`, with its body.
    pub fn parse(
        front: &toml_edit::Table,
        body: &str,
        filename: &str,
        folder: &str,
        title: Option<&str>,
    ) -> Result<TaskHead, FieldError> {
        let f = Fields(front);
        f.expect_kind("task")?;
        let id = f.str("id")?;
        let Some(id_ulid) = id.strip_prefix("t-").and_then(parse_ulid) else {
            return Err(FieldError::schema(format!(
                "`id` \"{id}\" is not `t-<ULID>`"
            )));
        };
        let (number, slug) = match parse_task_filename(filename) {
            Some(legacy) => legacy,
            None => {
                let (ulid, slug) = parse_keyed_filename(filename).ok_or_else(|| {
                    FieldError::id_mismatch(format!(
                        "the filename \"{filename}\" is not `<ULID>-<slug>.md` (or format 1's `<NNN>-<slug>.md`)"
                    ))
                })?;
                if ulid != id_ulid.to_string() {
                    return Err(FieldError::id_mismatch(format!(
                        "the filename \"{filename}\" does not carry the ULID of `id` \"{id}\""
                    )));
                }
                (seq_of(&f)?, slug)
            }
        };
        let title =
            title.ok_or_else(|| FieldError::schema("the body has no level-1 heading (title)"))?;
        let resolution = f.opt_enum_str("resolution", &RESOLUTIONS)?;
        if folder == "done" && resolution.is_none() {
            return Err(FieldError::schema(
                "a task in done/ needs `resolution` (completed, unverified or abandoned)",
            ));
        }
        Ok(TaskHead {
            id: id.to_string(),
            number,
            slug: slug.to_string(),
            title: title.to_string(),
            owner: f.str("owner")?.to_string(),
            rev: f.str("rev")?.to_string(),
            assignee: f.opt_str("assignee")?.map(str::to_string),
            priority: f
                .opt_enum_str("priority", &PRIORITIES)?
                .unwrap_or("should")
                .to_string(),
            resolution: resolution.map(str::to_string),
            log: parse_log(body),
        })
    }
}

/// The display number a format-2 task keeps in `seq` (an integer from 1).
fn seq_of(f: &Fields<'_>) -> Result<u32, FieldError> {
    let seq = f
        .opt_int("seq")?
        .ok_or_else(|| FieldError::schema("a task needs `seq`, its display number"))?;
    u32::try_from(seq)
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| FieldError::schema(format!("`seq` {seq} is not a number from 1")))
}

/// The lines of the `## Log` section, oldest first; lines of another shape are skipped.
pub fn parse_log(body: &str) -> Vec<LogLine> {
    let mut in_log = false;
    let mut out = Vec::new();
    for line in body.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            in_log = h.trim_end() == "Log";
            continue;
        }
        if line.starts_with("# ") {
            in_log = false;
            continue;
        }
        if !in_log {
            continue;
        }
        let Some(rest) = line.strip_prefix("- ") else {
            continue;
        };
        let mut parts = rest.splitn(3, ' ');
        let (Some(at), Some(agent), Some(text)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (text, event) = match text
            .strip_suffix(')')
            .and_then(|t| t.rsplit_once(" (event "))
        {
            Some((t, id)) if parse_ulid(id).is_some() => (t, Some(id.to_string())),
            _ => (text, None),
        };
        out.push(LogLine {
            at: at.to_string(),
            agent: agent.to_string(),
            text: text.to_string(),
            event,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filenames() {
        assert_eq!(
            parse_task_filename("004-add-shim.md"),
            Some((4, "add-shim"))
        );
        assert_eq!(parse_task_filename("1234-x.md"), Some((1234, "x")));
        assert_eq!(parse_task_filename("04-x.md"), None);
        assert_eq!(parse_task_filename("004-.md"), None);
    }

    #[test]
    fn log_lines() {
        let body = "# T\n\n## Log\n- 2026-03-02T09:20:11Z a-root created\n- 2026-03-03T10:02:44Z a-b claimed (event 01KJSJCSD0D9PPNTSVE6C6J8MS)\n\n## Other\n- x y z\n";
        let log = parse_log(body);
        assert_eq!(log.len(), 2);
        assert_eq!(log[1].text, "claimed");
        assert_eq!(log[1].event.as_deref(), Some("01KJSJCSD0D9PPNTSVE6C6J8MS"));
    }
}

/// The `TaskRef` shape of COMMANDS.md §1.7.
#[derive(Debug, Clone, serde::Serialize, PartialEq, Eq)]
pub struct TaskRef {
    pub id: String,
    #[serde(rename = "ref")]
    pub reference: String,
    pub project: String,
    pub number: u32,
    pub title: String,
}

impl TaskRef {
    /// The reference of `task` in the project directory `slug`.
    pub fn of(slug: &str, task: &TaskHead) -> TaskRef {
        TaskRef {
            id: task.id.clone(),
            reference: format!("{slug}/{:03}-{}", task.number, task.slug),
            project: format!("p-{slug}"),
            number: task.number,
            title: task.title.clone(),
        }
    }
}

/// A task's status: the folder it is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Open,
    Active,
    Blocked,
    Done,
}

impl Status {
    /// All four, in lifecycle order.
    pub const ALL: [Status; 4] = [Status::Open, Status::Active, Status::Blocked, Status::Done];

    /// The folder name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Open => "open",
            Status::Active => "active",
            Status::Blocked => "blocked",
            Status::Done => "done",
        }
    }

    /// Parses a folder name.
    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A three-point estimate (PERT). Invariant: `0 ≤ optimistic ≤ probable ≤ pessimistic` and
/// `pessimistic > 0`; a scalar is never an estimate.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Estimate {
    pub optimistic: f64,
    pub probable: f64,
    pub pessimistic: f64,
}

impl Estimate {
    /// Checks the invariant, saying what is wrong.
    pub fn new(optimistic: f64, probable: f64, pessimistic: f64) -> Result<Estimate, String> {
        let all = [optimistic, probable, pessimistic];
        if all.iter().any(|v| !v.is_finite() || *v < 0.0) {
            return Err("estimate values must be non-negative numbers".into());
        }
        if !(optimistic <= probable && probable <= pessimistic) {
            return Err(format!(
                "estimate must satisfy optimistic ≤ probable ≤ pessimistic (got {optimistic}, {probable}, {pessimistic})"
            ));
        }
        if pessimistic <= 0.0 {
            return Err("the pessimistic estimate must be greater than 0".into());
        }
        Ok(Estimate {
            optimistic,
            probable,
            pessimistic,
        })
    }

    /// Parses `O,P,Q`; a single number is rejected with the reason.
    pub fn parse(text: &str) -> Result<Estimate, String> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        if parts.len() != 3 {
            return Err(format!(
                "`{text}` is not a three-point estimate: give optimistic,probable,pessimistic, e.g. 2,4,9 (a single number hides the uncertainty)"
            ));
        }
        let mut v = [0.0; 3];
        for (i, p) in parts.iter().enumerate() {
            v[i] = p
                .parse::<f64>()
                .map_err(|_| format!("`{p}` in estimate `{text}` is not a number"))?;
        }
        Estimate::new(v[0], v[1], v[2])
    }

    /// Expected effort `Te = (o + 4p + q) / 6`.
    pub fn expected(&self) -> f64 {
        (self.optimistic + 4.0 * self.probable + self.pessimistic) / 6.0
    }

    /// Standard deviation `σ = (q − o) / 6`.
    pub fn sigma(&self) -> f64 {
        (self.pessimistic - self.optimistic) / 6.0
    }
}

/// Dependency types (FORMAT §12).
pub const DEP_TYPES: [&str; 4] = ["FS", "SS", "FF", "SF"];

/// One `depends_on` edge.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Dependency {
    pub on: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// What readiness and its order need to know about one task (its folded view).
#[derive(Debug, Clone)]
pub struct PlanTask {
    pub id: String,
    /// The project's slug.
    pub project: String,
    pub number: u32,
    pub status: Status,
    pub assignee: Option<String>,
    pub priority: String,
    pub parent: Option<String>,
    pub depends_on: Vec<Dependency>,
    pub estimate: Option<Estimate>,
}
