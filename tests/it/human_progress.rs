//! Progress on a terminal without an MCP client (issue 26): the spinner on stderr follows the
//! work's phases (each label the command gives replaces the one before), and nothing of it
//! reaches a pipe or a `--json` document.

use crate::support::Repo;

/// A task of two criteria whose commands take 1.5 s each, claimed by root.
fn slow_task() -> Repo {
    let repo = Repo::new();
    let steps: [&[&str]; 3] = [
        &["init", "--project", "Core"],
        &[
            "task",
            "add",
            "Slow checks",
            "--accept",
            "first `sleep 1.5`",
            "--accept",
            "second `sleep 1.5`",
        ],
        &["task", "claim", "1"],
    ];
    for args in steps {
        repo.dacli(args).assert().success();
    }
    repo
}

const CHECK: [&str; 7] = ["task", "check", "1", "--n", "1", "--n", "2"];

fn check_on_tty(repo: &Repo, extra: &[&str]) -> (Option<i32>, String) {
    let mut args = CHECK.to_vec();
    args.push("--verify");
    args.extend_from_slice(extra);
    let mut cmd = repo.std_command(&args);
    cmd.env("TERM", "xterm-256color");
    crate::pty::run(cmd, Some(80), false)
}

#[test]
fn the_spinner_shows_each_phase_and_clears_its_line() {
    let repo = slow_task();
    let (code, text) = check_on_tty(&repo, &[]);
    assert_eq!(code, Some(0), "{text}");
    // Each frame redraws the whole line: the first criterion's label, then the second's.
    let first = text
        .find("\x1b[2K- verifying criterion 1 (1 of 2)")
        .or_else(|| text.find("verifying criterion 1 (1 of 2)"))
        .unwrap_or_else(|| panic!("the first phase is shown:\n{text:?}"));
    let second = text
        .find("verifying criterion 2 (2 of 2)")
        .unwrap_or_else(|| panic!("the second phase replaces the first:\n{text:?}"));
    assert!(first < second, "{text:?}");
    assert!(
        text.contains("\r\x1b[2K"),
        "frames redraw in place: {text:?}"
    );
    // The line is cleared before the result, which starts a clean line.
    let result = text
        .find("core/001-slow-checks: checked 1, 2 (2/2)")
        .expect("the result");
    assert!(second < result, "{text:?}");
    assert!(
        text[..result].ends_with("\r\x1b[2K"),
        "the spinner's line is cleared before the result: {text:?}"
    );
}

#[test]
fn no_spinner_in_json_or_pipes() {
    let repo = slow_task();
    let (code, text) = check_on_tty(&repo, &["--json"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("verifying"), "{text:?}");
    assert!(!text.contains('\x1b'), "{text:?}");
    let mut args = CHECK.to_vec();
    args.push("--verify");
    let out = repo.dacli(&args).output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!err.contains("verifying"), "{err:?}");
    assert!(!err.contains('\x1b'), "{err:?}");
}

#[test]
fn a_fast_first_read_with_no_index_prints_no_spinner() {
    let repo = slow_task();
    let _ = std::fs::remove_dir_all(repo.ws("cache"));
    let mut cmd = repo.std_command(&["task", "list"]);
    cmd.env("TERM", "xterm-256color");
    let (code, text) = crate::pty::run(cmd, Some(80), false);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("building the index"), "{text:?}");
    assert!(text.contains("Slow checks"), "{text:?}");
}

/// `review --pr` whose fetch takes 1.5 s (the remote's upload-pack sleeps first, as a slow
/// network would): the spinner names the fetch, then the comparison, and is gone before the
/// review; piped, stderr holds none of it.
#[test]
fn a_slow_review_fetch_shows_the_spinner_on_a_terminal_only() {
    use crate::review_support::{pr_7_claims_first, push_test_merge};
    use crate::support::git;
    let repo = Repo::initialized();
    let root = repo.path().to_path_buf();
    let _remote = pr_7_claims_first(&repo);
    push_test_merge(&root);
    git(&root, &["checkout", "-q", "main"]);
    git(
        &root,
        &[
            "config",
            "remote.origin.uploadpack",
            "sleep 1.5; git-upload-pack",
        ],
    );

    let mut cmd = repo.std_command(&["review", "--pr", "7"]);
    cmd.env("TERM", "xterm-256color");
    let (code, text) = crate::pty::run(cmd, Some(100), false);
    assert_eq!(code, Some(0), "{text}");
    let fetching = text
        .find("fetching pull request 7 from origin")
        .unwrap_or_else(|| panic!("the fetch is shown while it runs:\n{text:?}"));
    let review = text
        .find("shop/001-first")
        .unwrap_or_else(|| panic!("the review is printed:\n{text:?}"));
    assert!(fetching < review, "{text:?}");
    assert!(
        text[..review].contains("\r\x1b[2K"),
        "the spinner's line is cleared before the review: {text:?}"
    );

    let out = repo.dacli(&["review", "--pr", "7"]).output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!err.contains("fetching"), "{err:?}");
    assert!(!err.contains('\x1b'), "{err:?}");
}
