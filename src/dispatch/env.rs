//! The process environment, read once. Nothing else in dacli reads environment variables:
//! commands ask the [`super::Ctx`], which asks this snapshot.

use std::path::PathBuf;

/// Variables dacli reads. The `DACLI_TEST_*` hooks pin the clock, the random source and a
/// filesystem fault so that tests are deterministic; they are documented in docs/TESTING.md.
/// Only a build with debug assertions obeys them (see [`TEST_HOOKS`]).
/// `PATH` and `HOME` locate runtime binaries for `runtime doctor` (and shorten where one was
/// found to `~/…` in its report).
pub const READ_VARS: [&str; 22] = [
    "DACLI_AGENT",
    "NO_COLOR",
    "TERM",
    "COLUMNS",
    "VISUAL",
    "EDITOR",
    "DACLI_LOCK_TIMEOUT_MS",
    "DACLI_TEST_CLOCK",
    "DACLI_TEST_SEED",
    "DACLI_TEST_FAULT",
    "DACLI_TEST_FS_TRACE",
    "DACLI_TEST_PANIC",
    "DACLI_TEST_PAUSE_AFTER_STEP",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "GH_HOST",
    "DACLI_GITHUB_API_URL",
    "DACLI_GITHUB_TIMEOUT_MS",
    "DACLI_GITHUB_DEADLINE_MS",
    "DACLI_TEST_WATCH_POLL_MS",
    "PATH",
    "HOME",
];

/// The prefix of every test hook.
pub const TEST_HOOK_PREFIX: &str = "DACLI_TEST_";

/// Whether this build obeys the `DACLI_TEST_*` hooks: only a build with debug assertions (the
/// test suite's). A release binary must not: a fixed seed would issue the same agent secret
/// in every workspace, and a pinned clock would backdate claims, which win by time.
pub const TEST_HOOKS: bool = cfg!(debug_assertions);

/// A snapshot of the variables in [`READ_VARS`] and of the working directory.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: Vec<(&'static str, Option<String>)>,
    pub cwd: PathBuf,
}

impl Env {
    /// Reads the real process environment.
    pub fn capture() -> Env {
        let vars = READ_VARS
            .iter()
            .map(|name| {
                #[allow(
                    clippy::disallowed_methods,
                    reason = "Env is the one reader of the environment"
                )]
                let value = std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
                (*name, value)
            })
            .collect();
        #[allow(
            clippy::disallowed_methods,
            reason = "Env is the one reader of the environment"
        )]
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Env { vars, cwd }
    }

    /// A snapshot made of explicit values (tests, and the MCP server's fixed environment).
    pub fn from_pairs(pairs: &[(&'static str, &str)], cwd: PathBuf) -> Env {
        let vars = READ_VARS
            .iter()
            .map(|name| {
                let v = pairs
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.to_string());
                (*name, v)
            })
            .collect();
        Env { vars, cwd }
    }

    /// The value of one of [`READ_VARS`]; `None` when unset. This is the one place test hooks
    /// are handed out: a `DACLI_TEST_*` variable is always unset where [`TEST_HOOKS`] is off.
    pub fn get(&self, name: &str) -> Option<&str> {
        if !TEST_HOOKS && name.starts_with(TEST_HOOK_PREFIX) {
            return None;
        }
        self.vars
            .iter()
            .find(|(k, _)| *k == name)
            .and_then(|(_, v)| v.as_deref())
    }

    /// Set and non-empty.
    pub fn is_set(&self, name: &str) -> bool {
        self.get(name).is_some_and(|v| !v.is_empty())
    }
}

/// Whether `text` holds a token of this workspace: the caller's own (`own`, matched as it
/// is), or any agent's, found by hashing each token-shaped string in `text` and comparing it
/// with every agent's stored `token_hash` (tokens are never stored, only their hashes). The
/// secret alone counts too: agent ids are public, so a bare run of 64 hex digits is tried as
/// the secret of every agent. Agent records that cannot be read are skipped.
pub fn holds_workspace_token(
    ws: &crate::workspace::Workspace,
    own: Option<&str>,
    text: &str,
) -> bool {
    if own.is_some_and(|t| {
        !t.is_empty()
            && (text.contains(t) || t.rsplit('_').next().is_some_and(|s| text.contains(s)))
    }) {
        return true;
    }
    let spans = crate::exec::token_spans(text.as_bytes());
    let secrets = hex_runs(text);
    if spans.is_empty() && secrets.is_empty() {
        return false;
    }
    let Ok(agents) = crate::objects::agents::list(ws) else {
        return false;
    };
    let known: Vec<(String, String)> = agents
        .items
        .into_iter()
        .filter_map(|a| a.token_hash.map(|h| (a.id, h)))
        .collect();
    let hashes: std::collections::BTreeSet<&str> = known.iter().map(|(_, h)| h.as_str()).collect();
    let bare = secrets.iter().any(|secret| {
        known.iter().any(|(id, hash)| {
            crate::model::agent::token_hash(&format!("dacli_{id}_{}", secret.to_ascii_lowercase()))
                == *hash
        })
    });
    bare || spans.iter().any(|(s, e)| {
        text.get(*s..*e)
            .is_some_and(|t| hashes.contains(crate::model::agent::token_hash(t).as_str()))
    })
}

/// Every run of exactly 64 hex digits in `text` (a token's secret has that shape).
fn hex_runs(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_hexdigit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_hexdigit() {
            i += 1;
        }
        if i - start == 64 {
            out.push(&text[start..i]);
        }
    }
    out
}
