//! The human side (issue 26): the first minutes, consistent defaults, colour and width.

use crate::support::Repo;

#[test]
fn init_with_a_project_lets_task_add_run_next() {
    let repo = Repo::new();
    let out = repo
        .dacli(&["init", "--project", "Checkout totals"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("projects/checkout-totals/project.md"),
        "{text}"
    );
    assert!(
        text.contains("dacli project edit checkout-totals --goal"),
        "{text}"
    );
    let (code, add) = repo.json(&["task", "add", "First task"]);
    assert_eq!(code, 0, "{add}");
    let (_, show) = repo.json(&["project", "show", "checkout-totals"]);
    assert_eq!(show["ok"], true, "{show}");
}

#[cfg(target_os = "linux")]
#[test]
fn init_on_a_terminal_offers_the_first_project() {
    let repo = Repo::new();
    let (code, text) =
        crate::pty::run_typing(repo.std_command(&["init"]), None, true, b"My shop\n");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("Title of the first project"), "{text}");
    assert!(text.contains("dacli project edit my-shop"), "{text}");
    repo.dacli(&["task", "add", "First task"])
        .assert()
        .success();
    // Enter skips: no project, and the next step says how to add one.
    let other = Repo::new();
    let (code, text) = crate::pty::run_typing(other.std_command(&["init"]), None, true, b"\n");
    assert_eq!(code, Some(0), "{text}");
    assert!(!other.ws("projects").exists(), "{text}");
    assert!(text.contains("dacli project add"), "{text}");
    // Off a terminal nothing is asked.
    let piped = Repo::new();
    let out = piped.dacli(&["init"]).output().unwrap();
    assert!(out.status.success());
    assert!(
        !String::from_utf8(out.stderr)
            .unwrap()
            .contains("Title of the first project")
    );
}

#[test]
fn init_refuses_an_empty_project_title_and_writes_nothing() {
    let repo = Repo::new();
    let out = repo.dacli(&["init", "--project", "  "]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!repo.path().join(".dacli").exists());
}

/// Every command that needs a project uses the only one, and with several lists them.
#[test]
fn one_project_is_the_default_everywhere_and_several_are_listed() {
    let repo = Repo::new();
    repo.dacli(&["init", "--project", "Core"])
        .assert()
        .success();
    let needs_one: Vec<Vec<&str>> = vec![
        vec!["task", "add", "A task"],
        vec![
            "note",
            "add",
            "finding",
            "Found a thing",
            "--severity",
            "minor",
        ],
        vec!["burndown"],
        vec!["glossary", "add", "Cent", "A hundredth of a unit"],
        vec![
            "risk",
            "add",
            "Rounding drifts",
            "--impact",
            "low",
            "--likelihood",
            "low",
        ],
    ];
    for args in &needs_one {
        let (code, doc) = repo.json(args);
        assert_eq!(code, 0, "{args:?} with one project: {doc}");
    }
    repo.dacli(&["project", "add", "Billing"])
        .assert()
        .success();
    for args in &needs_one {
        let out = repo.dacli(args).output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("(billing, core): pass --project") && err.contains("--project billing"),
            "{args:?} should list the projects and show the flag: {err}"
        );
    }
}

#[test]
fn context_without_a_ref_briefs_the_callers_one_active_task() {
    let repo = Repo::new();
    repo.dacli(&["init", "--project", "Core"])
        .assert()
        .success();
    let out = repo.dacli(&["context"]).output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no active task") && err.contains("dacli task claim"),
        "{err}"
    );
    repo.dacli(&["task", "add", "First"]).assert().success();
    repo.dacli(&["task", "add", "Second"]).assert().success();
    repo.dacli(&["task", "claim", "1"]).assert().success();
    let (code, doc) = repo.json(&["context"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["ref"]["ref"], "core/001-first");
    repo.dacli(&["task", "claim", "2"]).assert().success();
    let out = repo.dacli(&["context"]).output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("core/001-first, core/002-second"),
        "several active tasks are listed: {err}"
    );
}

#[test]
fn next_says_what_makes_each_task_next() {
    let repo = Repo::new();
    repo.dacli(&["init", "--project", "Core"])
        .assert()
        .success();
    for args in [
        vec![
            "task",
            "add",
            "Base",
            "--priority",
            "should",
            "--accept",
            "It works",
        ],
        vec!["task", "add", "Later", "--priority", "must"],
        vec![
            "task",
            "add",
            "On base",
            "--depends-on",
            "1",
            "--priority",
            "should",
        ],
        vec!["task", "add", "Also must", "--priority", "must"],
    ] {
        repo.dacli(&args).assert().success();
    }
    let (_, doc) = repo.json(&["next"]);
    let reasons: Vec<(String, String)> = doc["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["task"]["ref"].as_str().unwrap().to_string(),
                i["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        [
            ("core/002-later".into(), "oldest ready must-have".into()),
            (
                "core/004-also-must".into(),
                "next oldest ready must-have".into()
            ),
            (
                "core/001-base".into(),
                "on the critical path, unblocks 1 task(s)".into()
            ),
        ],
        "{doc}"
    );
    repo.dacli(&["task", "claim", "1"]).assert().success();
    repo.dacli(&["task", "check", "1", "--n", "1"])
        .assert()
        .success();
    repo.dacli(&["task", "done", "1"]).assert().success();
    let (_, doc) = repo.json(&["next"]);
    let on_base = doc["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["task"]["number"] == 3)
        .unwrap();
    assert_eq!(on_base["reason"], "unblocked by core/1", "{doc}");
    let text = String::from_utf8(repo.dacli(&["next"]).output().unwrap().stdout).unwrap();
    assert!(text.contains("WHY"), "{text}");
    assert!(
        !text.contains("must, ") && !text.contains("should-have, "),
        "the WHY column does not repeat the priority: {text}"
    );
}

/// A long title in the WBS chart stops before the bar column, whole in a tooltip.
#[test]
fn wbs_svg_cuts_long_titles_and_keeps_them_as_tooltips() {
    let repo = Repo::new();
    repo.dacli(&["init", "--project", "Core"])
        .assert()
        .success();
    let long = "Replace every hand-rolled rounding helper in the pricing, invoicing and refund modules with the shared shim";
    repo.dacli(&["task", "add", long, "--estimate", "1,2,4"])
        .assert()
        .success();
    repo.dacli(&["task", "add", "Short", "--estimate", "1,2,4"])
        .assert()
        .success();
    let out = repo.dacli(&["wbs", "--format", "svg"]).output().unwrap();
    let svg = String::from_utf8(out.stdout).unwrap();
    let line = svg.lines().find(|l| l.contains("001 ")).unwrap();
    assert!(line.contains(&format!("<title>{long}</title>")), "{line}");
    let label = line
        .split("</title>")
        .nth(1)
        .unwrap()
        .trim_end_matches("</text>");
    assert!(label.contains('…'), "{label}");
    let x: usize = line
        .split("x=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        x + label.chars().count() * 66 / 10 <= 720 - 180,
        "the label runs into the bar column: {label}"
    );
    let short = svg.lines().find(|l| l.contains("002 ")).unwrap();
    assert!(
        !short.contains("<title>") && short.contains("002 Short ·"),
        "{short}"
    );
}
