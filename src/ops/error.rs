//! The error of an operation: a lower layer's failure, or a rejection the operation itself
//! decided (with the kind that picks the exit code one layer up, in `dispatch`).

use crate::{git, objects, store, workspace};

/// What kind of rejection an operation decided; `dispatch` maps it to its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Exit 1.
    Operational,
    /// Exit 2.
    Usage,
    /// Exit 4.
    NotFound,
    /// Exit 5.
    Conflict,
    /// Exit 70: dacli broke its own invariant (it built a record it cannot read back).
    Internal,
}

/// A failed operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error(transparent)]
    Workspace(#[from] workspace::Error),
    #[error(transparent)]
    Objects(#[from] objects::Error),
    /// A task reference that did not resolve (its own messages live in `dispatch`).
    #[error("task reference did not resolve: {0:?}")]
    Resolve(objects::tasks::ResolveError),
    #[error(transparent)]
    Git(#[from] git::Error),
    /// A rejection decided here: a stable code (`E_CONFLICT` ...), a message naming the object,
    /// file or argument, and hints saying what to do next.
    #[error("{message}")]
    Rejected {
        kind: Kind,
        code: &'static str,
        message: String,
        hints: Vec<String>,
    },
}

impl Error {
    /// A rejection of `kind` with `code` and `message`.
    pub fn rejected(kind: Kind, code: &'static str, message: impl Into<String>) -> Error {
        Error::Rejected {
            kind,
            code,
            message: message.into(),
            hints: Vec::new(),
        }
    }

    /// A broken invariant of dacli itself (`E_INTERNAL`, exit 70).
    pub fn internal(message: impl Into<String>) -> Error {
        Error::rejected(Kind::Internal, "E_INTERNAL", message)
    }

    /// Adds a hint line to a rejection; other errors keep theirs.
    pub fn hint(mut self, hint: impl Into<String>) -> Error {
        if let Error::Rejected { hints, .. } = &mut self {
            hints.push(hint.into());
        }
        self
    }
}

impl From<objects::tasks::ResolveError> for Error {
    fn from(e: objects::tasks::ResolveError) -> Error {
        Error::Resolve(e)
    }
}
