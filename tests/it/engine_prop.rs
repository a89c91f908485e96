//! The derived index never lies (FORMAT §21: deleting `cache/` MUST NOT change any output).
//!
//! A real git repository with a real workspace (root and two spawned rw agents, a project,
//! tasks owned by each, a second branch with different task files, a second clone) goes
//! through random steps: dacli commands by the three agents, and changes made behind dacli's
//! back the way people and tools make them — editors that truncate and write in place (with
//! and without putting the old mtime back), `cp -p`, `touch -r`, `sed -i`, a hand `mv` between
//! status folders, a malformed rewrite, and git's commit, checkout, stash and pull. After every
//! step the reads a user checks run with the index as the previous reads left it, then again
//! with `.dacli/cache/` deleted, then once more on the index that cold read rebuilt; stdout and
//! exit code must be identical each time.
//!
//! No step waits for the clock: a change usually lands in the same file-system timestamp tick
//! as the reads before it, which is exactly when a cache that trusts timestamps goes wrong.
//! Nothing is masked: the clock is pinned (each command advances it one second, reads do not)
//! and no read prints a timing field. `PROPTEST_CASES` raises the number of random cases,
//! `PROPTEST_MAX_SHRINK_ITERS` the shrinking; a failure lists the steps that ran, as commands.

use std::cell::{Cell, RefCell};
use std::ffi::OsStr;
use std::fs::{File, FileTimes};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command as Std, Output};

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestCaseError, TestError, TestRunner};

use crate::support::{CLOCK, SEED, dacli};

const PRIORITIES: [&str; 4] = ["must", "should", "could", "wont"];
const STATUSES: [&str; 4] = ["open", "active", "blocked", "done"];

/// Who runs a command: root, or one of the two agents root spawned with `rw`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Actor {
    Root,
    Builder,
    Reviewer,
}

/// One random step. `task` and `file` pick, modulo their count at the time, among the task
/// ids and task files on disk, so every step means something whatever ran before it.
#[derive(Clone, Debug)]
enum Step {
    Add {
        by: Actor,
        priority: u8,
    },
    Claim {
        by: Actor,
        task: u8,
    },
    Retitle {
        by: Actor,
        task: u8,
    },
    Reprioritize {
        by: Actor,
        task: u8,
        priority: u8,
    },
    Check {
        by: Actor,
        task: u8,
    },
    Block {
        by: Actor,
        task: u8,
    },
    Unblock {
        by: Actor,
        task: u8,
    },
    Done {
        by: Actor,
        task: u8,
        unverified: bool,
    },
    Decision {
        by: Actor,
        task: u8,
    },
    Finding {
        by: Actor,
        task: u8,
    },
    Comment {
        by: Actor,
        task: u8,
    },
    Ask {
        by: Actor,
        task: u8,
        blocking: bool,
    },
    Sync {
        by: Actor,
    },
    /// Truncate and write, as an editor saves; `same_size` keeps the length, `keep_mtime`
    /// puts the old modification time back.
    Rewrite {
        file: u8,
        same_size: bool,
        keep_mtime: bool,
    },
    /// `cp -p` of another task file over this one.
    CopyOver {
        file: u8,
        from: u8,
    },
    /// A same-size write, then `touch -r` to another task file (or, with `None`, to a copy of
    /// the file taken before the write).
    WriteTouch {
        file: u8,
        reference: Option<u8>,
    },
    /// `sed -i` on the title line.
    Sed {
        file: u8,
    },
    /// A hand `mv` to another status folder.
    Move {
        file: u8,
        to: u8,
    },
    /// The closing fence broken (same size), optionally with the old mtime put back.
    Malform {
        file: u8,
        keep_mtime: bool,
    },
    Commit,
    /// Commit everything, check out the other branch; with `back`, return at once.
    Checkout {
        back: bool,
    },
    /// `git stash -u` when nothing is stashed, `git stash pop` when something is.
    Stash,
    /// The second clone adds a task and a comment (and with `edit` retitles a task), commits;
    /// this repository commits and pulls it.
    Pull {
        edit: bool,
        task: u8,
    },
}

fn actor() -> impl Strategy<Value = Actor> {
    prop_oneof![
        Just(Actor::Root),
        Just(Actor::Builder),
        Just(Actor::Reviewer)
    ]
}

fn step() -> impl Strategy<Value = Step> {
    let n = any::<u8>;
    prop_oneof![
        2 => (actor(), n()).prop_map(|(by, priority)| Step::Add { by, priority }),
        2 => (actor(), n()).prop_map(|(by, task)| Step::Claim { by, task }),
        1 => (actor(), n()).prop_map(|(by, task)| Step::Retitle { by, task }),
        1 => (actor(), n(), n())
            .prop_map(|(by, task, priority)| Step::Reprioritize { by, task, priority }),
        1 => (actor(), n()).prop_map(|(by, task)| Step::Check { by, task }),
        1 => (actor(), n()).prop_map(|(by, task)| Step::Block { by, task }),
        1 => (actor(), n()).prop_map(|(by, task)| Step::Unblock { by, task }),
        1 => (actor(), n(), any::<bool>())
            .prop_map(|(by, task, unverified)| Step::Done { by, task, unverified }),
        1 => (actor(), n()).prop_map(|(by, task)| Step::Decision { by, task }),
        1 => (actor(), n()).prop_map(|(by, task)| Step::Finding { by, task }),
        1 => (actor(), n()).prop_map(|(by, task)| Step::Comment { by, task }),
        1 => (actor(), n(), any::<bool>())
            .prop_map(|(by, task, blocking)| Step::Ask { by, task, blocking }),
        1 => actor().prop_map(|by| Step::Sync { by }),
        4 => (n(), any::<bool>(), any::<bool>()).prop_map(|(file, same_size, keep_mtime)| {
            Step::Rewrite { file, same_size, keep_mtime }
        }),
        2 => (n(), n()).prop_map(|(file, from)| Step::CopyOver { file, from }),
        2 => (n(), proptest::option::of(n()))
            .prop_map(|(file, reference)| Step::WriteTouch { file, reference }),
        2 => n().prop_map(|file| Step::Sed { file }),
        2 => (n(), n()).prop_map(|(file, to)| Step::Move { file, to }),
        1 => (n(), any::<bool>()).prop_map(|(file, keep_mtime)| Step::Malform { file, keep_mtime }),
        1 => Just(Step::Commit),
        2 => any::<bool>().prop_map(|back| Step::Checkout { back }),
        2 => Just(Step::Stash),
        1 => (any::<bool>(), n()).prop_map(|(edit, task)| Step::Pull { edit, task }),
    ]
}

#[test]
fn random_commands_and_external_changes_read_the_same_with_the_index_deleted() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let max_shrink_iters = std::env::var("PROPTEST_MAX_SHRINK_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48);
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
        max_shrink_iters,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let steps = proptest::collection::vec((step(), any::<u8>()), 8..=14);
    let result = runner.run(&steps, |steps| {
        let ws = Ws::setup();
        ws.compare(0).map_err(TestCaseError::fail)?;
        for (step, pick) in &steps {
            ws.apply(step);
            ws.compare(*pick).map_err(TestCaseError::fail)?;
        }
        Ok(())
    });
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, _)) => panic!("{reason}"),
        Err(TestError::Abort(reason)) => panic!("aborted: {reason}"),
    }
}

// One deterministic test per kind of external change: the index is warm (just rebuilt and
// read), the change lands at once, and the reads must not notice the index.

#[test]
fn an_in_place_write_with_the_mtime_restored_reads_the_same_with_the_index_deleted() {
    external(3, |ws| ws.rewrite(3, true, true));
}

#[test]
fn a_cp_p_over_a_task_file_reads_the_same_with_the_index_deleted() {
    external(3, |ws| ws.copy_over(3, 2));
}

#[test]
fn a_write_then_touch_r_reads_the_same_with_the_index_deleted() {
    external(3, |ws| ws.write_touch(3, None));
}

#[test]
fn a_sed_i_reads_the_same_with_the_index_deleted() {
    external(3, |ws| ws.sed(3));
}

#[test]
fn a_hand_mv_between_status_folders_reads_the_same_with_the_index_deleted() {
    external(3, |ws| ws.move_to(3, 3));
}

#[test]
fn a_checkout_of_another_branch_and_back_reads_the_same_with_the_index_deleted() {
    external(3, |ws| ws.checkout(true));
}

/// Reads (the index is built by the setup's last compare), then `change` to the task file
/// `file` picks at once, then the warm / deleted / rebuilt comparison, with `task show` and
/// `context` on the task that file held.
fn external(file: u8, change: impl FnOnce(&Ws) -> String) {
    let ws = Ws::setup();
    let path = ws.file(file).expect("a task file");
    let id = task_ids(&ws.repo)
        .iter()
        .position(|id| file_id(&path).as_deref() == Some(id.as_str()))
        .expect("the file's id");
    let pick = u8::try_from(id).expect("few tasks");
    ws.compare(pick).unwrap_or_else(|e| panic!("{e}"));
    let did = change(&ws);
    ws.log.borrow_mut().push(did);
    ws.compare(pick).unwrap_or_else(|e| panic!("{e}"));
}

/// The repository under test, its second clone, the agents' tokens and what happened so far.
struct Ws {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    clone: PathBuf,
    /// Seconds past the pinned clock; every command advances it, reads do not.
    tick: Cell<i64>,
    builder: String,
    reviewer: String,
    stashed: Cell<bool>,
    log: RefCell<Vec<String>>,
}

impl Ws {
    /// `dacli init`, a project, two spawned rw agents, four tasks (two root's, one each
    /// agent's) with pending events on them, committed; a branch `other` where task 1 is
    /// retitled, task 2 blocked and a fifth task exists; a clone of `main`.
    fn setup() -> Ws {
        let tmp = tempfile::tempdir().expect("temp dir");
        let repo = tmp.path().join("repo");
        std::fs::create_dir(&repo).expect("mkdir");
        git(&repo, &["init", "-q", "-b", "main"]);
        let mut ws = Ws {
            clone: tmp.path().join("clone"),
            _tmp: tmp,
            repo,
            tick: Cell::new(0),
            builder: String::new(),
            reviewer: String::new(),
            stashed: Cell::new(false),
            log: RefCell::new(vec!["setup".to_string()]),
        };
        ws.ok(Actor::Root, &["init"]);
        ws.ok(
            Actor::Root,
            &["project", "add", "Ledger", "--slug", "ledger"],
        );
        ws.builder = ws.spawn();
        ws.reviewer = ws.spawn();
        let accept = [
            "--accept",
            "reads every row",
            "--accept",
            "rejects a bad row",
        ];
        for (by, title) in [
            (Actor::Root, "Parse the ledger"),
            (Actor::Root, "Round half even"),
            (Actor::Builder, "Cache the rates"),
            (Actor::Reviewer, "Review the shim"),
        ] {
            let mut args = vec!["task", "add", title];
            args.extend(accept);
            ws.ok(by, &args);
        }
        ws.ok(Actor::Builder, &["task", "claim", "1"]);
        ws.ok(Actor::Root, &["task", "claim", "2"]);
        ws.ok(
            Actor::Reviewer,
            &["task", "comment", "3", "Rates change hourly"],
        );
        ws.commit("seed");
        git(&ws.repo, &["checkout", "-q", "-b", "other"]);
        ws.ok(
            Actor::Root,
            &["task", "edit", "1", "--title", "Parse both ledgers"],
        );
        ws.ok(
            Actor::Root,
            &["task", "block", "2", "--reason", "waits on rates"],
        );
        ws.ok(Actor::Root, &["task", "add", "Only on the other branch"]);
        ws.commit("other");
        git(&ws.repo, &["checkout", "-q", "main"]);
        let (repo, clone) = (
            ws.repo.display().to_string(),
            ws.clone.display().to_string(),
        );
        git(&ws.repo, &["clone", "-q", &repo, &clone]);
        ws
    }

    /// Runs dacli in `dir` as `by` at the current tick.
    fn run_in(&self, dir: &Path, by: Actor, args: &[&str]) -> Output {
        let clock: jiff::Timestamp = CLOCK.parse().expect("pinned clock");
        let tick = self.tick.get();
        let now = jiff::Timestamp::from_second(clock.as_second() + tick).expect("in range");
        let seed = SEED.parse::<i64>().expect("pinned seed") + tick;
        let mut cmd = dacli();
        cmd.current_dir(dir)
            .args(args)
            .env("DACLI_TEST_CLOCK", now.to_string())
            .env("DACLI_TEST_SEED", seed.to_string());
        match by {
            Actor::Root => {}
            Actor::Builder => {
                cmd.env("DACLI_AGENT", &self.builder);
            }
            Actor::Reviewer => {
                cmd.env("DACLI_AGENT", &self.reviewer);
            }
        }
        cmd.output().expect("dacli runs")
    }

    /// A command: a new tick, so ids minted by successive processes are unique and ordered.
    fn command_in(&self, dir: &Path, by: Actor, args: &[&str]) -> String {
        self.tick.set(self.tick.get() + 1);
        let out = self.run_in(dir, by, args);
        format!("{by:?}: dacli {} -> exit {}", args.join(" "), code(&out))
    }

    fn command(&self, by: Actor, args: &[&str]) -> String {
        self.command_in(&self.repo.clone(), by, args)
    }

    /// A setup command that must succeed.
    fn ok(&self, by: Actor, args: &[&str]) -> String {
        self.tick.set(self.tick.get() + 1);
        let out = self.run_in(&self.repo, by, args);
        assert!(
            out.status.success(),
            "setup: dacli {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// `agent spawn --grant rw` as root: the token.
    fn spawn(&self) -> String {
        self.ok(Actor::Root, &["agent", "spawn", "--grant", "rw"])
    }

    /// The reads compared: exit code and stdout of each, at the current tick, as root.
    fn reads(&self, pick: u8) -> Vec<String> {
        let id = pick_of(&task_ids(&self.repo), pick).unwrap_or_else(|| "1".to_string());
        let reads: [&[&str]; 5] = [
            &["status", "--json"],
            &["task", "list", "--json", "--all"],
            &["task", "show", &id, "--json"],
            &["context", &id],
            &["events", "list", "--json"],
        ];
        reads
            .iter()
            .map(|args| {
                let out = self.run_in(&self.repo, Actor::Root, args);
                format!(
                    "$ dacli {}\nexit {}\n{}",
                    args.join(" "),
                    code(&out),
                    String::from_utf8_lossy(&out.stdout)
                )
            })
            .collect()
    }

    /// The reads with the index as it is, with `.dacli/cache/` deleted, and once more on the
    /// index the cold read rebuilt: all three must be identical.
    fn compare(&self, pick: u8) -> Result<(), String> {
        let warm = self.reads(pick);
        match std::fs::remove_dir_all(self.repo.join(".dacli/cache")) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("delete the index: {e}"),
        }
        let cold = self.reads(pick);
        let rebuilt = self.reads(pick);
        self.same(
            "the index as the last reads left it",
            &warm,
            "no index",
            &cold,
        )?;
        self.same("no index", &cold, "the index that read rebuilt", &rebuilt)
    }

    fn same(&self, a_name: &str, a: &[String], b_name: &str, b: &[String]) -> Result<(), String> {
        if a == b {
            return Ok(());
        }
        // One-line JSON documents split after each `,` so the diff shows the fields that
        // differ, not the whole document.
        let (a, b) = (split_json(&a.join("\n")), split_json(&b.join("\n")));
        let diff = similar::TextDiff::from_lines(&a, &b)
            .unified_diff()
            .context_radius(3)
            .header(a_name, b_name)
            .to_string();
        let log = self.log.borrow();
        let steps: String = log
            .iter()
            .enumerate()
            .map(|(i, s)| format!("  {i:2}. {s}\n"))
            .collect();
        Err(format!(
            "after step {} the reads differ between {a_name} and {b_name}.\nsteps:\n{steps}diff of the reads' exit codes and stdout:\n{diff}",
            log.len() - 1,
        ))
    }

    /// Runs one step and logs what it did.
    fn apply(&self, step: &Step) {
        let ids = task_ids(&self.repo);
        let task = |t: u8| pick_of(&ids, t).unwrap_or_else(|| "1".to_string());
        let n = self.log.borrow().len();
        let did = match *step {
            Step::Add { by, priority } => {
                let title = format!("Task from step {n}");
                let priority = PRIORITIES[priority as usize % 4];
                let args = [
                    "task",
                    "add",
                    title.as_str(),
                    "--accept",
                    "works",
                    "--accept",
                    "is fast",
                ];
                let mut args = args.to_vec();
                args.extend(["--priority", priority]);
                self.command(by, &args)
            }
            Step::Claim { by, task: t } => self.command(by, &["task", "claim", &task(t)]),
            Step::Retitle { by, task: t } => {
                let title = format!("Renamed at step {n}");
                self.command(by, &["task", "edit", &task(t), "--title", title.as_str()])
            }
            Step::Reprioritize {
                by,
                task: t,
                priority,
            } => {
                let priority = PRIORITIES[priority as usize % 4];
                self.command(by, &["task", "edit", &task(t), "--priority", priority])
            }
            Step::Check { by, task: t } => {
                self.command(by, &["task", "check", &task(t), "--n", "1"])
            }
            Step::Block { by, task: t } => {
                let reason = format!("waits (step {n})");
                self.command(by, &["task", "block", &task(t), "--reason", &reason])
            }
            Step::Unblock { by, task: t } => self.command(by, &["task", "unblock", &task(t)]),
            Step::Done {
                by,
                task: t,
                unverified,
            } => {
                let t = task(t);
                if unverified {
                    let args = [
                        "task",
                        "done",
                        t.as_str(),
                        "--allow-unverified",
                        "--reason",
                        "enough",
                    ];
                    self.command(by, &args)
                } else {
                    self.command(by, &["task", "done", &t])
                }
            }
            Step::Decision { by, task: t } => {
                let title = format!("Decision at step {n}");
                let t = task(t);
                let args = [
                    "note",
                    "add",
                    "decision",
                    title.as_str(),
                    "--about",
                    t.as_str(),
                ];
                let rest = ["--chose", "a", "--rejected", "b", "--because", "c"];
                self.command(by, &[&args[..], &rest[..]].concat())
            }
            Step::Finding { by, task: t } => {
                let title = format!("Finding at step {n}");
                let t = task(t);
                let args = [
                    "note",
                    "add",
                    "finding",
                    title.as_str(),
                    "--about",
                    t.as_str(),
                ];
                let rest = ["--severity", "minor", "--body", "seen once"];
                self.command(by, &[&args[..], &rest[..]].concat())
            }
            Step::Comment { by, task: t } => {
                let text = format!("comment at step {n}");
                self.command(by, &["task", "comment", &task(t), &text])
            }
            Step::Ask {
                by,
                task: t,
                blocking,
            } => {
                let question = format!("question at step {n}?");
                let t = task(t);
                let mut args = vec!["ask", t.as_str(), question.as_str()];
                if !blocking {
                    args.push("--no-block");
                }
                self.command(by, &args)
            }
            Step::Sync { by } => self.command(by, &["sync"]),
            Step::Rewrite {
                file,
                same_size,
                keep_mtime,
            } => self.rewrite(file, same_size, keep_mtime),
            Step::CopyOver { file, from } => self.copy_over(file, from),
            Step::WriteTouch { file, reference } => self.write_touch(file, reference),
            Step::Sed { file } => self.sed(file),
            Step::Move { file, to } => self.move_to(file, to),
            Step::Malform { file, keep_mtime } => self.malform(file, keep_mtime),
            Step::Commit => {
                self.commit("step");
                "git add -A && git commit".to_string()
            }
            Step::Checkout { back } => self.checkout(back),
            Step::Stash => self.stash(),
            Step::Pull { edit, task } => self.pull(edit, task),
        };
        self.log.borrow_mut().push(did);
    }

    /// The task file `file` picks, or `None` when there is none.
    fn file(&self, file: u8) -> Option<PathBuf> {
        let files = task_files(&self.repo);
        (!files.is_empty()).then(|| files[file as usize % files.len()].clone())
    }

    fn rel(&self, path: &Path) -> String {
        path.strip_prefix(&self.repo)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    /// Truncates `path` and writes `text`, as an editor saves in place.
    fn write_in_place(&self, path: &Path, text: &str, keep_mtime: bool) {
        let before = std::fs::metadata(path)
            .expect("stat")
            .modified()
            .expect("mtime");
        let mut f = File::options()
            .write(true)
            .truncate(true)
            .open(path)
            .expect("open for writing");
        f.write_all(text.as_bytes()).expect("write");
        if keep_mtime {
            f.set_times(FileTimes::new().set_modified(before))
                .expect("restore mtime");
        }
    }

    fn rewrite(&self, file: u8, same_size: bool, keep_mtime: bool) -> String {
        let Some(path) = self.file(file) else {
            return "rewrite: no task file".to_string();
        };
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let changed = if same_size {
            same_size_edit(&text)
        } else {
            longer_edit(&text)
        };
        self.write_in_place(&path, &changed, keep_mtime);
        format!(
            "in-place write of {} ({}{})",
            self.rel(&path),
            if same_size {
                "same size"
            } else {
                "longer title, priority could"
            },
            if keep_mtime { ", mtime restored" } else { "" }
        )
    }

    fn copy_over(&self, file: u8, from: u8) -> String {
        let files = task_files(&self.repo);
        if files.len() < 2 {
            return "cp -p: fewer than two task files".to_string();
        }
        let to = file as usize % files.len();
        let mut src = from as usize % files.len();
        if src == to {
            src = (src + 1) % files.len();
        }
        run(
            "cp",
            [
                OsStr::new("-p"),
                files[src].as_os_str(),
                files[to].as_os_str(),
            ],
        );
        format!("cp -p {} {}", self.rel(&files[src]), self.rel(&files[to]))
    }

    fn write_touch(&self, file: u8, reference: Option<u8>) -> String {
        let Some(path) = self.file(file) else {
            return "touch -r: no task file".to_string();
        };
        let saved = self._tmp.path().join("touch-reference");
        run(
            "cp",
            [OsStr::new("-p"), path.as_os_str(), saved.as_os_str()],
        );
        let (reference, named) = match reference.and_then(|r| self.file(r)) {
            Some(other) => (other.clone(), self.rel(&other)),
            None => (saved.clone(), "the file as it was".to_string()),
        };
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        self.write_in_place(&path, &same_size_edit(&text), false);
        run(
            "touch",
            [OsStr::new("-r"), reference.as_os_str(), path.as_os_str()],
        );
        format!(
            "same-size in-place write of {}, then touch -r {named}",
            self.rel(&path)
        )
    }

    fn sed(&self, file: u8) -> String {
        let Some(path) = self.file(file) else {
            return "sed -i: no task file".to_string();
        };
        let script = r"s/^# \(.*\)$/# \1 (sed)/";
        run(
            "sed",
            [OsStr::new("-i"), OsStr::new(script), path.as_os_str()],
        );
        format!("sed -i '{script}' {}", self.rel(&path))
    }

    fn move_to(&self, file: u8, to: u8) -> String {
        let Some(path) = self.file(file) else {
            return "mv: no task file".to_string();
        };
        let tasks = path
            .parent()
            .and_then(Path::parent)
            .expect("tasks/<status>/");
        let from = path
            .parent()
            .and_then(Path::file_name)
            .expect("status folder");
        let mut status = STATUSES[to as usize % 4];
        if from.to_str() == Some(status) {
            status = STATUSES[(to as usize + 1) % 4];
        }
        let folder = tasks.join(status);
        std::fs::create_dir_all(&folder).expect("mkdir");
        let dest = folder.join(path.file_name().expect("file name"));
        run("mv", [path.as_os_str(), dest.as_os_str()]);
        format!("mv {} {}", self.rel(&path), self.rel(&dest))
    }

    fn malform(&self, file: u8, keep_mtime: bool) -> String {
        let Some(path) = self.file(file) else {
            return "malform: no task file".to_string();
        };
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        // The closing fence `+++` becomes `+-+`: same size, no frontmatter end.
        let broken = match text.get(3..).and_then(|rest| rest.find("\n+++\n")) {
            Some(at) => {
                let at = at + 3;
                format!("{}\n+-+\n{}", &text[..at], &text[at + 5..])
            }
            None => format!("{text}garbage = [\n"),
        };
        self.write_in_place(&path, &broken, keep_mtime);
        format!(
            "malformed in-place write of {} (closing fence broken{})",
            self.rel(&path),
            if keep_mtime { ", mtime restored" } else { "" }
        )
    }

    fn commit(&self, message: &str) {
        git(&self.repo, &["add", "-A"]);
        git(
            &self.repo,
            &["commit", "-q", "--allow-empty", "-m", message],
        );
    }

    fn branch(&self) -> String {
        let out = git_out(&self.repo, &["rev-parse", "--abbrev-ref", "HEAD"]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn checkout(&self, back: bool) -> String {
        self.commit("before checkout");
        let here = self.branch();
        let there = if here == "main" { "other" } else { "main" };
        git(&self.repo, &["checkout", "-q", there]);
        if back {
            git(&self.repo, &["checkout", "-q", &here]);
            format!("git commit; git checkout {there}; git checkout {here}")
        } else {
            format!("git commit; git checkout {there}")
        }
    }

    fn stash(&self) -> String {
        if !self.stashed.get() {
            git(&self.repo, &["stash", "push", "-q", "-u"]);
            let list = git_out(&self.repo, &["stash", "list"]);
            self.stashed.set(!list.stdout.is_empty());
            return if self.stashed.get() {
                "git stash push -u".to_string()
            } else {
                "git stash push -u (nothing to stash)".to_string()
            };
        }
        self.stashed.set(false);
        if git_out(&self.repo, &["stash", "pop", "-q"])
            .status
            .success()
        {
            return "git stash pop".to_string();
        }
        // The stash does not apply on the current tree: put the tree back to HEAD and retry,
        // else drop it.
        git(&self.repo, &["reset", "-q", "--hard"]);
        git(&self.repo, &["clean", "-q", "-fd"]);
        if git_out(&self.repo, &["stash", "pop", "-q"])
            .status
            .success()
        {
            return "git stash pop (failed); git reset --hard; git clean -fd; git stash pop"
                .to_string();
        }
        git(&self.repo, &["reset", "-q", "--hard"]);
        git(&self.repo, &["clean", "-q", "-fd"]);
        git(&self.repo, &["stash", "drop", "-q"]);
        "git stash pop (failed twice); git reset --hard; git clean -fd; git stash drop".to_string()
    }

    fn pull(&self, edit: bool, task: u8) -> String {
        let clone = self.clone.clone();
        // The clone starts from what this repository committed, so its own changes are all
        // the pull brings; what is not committed here yet is committed just before the pull,
        // which then merges two lines of history.
        let source = self.repo.display().to_string();
        git(&clone, &["fetch", "-q", &source, "HEAD"]);
        git(&clone, &["reset", "-q", "--hard", "FETCH_HEAD"]);
        let n = self.log.borrow().len();
        let title = format!("Pulled at step {n}");
        let add = ["task", "add", title.as_str(), "--accept", "merges"];
        let mut did = vec![self.command_in(&clone, Actor::Root, &add)];
        let t = pick_of(&task_ids(&clone), task).unwrap_or_else(|| "1".to_string());
        let comment = format!("from the clone at step {n}");
        let args = ["task", "comment", t.as_str(), comment.as_str()];
        did.push(self.command_in(&clone, Actor::Builder, &args));
        if edit {
            let title = format!("Retitled in the clone at step {n}");
            let args = ["task", "edit", t.as_str(), "--title", title.as_str()];
            did.push(self.command_in(&clone, Actor::Root, &args));
        }
        git(&clone, &["add", "-A"]);
        git(&clone, &["commit", "-q", "--allow-empty", "-m", "clone"]);
        self.commit("before pull");
        let source = clone.display().to_string();
        let args = [
            "pull",
            "-q",
            "--no-rebase",
            "--no-edit",
            source.as_str(),
            "HEAD",
        ];
        let outcome = if git_out(&self.repo, &args).status.success() {
            "git pull".to_string()
        } else {
            git(&self.repo, &["merge", "--abort"]);
            "git pull (conflict); git merge --abort".to_string()
        };
        format!(
            "in the clone (reset to this HEAD): {}; git commit; here: git commit; {outcome}",
            did.join("; ")
        )
    }
}

/// Toggles the case of the title's first letter and swaps `must` and `wont`: the same bytes
/// count, different content.
fn same_size_edit(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut titled = false;
    for line in text.split_inclusive('\n') {
        if !titled && line.starts_with("# ") && line.len() > 3 {
            titled = true;
            let c = line[2..].chars().next().unwrap_or('x');
            let flipped: String = if c.is_uppercase() {
                c.to_lowercase().collect()
            } else {
                c.to_uppercase().collect()
            };
            if flipped.len() == c.len_utf8() {
                out.push_str("# ");
                out.push_str(&flipped);
                out.push_str(&line[2 + c.len_utf8()..]);
                continue;
            }
        }
        match line {
            "priority = \"must\"\n" => out.push_str("priority = \"wont\"\n"),
            "priority = \"wont\"\n" => out.push_str("priority = \"must\"\n"),
            _ => out.push_str(line),
        }
    }
    out
}

/// Appends to the title and sets the priority to `could`.
fn longer_edit(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut titled = false;
    for line in text.split_inclusive('\n') {
        if !titled && line.starts_with("# ") {
            titled = true;
            out.push_str(line.trim_end_matches('\n'));
            out.push_str(" (edited)\n");
        } else if line.starts_with("priority = ") {
            out.push_str("priority = \"could\"\n");
        } else {
            out.push_str(line);
        }
    }
    out
}

/// Every task file under `.dacli/projects/*/tasks/*/`, sorted.
fn task_files(repo: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let projects = repo.join(".dacli/projects");
    for project in entries(&projects) {
        for status in entries(&project.join("tasks")) {
            files.extend(
                entries(&status)
                    .into_iter()
                    .filter(|p| p.extension().is_some_and(|e| e == "md")),
            );
        }
    }
    files.sort();
    files
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default()
}

/// The task ids the files on disk declare, sorted and unique: picked without asking dacli,
/// so a stale index cannot steer what is read.
fn task_ids(repo: &Path) -> Vec<String> {
    let mut ids: Vec<String> = task_files(repo).iter().filter_map(|p| file_id(p)).collect();
    ids.sort();
    ids.dedup();
    ids
}

/// The `id` a task file declares, read as text (the file may be malformed).
fn file_id(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("id = \"").and_then(|r| r.strip_suffix('"')))
        .map(str::to_string)
}

fn pick_of(items: &[String], pick: u8) -> Option<String> {
    (!items.is_empty()).then(|| items[pick as usize % items.len()].clone())
}

fn code(out: &Output) -> String {
    out.status
        .code()
        .map_or_else(|| "killed".to_string(), |c| c.to_string())
}

/// Long lines split after each `,`, one field a line, for a readable diff.
fn split_json(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.len() > 120 {
                l.split_inclusive(',').collect::<Vec<_>>().join("\n")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn run<const N: usize>(program: &str, args: [&OsStr; N]) {
    let out = Std::new(program).args(args).output().expect("runs");
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn git_out(dir: &Path, args: &[&str]) -> Output {
    Std::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs")
}

fn git(dir: &Path, args: &[&str]) {
    let out = git_out(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}
