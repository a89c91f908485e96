//! The facts the definition of done is evaluated on (docs/FORMAT.md §13.3), gathered by the
//! journal layer and judged by `policy::dod`.

use serde::Serialize;

/// One acceptance criterion as the definition of done sees it.
#[derive(Debug, Clone)]
pub struct CriterionFact {
    pub n: u32,
    pub text: String,
    pub checked: bool,
    /// The criterion names a command (a code span): checking it needs a verification record.
    pub command: Option<String>,
    /// The latest check of it carries `verify`.
    pub verified: bool,
}

/// The latest run of the configured test shortcut for the task.
#[derive(Debug, Clone)]
pub struct TestFact {
    pub shortcut: String,
    /// `(event id, exit code)` of the latest run with `task` equal to this task.
    pub latest: Option<(String, i64)>,
}

/// The required note kind and whether one exists about the task.
#[derive(Debug, Clone)]
pub struct NoteFact {
    pub kind: String,
    pub present: bool,
}

/// Everything §13.3 looks at, for one task.
#[derive(Debug, Clone)]
pub struct DodFacts {
    /// `<project>/<NNN>-<slug>`, for messages.
    pub reference: String,
    /// The task file, relative to the work-tree root.
    pub path: String,
    pub criteria: Vec<CriterionFact>,
    pub test: Option<TestFact>,
    /// Lint error codes for the task file; `None` when lint is not required.
    pub lint_errors: Option<Vec<String>>,
    pub note: Option<NoteFact>,
}

/// One unmet condition (COMMANDS.md §1.7 `DodReport`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Unmet {
    pub policy: String,
    pub item: String,
    pub detail: String,
    /// Something the caller cannot satisfy itself (marked by the command for the caller).
    pub owner_only: bool,
    /// The concrete next step for this condition.
    #[serde(skip)]
    pub next: String,
}

/// The verdict: passed, or every unmet condition in §13.3 order.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DodReport {
    pub passed: bool,
    pub unmet: Vec<Unmet>,
}
