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
