//! Shell completion of what exists (issue 26): the registration script `dacli completions`
//! prints calls `COMPLETE=<shell> dacli -- <words>`, which answers with the workspace's task
//! refs, project slugs, agent ids, shortcut and queue names, reading the workspace without
//! writing to it, and with no names (and no error) outside a workspace.

use std::path::Path;

use crate::support::{Repo, dacli};

/// A workspace with projects `core` and `web`, tasks core/1 and core/2, a builder agent, a
/// shortcut and a queue.
fn workspace() -> (Repo, String) {
    let repo = Repo::new();
    for args in [
        &["init", "--project", "Core"][..],
        &["task", "add", "Parse the ledger", "--accept", "It parses"],
        &["task", "add", "Render the report", "--accept", "It renders"],
        &["project", "add", "Web"],
        &[
            "shortcut",
            "add",
            "lint",
            "--effect",
            "read",
            "--summary",
            "Run the linter",
            "--command",
            "cargo clippy",
        ],
        &[
            "queue", "add", "release", "--step", "Build", "--step", "Ship",
        ],
    ] {
        let out = repo.dacli(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (id, _) = crate::lifecycle::agent(&repo, "builder", 1, "rw");
    (repo, id)
}

/// What `COMPLETE=fish dacli -- dacli <words>` answers in `dir`: one `value\thelp` per line.
fn fish(dir: &Path, words: &[&str]) -> Vec<String> {
    let mut all = vec!["--", "dacli"];
    all.extend_from_slice(words);
    let out = dacli()
        .current_dir(dir)
        .env("COMPLETE", "fish")
        .args(&all)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{words:?}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn values(lines: &[String]) -> Vec<&str> {
    lines
        .iter()
        .map(|l| l.split('\t').next().unwrap_or(""))
        .collect()
}

#[test]
fn completion_offers_the_workspaces_tasks_projects_agents_shortcuts_and_queues() {
    let (repo, agent) = workspace();
    let dir = repo.path();
    let refs = fish(dir, &["task", "show", ""]);
    assert!(
        refs.contains(&"core/1\tParse the ledger".to_string())
            && refs.contains(&"core/2\tRender the report".to_string()),
        "{refs:?}"
    );
    let narrowed = fish(dir, &["task", "claim", "core/2"]);
    assert_eq!(values(&narrowed), ["core/2"], "{narrowed:?}");
    let projects = fish(dir, &["task", "list", "--project", ""]);
    assert_eq!(values(&projects), ["core", "web"], "{projects:?}");
    let agents = fish(dir, &["task", "assign", "core/1", ""]);
    let agents = values(&agents);
    assert!(
        agents.contains(&"a-root") && agents.contains(&agent.as_str()),
        "{agents:?}"
    );
    assert_eq!(values(&fish(dir, &["run", "l"])), ["lint"]);
    assert_eq!(values(&fish(dir, &["shortcut", "show", ""]))[0], "lint");
    assert_eq!(values(&fish(dir, &["queue", "advance", ""]))[0], "release");
    let about = fish(dir, &["note", "add", "finding", "x", "--about", ""]);
    let about = values(&about);
    assert!(
        about.contains(&"core/1") && about.contains(&"web"),
        "--about takes a task or a project: {about:?}"
    );
    // `-C` on the command line is the workspace the names come from.
    let elsewhere = tempfile::tempdir().unwrap();
    let via_c = fish(
        elsewhere.path(),
        &["-C", dir.to_str().unwrap(), "task", "show", "core/"],
    );
    assert_eq!(values(&via_c), ["core/1", "core/2"], "{via_c:?}");
}

#[test]
fn bash_completion_answers_through_its_environment() {
    let (repo, _) = workspace();
    let out = dacli()
        .current_dir(repo.path())
        .env("COMPLETE", "bash")
        .env("_CLAP_COMPLETE_INDEX", "3")
        .env("_CLAP_COMPLETE_COMP_TYPE", "9")
        .args(["--", "dacli", "task", "done", ""])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("core/1") && text.contains("core/2"), "{text}");
}

#[test]
fn completion_outside_a_workspace_offers_no_names_and_no_error() {
    let dir = tempfile::tempdir().unwrap();
    let lines = fish(dir.path(), &["task", "show", ""]);
    assert!(
        lines.iter().all(|l| l.starts_with("--")),
        "only flags: {lines:?}"
    );
    let commands = fish(dir.path(), &["ta"]);
    assert!(values(&commands).contains(&"task"), "{commands:?}");
}

#[test]
fn completion_leaves_the_workspace_as_it_was() {
    let (repo, _) = workspace();
    let cache = repo.path().join(".dacli/cache");
    let _ = std::fs::remove_dir_all(&cache);
    let before = tree(repo.path());
    fish(repo.path(), &["task", "show", ""]);
    fish(repo.path(), &["task", "list", "--project", ""]);
    assert_eq!(
        tree(repo.path()),
        before,
        "completion wrote to the workspace"
    );
    assert!(!cache.exists(), "completion created the index cache");
}

/// Every file under `dir` (outside `.git`) with its bytes.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                out.push((rel, std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn completions_prints_the_dynamic_registration_and_keeps_the_static_script() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = dacli().args(["completions", shell]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(script.contains("COMPLETE"), "{shell}: {script}");
        assert!(script.contains("dacli"), "{shell}: {script}");
    }
    let out = dacli()
        .args(["completions", "bash", "--static"])
        .output()
        .unwrap();
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(
        !script.contains("COMPLETE=") && script.contains("task"),
        "{script}"
    );
}
