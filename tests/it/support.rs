//! Shared test helpers: a real git repository in a temp dir and the real dacli binary.

use std::path::{Path, PathBuf};
use std::process::Command as Std;

use assert_cmd::Command;
use serde_json::Value;

/// The pinned clock and seed every deterministic test uses.
pub const CLOCK: &str = "2026-03-02T09:00:00Z";
pub const SEED: &str = "7";

/// A temp git repository; removed on drop.
///
/// Each dacli run in it gets the pinned clock advanced by one second per run and its own
/// seed, so that ids minted by successive processes are unique and sort in the order the
/// runs happened, as they would with a real clock.
pub struct Repo {
    pub dir: tempfile::TempDir,
    step: std::cell::Cell<i64>,
}

impl Repo {
    /// `git init` in a fresh temp directory.
    pub fn new() -> Repo {
        let dir = tempfile::tempdir().expect("temp dir");
        git(dir.path(), &["init", "-q", "-b", "main"]);
        Repo {
            dir,
            step: std::cell::Cell::new(0),
        }
    }

    /// A repository with `dacli init` already run (clock and seed pinned).
    pub fn initialized() -> Repo {
        let repo = Repo::new();
        repo.dacli(&["init", "--json"]).assert().success();
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `.dacli/<rel>`, the way [`Repo::at`] finds it.
    pub fn ws(&self, rel: &str) -> PathBuf {
        self.at(&format!(".dacli/{rel}"))
    }

    /// `<rel>` under the work tree. A task, note or risk dacli created is named
    /// `<ULID>-<slug>.md` (FORMAT §22); a test names it by its format-1 name
    /// (`<NNN>-<slug>.md`, `<slug>.md`), which this finds when no file has that name.
    pub fn at(&self, rel: &str) -> PathBuf {
        created_path(&self.path().join(rel))
    }

    /// The dacli binary, run in this repository with a clean, pinned environment.
    pub fn dacli(&self, args: &[&str]) -> Command {
        let step = self.step.get();
        self.step.set(step + 1);
        let clock: jiff::Timestamp = CLOCK.parse().expect("pinned clock");
        let now = jiff::Timestamp::from_second(clock.as_second() + step).expect("in range");
        let seed: i64 = SEED.parse::<i64>().expect("pinned seed") + step;
        let mut cmd = dacli();
        cmd.current_dir(self.path())
            .args(args)
            .env("DACLI_TEST_CLOCK", now.to_string())
            .env("DACLI_TEST_SEED", seed.to_string());
        cmd
    }

    /// The dacli binary as a plain process (for tests that spawn and kill it), with the same
    /// pinned clock and seed `dacli` would give this run.
    pub fn std_command(&self, args: &[&str]) -> Std {
        let step = self.step.get();
        self.step.set(step + 1);
        let clock: jiff::Timestamp = CLOCK.parse().expect("pinned clock");
        let now = jiff::Timestamp::from_second(clock.as_second() + step).expect("in range");
        let seed: i64 = SEED.parse::<i64>().expect("pinned seed") + step;
        let mut cmd = Std::new(assert_cmd::cargo::cargo_bin("dacli"));
        for var in [
            "DACLI_AGENT",
            "NO_COLOR",
            "DACLI_LOCK_TIMEOUT_MS",
            "DACLI_TEST_FAULT",
            "GH_TOKEN",
            "GITHUB_TOKEN",
        ] {
            cmd.env_remove(var);
        }
        cmd.current_dir(self.path())
            .args(args)
            .env("DACLI_TEST_CLOCK", now.to_string())
            .env("DACLI_TEST_SEED", seed.to_string());
        cmd
    }

    /// Runs dacli with `--json` and returns (exit code, the one JSON document).
    pub fn json(&self, args: &[&str]) -> (i32, Value) {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.dacli(&all).output().expect("runs");
        (out.status.code().unwrap_or(-1), one_json(&out.stdout))
    }

    /// Writes a file under the work tree, creating parents.
    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.at(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, bytes).expect("write");
        p
    }
}

/// `path` itself when it exists or names no record; else the one `<ULID>-<slug>.md` beside
/// it whose slug is the format-1 name's (`<NNN>-<slug>.md` or `<slug>.md`).
pub fn created_path(path: &Path) -> PathBuf {
    if path.exists() {
        return path.to_path_buf();
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return path.to_path_buf();
    };
    let Some(stem) = name.strip_suffix(".md") else {
        return path.to_path_buf();
    };
    let slug = match stem.split_once('-') {
        Some((n, s)) if n.len() >= 3 && n.bytes().all(|b| b.is_ascii_digit()) => s,
        _ => stem,
    };
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .and_then(|n| n.strip_suffix(".md"))
                        .and_then(|n| n.split_once('-'))
                        .is_some_and(|(u, s)| u.len() == 26 && s == slug)
                })
                .collect()
        })
        .unwrap_or_default();
    match found.as_slice() {
        [one] => one.clone(),
        _ => path.to_path_buf(),
    }
}

/// The dacli binary with the environment reduced to what tests control.
pub fn dacli() -> Command {
    let mut cmd = Command::cargo_bin("dacli").expect("binary built");
    for var in [
        "DACLI_AGENT",
        "NO_COLOR",
        "DACLI_LOCK_TIMEOUT_MS",
        "DACLI_TEST_FAULT",
        "GH_TOKEN",
        "GITHUB_TOKEN",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("DACLI_TEST_CLOCK", CLOCK)
        .env("DACLI_TEST_SEED", SEED);
    cmd
}

/// Parses stdout as exactly one JSON document (and nothing else).
pub fn one_json(stdout: &[u8]) -> Value {
    let text = std::str::from_utf8(stdout).expect("stdout is UTF-8");
    assert_eq!(
        text.trim_end().lines().count(),
        1,
        "stdout must be exactly one JSON line, got:\n{text}"
    );
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

/// Runs git in `dir`; panics on failure.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Std::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The repository root (where `.dacli-example` lives).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The interpreter of the venv holding the official Python MCP SDK (docs/TESTING.md):
/// `DACLI_TEST_MCP_PYTHON`, else `target/mcp-python/bin/python`. `None` (the test skips, with
/// the reason printed) only on a developer's machine: when `.ci/run` named the interpreter
/// (`DACLI_TEST_MCP_PYTHON`) or `CI` is set, a missing SDK fails the test.
pub fn sdk_python() -> Option<PathBuf> {
    let named = std::env::var_os("DACLI_TEST_MCP_PYTHON");
    let path = named
        .clone()
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/mcp-python/bin/python"));
    let has_sdk = std::process::Command::new(&path)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has_sdk {
        return Some(path);
    }
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
    assert!(
        !ci && named.is_none(),
        "the Python MCP SDK is missing at {}: .ci/run installs tests/python/requirements.txt there",
        path.display()
    );
    eprintln!(
        "SKIPPED: no Python MCP SDK at {}; see docs/TESTING.md",
        path.display()
    );
    None
}
