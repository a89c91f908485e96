//! `task add -e` with a scripted editor (issue 26): the template is checked on save, a parse
//! error reopens the editor with the error on top, and a failed edit keeps what was typed in
//! a recovery file the error names. dacli runs on a pseudo-terminal, as a person runs it:
//! without one the editor is refused (`human_editor_more.rs` covers `task edit`, `note add
//! -e` and the refusals).

use std::path::Path;

use crate::support::Repo;

/// What dacli prints when run in `repo` on a pseudo-terminal (standard input, output and error
/// all on it) with `env`: (exit code, the terminal's text).
pub fn on_tty(repo: &Repo, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = repo.std_command(args);
    cmd.env_remove("VISUAL").env_remove("EDITOR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    crate::pty::run(cmd, None, true)
}

/// A shell-script editor: on its n-th run it copies the file it edits to `seen-<n>` and runs
/// `steps[n-1]` with the file as `$1`.
pub fn editor(dir: &Path, steps: &[&str]) -> String {
    let mut script = String::from(
        "#!/bin/sh\nd=$(dirname \"$0\")\nn=$(( $(cat \"$d/count\" 2>/dev/null || echo 0) + 1 ))\necho $n > \"$d/count\"\ncp \"$1\" \"$d/seen-$n\"\ncase $n in\n",
    );
    for (i, step) in steps.iter().enumerate() {
        script.push_str(&format!("{})\n{step}\n;;\n", i + 1));
    }
    script.push_str("*) exit 9 ;;\nesac\n");
    let path = dir.join("ed.sh");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

const GOOD: &str = r#"cat > "$1" <<'EOF'
+++
title = "Add the rounding shim"
priority = "must"
estimate = "1,2,4"
depends_on = []
tags = []
+++

## So that
Totals agree to the cent.

## Acceptance criteria
- [ ] Every caller goes through the shim

## Out of scope

## Context
Rounding happens in three places today.
EOF"#;

pub fn drafts(repo: &Repo) -> Vec<String> {
    std::fs::read_dir(repo.ws("runs/drafts"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_saved_template_becomes_the_task() {
    let repo = Repo::new();
    repo.dacli(&["init", "--project", "Core"])
        .assert()
        .success();
    let tools = tempfile::tempdir().unwrap();
    let ed = editor(tools.path(), &[GOOD]);
    let (code, out) = on_tty(&repo, &["task", "add", "-e"], &[("EDITOR", &ed)]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("created core/"), "{out}");
    let seen = std::fs::read_to_string(tools.path().join("seen-1")).unwrap();
    assert!(
        seen.contains("title = \"\"") && seen.contains("## Acceptance criteria"),
        "{seen}"
    );
    let (_, show) = repo.json(&["task", "show", "1"]);
    let data = &show["data"];
    assert_eq!(data["title"], "Add the rounding shim", "{show}");
    assert_eq!(data["priority"], "must");
    assert_eq!(
        data["criteria"][0]["text"],
        "Every caller goes through the shim"
    );
    assert!(
        drafts(&repo).is_empty(),
        "the draft is removed once applied"
    );
}

#[test]
fn a_parse_error_reopens_the_editor_with_the_error_on_top() {
    let repo = Repo::new();
    repo.dacli(&["init", "--project", "Core"])
        .assert()
        .success();
    let tools = tempfile::tempdir().unwrap();
    let bad = r#"sed -i 's/^priority = .*/priority = "urgent"/; s/^title = .*/title = "Typed once"/' "$1""#;
    let ed = editor(tools.path(), &[bad, GOOD]);
    let (code, out) = on_tty(&repo, &["task", "add", "-e"], &[("EDITOR", &ed)]);
    assert_eq!(code, Some(0), "{out}");
    let second = std::fs::read_to_string(tools.path().join("seen-2")).unwrap();
    let first_line = second.lines().next().unwrap();
    assert!(
        first_line.starts_with("#! error:") && first_line.contains("urgent"),
        "{second}"
    );
    assert!(
        second.contains("title = \"Typed once\""),
        "what was typed is kept: {second}"
    );
    let (_, list) = repo.json(&["task", "list"]);
    assert_eq!(list["data"]["tasks"].as_array().unwrap().len(), 1, "{list}");
}

#[test]
fn a_failed_edit_keeps_what_was_typed_and_says_where() {
    let repo = Repo::new();
    repo.dacli(&["init", "--project", "Core"])
        .assert()
        .success();
    let tools = tempfile::tempdir().unwrap();
    let typed = r#"sed -i 's/^title = .*/title = "Half written"/' "$1"; exit 1"#;
    let ed = editor(tools.path(), &[typed]);
    let (code, err) = on_tty(&repo, &["task", "add", "-e"], &[("VISUAL", &ed)]);
    assert_eq!(code, Some(1), "{err}");
    let names = drafts(&repo);
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(
        err.contains(&format!(".dacli/runs/drafts/{}", names[0])),
        "{err}"
    );
    let kept = std::fs::read_to_string(repo.ws("runs/drafts").join(&names[0])).unwrap();
    assert!(kept.contains("title = \"Half written\""), "{kept}");
    let (_, list) = repo.json(&["task", "list"]);
    assert!(
        list["data"]["tasks"].as_array().unwrap().is_empty(),
        "{list}"
    );
}
