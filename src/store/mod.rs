//! L0: the only module that writes, renames, links, removes or locks files.
//!
//! Everything dacli keeps on disk passes through here, so the invariants of the on-disk format
//! (docs/FORMAT.md §2, §4) are kept in one place: a file under a final name is always complete
//! and canonical, append-only records are never overwritten, and every rewrite of a canonical
//! object happens under an OS lock.

mod canon;
mod doc;
mod error;
mod fs;
pub mod index;
mod lock;
pub mod search;
mod sqlite;
pub mod stamp;

pub use canon::{canonicalize, is_canonical, noncanonical_reasons};
pub use doc::{Document, ReadDocument, TomlRecord};
pub use error::{Error, Problem, Reason};
pub use fs::{DirEntryKind, Fault, FaultOp, Fs, Limits, OpenDir, Staged, TEMP_PREFIX};
pub use lock::LockGuard;
pub use stamp::Stamp;
