//! `task edit REF` with no flags and `note add KIND -e` with a scripted editor (issue 26):
//! success, a parse error then its fix, recovery after the editor fails, an editor closed
//! without changes; and without a terminal (a pipe, the MCP server) the editor is refused at
//! once with a usage error.

use serde_json::{Value, json};

use crate::human_editor::{drafts, editor, on_tty};
use crate::support::Repo;

/// A workspace with project `core` and task 1 ("Parse the ledger", criterion "It parses").
fn with_task() -> Repo {
    let repo = Repo::new();
    repo.dacli(&["init", "--project", "Core"])
        .assert()
        .success();
    repo.dacli(&[
        "task",
        "add",
        "Parse the ledger",
        "--accept",
        "It parses",
        "--tag",
        "ledger",
    ])
    .assert()
    .success();
    repo
}

/// The text of task 1's file, its `rev` (a fresh ULID per write) left out.
fn task_file(repo: &Repo) -> String {
    let (_, show) = repo.json(&["task", "show", "1"]);
    let path = show["data"]["path"].as_str().unwrap().to_string();
    std::fs::read_to_string(repo.path().join(path))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("rev = "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Raises the priority, adds a criterion and a tag, and writes the context.
const EDIT: &str = r#"sed -i 's/^priority = .*/priority = "must"/; s/^tags = .*/tags = ["ledger", "parser"]/; s/^- \[ \] $/- [ ] It is tested/; s/^## Context$/## Context\nThe ledger is CSV./' "$1""#;

#[test]
fn task_edit_with_no_flags_applies_the_saved_template_as_the_flags_would() {
    let repo = with_task();
    let tools = tempfile::tempdir().unwrap();
    let ed = editor(tools.path(), &[EDIT]);
    let (code, out) = on_tty(&repo, &["task", "edit", "1"], &[("EDITOR", &ed)]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("changed priority, context, acceptance, tags"),
        "{out}"
    );
    let seen = std::fs::read_to_string(tools.path().join("seen-1")).unwrap();
    assert!(
        seen.contains("title = \"Parse the ledger\"")
            && seen.contains("- [ ] It parses")
            && seen.contains("tags = [\"ledger\"]"),
        "the template holds the task as it is: {seen}"
    );
    assert!(
        drafts(&repo).is_empty(),
        "the draft is removed once applied"
    );

    // The same change made with flags, in a twin workspace that ran the same steps, writes
    // the same file: the editor goes through the flag edit's transaction.
    let twin = with_task();
    twin.std_command(&[
        "task",
        "edit",
        "1",
        "--priority",
        "must",
        "--context",
        "The ledger is CSV.",
        "--accept",
        "It is tested",
        "--tag",
        "parser",
    ])
    .output()
    .unwrap();
    assert_eq!(task_file(&repo), task_file(&twin));
}

#[test]
fn task_edit_reopens_on_a_bad_save_and_refuses_rewording_a_criterion() {
    let repo = with_task();
    let tools = tempfile::tempdir().unwrap();
    let reword = r#"sed -i 's/^- \[ \] It parses$/- [ ] It parses fast/; s/^title = .*/title = "Parse both ledgers"/' "$1""#;
    let fix = r#"sed -i 's/^- \[ \] It parses fast$/- [ ] It parses/' "$1""#;
    let ed = editor(tools.path(), &[reword, fix]);
    let (code, out) = on_tty(&repo, &["task", "edit", "1"], &[("EDITOR", &ed)]);
    assert_eq!(code, Some(0), "{out}");
    let second = std::fs::read_to_string(tools.path().join("seen-2")).unwrap();
    let first_line = second.lines().next().unwrap();
    assert!(
        first_line.starts_with("#! error:") && first_line.contains("never reworded"),
        "{second}"
    );
    assert!(
        second.contains("title = \"Parse both ledgers\""),
        "what was typed is kept: {second}"
    );
    let (_, show) = repo.json(&["task", "show", "1"]);
    assert_eq!(show["data"]["title"], "Parse both ledgers", "{show}");
    assert_eq!(show["data"]["criteria"][0]["text"], "It parses");
}

#[test]
fn task_edit_keeps_what_was_typed_when_the_editor_fails() {
    let repo = with_task();
    let before = task_file(&repo);
    let tools = tempfile::tempdir().unwrap();
    let typed = r#"sed -i 's/^title = .*/title = "Half typed"/' "$1"; exit 3"#;
    let ed = editor(tools.path(), &[typed]);
    let (code, out) = on_tty(&repo, &["task", "edit", "1"], &[("VISUAL", &ed)]);
    assert_eq!(code, Some(1), "{out}");
    let names = drafts(&repo);
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(
        out.contains("exited with code 3")
            && out.contains(&format!(".dacli/runs/drafts/{}", names[0])),
        "{out}"
    );
    let kept = std::fs::read_to_string(repo.ws("runs/drafts").join(&names[0])).unwrap();
    assert!(kept.contains("title = \"Half typed\""), "{kept}");
    assert_eq!(task_file(&repo), before, "nothing was written");
}

#[test]
fn closing_the_editor_without_changes_writes_nothing_and_says_so() {
    let repo = with_task();
    let before = task_file(&repo);
    let tools = tempfile::tempdir().unwrap();
    let ed = editor(tools.path(), &["true", "true"]);
    let (code, out) = on_tty(&repo, &["task", "edit", "1"], &[("EDITOR", &ed)]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("closed without changes: nothing was written"),
        "{out}"
    );
    assert_eq!(task_file(&repo), before);
    let (code, out) = on_tty(&repo, &["note", "add", "finding", "-e"], &[("EDITOR", &ed)]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("nothing was written"), "{out}");
    assert!(drafts(&repo).is_empty());
    let (_, notes) = repo.json(&["note", "list"]);
    assert_eq!(notes["data"]["notes"], json!([]), "{notes}");
}

#[test]
fn task_edit_by_another_agent_is_refused_before_the_editor_opens() {
    let repo = with_task();
    let (_, token) = crate::lifecycle::agent(&repo, "builder", 1, "rw");
    let tools = tempfile::tempdir().unwrap();
    let ed = editor(tools.path(), &[EDIT]);
    let (code, out) = on_tty(
        &repo,
        &["task", "edit", "1"],
        &[("EDITOR", &ed), ("DACLI_AGENT", &token)],
    );
    assert_eq!(code, Some(3), "{out}");
    assert!(out.contains("task.not_owner"), "{out}");
    assert!(
        !tools.path().join("seen-1").exists(),
        "the editor never opened"
    );
}

const DECISION: &str = r#"sed -i 's/^title = .*/title = "Keep the ledger in SQLite"/; s/^## Chose$/## Chose\nSQLite./; s/^## Because$/## Because\nIt is embedded./' "$1""#;
const REJECTED: &str =
    r#"sed -i 's/^## Rejected$/## Rejected\nPostgres: a server to run for one file./' "$1""#;

#[test]
fn note_add_e_records_the_saved_note_and_reopens_until_it_is_complete() {
    let repo = with_task();
    let tools = tempfile::tempdir().unwrap();
    let ed = editor(tools.path(), &[DECISION, REJECTED]);
    let (code, out) = on_tty(
        &repo,
        &["note", "add", "decision", "-e", "--about", "1"],
        &[("EDITOR", &ed)],
    );
    assert_eq!(code, Some(0), "{out}");
    let first = std::fs::read_to_string(tools.path().join("seen-1")).unwrap();
    assert!(
        first.contains("## Chose")
            && first.contains("## Rejected")
            && first.contains("about = \"1\""),
        "the template has the kind's sections and starts from the flags: {first}"
    );
    let second = std::fs::read_to_string(tools.path().join("seen-2")).unwrap();
    let top = second.lines().next().unwrap();
    assert!(
        top.starts_with("#! error:") && top.contains("Rejected"),
        "{second}"
    );
    assert!(second.contains("It is embedded."), "kept: {second}");
    let (_, notes) = repo.json(&["note", "list"]);
    let list = notes["data"]["notes"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{notes}");
    assert_eq!(list[0]["title"], "Keep the ledger in SQLite");
    let id = list[0]["id"].as_str().unwrap();
    let (_, show) = repo.json(&["note", "show", id]);
    let text = show.to_string();
    assert!(
        text.contains("Postgres: a server to run for one file.") && text.contains("SQLite."),
        "{show}"
    );
    assert!(drafts(&repo).is_empty());
}

#[test]
fn note_add_e_reopens_on_a_parse_error() {
    let repo = with_task();
    let tools = tempfile::tempdir().unwrap();
    let bad = r#"sed -i 's/^title = .*/title = "Rounding differs/' "$1""#;
    let fix = r#"sed -i 's/^title = .*/title = "Rounding differs by a cent"/; s/^severity = .*/severity = "minor"/; s/^## Body$/## Body\nThe shim rounds half up./' "$1""#;
    let ed = editor(tools.path(), &[bad, fix]);
    let (code, out) = on_tty(&repo, &["note", "add", "finding", "-e"], &[("EDITOR", &ed)]);
    assert_eq!(code, Some(0), "{out}");
    let second = std::fs::read_to_string(tools.path().join("seen-2")).unwrap();
    let top = second.lines().next().unwrap();
    assert!(top.starts_with("#! error: frontmatter:"), "{second}");
    let (_, notes) = repo.json(&["note", "list"]);
    assert_eq!(
        notes["data"]["notes"][0]["title"], "Rounding differs by a cent",
        "{notes}"
    );
}

#[test]
fn note_add_e_keeps_what_was_typed_when_the_editor_fails() {
    let repo = with_task();
    let tools = tempfile::tempdir().unwrap();
    let typed = r#"sed -i 's/^## Body$/## Body\nHalf a finding./' "$1"; kill -9 $$"#;
    let ed = editor(tools.path(), &[typed]);
    let (code, out) = on_tty(&repo, &["note", "add", "finding", "-e"], &[("EDITOR", &ed)]);
    assert_eq!(code, Some(1), "{out}");
    let names = drafts(&repo);
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(
        out.contains(&format!(".dacli/runs/drafts/{}", names[0])),
        "{out}"
    );
    let kept = std::fs::read_to_string(repo.ws("runs/drafts").join(&names[0])).unwrap();
    assert!(kept.contains("Half a finding."), "{kept}");
    let (_, notes) = repo.json(&["note", "list"]);
    assert_eq!(notes["data"]["notes"], json!([]), "{notes}");
}

#[test]
fn without_a_terminal_the_editor_is_refused_at_once() {
    let repo = with_task();
    let tools = tempfile::tempdir().unwrap();
    let ed = editor(tools.path(), &["sleep 30"]);
    for args in [
        vec!["task", "edit", "1"],
        vec!["task", "add", "-e"],
        vec!["note", "add", "finding", "-e"],
    ] {
        let started = std::time::Instant::now();
        let out = repo.dacli(&args).env("EDITOR", &ed).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains("needs a terminal") && err.contains("hint: give the fields as flags"),
            "{args:?}: {err}"
        );
        assert!(started.elapsed().as_secs() < 20, "{args:?} waited");
    }
    assert!(!tools.path().join("seen-1").exists(), "no editor ran");

    // Over MCP (the `cli` tool) as well.
    let mut s = crate::mcp::Server::start_with(repo.path(), None, &[("EDITOR", ed.as_str())]);
    s.initialize("2025-11-25");
    for argv in [
        json!(["task", "edit", "1"]),
        json!(["note", "add", "ref", "-e"]),
    ] {
        let r = s.call("cli", json!({ "argv": argv }));
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        let body: Value = serde_json::from_str(text).unwrap_or_default();
        assert_eq!(body["error"]["code"], "E_USAGE", "{argv}: {r}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("MCP call has no terminal")),
            "{body}"
        );
    }
    assert_eq!(s.finish().0, 0);
    assert!(!tools.path().join("seen-1").exists(), "no editor ran");
}
