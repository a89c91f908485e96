//! Many machines (FORMAT §22): clones that exchange work through git never conflict on
//! records, agree on task numbers, and converge.

use std::path::{Path, PathBuf};
use std::process::Command as Std;

use serde_json::Value;

use crate::support::{Repo, git, one_json};

/// dacli in `dir` with the real clock and random source: two clones must never share a
/// pinned seed, or they would mint the same ids.
fn real(dir: &Path, args: &[&str], token: Option<&str>) -> Std {
    let mut cmd = Std::new(assert_cmd::cargo::cargo_bin("dacli"));
    cmd.current_dir(dir)
        .args(args)
        .env_remove("DACLI_TEST_CLOCK")
        .env_remove("DACLI_TEST_SEED")
        .env_remove("DACLI_TEST_FAULT")
        .env_remove("DACLI_AGENT")
        .env_remove("DACLI_LOCK_TIMEOUT_MS")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com");
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    cmd
}

/// Runs dacli with `--json`: (exit code, document).
fn run(dir: &Path, args: &[&str], token: Option<&str>) -> (i32, Value) {
    let out = real(dir, &[args, &["--json"]].concat(), token)
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    let text = String::from_utf8_lossy(&out.stdout);
    let doc = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (code, doc)
}

fn ok(dir: &Path, args: &[&str], token: Option<&str>) -> Value {
    let (code, doc) = run(dir, args, token);
    assert_eq!(code, 0, "{args:?} in {}: {doc}", dir.display());
    doc
}

/// A workspace with project `checkout`, committed, and `n` clones of it.
fn cloned(n: usize) -> (Repo, tempfile::TempDir, Vec<PathBuf>) {
    let origin = Repo::initialized();
    let _ = one_json(
        &origin
            .dacli(&["project", "add", "P", "--slug", "checkout", "--json"])
            .output()
            .unwrap()
            .stdout,
    );
    git(origin.path(), &["add", "-A"]);
    git(origin.path(), &["commit", "-qm", "workspace"]);
    let parent = tempfile::tempdir().unwrap();
    let clones = (0..n)
        .map(|i| {
            let name = format!("c{i}");
            git(
                parent.path(),
                &["clone", "-q", origin.path().to_str().unwrap(), &name],
            );
            parent.path().join(name)
        })
        .collect();
    (origin, parent, clones)
}

fn tasks(dir: &Path) -> Vec<Value> {
    ok(dir, &["task", "list", "--all"], None)["data"]["tasks"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn clones_adding_one_title_merge_cleanly_and_the_older_ulid_keeps_the_number() {
    let (_origin, _parent, clones) = cloned(2);
    let (one, two) = (&clones[0], &clones[1]);
    for dir in [one, two] {
        ok(dir, &["task", "add", "Same title 0", "--accept", "x"], None);
        ok(
            dir,
            &[
                "note",
                "add",
                "finding",
                "Same finding 0",
                "--severity",
                "minor",
            ],
            None,
        );
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-qm", "work"]);
    }
    // The older task is clone one's: it was created first.
    let older = tasks(one)[0]["id"].as_str().unwrap().to_string();
    let younger = tasks(two)[0]["id"].as_str().unwrap().to_string();
    assert!(older < younger);
    // No add/add conflict: every created path carries its record's ULID.
    git(
        one,
        &[
            "pull",
            "-q",
            "--no-rebase",
            "--no-edit",
            two.to_str().unwrap(),
            "main",
        ],
    );
    let merged = tasks(one);
    assert_eq!(merged.len(), 2, "{merged:?}");
    assert!(merged.iter().all(|t| t["number"] == 1));
    let notes = ok(one, &["note", "list"], None)["data"]["notes"].clone();
    assert_eq!(notes.as_array().unwrap().len(), 2, "{notes}");

    // The shared number names the older task, with a notice.
    let shown = ok(one, &["task", "show", "1"], None);
    assert_eq!(shown["data"]["id"], older.as_str(), "{shown}");

    // The owner's sync gives the younger task the next number, once.
    let synced = ok(one, &["sync"], None);
    assert_eq!(
        synced["data"]["renumbered"][0]["id"],
        younger.as_str(),
        "{synced}"
    );
    assert_eq!(synced["data"]["renumbered"][0]["to"], 2, "{synced}");
    let after = tasks(one);
    let number_of = |id: &str| {
        after.iter().find(|t| t["id"] == id).unwrap()["number"]
            .as_u64()
            .unwrap()
    };
    assert_eq!((number_of(&older), number_of(&younger)), (1, 2));
    let again = ok(one, &["sync"], None);
    assert_eq!(again["data"]["renumbered"], serde_json::json!([]));
    let shown = ok(one, &["task", "show", "2"], None);
    assert_eq!(shown["data"]["id"], younger.as_str());
}
