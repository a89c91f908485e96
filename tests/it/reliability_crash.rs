//! RELIABILITY K1, K2 and K3: crashes and I/O failures in the middle of every mutating command,
//! and the order of flushes that makes them survivable.
//!
//! - K2, deterministic: each command runs once cleanly, then again from the same starting
//!   workspace with `DACLI_TEST_FAULT=<op>:<n>` for every op and n = 1, 2, … until the command
//!   no longer reaches a fault. Every faulted run must exit 1 with `E_IO` naming a workspace
//!   path, leave every file under a final name byte-identical to the old or the new state (no
//!   torn or foreign file), and leave the workspace, as readers see it, old or new.
//! - K1, random: writers are SIGKILLed at random moments; afterwards no file under a final
//!   name is torn, every reader works, and `doctor --fix` sweeps the stale temp files.
//! - K3, the fsync-order audit: each command runs with `DACLI_TEST_FS_TRACE`, which makes the
//!   store log every durable step; the log must show data flushed before its name appears and
//!   each changed directory flushed before another changes and before the command ends.
//!
//! `scripts/soak` runs K1 with more kills through `DACLI_SOAK_KILLS`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command as Std, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::lifecycle::agent;
use crate::support::{Repo, dacli, one_json};

/// The records of a workspace: path under `.dacli/` → bytes, without the runtime and derived
/// directories (`.locks/`, `runs/`, `cache/`) and without temp files, which are counted apart.
#[derive(Clone, PartialEq, Eq)]
struct Tree {
    files: BTreeMap<String, Vec<u8>>,
    temps: Vec<String>,
}

fn snapshot(ws: &Path) -> Tree {
    fn walk(dir: &Path, rel: &str, t: &mut Tree) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if matches!(rel.as_str(), ".locks" | "runs" | "cache") {
                continue;
            }
            if name.starts_with(".dacli-tmp-") {
                t.temps.push(rel);
            } else if e.file_type().unwrap().is_dir() {
                walk(&e.path(), &rel, t);
            } else {
                t.files.insert(rel, std::fs::read(e.path()).unwrap());
            }
        }
    }
    let mut t = Tree {
        files: BTreeMap::new(),
        temps: Vec::new(),
    };
    walk(ws, "", &mut t);
    t
}

/// Puts the workspace back to `tree` exactly (runtime directories included are dropped).
fn restore(ws: &Path, tree: &Tree) {
    std::fs::remove_dir_all(ws).unwrap();
    for (rel, bytes) in &tree.files {
        let p = ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

/// One mutating command, run as root unless `as_agent`.
struct Case {
    args: &'static [&'static str],
    as_agent: bool,
}

const CASES: &[Case] = &[
    Case {
        args: &["project", "add", "New", "--slug", "new", "--goal", "g"],
        as_agent: false,
    },
    Case {
        args: &["task", "add", "Fresh", "--accept", "works"],
        as_agent: false,
    },
    Case {
        args: &["task", "edit", "1", "--priority", "must"],
        as_agent: false,
    },
    Case {
        args: &["task", "claim", "1"],
        as_agent: false,
    },
    Case {
        args: &["task", "check", "1", "--n", "1"],
        as_agent: false,
    },
    Case {
        args: &["task", "done", "2"],
        as_agent: false,
    },
    Case {
        args: &["task", "block", "1", "--reason", "waiting"],
        as_agent: false,
    },
    Case {
        args: &["sync"],
        as_agent: false,
    },
    Case {
        args: &["ask", "checkout/1", "Which rounding?"],
        as_agent: false,
    },
    Case {
        args: &[
            "note",
            "add",
            "finding",
            "Seen",
            "--severity",
            "minor",
            "--about",
            "checkout/1",
        ],
        as_agent: false,
    },
    Case {
        args: &[
            "note",
            "add",
            "decision",
            "Round once",
            "--chose",
            "once",
            "--rejected",
            "twice",
            "--because",
            "drift",
        ],
        as_agent: false,
    },
    Case {
        args: &[
            "risk",
            "add",
            "Drift",
            "--project",
            "checkout",
            "--impact",
            "high",
            "--likelihood",
            "high",
            "--indicator",
            "cents",
            "--action",
            "shim",
        ],
        as_agent: false,
    },
    Case {
        args: &[
            "glossary",
            "add",
            "--project",
            "checkout",
            "cent",
            "a hundredth",
        ],
        as_agent: false,
    },
    Case {
        args: &["agent", "spawn", "--grant", "ro"],
        as_agent: false,
    },
    Case {
        args: &["queue", "advance", "release"],
        as_agent: false,
    },
    Case {
        args: &[
            "role",
            "add",
            "tester",
            "--summary",
            "Tests",
            "--grant",
            "ro",
        ],
        as_agent: false,
    },
    Case {
        args: &["task", "claim", "1"],
        as_agent: true,
    },
    Case {
        args: &["task", "comment", "2", "looks fine"],
        as_agent: true,
    },
];

const OPS: [&str; 6] = ["write", "sync", "rename", "link", "remove", "mkdir"];

/// The starting workspace: project `checkout`, task 1 open (one criterion), task 2 with its
/// criterion checked, task 3 claimed by a builder (a pending event), a queue, an rw agent.
fn base() -> (Repo, String) {
    let repo = Repo::initialized();
    let (_, token) = agent(&repo, "builder", 1, "rw");
    for args in [
        &[
            "project", "add", "Checkout", "--slug", "checkout", "--goal", "Cents",
        ][..],
        &["task", "add", "Shim", "--accept", "works"],
        &["task", "add", "Docs", "--accept", "written"],
        &["task", "add", "Audit", "--accept", "read"],
        &["task", "check", "2", "--n", "1"],
        &[
            "queue", "add", "release", "--step", "Build", "--step", "Ship",
        ],
    ] {
        let (code, doc) = repo.json(args);
        assert_eq!(code, 0, "{args:?}: {doc}");
    }
    let out = repo
        .dacli(&["task", "claim", "3", "--json"])
        .env("DACLI_AGENT", &token)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    (repo, token)
}

/// Runs a case with a fixed clock and seed (so a clean and a faulted run mint the same ids).
fn run_case(repo: &Repo, case: &Case, token: &str, fault: Option<&str>) -> (i32, Value) {
    let mut cmd = dacli();
    cmd.current_dir(repo.path())
        .args(case.args)
        .arg("--json")
        .env("DACLI_TEST_CLOCK", "2026-03-02T12:00:00Z")
        .env("DACLI_TEST_SEED", "99");
    if case.as_agent {
        cmd.env("DACLI_AGENT", token);
    }
    if let Some(f) = fault {
        cmd.env("DACLI_TEST_FAULT", f);
    }
    let out = cmd.output().unwrap();
    (out.status.code().unwrap_or(-1), one_json(&out.stdout))
}

/// What readers see: every listing a user would consult, folded.
fn view(repo: &Repo) -> Vec<Value> {
    let reads: [&[&str]; 8] = [
        &["task", "list", "--all"],
        &["note", "list"],
        &["project", "list", "--status", "all"],
        &["agent", "list", "--status", "all"],
        &["risk", "list"],
        &["queue", "list"],
        &["glossary", "show", "--project", "checkout"],
        &["threads"],
    ];
    reads
        .iter()
        .map(|args| {
            let out = dacli()
                .current_dir(repo.path())
                .args(*args)
                .arg("--json")
                .env("DACLI_TEST_CLOCK", "2026-03-02T13:00:00Z")
                .output()
                .unwrap();
            let mut doc = one_json(&out.stdout);
            strip(&mut doc);
            doc
        })
        .collect()
}

/// Drops what says whether the owner has synced yet (`pending` counts), not what the state is:
/// a rewrite done before its receipt is the crash state FORMAT §14.3 declares repairable.
fn strip(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("pending");
            m.remove("warnings");
            for x in m.values_mut() {
                strip(x);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(strip),
        _ => {}
    }
}

#[derive(Default, Debug)]
struct Counts {
    faults: usize,
    exact_old: usize,
    exact_new: usize,
    folded: usize,
}

#[test]
fn k2_every_injected_fault_leaves_the_old_or_the_new_state_and_names_the_path() {
    let (repo, token) = base();
    let ws = repo.ws("");
    let old = snapshot(&ws);
    let old_view = view(&repo);
    let mut counts = Counts::default();
    let mut per_command = Vec::new();
    for case in CASES {
        restore(&ws, &old);
        let (code, doc) = run_case(&repo, case, &token, None);
        assert_eq!(code, 0, "{:?} runs cleanly: {doc}", case.args);
        let new = snapshot(&ws);
        assert_ne!(new.files, old.files, "{:?} writes something", case.args);
        let new_view = view(&repo);
        let mut points = 0;
        for op in OPS {
            for n in 1.. {
                restore(&ws, &old);
                let fault = format!("{op}:{n}");
                let (code, doc) = run_case(&repo, case, &token, Some(&fault));
                let after = snapshot(&ws);
                if code == 0 {
                    assert_eq!(after.files, new.files, "{:?} {fault}: clean", case.args);
                    break;
                }
                points += 1;
                counts.faults += 1;
                let what = format!("{:?} with {fault}", case.args);
                assert_eq!(code, 1, "{what}: {doc}");
                assert_eq!(doc["error"]["code"], "E_IO", "{what}: {doc}");
                let msg = doc["error"]["message"].as_str().unwrap();
                assert!(
                    // The workspace directory itself is flushed when a directory is made in it.
                    (msg.contains(".dacli/") || msg.contains(".dacli:"))
                        && msg.contains("injected fault"),
                    "{what}: names the path: {msg}"
                );
                // No torn or foreign file: every final name holds the old or the new bytes.
                for (rel, bytes) in &after.files {
                    assert!(
                        old.files.get(rel) == Some(bytes) || new.files.get(rel) == Some(bytes),
                        "{what}: {rel} is neither old nor new"
                    );
                }
                if after.files == old.files {
                    counts.exact_old += 1;
                } else if after.files == new.files {
                    counts.exact_new += 1;
                } else {
                    // Files of both states: readers must still see one of the two.
                    let seen = view(&repo);
                    assert!(
                        seen == old_view || seen == new_view,
                        "{what}: readers see a mixed state:\n{seen:#?}"
                    );
                    counts.folded += 1;
                }
            }
        }
        per_command.push(format!(
            "{} ({points})",
            case.args[..case.args.len().min(2)].join(" ")
        ));
    }
    println!(
        "K2: {} commands, {} injected faults: {} left the old files, {} the new, {} a mix readers see as one of them; points per command: {}",
        CASES.len(),
        counts.faults,
        counts.exact_old,
        counts.exact_new,
        counts.folded,
        per_command.join(", ")
    );
    assert!(counts.faults >= CASES.len() * 4, "{counts:?}");
}

#[test]
fn k1_doctor_fix_removes_stale_temp_files_and_keeps_fresh_ones() {
    let repo = Repo::initialized();
    let stale = repo.write(".dacli/agents/.dacli-tmp-00000000000000000001", "half");
    let fresh = repo.write(".dacli/agents/.dacli-tmp-00000000000000000002", "half");
    // A new task's file is staged in `cache/` until it is numbered: a kill leaves it there.
    let staged = repo.write(".dacli/cache/.dacli-tmp-00000000000000000003", "+++\n");
    let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    for old in [&stale, &staged] {
        std::fs::File::options()
            .write(true)
            .open(old)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
    }
    let (code, doc) = repo.json(&["status"]);
    assert_eq!(code, 0, "readers ignore temp files: {doc}");
    assert!(doc.get("warnings").is_none(), "{doc}");
    // The real clock: "older than ten minutes" is measured against now.
    let out = dacli()
        .current_dir(repo.path())
        .env_remove("DACLI_TEST_CLOCK")
        .args(["doctor", "--fix", "--json"])
        .output()
        .unwrap();
    let doc = one_json(&out.stdout);
    assert_eq!(doc["data"]["fixed"], 2, "{doc}");
    assert!(!stale.exists() && !staged.exists() && fresh.exists());
}

/// Each writing class of K1, as (argv, run as the builder).
const WRITERS: &[(&[&str], bool)] = &[
    (&["task", "add", "Killed", "--accept", "x"], false),
    (&["task", "edit", "1", "--priority", "must"], false),
    (&["task", "claim", "1"], false),
    (&["task", "release", "1"], false),
    (
        &["note", "add", "finding", "Killed", "--severity", "minor"],
        false,
    ),
    (&["task", "comment", "2", "killed"], true),
    (&["sync"], false),
];

/// Every file under a final name parses as what it is.
fn assert_untorn(ws: &Path) -> usize {
    let t = snapshot(ws);
    for (rel, bytes) in &t.files {
        if rel.ends_with(".md") {
            dacli::store::Document::parse(rel, bytes)
                .unwrap_or_else(|p| panic!("torn file {rel}: {p}"));
        } else if rel.ends_with(".toml") {
            let text = std::str::from_utf8(bytes).unwrap();
            text.parse::<toml_edit::DocumentMut>()
                .unwrap_or_else(|e| panic!("torn file {rel}: {e}"));
        }
    }
    t.temps.len()
}

#[test]
fn k1_sigkill_at_random_moments_leaves_no_torn_file() {
    let kills: usize = std::env::var("DACLI_SOAK_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50);
    let (repo, token) = base();
    let bin = assert_cmd::cargo::cargo_bin("dacli");
    // A small deterministic generator: the offsets are reproducible from the kill number.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut killed = 0;
    for i in 0..kills {
        let (args, as_agent) = WRITERS[i % WRITERS.len()];
        let mut cmd = Std::new(&bin);
        cmd.current_dir(repo.path())
            .args(args)
            .arg("--json")
            .env_remove("DACLI_TEST_CLOCK")
            .env_remove("DACLI_TEST_SEED")
            .env_remove("DACLI_TEST_FAULT")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if as_agent {
            cmd.env("DACLI_AGENT", &token);
        } else {
            cmd.env_remove("DACLI_AGENT");
        }
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_micros(1_000 + next() % 49_000));
        if child.try_wait().unwrap().is_none() {
            killed += 1;
        }
        let _ = child.kill();
        child.wait().unwrap();
    }
    let temps = assert_untorn(&repo.ws(""));
    // Every reader works and sees no malformed file; a move cut short is repaired by the next
    // writer of that task (FORMAT §4.2).
    let (code, doc) = repo.json(&["doctor"]);
    assert_eq!(code, 0, "{doc}");
    let check = |name: &str| {
        doc["data"]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()["status"]
            .clone()
    };
    assert_eq!(check("malformed_files"), "ok", "{doc}");
    let (code, list) = repo.json(&["task", "list", "--all"]);
    assert_eq!(code, 0, "{list}");
    for t in list["data"]["tasks"].as_array().unwrap() {
        let (code, doc) = repo.json(&[
            "task",
            "edit",
            t["id"].as_str().unwrap(),
            "--priority",
            "could",
        ]);
        assert_eq!(code, 0, "{doc}");
    }
    let (_, doc) = repo.json(&["doctor"]);
    let dups = doc["data"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "duplicate_ids")
        .unwrap()["status"]
        .clone();
    assert_eq!(dups, "ok", "{doc}");
    println!(
        "K1: {kills} SIGKILLs ({killed} while the writer still ran), 0 torn files, {temps} stale temps"
    );
}

/// The parent directory of a path as the trace prints it (relative to the work tree).
fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// Checks one command's trace of durable steps against RELIABILITY K3: a file's data is
/// flushed before its name is published (rename or link), and a directory whose entries
/// changed (rename, link, unlink, mkdir) is flushed before an entry of another directory
/// changes, and before the command ends. Returns the violations.
fn k3_violations(trace: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut created: BTreeMap<&str, bool> = BTreeMap::new(); // temp → flushed
    let mut dirty: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    for line in trace.lines() {
        let mut words = line.split(' ');
        let step = words.next().unwrap_or("");
        let a = words.next().unwrap_or("");
        let b = words.next();
        let changed = match (step, b) {
            ("create", _) => {
                created.insert(a, false);
                None
            }
            ("flush", _) => {
                created.insert(a, true);
                None
            }
            ("flushdir", _) => {
                dirty.remove(a);
                None
            }
            ("rename" | "link", Some(to)) => {
                if created.get(a) == Some(&false) {
                    out.push(format!("{line}: published before its data was flushed"));
                }
                Some(dir_of(to))
            }
            ("unlink" | "mkdir", _) => Some(dir_of(a)),
            _ => {
                out.push(format!("unknown trace line `{line}`"));
                None
            }
        };
        if let Some(d) = changed {
            for prev in dirty.iter().filter(|p| **p != d) {
                out.push(format!("{line}: {prev} changed and was not flushed first"));
            }
            dirty.insert(d);
        }
    }
    for d in dirty {
        out.push(format!("{d} changed and was never flushed"));
    }
    out
}

#[test]
fn k3_data_is_flushed_before_its_name_and_every_changed_directory_after() {
    let (repo, token) = base();
    let ws = repo.ws("");
    let old = snapshot(&ws);
    let traces = tempfile::tempdir().unwrap();
    let mut steps = 0;
    for (i, case) in CASES.iter().enumerate() {
        restore(&ws, &old);
        let trace = traces.path().join(format!("{i}.trace"));
        let mut cmd = dacli();
        cmd.current_dir(repo.path())
            .args(case.args)
            .arg("--json")
            .env("DACLI_TEST_CLOCK", "2026-03-02T12:00:00Z")
            .env("DACLI_TEST_SEED", "99")
            .env("DACLI_TEST_FS_TRACE", &trace);
        if case.as_agent {
            cmd.env("DACLI_AGENT", &token);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{:?}", case.args);
        let text = std::fs::read_to_string(&trace).unwrap_or_default();
        assert!(
            text.lines()
                .any(|l| l.starts_with("rename ") || l.starts_with("link ")),
            "{:?} published something: {text}",
            case.args
        );
        steps += text.lines().count();
        let bad = k3_violations(&text);
        assert!(bad.is_empty(), "{:?}: {bad:#?}\n{text}", case.args);
    }
    assert!(steps > CASES.len() * 4, "{steps} steps traced");
}

#[test]
fn the_k3_audit_catches_a_missing_flush() {
    let good = "create d/.tmp1\nflush d/.tmp1\nrename d/.tmp1 d/a.md\nflushdir d\n";
    assert!(k3_violations(good).is_empty());
    let unflushed_data = "create d/.tmp1\nrename d/.tmp1 d/a.md\nflushdir d\n";
    assert_eq!(k3_violations(unflushed_data).len(), 1);
    let unflushed_dir =
        "create d/.tmp1\nflush d/.tmp1\nlink d/.tmp1 d/a.md\nunlink e/b.md\nflushdir e\n";
    assert_eq!(
        k3_violations(unflushed_dir).len(),
        2,
        "d before e, and d never"
    );
}

/// The derived index is best effort: a failed write of `cache/` (the `derived` fault point,
/// counted apart from the durable steps K2 walks) changes no command's result, and the next
/// run without the fault answers the same.
#[test]
fn a_failed_cache_write_changes_no_result() {
    let (repo, _token) = base();
    let run = |fault: Option<&str>| {
        let mut cmd = dacli();
        cmd.current_dir(repo.path())
            .args(["task", "list", "--all", "--json"])
            .env("DACLI_TEST_CLOCK", "2026-03-02T12:00:00Z");
        if let Some(f) = fault {
            cmd.env("DACLI_TEST_FAULT", f);
        }
        let out = cmd.output().unwrap();
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    };
    std::fs::remove_dir_all(repo.ws("cache")).ok();
    let clean = run(None);
    let task_rows = || {
        rusqlite::Connection::open(repo.ws("cache/index.sqlite"))
            .and_then(|c| {
                c.query_row(
                    "SELECT coalesce(sum(length(meta)), 0) FROM parts WHERE kind LIKE 'tasks-checkout@%'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
            })
            .unwrap_or(0)
    };
    assert!(task_rows() > 0, "the task index was written");
    // Each of the first cache writes in turn (the event index, the task index, ...).
    let mut hit_tasks = false;
    for n in 1..=3 {
        std::fs::remove_dir_all(repo.ws("cache")).ok();
        let failed = run(Some(&format!("derived:{n}")));
        hit_tasks |= task_rows() == 0;
        assert_eq!(failed.0, Some(0), "derived:{n}: {}", failed.1);
        assert_eq!(failed, clean, "derived:{n}");
        assert_eq!(run(None), clean, "derived:{n}, then none");
    }
    assert!(hit_tasks, "a fault hit the task index");
}
