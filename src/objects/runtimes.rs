//! Runtime adapters (docs/FORMAT.md §25): listing, loading, creating and removing adapter
//! files, the roles that route to them, and the machine-local cache of `runtime doctor`'s
//! probes under `runs/runtimes/`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::model::runtime::{Probe, Runtime, role_runtime};
use crate::store::Document;
use crate::workspace::Workspace;
use crate::workspace::names::check_slug;

use super::{Error, Listing, field_problem, read_document, warn_or_fail};

/// An adapter as found on disk.
#[derive(Debug, Clone)]
pub struct Located {
    pub runtime: Runtime,
    pub doc: Document,
    /// Path relative to the work-tree root, for output.
    pub path: String,
}

/// The file of runtime `name` (which must be a slug).
pub fn file(ws: &Workspace, name: &str) -> PathBuf {
    ws.path(&["runtimes", &format!("{name}.md")])
}

/// The name of the object lock of runtime `name`, for `ws.lock_path`.
pub fn lock_name(name: &str) -> String {
    format!("runtime-{name}")
}

/// Loads runtime `name`; a name that is not a slug, or no file, is not found.
pub fn load(ws: &Workspace, name: &str) -> Result<Located, Error> {
    let not_found = || Error::NotFound {
        what: "runtime",
        id: name.to_string(),
    };
    check_slug(name).map_err(|_| not_found())?;
    let path = file(ws, name);
    if std::fs::symlink_metadata(&path).is_err() {
        return Err(not_found());
    }
    let doc = read_document(ws, &path)?;
    let runtime = Runtime::from_front(&doc.front, name)
        .map_err(|e| Error::malformed(field_problem(ws, &path, e)))?;
    Ok(Located {
        runtime,
        doc,
        path: ws.display(&path),
    })
}

/// Every runtime, sorted by name; unreadable files are skipped and reported.
pub fn list(ws: &Workspace) -> Result<Listing<Located>, Error> {
    let mut out = Listing::default();
    for (name, path) in ws.fs.list_dir(&ws.path(&["runtimes"]))? {
        let Some(stem) = name.strip_suffix(".md") else {
            continue;
        };
        if check_slug(stem).is_err() {
            continue;
        }
        let Some(doc) = warn_or_fail(&mut out.warnings, read_document(ws, &path))? else {
            continue;
        };
        match Runtime::from_front(&doc.front, stem) {
            Ok(runtime) => out.items.push(Located {
                runtime,
                doc,
                path: ws.display(&path),
            }),
            Err(e) => out.warnings.push(field_problem(ws, &path, e)),
        }
    }
    Ok(out)
}

/// The adapter serving MCP client `client` (`mcp config --client`): the runtime named like
/// the client, else the only runtime made from the preset of that name; `None` when neither
/// exists. A malformed adapter of that name is an error (the caller decides what to do).
pub fn for_client(ws: &Workspace, client: &str) -> Result<Option<Located>, Error> {
    match load(ws, client) {
        Ok(l) => return Ok(Some(l)),
        Err(Error::NotFound { .. }) => {}
        Err(e) => return Err(e),
    }
    let mut from_preset: Vec<Located> = list(ws)?
        .items
        .into_iter()
        .filter(|l| l.runtime.preset.as_deref() == Some(client))
        .collect();
    Ok(if from_preset.len() == 1 {
        from_preset.pop()
    } else {
        None
    })
}

/// Creates runtime file `name` with create-new (a taken name is `Exists`). Returns the path.
pub fn create(ws: &Workspace, name: &str, doc: &Document) -> Result<PathBuf, Error> {
    let path = file(ws, name);
    ws.fs.create_new(&path, doc.render().as_bytes())?;
    Ok(path)
}

/// Deletes runtime file `name` (the caller holds the runtime lock).
pub fn remove(ws: &Workspace, name: &str) -> Result<(), Error> {
    Ok(ws.fs.remove(&file(ws, name))?)
}

/// One role that names a runtime in its `runtime` key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub role: String,
    pub runtime: String,
}

/// Every role's `runtime`, sorted by role; role files that cannot be read, or whose `runtime`
/// is not a string, are skipped and reported.
pub fn routes(ws: &Workspace) -> Result<Listing<Route>, Error> {
    let mut out = Listing::default();
    for (name, path) in ws.fs.list_dir(&ws.path(&["roles"]))? {
        let Some(stem) = name.strip_suffix(".md") else {
            continue;
        };
        if check_slug(stem).is_err() {
            continue;
        }
        let Some(doc) = warn_or_fail(&mut out.warnings, read_document(ws, &path))? else {
            continue;
        };
        match role_runtime(&doc.front) {
            Ok(Some(runtime)) => out.items.push(Route {
                role: stem.to_string(),
                runtime: runtime.to_string(),
            }),
            Ok(None) => {}
            Err(e) => out.warnings.push(field_problem(ws, &path, e)),
        }
    }
    Ok(out)
}

/// The cached probes of one installed binary: valid while its real path, size and mtime
/// stay the same. Machine-local (it names an absolute path), never committed, never output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeCache {
    /// The binary's real path (symlinks resolved).
    pub binary: String,
    pub size: u64,
    pub mtime_ns: i64,
    /// When the probes ran (RFC 3339).
    pub probed_at: String,
    pub probes: Vec<Probe>,
}

/// The cache file of the binary whose real path is `real_path`: one file per binary, named by
/// a digest of the path, so that no file name carries a path of this machine.
pub fn cache_file(ws: &Workspace, real_path: &Path) -> PathBuf {
    let digest = Sha256::digest(real_path.as_os_str().as_encoded_bytes());
    let hex = hex::encode(&digest[..8]);
    ws.path(&["runs", "runtimes", &format!("{hex}.json")])
}

/// The cached probes of the binary at `real_path`, if a readable cache exists. A cache that
/// cannot be read or parsed, or that belongs to another path, is no cache.
pub fn read_cache(ws: &Workspace, real_path: &Path) -> Option<ProbeCache> {
    let path = cache_file(ws, real_path);
    std::fs::symlink_metadata(&path).ok()?;
    let bytes = ws.fs.read(&path).ok()?;
    let cache: ProbeCache = serde_json::from_slice(&bytes).ok()?;
    (Path::new(&cache.binary) == real_path).then_some(cache)
}

/// Replaces the cache of the binary at `real_path` (atomic replace; concurrent doctors may
/// overwrite each other, which only costs a probe).
pub fn write_cache(ws: &Workspace, real_path: &Path, cache: &ProbeCache) -> Result<(), Error> {
    let mut bytes = serde_json::to_vec(cache).map_err(|e| {
        Error::Store(crate::store::Error::io(
            "serialize",
            "runtime probe cache".to_string(),
            std::io::Error::other(e),
        ))
    })?;
    bytes.push(b'\n');
    ws.fs.replace(&cache_file(ws, real_path), &bytes)?;
    Ok(())
}
