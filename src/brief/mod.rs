//! L4: the brief (spec/BRIEF.md): one self-contained Markdown document holding what an agent
//! needs to work on one task, in a fixed priority order, cut to a token budget.
//!
//! [`build`] gathers the candidates of every section from the workspace through the derived
//! index ([`gather`]), then [`layout`] renders and trims them: whole items from the bottom,
//! every omission announced, the final document re-counted with the real tokenizer so its
//! header states its exact size and that size never exceeds the budget.
//!
//! Invariants: the same workspace state, reader and options give byte-identical output (no
//! clock is read and every ranking breaks ties by id); third-party text is fenced
//! ([`fence`]); the header and the task section are never trimmed.

pub mod fence;
mod gather;
mod layout;
pub mod tokens;

use serde::Serialize;

use crate::model::task::TaskRef;
use crate::objects;
use crate::objects::tasks::ResolveError;
use crate::store::Problem;
use crate::workspace::Workspace;

pub use layout::Candidate;
use tokens::{Counter, Tokenizer};

/// The smallest budget a caller may ask for (COMMANDS.md §8).
pub const MIN_BUDGET: usize = 256;
/// The budget when neither `--budget` nor `defaults.brief_budget_tokens` says otherwise.
pub const DEFAULT_BUDGET: usize = 8000;

/// Who reads the brief: the assignee reads "you", and the shortcuts are those this reader
/// may run, named as the reader's front end runs them.
#[derive(Debug, Clone)]
pub struct Reader {
    pub id: String,
    pub role: Option<String>,
    pub read_only: bool,
    /// Renders a `dacli …` code span for the reader's front end (a command over the CLI, a
    /// tool call over MCP).
    pub commands: fn(&str) -> String,
}

/// What to brief and how big.
#[derive(Debug, Clone)]
pub struct Options {
    /// A task reference in any FORMAT §3.3 form.
    pub reference: String,
    /// The ceiling for the whole document; `None` takes the configured default.
    pub budget: Option<usize>,
}

/// Why a brief could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0:?}")]
    Resolve(ResolveError),
    #[error("{0}")]
    Objects(#[from] objects::Error),
    /// The header and the task section alone exceed the budget.
    #[error("the task section alone needs {minimum} tokens; the budget is {budget}")]
    Budget { budget: usize, minimum: usize },
    /// `config.toml` holds an unusable `defaults` value.
    #[error("{0}")]
    Config(Problem),
    /// No token count could be found that the header can state exactly.
    #[error("the brief's token count does not settle")]
    Unsettled,
}

/// One section as rendered: which items made it, and how many were left out and why.
#[derive(Debug, Clone, Serialize)]
pub struct SectionReport {
    /// Stable name (`task`, `why`, `out_of_scope`, `constraints`, ...).
    pub name: &'static str,
    pub items: Vec<ItemReport>,
    pub omitted: Omitted,
    /// Tokens of the section as rendered (0 when it is left out).
    pub tokens: usize,
}

/// One included item: its id and its Markdown as it appears in the brief.
#[derive(Debug, Clone, Serialize)]
pub struct ItemReport {
    pub id: String,
    pub text: String,
}

/// Items left out of a section, by reason.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Omitted {
    pub cap: usize,
    pub budget: usize,
    pub superseded: usize,
}

impl Omitted {
    /// All omitted items.
    pub fn count(&self) -> usize {
        self.cap + self.budget + self.superseded
    }
}

/// A finished brief.
#[derive(Debug, Clone)]
pub struct Brief {
    pub task: TaskRef,
    /// The rendered document.
    pub markdown: String,
    /// Tokens of `markdown`, as its header states; never above `budget`.
    pub tokens: usize,
    pub budget: usize,
    pub tokenizer: &'static str,
    /// Every section in document order, the task first.
    pub sections: Vec<SectionReport>,
    /// Every candidate considered, with the decision about it.
    pub candidates: Vec<Candidate>,
    /// Files skipped while reading.
    pub warnings: Vec<Problem>,
}

/// Builds the brief of `opts.reference` for `reader`.
pub fn build(ws: &Workspace, reader: &Reader, opts: &Options) -> Result<Brief, Error> {
    let defaults = Defaults::of(ws)?;
    let budget = opts.budget.unwrap_or(defaults.budget);
    let mut counter = Counter::load(ws, defaults.tokenizer);
    let material = gather::gather(ws, reader, &opts.reference)?;
    let result = layout::lay_out(&material, budget, defaults.unknown.as_deref(), &mut counter);
    counter.save(ws);
    let laid = result?;
    Ok(Brief {
        task: material.task_ref.clone(),
        markdown: laid.markdown,
        tokens: laid.tokens,
        budget,
        tokenizer: defaults.tokenizer.name(),
        sections: laid.sections,
        candidates: laid.candidates,
        warnings: material.warnings,
    })
}

/// The `[defaults]` of `config.toml` that a brief uses.
struct Defaults {
    budget: usize,
    tokenizer: Tokenizer,
    /// A configured tokenizer dacli does not know (counted with `chars4` instead).
    unknown: Option<String>,
}

impl Defaults {
    fn of(ws: &Workspace) -> Result<Defaults, Error> {
        let defaults = ws.config.doc.get("defaults");
        let bad = |detail: &str| {
            Error::Config(Problem {
                path: ws.display(&ws.path(&["config.toml"])),
                reason: crate::store::Reason::Schema,
                detail: detail.to_string(),
            })
        };
        let budget = match defaults.and_then(|d| d.get("brief_budget_tokens")) {
            None => DEFAULT_BUDGET,
            Some(v) => v
                .as_integer()
                .filter(|n| *n > 0)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| bad("`defaults.brief_budget_tokens` must be an integer > 0"))?,
        };
        let (tokenizer, unknown) = match defaults.and_then(|d| d.get("tokenizer")) {
            None => (Tokenizer::DEFAULT, None),
            Some(v) => {
                let name = v
                    .as_str()
                    .ok_or_else(|| bad("`defaults.tokenizer` must be a string"))?;
                match Tokenizer::parse(name) {
                    Some(t) => (t, None),
                    None => (Tokenizer::Chars4, Some(name.to_string())),
                }
            }
        };
        Ok(Defaults {
            budget,
            tokenizer,
            unknown,
        })
    }
}
