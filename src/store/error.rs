use std::fmt;
use std::path::PathBuf;

/// Why a file could not be used as a dacli document (docs/FORMAT.md §4.4).
///
/// The string form is the stable `reason` of a warning or of an `E_MALFORMED` error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    NotRegular,
    SymlinkEscape,
    TooLarge,
    FrontmatterTooLarge,
    Encoding,
    NoFrontmatter,
    UnterminatedFrontmatter,
    Toml,
    TomlDepth,
    MergeConflict,
    Schema,
    WrongKind,
    IdMismatch,
    DuplicateId,
    /// A notice, not a fault: a task reference resolved by the rule for numbers shared or
    /// changed by a merge (FORMAT §3.3).
    Renumbered,
    Checksum,
    UnknownFolder,
    /// `cache/` is not a usable directory (a file, a dangling symlink, read-only): it is
    /// derived, so writes skip it and say so.
    CacheUnusable,
}

impl Reason {
    /// The stable snake_case name used in warnings, lint findings and error messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NotRegular => "not_regular",
            Reason::SymlinkEscape => "symlink_escape",
            Reason::TooLarge => "too_large",
            Reason::FrontmatterTooLarge => "frontmatter_too_large",
            Reason::Encoding => "encoding",
            Reason::NoFrontmatter => "no_frontmatter",
            Reason::UnterminatedFrontmatter => "unterminated_frontmatter",
            Reason::Toml => "toml",
            Reason::TomlDepth => "toml_depth",
            Reason::MergeConflict => "merge_conflict",
            Reason::Schema => "schema",
            Reason::WrongKind => "wrong_kind",
            Reason::IdMismatch => "id_mismatch",
            Reason::DuplicateId => "duplicate_id",
            Reason::Renumbered => "renumbered",
            Reason::Checksum => "checksum",
            Reason::CacheUnusable => "cache_unusable",
            Reason::UnknownFolder => "unknown_folder",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A problem with one file: what is wrong and, where known, where (`line L, column C`).
///
/// `path` is for display and is relative to the work-tree root whenever the [`super::Fs`]
/// that found it knows that root; no absolute path of a workspace ever reaches output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: String,
    pub reason: Reason,
    pub detail: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.detail.is_empty() {
            write!(f, "{}: {}", self.path, self.reason)
        } else {
            write!(f, "{}: {} ({})", self.path, self.reason, self.detail)
        }
    }
}

/// Errors of the store. Each carries the display path of the file or lock concerned.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file exists but is not a usable document.
    #[error("malformed file {0}")]
    Malformed(Problem),
    /// Create-new found the final name taken; nothing was written.
    #[error("{path} already exists")]
    Exists { path: String },
    /// The lock was held by another process for longer than the deadline.
    #[error("timed out after {waited_ms} ms waiting for lock {path}")]
    LockTimeout { path: String, waited_ms: u64 },
    /// The operating system refused an operation (or a fault was injected for a test).
    #[error("cannot {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn io(op: &'static str, path: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// A path helper used only for messages.
pub(crate) fn lossy(path: &std::path::Path) -> String {
    PathBuf::from(path).to_string_lossy().replace('\\', "/")
}
