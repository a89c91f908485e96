//! `bench run`'s mixed-workload and cold sections: the first read after each kind of write (and
//! the write itself), and each read with the index deleted, as ratios to the `--version` floor
//! measured in the same section.
//!
//! Every write is real and repeatable: the claims, checks, blocks and finishes each take a task
//! of their own from pools made before timing starts; the edit and the external rewrites toggle
//! between two versions of one task; the other branch for `git checkout` is committed once.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{Value, json};

use crate::mkws::{Built, PROJECT, cli};
use crate::rss;
use crate::run::{Options, command, median, min, percentile, round3};

/// The reads timed after each write: name and argv (`task` is the context task).
pub const READS: [&str; 4] = ["status", "task_list", "context", "task_show"];

fn read_argv(read: &str, task: &str) -> Vec<String> {
    let argv: &[&str] = match read {
        "status" => &["status", "--json"],
        "task_list" => &["task", "list", "--json", "--limit", "50"],
        "context" => &["context", task],
        _ => &["task", "show", task, "--json"],
    };
    argv.iter().map(|s| s.to_string()).collect()
}

/// The writes, in the order they run (`check` before `done`: a finish takes a checked task),
/// and whether dacli makes them (the target bounds only dacli's own writes).
pub const WRITES: [(&str, bool); 12] = [
    ("none", false),
    ("task_add", true),
    ("note_add", true),
    ("claim", true),
    ("edit", true),
    ("check", true),
    ("block", true),
    ("done", true),
    ("sync", true),
    ("sed_i", false),
    ("in_place", false),
    ("checkout", false),
];

/// Ratio to the floor a read may reach: warm (no write before it) and first read after a write.
pub const WARM_LIMIT: f64 = 2.5;
pub const FIRST_READ_LIMIT: f64 = 3.0;
pub const WRITE_LIMIT: f64 = 3.0;
/// Milliseconds a cold read may take at 10,000 tasks.
pub const COLD_LIMIT_MS: f64 = 150.0;
pub const RSS_LIMIT_KIB: u64 = 64 * 1024;

/// The branch `checkout` switches to and back from.
const OTHER_BRANCH: &str = "bench-other";
/// Task files that differ on the other branch.
const OTHER_BRANCH_FILES: usize = 50;

struct Workload<'a> {
    dacli: &'a Path,
    dir: &'a Path,
    planner: &'a str,
    builder: &'a str,
    /// A roleless rw agent: its claims are events, and no role's WIP cap refuses them.
    claimer: String,
    task: &'a str,
    claims: Pool,
    /// Checked one by one, then finished in the same order.
    checks: Pool,
    finishes: Pool,
    blocks: Pool,
    /// Retitled by `edit`; `sync` applies a comment on it.
    edit_ref: String,
    /// Rewritten by `sed -i` and in place, toggling its priority.
    external: PathBuf,
    round: usize,
}

struct Pool {
    refs: Vec<String>,
    next: usize,
}

impl Pool {
    fn take(&mut self, kind: &str) -> Result<String, String> {
        let r = self
            .refs
            .get(self.next)
            .cloned()
            .ok_or_else(|| format!("{kind}: the pool of fresh tasks ran out"))?;
        self.next += 1;
        Ok(r)
    }
}

fn git(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.invalid",
        ])
        .args(args)
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// Times `argv` once; fails when the command does.
fn timed(dacli: &Path, dir: &Path, token: Option<&str>, argv: &[String]) -> Result<f64, String> {
    let mut cmd = command(dacli, dir, token, argv);
    let started = Instant::now();
    let out = cmd.output().map_err(|e| e.to_string())?;
    let ms = ms_since(started);
    if !out.status.success() {
        return Err(format!(
            "dacli {argv:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(ms)
}

/// `runs` samples of `dacli --version`, the floor of the section.
fn floor_samples(opts: &Options, dir: &Path) -> Result<Vec<f64>, String> {
    let argv = vec!["--version".to_string()];
    for _ in 0..opts.warmup {
        timed(&opts.dacli, dir, None, &argv)?;
    }
    (0..opts.runs)
        .map(|_| timed(&opts.dacli, dir, None, &argv))
        .collect()
}

fn strings(argv: &[&str]) -> Vec<String> {
    argv.iter().map(|s| s.to_string()).collect()
}

impl Workload<'_> {
    /// The agent and argv of dacli write `kind` in this round, after its untimed preparation.
    fn dacli_write(&mut self, kind: &str) -> Result<(String, Vec<String>), String> {
        let i = self.round;
        let p = self.planner.to_string();
        Ok(match kind {
            "task_add" => (
                p,
                strings(&[
                    "task",
                    "add",
                    &format!("Mixed workload task {i}"),
                    "--project",
                    PROJECT,
                    "--accept",
                    "It works",
                    "--json",
                ]),
            ),
            "note_add" => (
                self.builder.to_string(),
                strings(&[
                    "note",
                    "add",
                    "finding",
                    &format!("Mixed workload finding {i}"),
                    "--about",
                    self.task,
                    "--severity",
                    "minor",
                    "--body",
                    "Seen while benchmarking.",
                    "--json",
                ]),
            ),
            "claim" => (
                self.claimer.clone(),
                strings(&["task", "claim", &self.claims.take(kind)?, "--json"]),
            ),
            "edit" => {
                let version = if i.is_multiple_of(2) { "A" } else { "B" };
                (
                    p,
                    strings(&[
                        "task",
                        "edit",
                        &self.edit_ref,
                        "--title",
                        &format!("Mixed workload edit target, version {version}"),
                        "--json",
                    ]),
                )
            }
            "check" => (
                p,
                strings(&[
                    "task",
                    "check",
                    &self.checks.take(kind)?,
                    "--n",
                    "1",
                    "--json",
                ]),
            ),
            "block" => (
                p,
                strings(&[
                    "task",
                    "block",
                    &self.blocks.take(kind)?,
                    "--reason",
                    "Waiting for the vendor's file",
                    "--json",
                ]),
            ),
            "done" => (
                p,
                strings(&["task", "done", &self.finishes.take(kind)?, "--json"]),
            ),
            "sync" => {
                // Something to apply: another agent's comment on a task the planner owns.
                cli(
                    self.dacli,
                    self.dir,
                    Some(&self.claimer),
                    &[
                        "task",
                        "comment",
                        &self.edit_ref,
                        &format!("Mixed workload comment {i}"),
                    ],
                )?;
                (p, strings(&["sync", "--json"]))
            }
            _ => return Err(format!("not a dacli write: {kind}")),
        })
    }

    /// The external file's text with its priority toggled, and the sed expression that does it.
    fn toggled(&self) -> Result<(String, String), String> {
        let text = std::fs::read_to_string(&self.external)
            .map_err(|e| format!("{}: {e}", self.external.display()))?;
        let (from, to) = if text.contains("\npriority = \"must\"\n") {
            ("must", "should")
        } else {
            ("should", "must")
        };
        let line = |p: &str| format!("\npriority = \"{p}\"\n");
        if !text.contains(&line(from)) {
            return Err(format!(
                "{}: no priority line to toggle",
                self.external.display()
            ));
        }
        Ok((
            text.replacen(&line(from), &line(to), 1),
            format!("s/^priority = \"{from}\"$/priority = \"{to}\"/"),
        ))
    }

    /// Does write `kind` of this round; returns its own time (`None` for `none`).
    fn write(&mut self, kind: &str) -> Result<Option<f64>, String> {
        self.round += 1;
        let ms = match kind {
            "none" => return Ok(None),
            "sed_i" => {
                let (want, expr) = self.toggled()?;
                let started = Instant::now();
                let status = Command::new("sed")
                    .arg("-i")
                    .arg(&expr)
                    .arg(&self.external)
                    .status()
                    .map_err(|e| format!("sed: {e}"))?;
                let ms = ms_since(started);
                let got = std::fs::read_to_string(&self.external).map_err(|e| e.to_string())?;
                if !status.success() || got != want {
                    return Err(format!("sed -i {expr} did not rewrite the file"));
                }
                ms
            }
            "in_place" => {
                let (want, _) = self.toggled()?;
                let started = Instant::now();
                // Truncate and write the same inode, as many editors save.
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(&self.external)
                    .map_err(|e| format!("{}: {e}", self.external.display()))?;
                f.write_all(want.as_bytes()).map_err(|e| e.to_string())?;
                drop(f);
                ms_since(started)
            }
            "checkout" => {
                let started = Instant::now();
                git(self.dir, &["checkout", "-q", OTHER_BRANCH])?;
                git(self.dir, &["checkout", "-q", "main"])?;
                ms_since(started)
            }
            _ => {
                let (token, argv) = self.dacli_write(kind)?;
                timed(self.dacli, self.dir, Some(&token), &argv)?
            }
        };
        Ok(Some(ms))
    }
}

/// Makes the claimer, the pools, the edit targets and the other branch.
fn prepare<'a>(opts: &'a Options, built: &'a Built, rounds: usize) -> Result<Workload<'a>, String> {
    let dir = built.dir.as_path();
    let planner = built.agents.planner.1.as_str();
    let run = |token: Option<&str>, args: &[&str]| cli(&opts.dacli, dir, token, args);
    let claimer = run(None, &["agent", "spawn", "--grant", "rw"])?["token"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // The backlog of pending events the generated workspace holds is applied once, before the
    // branch is committed and before `sync` is timed.
    run(Some(planner), &["sync"])?;
    let add = |title: &str| -> Result<(String, String), String> {
        let d = run(
            Some(planner),
            &[
                "task",
                "add",
                title,
                "--project",
                PROJECT,
                "--accept",
                "It works",
            ],
        )?;
        Ok((
            d["task"]["ref"].as_str().unwrap_or_default().to_string(),
            d["path"].as_str().unwrap_or_default().to_string(),
        ))
    };
    let pool = |kind: &str| -> Result<Pool, String> {
        let refs = (0..rounds)
            .map(|i| add(&format!("Mixed workload {kind} target {i}")).map(|(r, _)| r))
            .collect::<Result<_, _>>()?;
        Ok(Pool { refs, next: 0 })
    };
    let claims = pool("claim")?;
    let checks = pool("check")?;
    let blocks = pool("block")?;
    let finishes = Pool {
        refs: checks.refs.clone(),
        next: 0,
    };
    let (edit_ref, _) = add("Mixed workload edit target")?;
    let (_, external) = add("Mixed workload external edit target")?;
    // The other branch: the same workspace with some done tasks retitled.
    git(dir, &["add", "-A"])?;
    git(dir, &["commit", "-q", "-m", "benchmark workspace"])?;
    git(dir, &["checkout", "-q", "-b", OTHER_BRANCH])?;
    let done = dir.join(format!(".dacli/projects/{PROJECT}/tasks/done"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&done)
        .map_err(|e| format!("{}: {e}", done.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    for f in files.iter().take(OTHER_BRANCH_FILES) {
        let text = std::fs::read_to_string(f).map_err(|e| e.to_string())?;
        let text = text.replacen("\n# ", "\n# On the other branch: ", 1);
        std::fs::write(f, text).map_err(|e| e.to_string())?;
    }
    git(dir, &["commit", "-q", "-a", "-m", "the other branch"])?;
    git(dir, &["checkout", "-q", "main"])?;
    // Past the racy window, as after mkws: the first round finds a settled workspace.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    Ok(Workload {
        dacli: &opts.dacli,
        dir,
        planner,
        builder: built.agents.builders[0].1.as_str(),
        claimer,
        task: built.context_task.as_str(),
        claims,
        checks,
        finishes,
        blocks,
        edit_ref,
        external: dir.join(external),
        round: 0,
    })
}

fn stats(samples: &[f64], floor: f64) -> Value {
    let m = median(samples);
    json!({
        "median_ms": round3(m),
        "min_ms": round3(min(samples)),
        "p90_ms": round3(percentile(samples, 90.0)),
        "max_ms": round3(samples.iter().copied().fold(f64::NAN, f64::max)),
        "ratio_to_floor": round3(m / floor),
        "runs": samples.len(),
    })
}

fn verdict(v: &mut Value, target: &str, met: bool) {
    v["target"] = json!(target);
    v["met"] = json!(met);
}

/// The mixed section: for each write and each read, `runs` rounds of {write, read}.
pub fn measure_mixed(opts: &Options, built: &Built) -> Result<Value, String> {
    let per_read = opts.warmup + opts.runs;
    // One more round per read, to take the read's memory; one more for the write's.
    let rounds = (per_read + 1) * READS.len() + 1;
    eprintln!("  mixed: preparing {} fresh tasks per pool", rounds);
    let mut w = prepare(opts, built, rounds)?;
    let mut floor = floor_samples(opts, &built.dir)?;
    let mut rows = Vec::new();
    for (kind, by_dacli) in WRITES {
        let mut writes = Vec::new();
        let mut reads = serde_json::Map::new();
        for read in READS {
            let argv = read_argv(read, w.task);
            let mut samples = Vec::new();
            for i in 0..per_read {
                let wrote = w.write(kind)?;
                let ms = timed(&opts.dacli, &built.dir, Some(w.builder), &argv)?;
                if i >= opts.warmup {
                    writes.extend(wrote);
                    samples.push(ms);
                }
            }
            w.write(kind)?;
            let rss = rss::peak_kib(&opts.dacli, &built.dir, Some(w.builder), &argv);
            reads.insert(
                read.into(),
                json!({"samples": samples, "peak_rss_kib": rss}),
            );
        }
        let write_rss = if by_dacli {
            w.round += 1;
            let (token, argv) = w.dacli_write(kind)?;
            rss::peak_kib(&opts.dacli, &built.dir, Some(&token), &argv)
        } else {
            None
        };
        rows.push((kind, by_dacli, writes, reads, write_rss));
    }
    floor.extend(floor_samples(opts, &built.dir)?);
    let floor_ms = median(&floor);
    let mut out = serde_json::Map::new();
    for (kind, by_dacli, writes, reads, write_rss) in rows {
        let mut row = serde_json::Map::new();
        let limit = if kind == "none" {
            WARM_LIMIT
        } else {
            FIRST_READ_LIMIT
        };
        let mut line = format!("  mixed {kind:<9}");
        if !writes.is_empty() {
            let mut s = stats(&writes, floor_ms);
            s["peak_rss_kib"] = json!(write_rss);
            s["by_dacli"] = json!(by_dacli);
            let r = median(&writes) / floor_ms;
            if by_dacli {
                verdict(
                    &mut s,
                    &format!("<= {WRITE_LIMIT}x floor"),
                    r <= WRITE_LIMIT,
                );
            }
            line += &format!(" write {:>7.2} ms x{r:.2} |", median(&writes));
            row.insert("write".into(), s);
        }
        for read in READS {
            let samples: Vec<f64> = reads[read]["samples"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default();
            let mut s = stats(&samples, floor_ms);
            s["peak_rss_kib"] = reads[read]["peak_rss_kib"].clone();
            let r = median(&samples) / floor_ms;
            verdict(&mut s, &format!("<= {limit}x floor"), r <= limit);
            line += &format!(" {read} {:.2} x{r:.2}", median(&samples));
            row.insert(read.into(), s);
        }
        eprintln!("{line}");
        out.insert(kind.into(), Value::Object(row));
    }
    Ok(json!({"floor_ms": round3(floor_ms), "writes": out}))
}

/// The cold section: each read with `.dacli/cache/` deleted before it, then the same read
/// again to see the index rebuilt.
pub fn measure_cold(opts: &Options, built: &Built) -> Result<Value, String> {
    let dir = built.dir.as_path();
    let cache = dir.join(".dacli/cache");
    let builder = built.agents.builders[0].1.as_str();
    let mut floor = floor_samples(opts, dir)?;
    let drop_cache = || -> Result<(), String> {
        match std::fs::remove_dir_all(&cache) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("{}: {e}", cache.display())),
        }
    };
    let mut rows = Vec::new();
    for read in READS {
        let argv = read_argv(read, &built.context_task);
        let (mut cold, mut next, mut rebuilt) = (Vec::new(), Vec::new(), 0);
        // One round to warm the page cache; the cold read is about the index, not the disk.
        for i in 0..1 + opts.runs {
            drop_cache()?;
            let ms = timed(&opts.dacli, dir, Some(builder), &argv)?;
            let present = cache.is_dir();
            let after = timed(&opts.dacli, dir, Some(builder), &argv)?;
            if i >= 1 {
                cold.push(ms);
                next.push(after);
                rebuilt += usize::from(present);
            }
        }
        drop_cache()?;
        let rss = rss::peak_kib(&opts.dacli, dir, Some(builder), &argv);
        rows.push((read, cold, next, rebuilt, rss));
    }
    floor.extend(floor_samples(opts, dir)?);
    let floor_ms = median(&floor);
    let mut out = serde_json::Map::new();
    for (read, cold, next, rebuilt, rss) in rows {
        let mut s = stats(&cold, floor_ms);
        s["peak_rss_kib"] = json!(rss);
        let m = median(&cold);
        verdict(
            &mut s,
            &format!("<= {COLD_LIMIT_MS} ms"),
            m <= COLD_LIMIT_MS,
        );
        let next_ratio = median(&next) / floor_ms;
        let ok = rebuilt == cold.len() && next_ratio <= WARM_LIMIT;
        s["next_read"] = stats(&next, floor_ms);
        s["cache_dir_rebuilt"] = json!(format!("{rebuilt}/{}", cold.len()));
        s["rebuilt"] = json!({
            "target": format!("cache dir back after every cold read and the next read <= {WARM_LIMIT}x floor"),
            "met": ok,
        });
        eprintln!(
            "  cold {read:<10} median {m:>8.2} ms  min {:>8.2} ms  next read {:.2} ms x{next_ratio:.2}  cache back {rebuilt}/{}  rss {}",
            min(&cold),
            median(&next),
            cold.len(),
            rss.map_or("?".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
        );
        out.insert(read.into(), s);
    }
    Ok(json!({"floor_ms": round3(floor_ms), "reads": out}))
}
