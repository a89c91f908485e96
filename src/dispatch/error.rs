//! The one error type of a call, and how every lower layer's errors map into it.

use crate::{objects, store, workspace};

/// What kind of failure an error is; it alone decides the exit code ([`super::exit_code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// I/O, git, network, lock timeout, malformed file, unsupported format: exit 1.
    Operational,
    /// Unknown command or flag, bad value: exit 2.
    Usage,
    /// No workspace, no such object: exit 4.
    NotFound,
    /// Stale plan, lost compare-and-swap, name taken: exit 5.
    Conflict,
    /// A caught panic or a broken invariant: exit 70.
    Internal,
}

/// A failed call: a stable `code` (`E_NOT_FOUND` ...), a message naming the object or file,
/// and hints saying what to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub code: &'static str,
    pub message: String,
    pub hints: Vec<String>,
}

impl Error {
    pub fn new(kind: ErrorKind, code: &'static str, message: impl Into<String>) -> Error {
        Error {
            kind,
            code,
            message: message.into(),
            hints: Vec::new(),
        }
    }

    /// Adds a hint line.
    pub fn hint(mut self, hint: impl Into<String>) -> Error {
        self.hints.push(hint.into());
        self
    }

    /// A usage error (exit 2).
    pub fn usage(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Usage, "E_USAGE", message)
    }

    /// A bad slug (exit 2).
    pub fn bad_slug(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Usage, "E_BAD_SLUG", message)
    }

    /// Not found (exit 4).
    pub fn not_found(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::NotFound, "E_NOT_FOUND", message)
    }

    /// A bug (exit 70).
    pub fn internal(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Internal, "E_INTERNAL", message)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error[{}]: {}", self.code, self.message)
    }
}

impl From<store::Error> for Error {
    fn from(e: store::Error) -> Error {
        match e {
            store::Error::Malformed(p) => Error::new(
                ErrorKind::Operational,
                "E_MALFORMED",
                format!("{} is malformed: {}{}", p.path, p.reason, detail(&p.detail)),
            )
            .hint(format!(
                "fix the file by hand (or restore it with `git checkout -- {}`), then check with `dacli doctor`",
                p.path
            )),
            store::Error::Exists { path } => {
                Error::new(ErrorKind::Conflict, "E_EXISTS", format!("{path} already exists"))
            }
            store::Error::LockTimeout { path, waited_ms } => Error::new(
                ErrorKind::Operational,
                "E_LOCK_TIMEOUT",
                format!("gave up after {waited_ms} ms waiting for lock {path}"),
            )
            .hint("another dacli process holds it; retry when it finishes (DACLI_LOCK_TIMEOUT_MS sets the wait)"),
            e @ store::Error::Io { .. } => {
                Error::new(ErrorKind::Operational, "E_IO", e.to_string())
            }
        }
    }
}

impl From<workspace::Error> for Error {
    fn from(e: workspace::Error) -> Error {
        match e {
            workspace::Error::NoWorkspace { start } => Error::new(
                ErrorKind::NotFound,
                "E_NO_WORKSPACE",
                format!("no dacli workspace in {start} or any parent directory"),
            )
            .hint("run `dacli init` at the root of your git repository, or pass `-C <dir>`"),
            e @ workspace::Error::NotADirectory { .. } => {
                Error::new(ErrorKind::Operational, "E_NOT_A_WORKSPACE", e.to_string()).hint(
                    "move it away or remove it, then run `dacli init`; nothing was read or written",
                )
            }
            e @ workspace::Error::NotARepo { .. } => {
                Error::new(ErrorKind::Operational, "E_NOT_A_REPO", e.to_string())
                    .hint("run `git init` first, or pass `-C <dir>` inside a git work tree")
            }
            e @ workspace::Error::Exists { .. } => {
                Error::new(ErrorKind::Conflict, "E_EXISTS", e.to_string())
                    .hint("the workspace is already set up; see `dacli status`")
            }
            e @ workspace::Error::FormatUnsupported { .. } => {
                Error::new(ErrorKind::Operational, "E_FORMAT_UNSUPPORTED", e.to_string())
                    .hint("use a dacli release that supports this workspace format; nothing was read or written")
            }
            workspace::Error::Store(e) => e.into(),
        }
    }
}

impl From<objects::Error> for Error {
    fn from(e: objects::Error) -> Error {
        match e {
            objects::Error::NotFound { what, id } => {
                Error::not_found(format!("no {what} `{id}` in this workspace"))
            }
            objects::Error::Store(e) => e.into(),
            e @ objects::Error::Conflict { .. } => {
                Error::new(ErrorKind::Conflict, "E_CONFLICT", e.to_string())
            }
        }
    }
}

impl From<objects::tasks::ResolveError> for Error {
    fn from(e: objects::tasks::ResolveError) -> Error {
        use objects::tasks::ResolveError as R;
        match e {
            R::NotFound {
                reference,
                searched,
            } => Error::not_found(format!(
                "no task matches `{reference}` (searched {searched})"
            ))
            .hint("list tasks with `dacli task list --all`"),
            R::Ambiguous {
                reference,
                candidates,
            } => {
                let mut err = Error::new(
                    ErrorKind::Usage,
                    "E_AMBIGUOUS",
                    format!(
                        "`{reference}` matches {} tasks: {}",
                        candidates.len(),
                        candidates.join(", ")
                    ),
                );
                for c in candidates {
                    err = err.hint(format!("use `{c}`"));
                }
                err
            }
            R::Malformed(p) => store::Error::Malformed(p).into(),
            R::NoProject { project } => {
                Error::not_found(format!("no project `{project}` in this workspace"))
                    .hint("list projects with `dacli project list --status all`")
            }
        }
    }
}

fn detail(d: &str) -> String {
    if d.is_empty() {
        String::new()
    } else {
        format!(" ({d})")
    }
}

impl From<crate::git::Error> for Error {
    fn from(e: crate::git::Error) -> Error {
        match e {
            e @ crate::git::Error::NotARepo { .. } => {
                Error::new(ErrorKind::Operational, "E_NOT_A_REPO", e.to_string())
                    .hint("run dacli inside a git work tree, or pass `-C <dir>`")
            }
            e => Error::new(ErrorKind::Operational, "E_GIT", e.to_string())
                .hint("check the repository with `git status` and `git fsck`, then retry"),
        }
    }
}

impl From<crate::ops::Error> for Error {
    fn from(e: crate::ops::Error) -> Error {
        use crate::ops::{Error as E, error::Kind};
        match e {
            E::Store(e) => e.into(),
            E::Workspace(e) => e.into(),
            E::Objects(e) => e.into(),
            E::Resolve(e) => e.into(),
            E::Git(e) => e.into(),
            E::Rejected {
                kind,
                code,
                message,
                hints,
            } => Error {
                kind: match kind {
                    Kind::Operational => ErrorKind::Operational,
                    Kind::Usage => ErrorKind::Usage,
                    Kind::NotFound => ErrorKind::NotFound,
                    Kind::Conflict => ErrorKind::Conflict,
                    Kind::Internal => ErrorKind::Internal,
                },
                code,
                message,
                hints,
            },
        }
    }
}
