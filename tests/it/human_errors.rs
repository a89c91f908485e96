//! Errors that teach (issue 26): the twenty errors people hit most, run as a person runs
//! them. Each snapshot holds the command, its exit code and what it printed on stderr; each
//! must say what was wrong and name the next command to run (a `dacli …` in backticks), with
//! the exit code of its kind (1 operational, 2 usage, 3 refused, 4 not found, 5 conflict).

use std::path::Path;

use crate::support::Repo;

/// A workspace with project `core` (task core/1 "Parse the ledger", claimed by root, one
/// unchecked criterion) and project `web` (task web/1), and a builder agent's token.
fn workspace() -> (Repo, String) {
    let repo = Repo::new();
    for args in [
        &["init", "--project", "Core"][..],
        &["task", "add", "Parse the ledger", "--accept", "It parses"],
        &["task", "claim", "core/1"],
        &["project", "add", "Web"],
        &["task", "add", "Render the page", "--project", "web"],
    ] {
        let out = repo.dacli(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (_, token) = crate::lifecycle::agent(&repo, "builder", 1, "rw");
    (repo, token)
}

/// Runs `dacli args` in `dir` and returns the snapshot text: the command, its exit code and
/// its stderr, with the temporary directory and timings replaced.
fn run(repo: &Repo, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let mut cmd = repo.dacli(args);
    cmd.current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    let mut err = String::from_utf8(out.stderr).unwrap();
    for root in [dir.to_path_buf(), dir.canonicalize().unwrap()] {
        err = err.replace(&root.display().to_string(), "[DIR]");
    }
    let err = err
        .split(' ')
        .map(|w| {
            if w.chars().all(|c| c.is_ascii_digit()) && w.len() >= 2 {
                "[N]".to_string()
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
    let shown: Vec<String> = args
        .iter()
        .map(|a| {
            if a.contains(' ') {
                format!("\"{a}\"")
            } else {
                a.to_string()
            }
        })
        .collect();
    (
        code,
        format!("$ dacli {}\nexit: {code}\n{err}", shown.join(" ")),
    )
}

/// Checks one error: its exit code, that it names a next command, and its snapshot.
fn check(name: &str, want: i32, got: (i32, String)) {
    let (code, text) = got;
    assert_eq!(code, want, "{name}:\n{text}");
    assert!(
        text.contains("`dacli ") || text.contains("`$EDITOR"),
        "{name} names no next command:\n{text}"
    );
    insta::assert_snapshot!(format!("error_{name}"), text);
}

#[test]
fn the_twenty_most_common_errors_say_what_was_wrong_and_what_to_run_next() {
    let (repo, token) = workspace();
    let dir = repo.path();
    let none: &[(&str, &str)] = &[];
    let elsewhere = tempfile::tempdir().unwrap();

    // Outside a workspace, and mistyped command lines.
    check(
        "no_workspace",
        4,
        run(&repo, elsewhere.path(), &["status"], none),
    );
    check(
        "unknown_command",
        2,
        run(&repo, dir, &["tsk", "list"], none),
    );
    check(
        "missing_argument",
        2,
        run(&repo, dir, &["task", "claim"], none),
    );
    check(
        "bad_status_value",
        2,
        run(&repo, dir, &["task", "list", "--status", "finished"], none),
    );
    check(
        "unknown_note_kind",
        2,
        run(&repo, dir, &["note", "add", "idea", "Cache the rows"], none),
    );
    check(
        "bad_estimate",
        2,
        run(
            &repo,
            dir,
            &[
                "task",
                "add",
                "Cache the rows",
                "--project",
                "core",
                "--estimate",
                "3",
            ],
            none,
        ),
    );

    // References that do not resolve.
    check(
        "unknown_task",
        4,
        run(&repo, dir, &["task", "show", "99"], none),
    );
    check(
        "ambiguous_ref",
        2,
        run(&repo, dir, &["task", "show", "1"], none),
    );
    check(
        "unknown_project",
        4,
        run(&repo, dir, &["task", "list", "--project", "mobile"], none),
    );
    check(
        "several_projects",
        2,
        run(&repo, dir, &["task", "add", "Cache the rows"], none),
    );

    // Refusals.
    let agent = [("DACLI_AGENT", token.as_str())];
    check(
        "claimed_by_another",
        3,
        run(&repo, dir, &["task", "claim", "core/1"], &agent),
    );
    check(
        "not_the_owner",
        3,
        run(
            &repo,
            dir,
            &["task", "edit", "core/1", "--priority", "must"],
            &agent,
        ),
    );
    check(
        "done_with_unchecked_criteria",
        3,
        run(&repo, dir, &["task", "done", "core/1"], none),
    );
    check(
        "unknown_token",
        3,
        run(
            &repo,
            dir,
            &["status"],
            &[("DACLI_AGENT", "dacli_a-root_0000")],
        ),
    );
    check(
        "github_not_linked",
        3,
        run(&repo, dir, &["pr", "diagnose", "--task", "core/1"], none),
    );
    check("init_twice", 5, run(&repo, dir, &["init"], none));
    check(
        "editor_without_a_terminal",
        2,
        run(&repo, dir, &["task", "edit", "core/1"], &[("EDITOR", "vi")]),
    );

    // A lock another process holds.
    let (_, show) = repo.json(&["task", "show", "core/1"]);
    let id = show["data"]["id"]
        .as_str()
        .unwrap()
        .trim_start_matches("t-");
    let lock = repo.ws(&format!(".locks/task-{id}.lock"));
    let held = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock)
        .unwrap();
    held.lock().unwrap();
    check(
        "lock_timeout",
        1,
        run(
            &repo,
            dir,
            &["task", "edit", "core/1", "--priority", "must"],
            &[("DACLI_LOCK_TIMEOUT_MS", "300")],
        ),
    );
    drop(held);

    // Files broken by hand.
    let path = show["data"]["path"].as_str().unwrap().to_string();
    let task = dir.join(&path);
    let good = std::fs::read_to_string(&task).unwrap();
    std::fs::write(&task, good.replacen("priority = ", "priority = = ", 1)).unwrap();
    check(
        "malformed_task_file",
        1,
        run(
            &repo,
            dir,
            &["task", "edit", "core/1", "--priority", "must"],
            none,
        ),
    );
    std::fs::write(&task, good).unwrap();
    let config = repo.ws("config.toml");
    let good = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{good}\n[github\n")).unwrap();
    check("bad_config", 1, run(&repo, dir, &["status"], none));
    std::fs::write(&config, good).unwrap();
}
