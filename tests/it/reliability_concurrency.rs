//! RELIABILITY C1, C3, C4, C5 and C6 through the real binary (C2 and the pure claim races are
//! `lifecycle::parallel_task_add_gives_unique_ids_and_gap_free_numbers` and
//! `lifecycle::racing_claims_have_exactly_one_winner_per_round`).
//!
//! - C1: many processes mutate one task as its owner at once; nothing is lost or doubled.
//! - C3: mixed seeded agents at once; one winner per claim, every event accounted for.
//! - C4: random operation sequences on one task against a small reference model.
//! - C5: a SIGKILLed lock holder never blocks the next writer; a timeout is exit 1.
//! - C6: two clones worked on apart merge with `git merge` without a conflict in append-only
//!   records, and the fold of the union is the union of the intents.
//!
//! `scripts/soak` raises the sizes through `DACLI_SOAK_*` variables.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command as Std, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::Value;

use crate::lifecycle::agent;
use crate::support::{Repo, dacli, git, one_json};

fn soak(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn ok(repo: &Repo, args: &[&str]) -> Value {
    let (code, doc) = repo.json(args);
    assert_eq!(code, 0, "{args:?}: {doc}");
    doc
}

fn check_status(doc: &Value, name: &str) -> Value {
    doc["data"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap()["status"]
        .clone()
}

/// Runs dacli with the real clock and random source (concurrent processes must not share a
/// pinned seed) and returns the exit code.
fn real(dir: &Path, args: &[&str], token: Option<&str>) -> Std {
    let mut cmd = Std::new(assert_cmd::cargo::cargo_bin("dacli"));
    cmd.current_dir(dir)
        .args(args)
        .env_remove("DACLI_TEST_CLOCK")
        .env_remove("DACLI_TEST_SEED")
        .env_remove("DACLI_TEST_FAULT")
        .env_remove("DACLI_AGENT")
        .env_remove("DACLI_LOCK_TIMEOUT_MS");
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    cmd
}

#[test]
fn c1_many_processes_mutating_one_task_lose_nothing() {
    let writers = soak("DACLI_SOAK_C1_WRITERS", 6);
    let per = soak("DACLI_SOAK_C1_OPS", 20);
    let movers = 1;
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    ok(
        &repo,
        &["task", "add", "Contended", "--accept", "seed criterion"],
    );
    let workers: Vec<_> = (0..writers + movers)
        .map(|w| {
            let dir = repo.path().to_path_buf();
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                for i in 0..per {
                    let criterion = format!("writer {w} item {i}");
                    let args: Vec<&str> = if w < writers {
                        vec!["task", "edit", "1", "--accept", &criterion, "--json"]
                    } else if i % 2 == 0 {
                        vec!["task", "claim", "1", "--json"]
                    } else {
                        vec!["task", "release", "1", "--json"]
                    };
                    let out = real(&dir, &args, None).output().unwrap();
                    if out.status.code() != Some(0) {
                        failures.push(format!(
                            "{args:?}: {}",
                            String::from_utf8_lossy(&out.stdout)
                        ));
                    }
                }
                failures
            })
        })
        .collect();
    let failures: Vec<String> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
    // Every criterion present exactly once, the task in exactly one folder, doctor clean.
    let show = ok(&repo, &["task", "show", "1"]);
    let texts: Vec<String> = show["data"]["criteria"]
        .as_array()
        .unwrap_or_else(|| panic!("{show}"))
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_string())
        .collect();
    let unique: BTreeSet<&String> = texts.iter().collect();
    assert_eq!(texts.len(), unique.len(), "no criterion twice");
    assert_eq!(texts.len(), writers * per + 1, "none lost");
    let mut copies = 0;
    for folder in ["open", "active", "blocked", "done"] {
        let dir = repo.ws(&format!("projects/checkout/tasks/{folder}"));
        copies += std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0);
    }
    assert_eq!(copies, 1, "the task is in exactly one folder");
    let doctor = ok(&repo, &["doctor"]);
    for check in ["malformed_files", "duplicate_ids", "noncanonical_files"] {
        assert_eq!(check_status(&doctor, check), "ok", "{doctor}");
    }
    println!(
        "C1: {} processes, {} mutations of one task, 0 lost",
        writers + movers,
        (writers + movers) * per
    );
}

// ---------------------------------------------------------------------------------------
// C4: the lifecycle of one task, as its owner, against a reference model.

#[derive(Debug, Clone, Copy)]
enum Op {
    Claim,
    Release,
    Block,
    Unblock,
    Check(u8),
    Done,
    Reopen,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Model {
    status: &'static str,
    assigned: bool,
    checked: [bool; 2],
}

/// What the owner's command answers: `Ok(changed)` or `Err(policy)`.
fn step(m: &mut Model, op: Op) -> Result<bool, &'static str> {
    let done = m.status == "done";
    match op {
        Op::Reopen if !done => Err("task.not_done"),
        Op::Reopen => {
            *m = Model {
                status: "open",
                assigned: false,
                checked: [false; 2],
            };
            Ok(true)
        }
        Op::Done if done => Ok(false),
        Op::Done if m.checked != [true; 2] => Err("dod.unchecked_acceptance"),
        Op::Done => {
            m.status = "done";
            Ok(true)
        }
        _ if done => Err("task.is_done"),
        Op::Claim if m.assigned => Ok(false),
        Op::Claim => {
            m.assigned = true;
            if m.status == "open" {
                m.status = "active";
            }
            Ok(true)
        }
        Op::Release if !m.assigned => Err("task.not_assignee"),
        Op::Release => {
            m.assigned = false;
            if m.status == "active" {
                m.status = "open";
            }
            Ok(true)
        }
        Op::Block if m.status == "blocked" => Ok(false),
        Op::Block => {
            m.status = "blocked";
            Ok(true)
        }
        Op::Unblock if m.status != "blocked" => Ok(false),
        Op::Unblock => {
            m.status = if m.assigned { "active" } else { "open" };
            Ok(true)
        }
        Op::Check(n) if m.checked[n as usize] => Ok(false),
        Op::Check(n) => {
            m.checked[n as usize] = true;
            Ok(true)
        }
    }
}

fn argv(op: Op) -> Vec<String> {
    let v: Vec<&str> = match op {
        Op::Claim => vec!["task", "claim", "1"],
        Op::Release => vec!["task", "release", "1"],
        Op::Block => vec!["task", "block", "1", "--reason", "waiting"],
        Op::Unblock => vec!["task", "unblock", "1"],
        Op::Check(0) => vec!["task", "check", "1", "--n", "1"],
        Op::Check(_) => vec!["task", "check", "1", "--n", "2"],
        Op::Done => vec!["task", "done", "1"],
        Op::Reopen => vec!["task", "reopen", "1", "--reason", "again"],
    };
    v.into_iter().map(str::to_string).collect()
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::Claim),
        Just(Op::Release),
        Just(Op::Block),
        Just(Op::Unblock),
        (0u8..2).prop_map(Op::Check),
        Just(Op::Done),
        Just(Op::Reopen),
    ]
}

fn run_model(ops: &[Op]) -> Result<(), TestCaseError> {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    ok(
        &repo,
        &[
            "task", "add", "Modelled", "--accept", "one", "--accept", "two",
        ],
    );
    let mut m = Model {
        status: "open",
        assigned: false,
        checked: [false; 2],
    };
    for (i, o) in ops.iter().enumerate() {
        let expected = step(&mut m, *o);
        let args = argv(*o);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, doc) = repo.json(&args);
        match expected {
            Ok(changed) => {
                prop_assert_eq!(code, 0, "op {} {:?}: {}", i, o, doc);
                let effect = if changed { "applied" } else { "unchanged" };
                prop_assert_eq!(&doc["data"]["effect"], effect, "op {} {:?}: {}", i, o, doc);
            }
            Err(policy) => {
                prop_assert_eq!(code, 3, "op {} {:?}: {}", i, o, doc);
                prop_assert_eq!(&doc["refused"]["policy"], policy, "op {} {:?}", i, o);
            }
        }
    }
    let shown = ok(&repo, &["task", "show", "1"]);
    let d = &shown["data"];
    prop_assert_eq!(&d["status"], m.status, "{}", shown);
    prop_assert_eq!(d["assignee"].is_string(), m.assigned, "{}", shown);
    let folder = repo.ws(&format!("projects/checkout/tasks/{}", m.status));
    prop_assert_eq!(std::fs::read_dir(folder).map(|d| d.count()).unwrap_or(0), 1);
    Ok(())
}

#[test]
fn c4_owner_lifecycle_sequences_agree_with_the_reference_model() {
    let cases = soak("DACLI_SOAK_C4_CASES", 8) as u32;
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&proptest::collection::vec(op(), 1..=12), |ops| {
            run_model(&ops)
        })
        .unwrap();
    println!("C4: {cases} random sequences of up to 12 operations");
}

// ---------------------------------------------------------------------------------------
// C5: lock hygiene with real processes.

/// A workspace whose task 1 has a command criterion that sleeps, so `task check --verify`
/// holds the task lock while it runs. Returns the lock file.
fn sleeper() -> (Repo, std::path::PathBuf, dacli::store::Fs) {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    let added = ok(
        &repo,
        &["task", "add", "Slow", "--accept", "`sleep 3` passes"],
    );
    let id = added["data"]["task"]["id"].as_str().unwrap().to_string();
    let lock = repo
        .ws(".locks")
        .join(format!("task-{}.lock", id.trim_start_matches("t-")));
    let fs = dacli::store::Fs::new(
        Some(repo.path().canonicalize().unwrap()),
        Some(repo.ws("").canonicalize().unwrap()),
        3,
        Duration::from_secs(1),
    );
    (repo, lock, fs)
}

/// Starts a dacli that holds the task lock, and waits until it does.
fn holder(repo: &Repo, lock: &Path, fs: &dacli::store::Fs) -> std::process::Child {
    let child = real(
        repo.path(),
        &["task", "check", "1", "--n", "1", "--verify", "--json"],
        None,
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let started = Instant::now();
    while !(lock.exists() && fs.is_locked(lock).unwrap()) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the holder takes the lock"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

#[test]
fn c5_a_sigkilled_lock_holder_never_blocks_the_next_writer() {
    let kills = soak("DACLI_SOAK_C5_KILLS", 10);
    let (repo, lock, fs) = sleeper();
    // While a real holder runs, a writer with a short deadline gives up: exit 1, named.
    let mut child = holder(&repo, &lock, &fs);
    let out = real(
        repo.path(),
        &["task", "edit", "1", "--priority", "must", "--json"],
        None,
    )
    .env("DACLI_LOCK_TIMEOUT_MS", "200")
    .output()
    .unwrap();
    let doc = one_json(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{doc}");
    assert_eq!(doc["error"]["code"], "E_LOCK_TIMEOUT");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains(".dacli/.locks/task-")
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let mut slowest = Duration::ZERO;
    let mut released = Duration::ZERO;
    for i in 0..kills {
        if i > 0 {
            child = holder(&repo, &lock, &fs);
            child.kill().unwrap();
            child.wait().unwrap();
        }
        // The kernel releases the lock with the process; no stale-lock repair. (A child the
        // holder was forking when it died keeps the descriptor until its exec closes it.)
        let t = Instant::now();
        while fs.is_locked(&lock).unwrap() {
            assert!(t.elapsed() < Duration::from_secs(2), "kill {i}: released");
            std::thread::sleep(Duration::from_millis(1));
        }
        released = released.max(t.elapsed());
        let out = real(
            repo.path(),
            &["task", "edit", "1", "--priority", "must", "--json"],
            None,
        )
        .env("DACLI_LOCK_TIMEOUT_MS", "5000")
        .output()
        .unwrap();
        assert_eq!(out.status.code(), Some(0), "kill {i}");
        slowest = slowest.max(t.elapsed());
    }
    let doctor = ok(&repo, &["doctor"]);
    assert_eq!(check_status(&doctor, "held_locks"), "ok", "{doctor}");
    println!(
        "C5: {kills} SIGKILLed holders; the lock was free after at most {released:?}, the next write took at most {slowest:?}"
    );
}

// ---------------------------------------------------------------------------------------
// C6: two clones worked on apart, then merged.

/// One agent action in a clone: who, what, on which task, at which second.
#[derive(Debug, Clone)]
struct Intent {
    agent: usize,
    kind: &'static str,
    task: u32,
    second: u32,
}

fn run_in(dir: &Path, args: &[&str], token: &str, second: u32, seed: u64) -> Value {
    let at = jiff::Timestamp::from_second(
        "2026-03-02T10:00:00Z"
            .parse::<jiff::Timestamp>()
            .unwrap()
            .as_second()
            + i64::from(second),
    )
    .unwrap();
    let out = dacli()
        .current_dir(dir)
        .args(args)
        .arg("--json")
        .env("DACLI_AGENT", token)
        .env("DACLI_TEST_CLOCK", at.to_string())
        .env("DACLI_TEST_SEED", seed.to_string())
        .output()
        .unwrap();
    let doc = one_json(&out.stdout);
    assert!(matches!(out.status.code(), Some(0 | 3)), "{args:?}: {doc}");
    doc
}

fn merge_case(seed: u64) {
    let origin = Repo::initialized();
    let agents: Vec<(String, String)> = (0..3)
        .map(|n| agent(&origin, "builder", 20 + n, "rw"))
        .collect();
    ok(&origin, &["project", "add", "P", "--slug", "checkout"]);
    for n in 1..=4 {
        ok(
            &origin,
            &["task", "add", &format!("Task {n}"), "--accept", "x"],
        );
    }
    git(origin.path(), &["add", "-A"]);
    git(origin.path(), &["commit", "-qm", "workspace"]);
    let parent = tempfile::tempdir().unwrap();
    let clones: Vec<std::path::PathBuf> = ["one", "two"]
        .iter()
        .map(|name| {
            let dir = parent.path().join(name);
            git(
                parent.path(),
                &["clone", "-q", origin.path().to_str().unwrap(), name],
            );
            dir
        })
        .collect();
    // Random intents per clone; clone one acts on odd seconds, clone two on even ones, so
    // every event has a distinct time and "earliest" is well defined.
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move |m: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % m
    };
    let mut intents = Vec::new();
    for (c, dir) in clones.iter().enumerate() {
        for k in 0..6u32 {
            let intent = Intent {
                agent: next(3) as usize,
                kind: ["claim", "comment", "finding"][next(3) as usize],
                task: 1 + next(4) as u32,
                second: 2 * k + c as u32 + 1,
            };
            let (_, token) = &agents[intent.agent];
            let task = format!("checkout/{}", intent.task);
            let text = format!("seed {seed} clone {c} step {k}");
            let args: Vec<&str> = match intent.kind {
                "claim" => vec!["task", "claim", &task],
                "comment" => vec!["task", "comment", &task, &text],
                _ => vec![
                    "note",
                    "add",
                    "finding",
                    &text,
                    "--severity",
                    "minor",
                    "--about",
                    &task,
                ],
            };
            let doc = run_in(
                dir,
                &args,
                token,
                intent.second,
                seed * 100 + c as u64 * 10 + u64::from(k),
            );
            // A claim refused in its own clone (already taken there) is no intent.
            if doc.get("refused").is_none() {
                intents.push(intent);
            }
        }
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-qm", &format!("clone {c}")]);
    }
    // Merge clone two into clone one: append-only records never conflict.
    let (one, two) = (&clones[0], &clones[1]);
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
    let unmerged = Std::new("git")
        .current_dir(one)
        .args(["diff", "--name-only", "--diff-filter=U"])
        .output()
        .unwrap();
    assert!(unmerged.stdout.is_empty(), "seed {seed}: conflicts");
    // The fold of the union equals the union of the intents.
    let out = dacli()
        .current_dir(one)
        .args(["task", "list", "--all", "--json"])
        .output()
        .unwrap();
    let list = one_json(&out.stdout);
    let mut expected: BTreeMap<u32, Option<String>> = (1..=4).map(|n| (n, None)).collect();
    let mut claims: Vec<&Intent> = intents.iter().filter(|i| i.kind == "claim").collect();
    claims.sort_by_key(|i| i.second);
    for c in claims {
        expected
            .get_mut(&c.task)
            .unwrap()
            .get_or_insert_with(|| agents[c.agent].0.clone());
    }
    for t in list["data"]["tasks"].as_array().unwrap() {
        let n = t["number"].as_u64().unwrap() as u32;
        assert_eq!(
            t["assignee"].as_str().map(str::to_string),
            expected[&n],
            "seed {seed} task {n}: the earliest claim wins; {intents:?}"
        );
    }
    let out = dacli()
        .current_dir(one)
        .args(["note", "list", "--json"])
        .output()
        .unwrap();
    let notes = one_json(&out.stdout);
    let titles: BTreeSet<String> = notes["data"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["title"].as_str().unwrap().to_string())
        .collect();
    let findings = intents.iter().filter(|i| i.kind == "finding").count();
    assert_eq!(titles.len(), findings, "seed {seed}: every finding, once");
    let out = dacli()
        .current_dir(one)
        .args(["events", "list", "--json"])
        .output()
        .unwrap();
    let events = one_json(&out.stdout);
    let comments = events["data"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "comment")
        .count();
    assert_eq!(
        comments,
        intents.iter().filter(|i| i.kind == "comment").count(),
        "seed {seed}: every comment, once"
    );
    // The owner syncs the union: the same assignees, nothing malformed.
    let out = dacli()
        .current_dir(one)
        .args(["sync", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let out = dacli()
        .current_dir(one)
        .args(["task", "list", "--all", "--json"])
        .output()
        .unwrap();
    let synced = one_json(&out.stdout);
    for t in synced["data"]["tasks"].as_array().unwrap() {
        let n = t["number"].as_u64().unwrap() as u32;
        assert_eq!(
            t["assignee"].as_str().map(str::to_string),
            expected[&n],
            "seed {seed} after sync"
        );
    }
}

#[test]
fn c6_two_clones_merge_without_conflict_and_fold_to_the_union_of_intents() {
    let seeds = soak("DACLI_SOAK_C6_SEEDS", 3) as u64;
    for seed in 1..=seeds {
        merge_case(seed);
    }
    println!("C6: {seeds} seeded pairs of clones merged");
}

/// A small deterministic generator (SplitMix64), so a failing seed can be replayed.
struct Mix(u64);

impl Mix {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// One call a C3 agent made: its argv, exit code and JSON document.
struct Call {
    agent: String,
    args: Vec<String>,
    code: i32,
    doc: Value,
}

/// What the agents of C3 share: the questions asked so far (to answer one).
#[derive(Default)]
struct Shared {
    questions: Vec<String>,
}

/// One C3 agent's `ops` operations, chosen by `seed`: add, claim a pooled task, note, ask,
/// answer, check-and-finish an own task, sync.
fn c3_agent(
    dir: &Path,
    (id, token, rw): (&str, &str, bool),
    pool: usize,
    ops: usize,
    seed: u64,
    shared: &std::sync::Mutex<Shared>,
) -> Vec<Call> {
    let mut rng = Mix(seed);
    let mut own: Vec<String> = Vec::new();
    let mut calls = Vec::new();
    let mut run = |args: Vec<String>| -> Value {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = real(dir, &[&argv[..], &["--json"]].concat(), Some(token))
            .output()
            .unwrap();
        let doc = one_json(&out.stdout);
        calls.push(Call {
            agent: id.to_string(),
            args,
            code: out.status.code().unwrap_or(-1),
            doc: doc.clone(),
        });
        doc
    };
    for k in 0..ops {
        let pooled = format!("checkout/{}", 1 + rng.below(pool));
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        match rng.below(7) {
            0 if rw => {
                let doc = run(s(&[
                    "task",
                    "add",
                    &format!("{id} {k}"),
                    "--accept",
                    "it holds",
                ]));
                if let Some(t) = doc["data"]["task"]["id"].as_str() {
                    own.push(t.to_string());
                }
            }
            0 | 1 => {
                run(s(&["task", "claim", &pooled]));
            }
            2 => {
                run(s(&[
                    "note",
                    "add",
                    "finding",
                    &format!("seen by {id} {k}"),
                    "--severity",
                    "minor",
                    "--about",
                    &pooled,
                ]));
            }
            3 => {
                let doc = run(s(&["ask", &pooled, &format!("why {k}?"), "--no-block"]));
                if let Some(q) = doc["data"]["question"].as_str() {
                    shared.lock().unwrap().questions.push(q.to_string());
                }
            }
            4 => {
                let q = {
                    let g = shared.lock().unwrap();
                    (!g.questions.is_empty())
                        .then(|| g.questions[rng.below(g.questions.len())].clone())
                };
                match q {
                    Some(q) => run(s(&["answer", &q, &format!("because {k}")])),
                    None => run(s(&["sync"])),
                };
            }
            5 if !own.is_empty() => {
                let t = own.remove(rng.below(own.len()));
                run(s(&["task", "check", &t, "--n", "1"]));
                run(s(&["task", "done", &t]));
            }
            _ => {
                run(s(&["sync"]));
            }
        }
    }
    calls
}

#[test]
fn c3_mixed_agents_leave_a_clean_workspace_one_winner_per_claim_and_every_event() {
    let agents = soak("DACLI_SOAK_C3_AGENTS", 12);
    let ops = soak("DACLI_SOAK_C3_OPS", 100);
    let seed = soak("DACLI_SOAK_C3_SEED", 3) as u64;
    let pool: usize = 6;
    // Without a test-only definition of done, `task done` needs nothing but the checked box.
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "Checkout", "--slug", "checkout"]);
    for n in 0..pool {
        ok(
            &repo,
            &["task", "add", &format!("Pooled {n}"), "--accept", "done"],
        );
    }
    let team: Vec<(String, String, bool)> = (0..agents)
        .map(|i| {
            let rw = i % 4 != 3;
            let (id, token) = agent(
                &repo,
                if rw { "builder" } else { "reviewer" },
                100 + i,
                if rw { "rw" } else { "ro" },
            );
            (id, token, rw)
        })
        .collect();
    let shared = std::sync::Arc::new(std::sync::Mutex::new(Shared::default()));
    let workers: Vec<_> = team
        .iter()
        .enumerate()
        .map(|(i, (id, token, rw))| {
            let (dir, id, token, rw, shared) = (
                repo.path().to_path_buf(),
                id.clone(),
                token.clone(),
                *rw,
                shared.clone(),
            );
            std::thread::spawn(move || {
                c3_agent(
                    &dir,
                    (&id, &token, rw),
                    pool,
                    ops,
                    seed * 1000 + i as u64,
                    &shared,
                )
            })
        })
        .collect();
    let calls: Vec<Call> = workers
        .into_iter()
        .flat_map(|w| w.join().expect("agent thread"))
        .collect();
    assert!(calls.len() >= agents * ops);

    // Every call succeeded or was refused by policy: no failure, no crash, no conflict lost.
    let bad: Vec<String> = calls
        .iter()
        .filter(|c| c.code != 0 && c.code != 3)
        .map(|c| format!("{} {:?} → {}: {}", c.agent, c.args, c.code, c.doc))
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");

    // Every contended claim has exactly one winner, and it is the assignee readers see, before
    // and after the owner's sync; every loser was refused as already claimed.
    let assignee_of = |n: usize| -> Value {
        ok(&repo, &["task", "show", &format!("checkout/{n}")])["data"]["assignee"].clone()
    };
    // A winner claiming again is told `unchanged`; winners are distinct agents.
    let mut winners: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut contended = 0;
    for c in calls
        .iter()
        .filter(|c| c.args.starts_with(&["task".into(), "claim".into()]))
    {
        if c.code == 0 {
            winners
                .entry(c.args[2].clone())
                .or_default()
                .insert(c.agent.clone());
        } else {
            contended += 1;
            assert_eq!(
                c.doc["refused"]["policy"], "task.already_claimed",
                "{}",
                c.doc
            );
        }
    }
    assert!(contended > 0, "the pool was contended");
    for round in ["before", "after"] {
        if round == "after" {
            ok(&repo, &["sync"]);
        }
        for n in 1..=pool {
            let pooled = format!("checkout/{n}");
            let won = winners.get(&pooled).cloned().unwrap_or_default();
            assert!(won.len() <= 1, "{pooled} has winners {won:?}");
            let assignee = assignee_of(n);
            match won.first() {
                Some(w) => assert_eq!(assignee, Value::from(w.as_str()), "{pooled} {round} sync"),
                None => assert_eq!(assignee, Value::Null, "{pooled} {round} sync"),
            }
        }
    }

    // One event per call that reported one, and no other (receipts apart).
    let mut reported: BTreeSet<String> = BTreeSet::new();
    for c in calls.iter().filter(|c| c.code == 0) {
        for key in ["event", "question", "answer"] {
            if let Some(e) = c.doc["data"][key].as_str() {
                reported.insert(e.to_string());
            }
        }
    }
    let mut on_disk: BTreeSet<String> = BTreeSet::new();
    let mut stack = vec![repo.ws("events")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                stack.push(p);
            } else if !name.ends_with("-applied.md") {
                on_disk.insert(name[..26].to_string());
            }
        }
    }
    assert_eq!(on_disk, reported, "event files = events the calls reported");

    let doctor = ok(&repo, &["doctor"]);
    for check in doctor["data"]["checks"].as_array().unwrap() {
        assert_ne!(check["status"], "error", "{check}");
    }
    let lint = repo.json(&["lint"]);
    assert_eq!(lint.0, 0, "{}", lint.1);
}

/// A writer moves task files between status folders while readers list: every listing is
/// made of one state of the folders. Before, a file listed in `open/` and moved before it was
/// read failed the whole command with `E_IO`, and a task moved from a folder not yet scanned
/// to one already scanned was missing from the answer; then, with a move out of a folder and
/// back within one clock tick (which keeps the folder's stamp and names), about one run in
/// four still missed it. A status move holds the project's move lock, which listings take
/// shared, and this mover does as a status move does.
#[test]
fn listings_while_a_task_moves_between_folders_see_it_exactly_once() {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "Checkout", "--slug", "checkout"]);
    for k in 0..6 {
        ok(
            &repo,
            &["task", "add", &format!("task {k}"), "--accept", "holds"],
        );
    }
    let tasks = repo.ws("projects/checkout/tasks");
    let name = std::fs::read_dir(tasks.join("open"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .find(|n| n.to_string_lossy().ends_with("-task-5.md"))
        .expect("task 6 is open");
    // A status move through dacli (blocked, then open again) makes the move lock.
    let set = |args: &[&str]| {
        let out = real(repo.path(), args, None).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
    };
    set(&["task", "block", "6", "--reason", "waits"]);
    set(&["task", "unblock", "6"]);
    let lock = repo.ws(".locks/moves-checkout.lock");
    assert!(lock.exists(), "a status move takes the project's move lock");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // The mover does what a status change does: under the project's move lock, one atomic
    // rename to the other folder (dacli's own move is create-new, then remove: two steps,
    // the same lock). The two folders are the first and third scanned, so a reader's pass
    // can span the move.
    let mover = {
        let stop = std::sync::Arc::clone(&stop);
        let (open, blocked) = (
            tasks.join("open").join(&name),
            tasks.join("blocked").join(&name),
        );
        let lock = std::fs::File::open(&lock).unwrap();
        std::thread::spawn(move || {
            let mut moves = 0u32;
            let step = |from: &Path, to: &Path| {
                lock.lock().unwrap();
                std::fs::rename(from, to).unwrap();
                lock.unlock().unwrap();
                std::thread::sleep(Duration::from_micros(300));
            };
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                step(&open, &blocked);
                step(&blocked, &open);
                moves += 2;
            }
            moves
        })
    };
    let mut failures = Vec::new();
    for _ in 0..40 {
        let out = real(repo.path(), &["task", "list", "--all", "--json"], None)
            .output()
            .unwrap();
        let doc = one_json(&out.stdout);
        let numbers: Vec<u64> = doc["data"]["tasks"]
            .as_array()
            .map(|a| a.iter().filter_map(|t| t["number"].as_u64()).collect())
            .unwrap_or_default();
        if out.status.code() != Some(0) || numbers != [1, 2, 3, 4, 5, 6] {
            failures.push(format!("{:?}: {numbers:?} {doc}", out.status.code()));
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let moves = mover.join().unwrap();
    assert!(
        moves > 40,
        "the mover ran alongside the readers ({moves} moves)"
    );
    assert!(
        failures.is_empty(),
        "{} of 40 listings:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
