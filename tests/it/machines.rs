//! Many machines (FORMAT §22): clones that exchange work through git never conflict on
//! records, agree on task numbers, and converge.

use std::path::{Path, PathBuf};
use std::process::Command as Std;

use serde_json::Value;

use crate::support::{Repo, git, one_json};

/// dacli in `dir` with the real clock and random source: two clones must never share a
/// pinned seed, or they would mint the same ids.
pub(crate) fn real(dir: &Path, args: &[&str], token: Option<&str>) -> Std {
    let mut cmd = Std::new(assert_cmd::cargo::cargo_bin("dacli"));
    cmd.current_dir(dir)
        .args(args)
        .env_remove("DACLI_TEST_CLOCK")
        .env_remove("DACLI_TEST_SEED")
        .env_remove("DACLI_TEST_FAULT")
        .env_remove("DACLI_AGENT")
        .env_remove("DACLI_LOCK_TIMEOUT_MS")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com");
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    cmd
}

/// Runs dacli with `--json`: (exit code, document).
pub(crate) fn run(dir: &Path, args: &[&str], token: Option<&str>) -> (i32, Value) {
    let out = real(dir, &[args, &["--json"]].concat(), token)
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    let text = String::from_utf8_lossy(&out.stdout);
    let doc = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (code, doc)
}

pub(crate) fn ok(dir: &Path, args: &[&str], token: Option<&str>) -> Value {
    let (code, doc) = run(dir, args, token);
    assert_eq!(code, 0, "{args:?} in {}: {doc}", dir.display());
    doc
}

/// A workspace with project `checkout`, committed, and `n` clones of it.
fn cloned(n: usize) -> (Repo, tempfile::TempDir, Vec<PathBuf>) {
    let origin = Repo::initialized();
    let _ = one_json(
        &origin
            .dacli(&["project", "add", "P", "--slug", "checkout", "--json"])
            .output()
            .unwrap()
            .stdout,
    );
    git(origin.path(), &["add", "-A"]);
    git(origin.path(), &["commit", "-qm", "workspace"]);
    let parent = tempfile::tempdir().unwrap();
    let clones = (0..n)
        .map(|i| {
            let name = format!("c{i}");
            git(
                parent.path(),
                &["clone", "-q", origin.path().to_str().unwrap(), &name],
            );
            parent.path().join(name)
        })
        .collect();
    (origin, parent, clones)
}

fn tasks(dir: &Path) -> Vec<Value> {
    ok(dir, &["task", "list", "--all"], None)["data"]["tasks"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn clones_adding_one_title_merge_cleanly_and_the_older_ulid_keeps_the_number() {
    let (_origin, _parent, clones) = cloned(2);
    let (one, two) = (&clones[0], &clones[1]);
    for dir in [one, two] {
        ok(dir, &["task", "add", "Same title 0", "--accept", "x"], None);
        ok(
            dir,
            &[
                "note",
                "add",
                "finding",
                "Same finding 0",
                "--severity",
                "minor",
            ],
            None,
        );
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-qm", "work"]);
    }
    // The older task is clone one's: it was created first.
    let older = tasks(one)[0]["id"].as_str().unwrap().to_string();
    let younger = tasks(two)[0]["id"].as_str().unwrap().to_string();
    assert!(older < younger);
    // No add/add conflict: every created path carries its record's ULID.
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
    let merged = tasks(one);
    assert_eq!(merged.len(), 2, "{merged:?}");
    assert!(merged.iter().all(|t| t["number"] == 1));
    let notes = ok(one, &["note", "list"], None)["data"]["notes"].clone();
    assert_eq!(notes.as_array().unwrap().len(), 2, "{notes}");

    // The shared number names the older task, with a notice.
    let shown = ok(one, &["task", "show", "1"], None);
    assert_eq!(shown["data"]["id"], older.as_str(), "{shown}");
    let notices: Vec<&Value> = shown["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|w| w["reason"] == "renumbered")
        .collect();
    assert_eq!(notices.len(), 1, "{shown}");
    assert!(
        notices[0]["detail"].as_str().unwrap().contains(&younger),
        "{shown}"
    );

    // The owner's sync gives the younger task the next number, once.
    let synced = ok(one, &["sync"], None);
    assert_eq!(
        synced["data"]["renumbered"][0]["id"],
        younger.as_str(),
        "{synced}"
    );
    assert_eq!(synced["data"]["renumbered"][0]["to"], 2, "{synced}");
    let after = tasks(one);
    let number_of = |id: &str| {
        after.iter().find(|t| t["id"] == id).unwrap()["number"]
            .as_u64()
            .unwrap()
    };
    assert_eq!((number_of(&older), number_of(&younger)), (1, 2));
    let again = ok(one, &["sync"], None);
    assert_eq!(again["data"]["renumbered"], serde_json::json!([]));
    let shown = ok(one, &["task", "show", "2"], None);
    assert_eq!(shown["data"]["id"], younger.as_str());
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

/// How many operations each clone runs: 200 (the convergence contract's figure; about a
/// minute and a half for both convergence tests), or `DACLI_MACHINES_OPS` when exploring.
fn ops_per_clone() -> usize {
    std::env::var("DACLI_MACHINES_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// Added to every seed: `DACLI_MACHINES_SEED` replays (or varies) the operations.
fn seed_base() -> u64 {
    std::env::var("DACLI_MACHINES_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// What one clone's operations reported as done.
#[derive(Default)]
struct Done {
    tasks: Vec<String>,
    notes: Vec<String>,
    comments: usize,
}

const CONTESTED: usize = 3;

/// A bare remote and `n` clones of a workspace with `CONTESTED` root-owned tasks and three
/// rw agents per clone (tokens returned per clone).
pub(crate) fn team(n: usize) -> (tempfile::TempDir, Vec<PathBuf>, Vec<Vec<String>>) {
    let seed = Repo::initialized();
    let mut tokens = Vec::new();
    for c in 0..n {
        tokens.push(
            (0..3)
                .map(|a| crate::lifecycle::agent(&seed, "builder", 100 + c * 3 + a, "rw").1)
                .collect(),
        );
    }
    for args in [
        &["project", "add", "P", "--slug", "checkout"][..],
        &["task", "add", "Contested 1", "--accept", "x"],
        &["task", "add", "Contested 2", "--accept", "x"],
        &["task", "add", "Contested 3", "--accept", "x"],
    ] {
        seed.dacli(args).assert().success();
    }
    git(seed.path(), &["add", "-A"]);
    git(seed.path(), &["commit", "-qm", "workspace"]);
    let parent = tempfile::tempdir().unwrap();
    let bare = parent.path().join("remote.git");
    git(
        parent.path(),
        &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
    );
    git(seed.path(), &["push", "-q", bare.to_str().unwrap(), "main"]);
    let clones = (0..n)
        .map(|i| {
            let name = format!("c{i}");
            git(
                parent.path(),
                &["clone", "-q", bare.to_str().unwrap(), &name],
            );
            parent.path().join(name)
        })
        .collect();
    (parent, clones, tokens)
}

/// One clone's seeded operations: colliding titles, contested claims, comments, checks and
/// finishes of its own tasks, the root owner's edits of contested tasks (made in every
/// clone), and `sync --remote` at random moments.
fn work(dir: &Path, tokens: &[String], ops: usize, seed: u64) -> Done {
    let mut rng = Mix(seed);
    let mut done = Done::default();
    let mut own: Vec<(usize, String)> = Vec::new();
    for k in 0..ops {
        let a = rng.below(tokens.len());
        let token = Some(tokens[a].as_str());
        let contested = format!("checkout/{}", 1 + rng.below(CONTESTED));
        match rng.below(9) {
            0 => {
                let (code, doc) = run(
                    dir,
                    &[
                        "task",
                        "add",
                        &format!("Same title {}", k % 3),
                        "--accept",
                        "`true` passes",
                    ],
                    token,
                );
                if code == 0 {
                    let id = doc["data"]["task"]["id"].as_str().unwrap().to_string();
                    own.push((a, id.clone()));
                    done.tasks.push(id);
                }
            }
            1 => {
                let (code, doc) = run(
                    dir,
                    &[
                        "note",
                        "add",
                        "finding",
                        &format!("Same finding {}", k % 3),
                        "--severity",
                        "minor",
                    ],
                    token,
                );
                if code == 0 {
                    done.notes
                        .push(doc["data"]["note"]["id"].as_str().unwrap().to_string());
                }
            }
            2 => {
                run(dir, &["task", "claim", &contested], token);
            }
            3 => {
                let (code, _) = run(
                    dir,
                    &[
                        "task",
                        "comment",
                        &contested,
                        &format!("seed {seed} op {k}"),
                    ],
                    token,
                );
                if code == 0 {
                    done.comments += 1;
                }
            }
            4 if !own.is_empty() => {
                let (owner, id) = own[rng.below(own.len())].clone();
                let t = Some(tokens[owner].as_str());
                run(dir, &["task", "check", &id, "--n", "1"], t);
                run(dir, &["task", "done", &id, "--summary", "done"], t);
            }
            5 => {
                // The root owner edits one contested task in several clones.
                let priority = ["must", "should", "could"][rng.below(3)];
                run(
                    dir,
                    &["task", "edit", &contested, "--priority", priority],
                    None,
                );
            }
            _ => {
                let who = if rng.below(2) == 0 { None } else { token };
                let (code, doc) = run(dir, &["sync", "--remote"], who);
                assert!(
                    code == 0 || code == 1,
                    "sync --remote in {}: {doc}",
                    dir.display()
                );
            }
        }
    }
    done
}

/// Final exchanges until every clone sits on one commit: each clone, in turn, syncs as
/// root and as each of its agents.
pub(crate) fn settle(clones: &[PathBuf], tokens: &[Vec<String>]) {
    for _round in 0..4 {
        for (c, dir) in clones.iter().enumerate() {
            for who in std::iter::once(None).chain(tokens[c].iter().map(|t| Some(t.as_str()))) {
                ok(dir, &["sync", "--remote"], who);
            }
        }
        let heads: Vec<String> = clones
            .iter()
            .map(|d| {
                let out = Std::new("git")
                    .current_dir(d)
                    .args(["rev-parse", "HEAD"])
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&out.stdout).trim().to_string()
            })
            .collect();
        if heads.iter().all(|h| *h == heads[0]) {
            return;
        }
    }
    panic!("clones did not converge on one commit");
}

/// The outputs every clone must agree on.
fn views(dir: &Path) -> Vec<Value> {
    [
        &["status"][..],
        &["task", "list", "--all"],
        &["note", "list", "--limit", "100000"],
        // `events list` shows 100 by default; every event is compared and counted.
        &["events", "list", "--limit", "100000"],
    ]
    .iter()
    .map(|args| ok(dir, args, None)["data"].clone())
    .collect()
}

pub(crate) fn no_conflict_markers(dir: &Path) {
    let out = Std::new("git")
        .current_dir(dir)
        .args([
            "grep",
            "-l",
            "-e",
            "^<<<<<<< ",
            "-e",
            "^>>>>>>> ",
            "--",
            ".dacli",
        ])
        .output()
        .unwrap();
    assert!(
        out.stdout.is_empty(),
        "conflict markers in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout)
    );
    let status = Std::new("git")
        .current_dir(dir)
        .args(["status", "--porcelain"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&status.stdout)
            .lines()
            .any(|l| l.starts_with("UU") || l.starts_with("AA")),
        "unmerged paths in {}",
        dir.display()
    );
}

/// One clone's share of the operations, run by its three agents at once (a thread each,
/// each with its own seed and its own token), as agents of one machine work: their
/// `sync --remote` runs overlap the other agents' writes.
fn agents_at_once(dir: &Path, tokens: &[String], ops: usize, seed: u64) -> Done {
    let per = ops.div_ceil(tokens.len());
    let shares: Vec<Done> = std::thread::scope(|s| {
        let handles: Vec<_> = tokens
            .iter()
            .enumerate()
            .map(|(a, token)| {
                let n = per.min(ops - (per * a).min(ops));
                s.spawn(move || work(dir, std::slice::from_ref(token), n, seed * 10 + a as u64))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    shares.into_iter().fold(Done::default(), |mut all, d| {
        all.tasks.extend(d.tasks);
        all.notes.extend(d.notes);
        all.comments += d.comments;
        all
    })
}

fn converge(kill: bool) {
    let (_parent, clones, tokens) = team(4);
    let ops = ops_per_clone();
    let done: Vec<Done> = std::thread::scope(|s| {
        let handles: Vec<_> = clones
            .iter()
            .enumerate()
            .map(|(c, dir)| {
                let tokens = &tokens[c];
                s.spawn(move || {
                    let first = agents_at_once(dir, tokens, ops / 2, seed_base() + 1000 + c as u64);
                    let second = std::thread::scope(|inner| {
                        if kill && c == 1 {
                            // A sync --remote killed mid-way, several times, while the
                            // clone's agents keep writing: the next run recovers.
                            inner.spawn(move || {
                                for delay in [30u64, 120, 400] {
                                    let mut child =
                                        real(dir, &["sync", "--remote"], None).spawn().unwrap();
                                    std::thread::sleep(std::time::Duration::from_millis(delay));
                                    let _ = child.kill();
                                    let _ = child.wait();
                                }
                            });
                        }
                        agents_at_once(dir, tokens, ops - ops / 2, seed_base() + 2000 + c as u64)
                    });
                    Done {
                        tasks: [first.tasks, second.tasks].concat(),
                        notes: [first.notes, second.notes].concat(),
                        comments: first.comments + second.comments,
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    settle(&clones, &tokens);
    let first = views(&clones[0]);
    for dir in &clones {
        no_conflict_markers(dir);
        assert_eq!(views(dir), first, "{} differs from c0", dir.display());
    }
    // Nothing lost, nothing doubled.
    let listed = first[1]["tasks"].as_array().unwrap();
    let mut ids: Vec<&str> = listed.iter().map(|t| t["id"].as_str().unwrap()).collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "a task is listed twice");
    let made: Vec<&String> = done.iter().flat_map(|d| &d.tasks).collect();
    assert_eq!(n, made.len() + CONTESTED, "tasks listed vs created");
    for id in &made {
        assert!(ids.contains(&id.as_str()), "task {id} lost");
    }
    let numbers: std::collections::BTreeSet<u64> = listed
        .iter()
        .map(|t| t["number"].as_u64().unwrap())
        .collect();
    assert_eq!(
        numbers.len(),
        n,
        "every task has its own number after the exchange"
    );
    let notes: Vec<&str> = first[2]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    for id in done.iter().flat_map(|d| &d.notes) {
        assert_eq!(notes.iter().filter(|n| **n == id).count(), 1, "note {id}");
    }
    let events = first[3]["events"].as_array().unwrap();
    let comments = events.iter().filter(|e| e["kind"] == "comment").count();
    assert_eq!(
        comments,
        done.iter().map(|d| d.comments).sum::<usize>(),
        "comments"
    );
    // One assignee per contested task: the author of its earliest claim.
    for t in listed
        .iter()
        .filter(|t| t["title"].as_str().unwrap().starts_with("Contested"))
    {
        let claims: Vec<&Value> = events
            .iter()
            .filter(|e| e["kind"] == "claim" && e["about"] == t["id"])
            .collect();
        if let Some(earliest) = claims.iter().min_by_key(|e| e["id"].as_str().unwrap()) {
            assert_eq!(t["assignee"], earliest["author"], "{t} {claims:?}");
        }
    }
}

#[test]
fn four_clones_of_three_agents_converge_through_a_bare_remote() {
    converge(false);
}

#[test]
fn a_clone_killed_in_the_middle_of_sync_remote_recovers_and_loses_nothing() {
    converge(true);
}

/// Two agents in two clones claim one task and each clone's owner applies its own claim
/// before they exchange: after the exchange every clone names the earlier claimant, and the
/// loser's `task show` and brief say its claim lost and what to do next.
#[test]
fn the_loser_of_a_claim_across_clones_is_told_and_pointed_at_another_task() {
    let (_parent, clones, tokens) = team(2);
    let (winner, loser) = (&tokens[0][0], &tokens[1][0]);
    ok(&clones[0], &["task", "claim", "1"], Some(winner));
    ok(&clones[1], &["task", "claim", "1"], Some(loser));
    // Each clone's owner applies the claim it sees: both succeed locally.
    for dir in &clones {
        ok(dir, &["sync"], None);
    }
    let loser_id = ok(&clones[1], &["whoami"], Some(loser))["data"]["agent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let shown = ok(&clones[1], &["task", "show", "1"], Some(loser));
    assert_eq!(shown["data"]["assignee"], loser_id.as_str(), "{shown}");
    settle(&clones, &tokens);
    for dir in &clones {
        let shown = ok(dir, &["task", "show", "1"], Some(loser));
        assert_ne!(shown["data"]["assignee"], loser_id.as_str(), "{shown}");
        let notice = &shown["data"]["notices"][0];
        assert_eq!(notice["code"], "claim_lost", "{shown}");
        assert!(
            notice["message"].as_str().unwrap().contains("dacli next"),
            "{notice}"
        );
        let brief = real(dir, &["context", "1"], Some(loser)).output().unwrap();
        let text = String::from_utf8_lossy(&brief.stdout);
        assert!(text.contains("Your claim lost"), "{text}");
        assert!(text.contains("dacli next"), "{text}");
        // The winner is told nothing of the kind.
        let theirs = ok(dir, &["task", "show", "1"], Some(winner));
        assert!(theirs["data"].get("notices").is_none(), "{theirs}");
    }
}

/// One clone moves the only task of `open/` to `active/` while another adds a task to
/// `open/`: git must not take the status folder for a renamed directory, so the exchange is
/// clean and the new task stays open in every clone.
#[test]
fn moving_the_only_open_task_does_not_rename_the_folder_for_another_clones_new_task() {
    let seed = Repo::initialized();
    seed.dacli(&["project", "add", "P", "--slug", "checkout"])
        .assert()
        .success();
    seed.dacli(&["task", "add", "Only open task", "--accept", "x"])
        .assert()
        .success();
    git(seed.path(), &["add", "-A"]);
    git(seed.path(), &["commit", "-qm", "workspace"]);
    let parent = tempfile::tempdir().unwrap();
    let bare = parent.path().join("remote.git");
    git(
        parent.path(),
        &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
    );
    git(seed.path(), &["push", "-q", bare.to_str().unwrap(), "main"]);
    let clones: Vec<PathBuf> = (0..2)
        .map(|i| {
            let name = format!("c{i}");
            git(
                parent.path(),
                &["clone", "-q", bare.to_str().unwrap(), &name],
            );
            parent.path().join(name)
        })
        .collect();
    // The owner claims its only open task in one clone (the file moves to active/) ...
    ok(&clones[0], &["task", "claim", "1"], None);
    ok(&clones[0], &["sync", "--remote"], None);
    // ... while the other clone adds a task to open/.
    let added = ok(
        &clones[1],
        &["task", "add", "New open task", "--accept", "y"],
        None,
    );
    let id = added["data"]["task"]["id"].as_str().unwrap().to_string();
    ok(&clones[1], &["sync", "--remote"], None);
    ok(&clones[0], &["sync", "--remote"], None);
    for dir in &clones {
        no_conflict_markers(dir);
        let all = tasks(dir);
        let new = all.iter().find(|t| t["id"] == id.as_str()).unwrap();
        assert_eq!(new["status"], "open", "{all:?}");
        assert_eq!(all.len(), 2, "{all:?}");
    }
}
