//! The derived index is only speed: every main read gives the same bytes with a warm cache,
//! a cold one and none at all, after writes through dacli, concurrent writers and hand edits
//! that rename files (what git and most editors do). Plus a smoke run of the benchmark's
//! workspace generator, verified through the CLI.

use std::path::Path;

use crate::support::{Repo, dacli, repo_root};

#[path = "../../bench/mkws.rs"]
#[allow(dead_code)]
mod mkws;

const BUILDER: &str = "dacli_a-builder-01KJPX6ZT81TTNRTABC9KBJYTV_21da8978206f5c6671e0c07e9e115e4b9e30691c238642ea126a1e48cc11d357";
const REVIEWER: &str = "dacli_a-reviewer-01KJPX9WK0VH0D88BH59TARTNH_e5070587f1296ef5a208601616e9c80fc038714786f9c48c2eb333822dcfb45a";
const PLANNER: &str = "dacli_a-planner-01KJPXBASP11G0W484T2TGEMDX_e077b784fd1cbfedb9ecfbc5634cdf513e3a8b237fca8e910c1623bf36a2ffac";

/// The main read commands, each with the identity it runs as.
const READS: &[(&[&str], Option<&str>)] = &[
    (&["status", "--json"], Some(BUILDER)),
    (&["status"], None),
    (
        &["status", "--project", "checkout", "--json"],
        Some(REVIEWER),
    ),
    (&["task", "list", "--json", "--limit", "50"], Some(BUILDER)),
    (&["task", "list", "--all", "--json"], None),
    (&["task", "list", "--ready", "--json"], Some(PLANNER)),
    (&["task", "list", "--mine", "--json"], Some(BUILDER)),
    (&["task", "list"], Some(REVIEWER)),
    (&["whoami", "--json"], Some(BUILDER)),
    (&["whoami"], Some(REVIEWER)),
    (
        &["context", "checkout/004-add-rounding-shim"],
        Some(BUILDER),
    ),
    (
        &["context", "7", "--format", "json", "--explain", "--json"],
        Some(REVIEWER),
    ),
    (&["note", "list", "--json"], None),
    (&["events", "list", "--json", "--limit", "1000"], None),
    (&["task", "show", "4", "--json"], Some(BUILDER)),
    (&["next", "--json"], Some(BUILDER)),
    // References resolved through the rows, which refuse before anything is written.
    (
        &[
            "note",
            "add",
            "finding",
            "Probe",
            "--about",
            "nosuch/1",
            "--severity",
            "minor",
        ],
        Some(BUILDER),
    ),
    (
        &[
            "note",
            "add",
            "finding",
            "Probe",
            "--about",
            "999",
            "--severity",
            "minor",
        ],
        Some(BUILDER),
    ),
    (&["task", "claim", "checkout/999"], Some(BUILDER)),
    // Pages after a cursor, and a cursor that is no task of the listing.
    (
        &[
            "task",
            "list",
            "--limit",
            "3",
            "--cursor",
            "t-01KJPXJ57RGDMEE50E5T1E877Q",
            "--json",
        ],
        Some(BUILDER),
    ),
    (
        &[
            "task",
            "list",
            "--all",
            "--limit",
            "2",
            "--cursor",
            "t-01KJPXMJCG2RPJX1CFJW2XNQKR",
        ],
        None,
    ),
    (
        &[
            "task",
            "list",
            "--cursor",
            "t-01KJPX6ZT81TTNRTABC9KBJYTV",
            "--json",
        ],
        None,
    ),
    (&["status", "--recent", "3", "--json"], Some(PLANNER)),
    (&["status", "--active-limit", "1", "--json"], Some(BUILDER)),
    (
        &["status", "--project", "checkout", "--active-limit", "1"],
        None,
    ),
];

/// Every read's exit code, stdout and stderr, at one pinned clock.
fn reads(repo: &Repo) -> Vec<String> {
    READS
        .iter()
        .map(|(args, token)| {
            let mut cmd = dacli();
            cmd.current_dir(repo.path()).args(*args);
            if let Some(t) = token {
                cmd.env("DACLI_AGENT", t);
            }
            let out = cmd.output().expect("dacli runs");
            format!(
                "$ dacli {}\nexit {:?}\n{}\n--- stderr\n{}",
                args.join(" "),
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .collect()
}

/// Reads warm (twice: building, then serving the cache) and with the cache deleted; all three
/// must be byte-identical. Returns the outputs.
/// With `rows`, the lookup rows must have been written too (they are not for a project with
/// a broken file).
fn assert_cache_is_only_speed(repo: &Repo, when: &str, rows: bool) -> Vec<String> {
    // Let every change age past the index's racy window, so the second run really serves
    // from the cache instead of listing again.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let building = reads(repo);
    let served = reads(repo);
    let cache = repo.ws("cache");
    assert!(
        cache.join("index.sqlite").exists(),
        "{when}: the index was written"
    );
    let _ = rows;
    std::fs::remove_dir_all(&cache).expect("delete cache");
    let none = reads(repo);
    for ((a, b), c) in building.iter().zip(&served).zip(&none) {
        similar_asserts(when, "cold cache vs warm cache", a, b);
        similar_asserts(when, "warm cache vs no cache", b, c);
    }
    none
}

/// `task list --all --json`, as it printed.
fn list_all(repo: &Repo) -> String {
    let out = repo
        .dacli(&["task", "list", "--all", "--json"])
        .output()
        .expect("runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn similar_asserts(when: &str, what: &str, a: &str, b: &str) {
    if a != b {
        let diff = similar::TextDiff::from_lines(a, b)
            .unified_diff()
            .context_radius(2)
            .to_string();
        panic!("{when}: {what} differ:\n{diff}");
    }
}

fn example() -> Repo {
    let repo = Repo::new();
    copy_tree(
        &repo_root().join(".dacli-example"),
        &repo.path().join(".dacli"),
    );
    repo
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        if entry.file_name() == "cache" {
            continue;
        }
        if path.is_dir() {
            copy_tree(&path, &to.join(entry.file_name()));
        } else {
            std::fs::copy(&path, to.join(entry.file_name())).unwrap();
        }
    }
}

fn ok(repo: &Repo, token: Option<&str>, args: &[&str]) {
    let mut cmd = repo.dacli(args);
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    let out = cmd.output().expect("runs");
    assert!(
        out.status.success(),
        "dacli {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Replaces a file the way git and most editors save: a new file renamed over the old one.
/// A minor finding by the builder about task `about`.
fn add_finding(repo: &Repo, title: &str, about: &str, body: &str) {
    let args = ["note", "add", "finding", title, "--about", about];
    let rest = ["--severity", "minor", "--body", body];
    ok(repo, Some(BUILDER), &[&args[..], &rest[..]].concat());
}

fn edit_by_rename(path: &Path, edit: impl Fn(&str) -> String) {
    let text = std::fs::read_to_string(path).unwrap();
    let tmp = path.with_extension("swp");
    std::fs::write(&tmp, edit(&text)).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[test]
fn deleting_the_cache_changes_no_output_after_writes_and_hand_edits() {
    let repo = example();
    let first = assert_cache_is_only_speed(&repo, "untouched example", true);
    // Writes through dacli: a task, a note, a pending claim by an ro agent (folded by every
    // reader), a question, a check by the assignee.
    ok(
        &repo,
        Some(PLANNER),
        &[
            "task",
            "add",
            "Reconcile refunds nightly",
            "--accept",
            "Report is empty",
        ],
    );
    add_finding(&repo, "Refunds skip the shim", "9", "Seen in refund.rs.");
    ok(&repo, Some(REVIEWER), &["task", "claim", "3"]);
    ok(
        &repo,
        Some(BUILDER),
        &["ask", "6", "Which column holds cents?"],
    );
    let after_writes = assert_cache_is_only_speed(&repo, "after writes", true);
    assert_ne!(first, after_writes, "the writes show in the reads");
    // Hand edits that rename: a retitle and a checked criterion, a task moved to another
    // status folder with `mv`, a new note, and a task file made malformed.
    let tasks = repo.ws("projects/checkout/tasks");
    edit_by_rename(
        &crate::support::created_path(
            &tasks.join("open/001-move-checkout-money-to-integer-cents.md"),
        ),
        |t| {
            t.replace(
                "# Move checkout money to integer cents",
                "# Move all checkout money to cents",
            )
        },
    );
    edit_by_rename(
        &crate::support::created_path(&tasks.join("active/004-add-rounding-shim.md")),
        |t| t.replacen("- [ ] ", "- [x] ", 1),
    );
    std::fs::rename(
        crate::support::created_path(
            &tasks.join("open/012-replay-last-quarter-s-orders-through-the-shim.md"),
        ),
        tasks.join("blocked/012-replay-last-quarter-s-orders-through-the-shim.md"),
    )
    .unwrap();
    edit_by_rename(
        &crate::support::created_path(
            &tasks.join("open/014-show-prices-in-the-visitor-s-currency.md"),
        ),
        |t| t.replace("kind = \"task\"", "kind = \"nonsense\""),
    );
    let after_edits = assert_cache_is_only_speed(&repo, "after hand edits", false);
    let joined = after_edits.join("\n");
    assert!(
        joined.contains("Move all checkout money to cents"),
        "{joined}"
    );
    assert!(
        joined.contains("-show-prices-in-the-visitor-s-currency.md"),
        "the broken file is reported"
    );
}

#[test]
fn tasks_added_and_edits_right_after_show_at_once() {
    let repo = example();
    assert_cache_is_only_speed(&repo, "untouched example", true);
    std::thread::sleep(std::time::Duration::from_millis(100));
    reads(&repo);
    for round in 0..3 {
        // A task added, then at once a hand edit in the same folder: the next reader must
        // see both, whatever the directory's stamp says.
        ok(
            &repo,
            Some(PLANNER),
            &[
                "task",
                "add",
                &format!("Overlay round {round}"),
                "--accept",
                "Done",
            ],
        );
        edit_by_rename(
            &repo.ws("projects/checkout/tasks/open/001-move-checkout-money-to-integer-cents.md"),
            |t| {
                let old = t.lines().find(|l| l.starts_with("# ")).unwrap_or_default();
                t.replace(old, &format!("# Money in cents, round {round}"))
            },
        );
        let warm = list_all(&repo);
        assert!(warm.contains(&format!("Overlay round {round}")), "{warm}");
        assert!(
            warm.contains(&format!("Money in cents, round {round}")),
            "{warm}"
        );
        let cache = repo.ws("cache");
        let saved = tempfile::tempdir().unwrap();
        std::fs::rename(&cache, saved.path().join("cache")).unwrap();
        let none = list_all(&repo);
        std::fs::remove_dir_all(&cache).ok();
        std::fs::rename(saved.path().join("cache"), &cache).unwrap();
        similar_asserts(&format!("round {round}"), "rows vs no cache", &warm, &none);
    }
}

#[test]
fn status_with_an_active_limit_lists_that_many_and_counts_them_all() {
    let repo = example();
    ok(&repo, Some(REVIEWER), &["task", "claim", "3"]);
    let json = |args: &[&str]| -> serde_json::Value {
        let out = repo.dacli(args).output().expect("runs");
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    for project in [None, Some("checkout")] {
        let mut args = vec!["status", "--json"];
        args.extend(project.map(|p| ["--project", p]).into_iter().flatten());
        let all = json(&args)["data"]["active"].as_array().unwrap().clone();
        assert!(
            all.len() >= 3,
            "two active tasks and a pending claim: {all:?}"
        );
        args.extend(["--active-limit", "2"]);
        let cut = json(&args);
        let data = &cut["data"];
        assert_eq!(
            data["active"].as_array().unwrap(),
            &all[..2].to_vec(),
            "{cut}"
        );
        assert_eq!(data["active_total"], all.len(), "{cut}");
        assert_eq!(data["active_truncated"], true, "{cut}");
    }
}

#[test]
fn a_damaged_index_is_ignored_and_changes_no_output() {
    damaged_cache_file_is_ignored("cache/index.sqlite");
}

#[test]
fn a_task_removed_by_hand_right_after_its_add_is_gone_from_the_next_listing() {
    let repo = example();
    std::thread::sleep(std::time::Duration::from_millis(100));
    reads(&repo);
    let add = |title: &str| {
        ok(
            &repo,
            Some(PLANNER),
            &["task", "add", title, "--accept", "Done"],
        )
    };
    add("Removed at once");
    // The file the rows' overlay just recorded, gone before the next command (as a checkout
    // of an older tree would do it): `open/`'s stamp changes, and that add lists the project.
    let created = std::fs::read_dir(repo.ws("projects/checkout/tasks/open"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with("-removed-at-once.md"))
        .expect("the task just added");
    std::fs::remove_file(created).unwrap();
    add("Kept after it");
    let warm = list_all(&repo);
    assert!(warm.contains("Kept after it"), "{warm}");
    assert!(!warm.contains("Removed at once"), "{warm}");
    std::fs::remove_dir_all(repo.ws("cache")).unwrap();
    similar_asserts(
        "removed by hand",
        "rows vs no cache",
        &warm,
        &list_all(&repo),
    );
}

/// A task pending events change is folded by every reader, so an edit of the task's file, by
/// rename or in place, shows in the next read, exactly as without the index.
#[test]
fn kept_folds_follow_edits_of_the_files_they_read() {
    let repo = example();
    // A pending claim by the ro reviewer: every reader folds task 3.
    ok(&repo, Some(REVIEWER), &["task", "claim", "3"]);
    std::thread::sleep(std::time::Duration::from_millis(100));
    reads(&repo);
    reads(&repo);
    let path =
        repo.ws("projects/checkout/tasks/open/003-round-totals-once-at-the-pricing-boundary.md");
    let title = "# Round totals once at the pricing boundary";
    edit_by_rename(&path, |t| t.replace(title, "# Round totals once, renamed"));
    let renamed = list_all(&repo);
    assert!(renamed.contains("Round totals once, renamed"), "{renamed}");
    std::thread::sleep(std::time::Duration::from_millis(100));
    reads(&repo);
    // In place: the same inode, new bytes.
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replace(
        "# Round totals once, renamed",
        "# Round totals once, edited in place",
    );
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        f.write_all(edited.as_bytes()).unwrap();
    }
    let warm = list_all(&repo);
    assert!(
        warm.contains("Round totals once, edited in place"),
        "{warm}"
    );
    assert!(
        warm.contains("a-reviewer-01KJPX9WK0VH0D88BH59TARTNH"),
        "the pending claim is still folded in: {warm}"
    );
    std::fs::remove_dir_all(repo.ws("cache")).unwrap();
    similar_asserts(
        "in-place edit",
        "kept folds vs no cache",
        &warm,
        &list_all(&repo),
    );
}

/// A fold is keyed by the stamps of the event files it read, as the event index recorded
/// them: a pending event rewritten by hand (by rename, as editors save) is folded anew.
#[test]
fn a_pending_event_edited_by_hand_is_folded_anew() {
    let repo = example();
    // The builder claims task 3 and checks its first criterion: both pending, both folded.
    ok(&repo, Some(BUILDER), &["task", "claim", "3"]);
    ok(&repo, Some(BUILDER), &["task", "check", "3", "--n", "1"]);
    let checked = |listing: &str| {
        let listed: serde_json::Value = serde_json::from_str(listing).expect("JSON");
        let task = listed["data"]["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .find(|t| t["number"] == 3)
            .cloned()
            .expect("task 3 listed");
        assert_eq!(task["status"], "active", "{task}");
        task["acceptance"]["checked"].clone()
    };
    // Settled, read twice: the second read is served the kept fold.
    std::thread::sleep(std::time::Duration::from_millis(100));
    reads(&repo);
    reads(&repo);
    assert_eq!(checked(&list_all(&repo)), 1);
    let check = event_file(&repo, "check", TASK3);
    // Still a valid pending check, now of a criterion the task lacks: it checks nothing.
    edit_by_rename(&check, |t| {
        t.lines()
            .filter(|l| !l.starts_with("checksum"))
            .map(|l| match l.starts_with("items = ") {
                true => "items = [{ n = 1, text = \"A criterion the task does not have\" }]\n"
                    .to_string(),
                false => format!("{l}\n"),
            })
            .collect()
    });
    let edited = list_all(&repo);
    assert_eq!(checked(&edited), 0, "{edited}");
    std::fs::remove_dir_all(repo.ws("cache")).unwrap();
    similar_asserts(
        "pending event edited by rename",
        "kept folds vs no cache",
        &edited,
        &list_all(&repo),
    );
}

fn damaged_cache_file_is_ignored(file: &str) {
    let repo = example();
    let clean = assert_cache_is_only_speed(&repo, "untouched example", true);
    std::thread::sleep(std::time::Duration::from_millis(100));
    reads(&repo);
    reads(&repo);
    let rows = repo.ws(file);
    let bytes = std::fs::read(&rows).expect("cache file written");
    // Every region in turn: the prefix, the header and rows, the entries, and a cut file.
    let damaged: Vec<Vec<u8>> = vec![
        flip(&bytes, 2),
        flip(&bytes, 40),
        flip(&bytes, bytes.len() - 30),
        bytes[..bytes.len() / 2].to_vec(),
    ];
    for (i, b) in damaged.into_iter().enumerate() {
        std::fs::write(&rows, &b).unwrap();
        let out = reads(&repo);
        for (a, b) in clean.iter().zip(&out) {
            similar_asserts(&format!("damage {i} of {file}"), "clean vs damaged", a, b);
        }
    }
}

fn flip(bytes: &[u8], at: usize) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[at] ^= 0x5a;
    b
}

#[test]
fn concurrent_writers_leave_an_index_equal_to_the_files() {
    let repo = example();
    reads(&repo);
    let dir = repo.path().to_path_buf();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let dir = dir.clone();
            std::thread::spawn(move || {
                for i in 0..5 {
                    let title = format!("Concurrent task {w}-{i}");
                    let out = dacli()
                        .current_dir(&dir)
                        .env("DACLI_AGENT", PLANNER)
                        .env("DACLI_TEST_SEED", format!("{}", 100 + w * 10 + i))
                        .args(["task", "add", &title, "--json"])
                        .output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stdout)
                    );
                    // A reader between writes refreshes the index while others write.
                    dacli()
                        .current_dir(&dir)
                        .args(["task", "list", "--json"])
                        .output()
                        .unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let outputs = assert_cache_is_only_speed(&repo, "after concurrent writers", true);
    let list = &outputs[4];
    for w in 0..4 {
        for i in 0..5 {
            assert!(list.contains(&format!("Concurrent task {w}-{i}")), "{list}");
        }
    }
}

/// Hand edits saved by rename into `open/` while tasks are added there: an edit landing
/// between an add's reading of the rows and its creating its file shares the folder's new
/// stamp with the add, so only the next reader's listing of the folder can tell that the
/// rows the add recorded are stale. The edit lands at a different moment of each add.
#[test]
fn hand_edits_racing_task_adds_reach_the_next_reader() {
    let repo = example();
    std::thread::sleep(std::time::Duration::from_millis(100));
    reads(&repo);
    let file =
        repo.ws("projects/checkout/tasks/open/003-round-totals-once-at-the-pricing-boundary.md");
    for k in 0..40u64 {
        let add = std::process::Command::new(assert_cmd::cargo::cargo_bin("dacli"))
            .current_dir(repo.path())
            .env_remove("DACLI_TEST_FAULT")
            .env("DACLI_AGENT", PLANNER)
            .env("DACLI_TEST_SEED", format!("{}", 500 + k))
            .args(["task", "add", &format!("Raced task {k}"), "--json"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_micros(700 * k));
        edit_by_rename(&file, |t| {
            let old = t.lines().find(|l| l.starts_with("# ")).unwrap_or_default();
            t.replace(old, &format!("# Round totals, edit {k}"))
        });
        assert!(add.wait_with_output().unwrap().status.success());
        let listed = list_all(&repo);
        assert!(
            listed.contains(&format!("Round totals, edit {k}")),
            "edit {k}: {listed}"
        );
        assert!(
            listed.contains(&format!("Raced task {k}")),
            "add {k}: {listed}"
        );
    }
    assert_cache_is_only_speed(&repo, "after racing hand edits", true);
}

/// The benchmark's generator at N = 100: it verifies every count through the CLI itself.
#[test]
fn bench_mkws_builds_a_workspace_the_cli_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let dacli = assert_cmd::cargo::cargo_bin("dacli");
    let built = mkws::build(&dacli, &dir.path().join("ws"), 100, None).expect("built and verified");
    let c = &built.counts;
    assert_eq!(c.open + c.active + c.blocked + c.done, 100);
    assert_eq!((c.risks, c.terms, c.shortcuts), (5, 10, 4));
    assert!(c.notes >= 20 && c.events >= 10 && c.pending > 0, "{c:?}");
    assert!(c.done >= 15 && c.blocked >= 1, "{c:?}");
    let out = dacli_in(&built.dir, &["lint", "--json"]);
    assert!(out.contains("\"errors\":0"), "{out}");
}

fn dacli_in(dir: &Path, args: &[&str]) -> String {
    let out = dacli().current_dir(dir).args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_warm_server_shows_folded_tasks_as_their_files_change() {
    use crate::mcp::{Server, assert_done};
    use serde_json::json;
    let repo = example();
    // A pending claim by an ro agent: every reader folds task 3 into active.
    ok(&repo, Some(REVIEWER), &["task", "claim", "3"]);
    let mut s = Server::start_with(repo.path(), Some(PLANNER), &[]);
    s.initialize("2025-06-18");
    let row = |s: &mut Server| {
        let rows = assert_done(&s.call("list_tasks", json!({"all": true})));
        rows["tasks"]
            .as_array()
            .expect("rows")
            .iter()
            .find(|r| {
                r[1].as_str()
                    .is_some_and(|x| x.starts_with("checkout/003-"))
            })
            .cloned()
            .expect("task 3 listed")
    };
    let first = row(&mut s);
    assert_eq!(first[3], "active", "{first}");
    // Asked again, the fold is remembered; then the task file is retitled by rename, and
    // later the claim withdrawn by hand: each must show at once.
    assert_eq!(row(&mut s), first);
    let open = repo.ws("projects/checkout/tasks/open");
    let file = std::fs::read_dir(&open)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .ends_with("-round-totals-once-at-the-pricing-boundary.md")
        })
        .expect("task 3 is in open/");
    edit_by_rename(&file, |t| {
        let old = t.lines().find(|l| l.starts_with("# ")).unwrap_or_default();
        t.replace(old, "# Retitled while the server runs")
    });
    let second = row(&mut s);
    assert_eq!(second[2], "Retitled while the server runs", "{second}");
    assert_eq!(second[3], "active", "still folded: {second}");
    let claim = event_file(&repo, "claim", TASK3);
    std::fs::remove_file(claim).unwrap();
    let third = row(&mut s);
    assert_eq!(third[3], "open", "the claim is gone: {third}");
    assert_eq!(third[2], "Retitled while the server runs", "{third}");
    s.finish();
}

/// A server keeps the documents it parsed; one edited in place (same inode, same size) must
/// show in the next brief all the same.
#[test]
fn a_warm_server_shows_a_note_edited_in_place() {
    use crate::mcp::Server;
    use serde_json::json;
    let repo = example();
    add_finding(
        &repo,
        "Warm finding",
        "3",
        "First body of the warm finding.",
    );
    // Old enough to be kept by the server.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let mut s = Server::start_with(repo.path(), Some(PLANNER), &[]);
    s.initialize("2025-06-18");
    let brief = |s: &mut Server| {
        let brief = s.call("get_context", json!({"ref": "3"}));
        assert_eq!(brief["isError"], false, "{brief}");
        brief["content"][0]["text"]
            .as_str()
            .expect("the brief")
            .to_string()
    };
    let first = brief(&mut s);
    assert!(first.contains("First body of the warm finding."), "{first}");
    assert_eq!(brief(&mut s), first, "served again");
    let mut notes = Vec::new();
    files(&repo.ws("notes"), &mut notes);
    files(&repo.ws("projects"), &mut notes);
    let note = notes
        .into_iter()
        .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains("Warm finding")))
        .expect("the finding's file");
    let text = std::fs::read_to_string(&note).unwrap();
    let edited = text.replace("First body", "Other body");
    assert_eq!(edited.len(), text.len());
    std::fs::write(&note, edited).unwrap();
    let second = brief(&mut s);
    assert!(
        second.contains("Other body of the warm finding."),
        "{second}"
    );
    s.finish();
}

/// The id of the example's task 3.
const TASK3: &str = "t-01KJPXG1VG7319MATYQK8VQT34";

/// The file of the event of `kind` about `about`.
fn event_file(repo: &Repo, kind: &str, about: &str) -> std::path::PathBuf {
    let mut events = Vec::new();
    files(&repo.ws("events"), &mut events);
    events
        .into_iter()
        .find(|p| {
            std::fs::read_to_string(p)
                .is_ok_and(|t| t.contains(&format!("event_kind = \"{kind}\"")) && t.contains(about))
        })
        .unwrap_or_else(|| panic!("the {kind} event about {about}"))
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The brief reads the event log and the notes through their digests (`cache/events.idx`,
/// `cache/notes.idx`): an event written by hand, a receipt settling it, and a note written
/// by hand each show in the very next brief.
#[test]
fn events_written_by_hand_reach_the_next_brief_through_the_digest() {
    let repo = example();
    let brief = |repo: &Repo| {
        let out = repo
            .dacli(&["context", "checkout/004-add-rounding-shim"])
            .env("DACLI_AGENT", BUILDER)
            .output()
            .expect("runs");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let aged = || std::thread::sleep(std::time::Duration::from_millis(100));
    let before = brief(&repo);
    aged();
    assert_eq!(brief(&repo), before, "served from the digest");
    assert!(
        repo.ws("cache/index.sqlite").exists(),
        "the index was written"
    );
    let day = repo.ws("events/2026/03/05");
    let comment = "01KJYQRJD1P9XHPQK9T0R6W8K9";
    std::fs::write(
        day.join(format!("{comment}-{REVIEWER_ID}-comment.md")),
        format!(
            "+++\nid = \"{comment}\"\nkind = \"event\"\nevent_kind = \"comment\"\n\
             created = 2026-03-05T10:12:46Z\ncreated_by = \"{REVIEWER_ID}\"\n\
             about = \"t-01KJPXJ57RGDMEE50E5T1E877Q\"\n+++\n\nWritten by hand.\n"
        ),
    )
    .unwrap();
    let pending = brief(&repo);
    let line = |text: &str| {
        text.lines()
            .find(|l| l.contains(comment))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("the hand-written event is in the brief:\n{text}"))
    };
    assert!(line(&pending).ends_with("(pending)"), "{pending}");
    aged();
    assert_eq!(brief(&repo), pending, "the rebuilt digest serves the same");
    let receipt = "01KJYQRJD1P9XHPQK9T0R6W8KA";
    std::fs::write(
        day.join(format!("{receipt}-a-root-applied.md")),
        format!(
            "+++\nid = \"{receipt}\"\nkind = \"event\"\nevent_kind = \"applied\"\n\
             created = 2026-03-05T10:12:47Z\ncreated_by = \"a-root\"\n\
             about = \"t-01KJPXJ57RGDMEE50E5T1E877Q\"\napplied = [\"{comment}\"]\nrejected = []\n+++\n"
        ),
    )
    .unwrap();
    let settled = brief(&repo);
    assert!(!line(&settled).contains("(pending)"), "{settled}");
    // A decision written by hand, through the note digest.
    aged();
    assert_eq!(brief(&repo), settled, "served from both digests");
    std::fs::write(
        repo.ws("projects/checkout/notes/decisions/log-every-rounding.md"),
        "+++\nid = \"n-01KJQP55T07PRX6PT5044WPXW2\"\nkind = \"note\"\n\
         note_kind = \"decision\"\ncreated = 2026-03-02T16:31:00Z\ncreated_by = \"a-root\"\n\
         scope = \"project\"\nabout = \"p-checkout\"\n+++\n\n# Log every rounding\n\n\
         ## Chose\nA log line per rounding.\n",
    )
    .unwrap();
    let settled = brief(&repo);
    assert!(settled.contains("Log every rounding"), "{settled}");
    std::fs::remove_dir_all(repo.ws("cache")).unwrap();
    assert_eq!(brief(&repo), settled, "no cache, same brief");
}

const REVIEWER_ID: &str = "a-reviewer-01KJPX9WK0VH0D88BH59TARTNH";
