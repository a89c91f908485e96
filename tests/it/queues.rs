//! Queues through the CLI: steps are served, never run; only the owner advances; a repeated
//! key moves nothing; `failed` keeps the cursor, `dead` halts until `resume`.

use serde_json::{Value, json};

use crate::lifecycle::agent;
use crate::support::Repo;

fn ok(repo: &Repo, args: &[&str]) -> Value {
    let (code, doc) = repo.json(args);
    assert_eq!(code, 0, "{args:?}: {doc}");
    doc
}

fn as_agent(repo: &Repo, token: &str, args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.push("--json");
    let out = repo.dacli(&all).env("DACLI_AGENT", token).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        crate::support::one_json(&out.stdout),
    )
}

/// The `advance` event files, oldest first.
fn advances(repo: &Repo) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![repo.ws("events")];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with("-advance.md") {
                out.push((p.clone(), std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out.sort();
    out.into_iter().map(|(_, t)| t).collect()
}

fn cursor(repo: &Repo) -> u64 {
    ok(repo, &["queue", "list"])["data"]["queues"][0]["cursor"]
        .as_u64()
        .unwrap()
}

fn release(repo: &Repo) {
    ok(
        repo,
        &[
            "queue",
            "add",
            "release-checks",
            "--step",
            "`./scripts/test.sh`",
            "--step",
            "`./scripts/lint.sh`",
            "--step",
            "Tag the release commit\nand push the tag.",
        ],
    );
}

#[test]
fn queue_add_writes_positional_steps_and_next_serves_them() {
    let repo = Repo::initialized();
    let (code, doc) = repo.json(&["queue", "add", "empty"]);
    assert_eq!(code, 2, "zero steps: {doc}");
    release(&repo);
    let text = std::fs::read_to_string(repo.ws("queues/release-checks.md")).unwrap();
    assert!(
        text.starts_with("+++\nid = \"q-release-checks\"\nkind = \"queue\"\n"),
        "{text}"
    );
    assert!(
        text.ends_with("cursor = 0\n+++\n\n# Release checks\n\n## Steps\n1. `./scripts/test.sh`\n2. `./scripts/lint.sh`\n3. Tag the release commit\n   and push the tag.\n"),
        "{text}"
    );
    let (code, doc) = repo.json(&["queue", "add", "release-checks", "--step", "x"]);
    assert_eq!((code, doc["error"]["code"].as_str()), (5, Some("E_EXISTS")));
    let next = ok(&repo, &["queue", "next", "release-checks"]);
    assert_eq!(
        next["data"],
        json!({"queue": "q-release-checks", "cursor": 0, "steps": 3,
            "step": {"n": 1, "text": "`./scripts/test.sh`"}, "complete": false})
    );
    assert!(
        !repo.path().join("scripts").exists(),
        "dacli never executes a step"
    );
    let list = ok(&repo, &["queue", "list"]);
    assert_eq!(
        list["data"]["queues"][0],
        json!({"id": "q-release-checks", "title": "Release checks", "owner": "a-root",
            "cursor": 0, "steps": 3, "halted": null, "complete": false})
    );
}

#[test]
fn advancing_twice_with_one_key_moves_the_cursor_once() {
    let repo = Repo::initialized();
    release(&repo);
    let first = ok(
        &repo,
        &["queue", "advance", "release-checks", "--key", "ci-4711"],
    );
    let d = &first["data"];
    assert_eq!(
        (d["outcome"].as_str(), d["replayed"].as_bool()),
        (Some("done"), Some(false))
    );
    assert_eq!(
        (d["cursor_before"].as_u64(), d["cursor"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(d["next"], json!({"n": 2, "text": "`./scripts/lint.sh`"}));
    let again = ok(
        &repo,
        &["queue", "advance", "release-checks", "--key", "ci-4711"],
    );
    assert_eq!(again["data"]["replayed"], true);
    assert_eq!(again["data"]["event"], d["event"], "the recorded result");
    assert_eq!(again["data"]["cursor"], 1);
    assert_eq!(cursor(&repo), 1);
    assert_eq!(advances(&repo).len(), 1, "a replay writes nothing");
    let (code, doc) = repo.json(&[
        "queue",
        "advance",
        "release-checks",
        "--key",
        "ci-4711",
        "--dead",
        "x",
    ]);
    assert_eq!(
        (code, doc["error"]["code"].as_str()),
        (5, Some("E_CONFLICT")),
        "{doc}"
    );
    // Default keys are per cursor.
    let doc = ok(&repo, &["queue", "advance", "release-checks"]);
    assert_eq!(doc["data"]["key"], "1:done");
    let event = &advances(&repo)[1];
    for line in [
        "event_kind = \"advance\"",
        "queue = \"q-release-checks\"",
        "key = \"1:done\"",
        "outcome = \"done\"",
        "cursor_before = 1",
    ] {
        assert!(event.contains(line), "{line} in {event}");
    }
    // sha256 of the step's text, `./scripts/lint.sh` in backticks.
    assert!(
        event.contains(
            "step_sha256 = \"c9cfa625ff7b7527053deb748b2f6c61987d0093e6d299dbce67530c0740f67b\""
        ),
        "{event}"
    );
}

#[test]
fn failed_keeps_the_cursor_dead_halts_and_resume_resumes() {
    let repo = Repo::initialized();
    release(&repo);
    for n in 0..2 {
        let doc = ok(
            &repo,
            &[
                "queue",
                "advance",
                "release-checks",
                "--fail",
                "flaky network",
            ],
        );
        assert_eq!(
            doc["data"]["key"],
            format!("0:failed:{n}"),
            "a counting key"
        );
        assert_eq!(doc["data"]["cursor"], 0);
    }
    assert_eq!(cursor(&repo), 0);
    let doc = ok(
        &repo,
        &[
            "queue",
            "advance",
            "release-checks",
            "--dead",
            "lint rejects the helper",
        ],
    );
    let dead_event = doc["data"]["event"].as_str().unwrap().to_string();
    assert_eq!(
        doc["data"]["halted"],
        json!({"step": 0, "reason": "lint rejects the helper", "event": dead_event})
    );
    let text = std::fs::read_to_string(repo.ws("queues/release-checks.md")).unwrap();
    assert!(
        text.contains(&format!("halted = {{ step = 0, reason = \"lint rejects the helper\", event = \"{dead_event}\" }}")),
        "{text}"
    );
    let halted_next = format!(
        "Halted at step 1: lint rejects the helper (event {dead_event}); a-root resumes with `dacli queue resume release-checks`."
    );
    for args in [
        vec!["queue", "next", "release-checks"],
        vec!["queue", "advance", "release-checks"],
    ] {
        let (code, doc) = repo.json(&args);
        assert_eq!(code, 3, "{args:?}: {doc}");
        assert_eq!(doc["refused"]["policy"], "queue.halted");
        assert_eq!(doc["refused"]["next"], halted_next.as_str());
    }
    let doc = ok(
        &repo,
        &[
            "queue",
            "resume",
            "release-checks",
            "--reason",
            "helper fixed",
        ],
    );
    assert_eq!(doc["data"]["outcome"], "resumed");
    assert_eq!(doc["data"]["key"], format!("0:resumed:{dead_event}"));
    assert_eq!(doc["data"]["halted"], Value::Null);
    let doc = ok(&repo, &["queue", "resume", "release-checks"]);
    assert_eq!(
        doc["data"]["effect"], "unchanged",
        "not halted: nothing to resume"
    );
    assert!(
        !std::fs::read_to_string(repo.ws("queues/release-checks.md"))
            .unwrap()
            .contains("halted")
    );
    for _ in 0..3 {
        ok(&repo, &["queue", "advance", "release-checks"]);
    }
    let next = ok(&repo, &["queue", "next", "release-checks"]);
    assert_eq!(
        (
            next["data"]["step"].clone(),
            next["data"]["complete"].as_bool()
        ),
        (Value::Null, Some(true))
    );
    let (code, doc) = repo.json(&["queue", "advance", "release-checks"]);
    assert_eq!(code, 3);
    assert_eq!(doc["refused"]["policy"], "queue.complete");
    assert_eq!(
        doc["refused"]["next"],
        "All 3 steps are done; nothing to advance."
    );
    assert_eq!(advances(&repo).len(), 7);
}

#[test]
fn a_replay_repairs_a_crash_between_event_and_rewrite() {
    let repo = Repo::initialized();
    release(&repo);
    let out = repo
        .dacli(&[
            "queue",
            "advance",
            "release-checks",
            "--key",
            "k1",
            "--json",
        ])
        .env("DACLI_TEST_FAULT", "rename:1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "the rewrite failed");
    assert_eq!(advances(&repo).len(), 1, "the event was written first");
    assert_eq!(cursor(&repo), 0);
    let doc = ok(
        &repo,
        &["queue", "advance", "release-checks", "--key", "k1"],
    );
    assert_eq!(doc["data"]["replayed"], true);
    assert_eq!(doc["data"]["effect"], "applied");
    assert_eq!(cursor(&repo), 1, "brought up to date");
    assert_eq!(advances(&repo).len(), 1, "and still one event");
    let doc = ok(
        &repo,
        &["queue", "advance", "release-checks", "--key", "k1"],
    );
    assert_eq!(doc["data"]["effect"], "unchanged");
    assert_eq!(cursor(&repo), 1);
}

#[test]
fn only_the_owner_advances_resumes_or_removes() {
    let repo = Repo::initialized();
    release(&repo);
    let (_, rw) = agent(&repo, "builder", 61, "rw");
    let (_, ro) = agent(&repo, "reviewer", 62, "ro");
    for args in [
        vec!["queue", "advance", "release-checks"],
        vec!["queue", "resume", "release-checks"],
        vec!["queue", "rm", "release-checks"],
    ] {
        let (code, doc) = as_agent(&repo, &rw, &args);
        assert_eq!(code, 3, "{args:?}: {doc}");
        assert_eq!(doc["refused"]["policy"], "queue.not_owner");
        let next = doc["refused"]["next"].as_str().unwrap();
        assert!(
            next.starts_with(
                "q-release-checks belongs to a-root: report the step's outcome with `dacli ask"
            ),
            "{next}"
        );
        let (code, doc) = as_agent(&repo, &ro, &args);
        assert_eq!(code, 3);
        assert_eq!(doc["refused"]["policy"], "grant.read_only");
    }
    let (code, doc) = as_agent(&repo, &ro, &["queue", "next", "release-checks"]);
    assert_eq!(code, 0, "anyone reads the next step: {doc}");
    assert!(advances(&repo).is_empty());
    // An rw agent's own queue is its own.
    let (code, doc) = as_agent(&repo, &rw, &["queue", "add", "mine", "--step", "one"]);
    assert_eq!(code, 0, "{doc}");
    let (code, _) = as_agent(&repo, &rw, &["queue", "advance", "mine"]);
    assert_eq!(code, 0);
    let doc = ok(&repo, &["queue", "rm", "release-checks"]);
    assert_eq!(
        doc["data"],
        json!({"queue": "q-release-checks", "effect": "applied"})
    );
    assert!(!repo.ws("queues/release-checks.md").exists());
    let (code, _) = repo.json(&["queue", "next", "release-checks"]);
    assert_eq!(code, 4);
}

#[test]
fn the_example_queue_is_halted_with_its_reason() {
    let out = crate::support::dacli()
        .args([
            "-C",
            ".dacli-example",
            "queue",
            "next",
            "release-checks",
            "--json",
        ])
        .current_dir(crate::support::repo_root())
        .output()
        .unwrap();
    let doc = crate::support::one_json(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{doc}");
    assert_eq!(doc["refused"]["policy"], "queue.halted");
    assert!(
        doc["refused"]["reason"]
            .as_str()
            .unwrap()
            .contains("lint rejects the new rounding helper")
    );
}
