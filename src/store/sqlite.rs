//! What every derived SQLite database under `cache/` shares: how it is opened, what counts as
//! damage, and how a damaged one is removed. Each database owns its own schema.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// How long a write waits for another process's write transaction before giving up on
/// recording (reads never wait: WAL readers see the last commit).
pub const BUSY: Duration = Duration::from_millis(200);

/// Opens (or makes) the database at `path`, making its directory: WAL, no fsync.
pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    if let Some(dir) = path.parent() {
        #[allow(
            clippy::disallowed_methods,
            reason = "store owns file writes; the derived cache directory"
        )]
        let _ = std::fs::create_dir_all(dir);
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY)?;
    // Derived: a crash may lose its last transactions (never tear one), which the next call
    // rebuilds from the files; so no fsync. Pages are read with `pread`, not through a
    // mapping: every page a read touches is copied into its rows anyway, and mapped pages
    // would count in the process's memory twice (50 MB more at 100,000 events).
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF;")?;
    Ok(conn)
}

/// True for an error that says the database file is damaged (or not one).
pub fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

/// Removes the database at `db` and its WAL files.
pub fn remove(db: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = db.to_path_buf().into_os_string();
        p.push(suffix);
        #[allow(
            clippy::disallowed_methods,
            reason = "store owns file removal; derived data"
        )]
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}
