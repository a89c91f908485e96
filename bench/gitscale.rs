//! `bench run --sections git`: `repo cleanup` and `delivery reconcile` on a repository of real
//! size (issue 27): one task branch per task of the built workspace (at most
//! [`MOST_BRANCHES`]), a third merged with `--no-ff`, a third unmerged, a third squash-merged
//! with a `Dacli-Task:` trailer: 5,000 branches give 8,334 commits. The history is written by
//! `git fast-import` in one stream and packed by `git gc` (refs packed, a commit-graph
//! written), as a long-lived clone is.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use crate::mkws::{Built, PROJECT};
use crate::run::{Options, command, median, round3};

/// Task branches made at most (the figure).
pub const MOST_BRANCHES: usize = 5_000;

/// One task of the workspace, as its file names it.
struct TaskRef {
    id: String,
    number: u32,
    slug: String,
}

/// What the generated history holds.
struct History {
    branches: usize,
    commits: usize,
    merged: usize,
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Every task of the bench project, by number.
fn tasks(dir: &Path) -> Result<Vec<TaskRef>, String> {
    let mut out = Vec::new();
    let root = dir.join(".dacli/projects").join(PROJECT).join("tasks");
    for folder in std::fs::read_dir(&root).map_err(|e| format!("{}: {e}", root.display()))? {
        let folder = folder.map_err(|e| e.to_string())?.path();
        for f in std::fs::read_dir(&folder).map_err(|e| e.to_string())? {
            let path = f.map_err(|e| e.to_string())?.path();
            let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let Some((n, slug)) = name.split_once('-') else {
                continue;
            };
            let Ok(number) = n.parse::<u32>() else {
                continue;
            };
            let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
            let id = text
                .lines()
                .find_map(|l| l.strip_prefix("id = \""))
                .and_then(|l| l.strip_suffix('"'))
                .ok_or_else(|| format!("{}: no id", path.display()))?;
            out.push(TaskRef {
                id: id.to_string(),
                number,
                slug: slug.to_string(),
            });
        }
    }
    out.sort_by_key(|t| t.number);
    Ok(out)
}

/// Writes the history: for task `i`, a branch `dacli/<NNN>-<slug>` forked from the current
/// mainline with one commit; `i % 3 == 0` is merged with `--no-ff`, `1` stays unmerged, `2`
/// is squash-merged (its change committed on main with `Dacli-Task: <id>`).
fn write_history(dir: &Path, tasks: &[TaskRef]) -> Result<History, String> {
    git(dir, &["add", "-A"])?;
    git(dir, &["commit", "-qm", "workspace", "--allow-empty"])?;
    let start = git(dir, &["rev-parse", "HEAD"])?;
    let mut s: Vec<u8> = Vec::new();
    let mut mark = 0u64;
    let mut main_tip = format!("from {start}\n");
    let mut time = 1_767_225_600u64; // 2026-01-01
    let mut commits = 0;
    let mut merged = 0;
    let data = |s: &mut Vec<u8>, text: &str| {
        let _ = write!(s, "data {}\n{text}\n", text.len());
    };
    for (i, t) in tasks.iter().enumerate() {
        let branch = format!("refs/heads/dacli/{:03}-{}", t.number, t.slug);
        let file = format!("work/{:05}.txt", t.number);
        let content = format!("work of task {} ({})\n", t.number, t.slug);
        time += 60;
        mark += 1;
        let work = mark;
        let _ = write!(
            s,
            "commit {branch}\nmark :{work}\ncommitter bench <bench@example.com> {time} +0000\n"
        );
        data(&mut s, &format!("work on task {}", t.number));
        s.extend_from_slice(main_tip.as_bytes());
        let _ = writeln!(s, "M 100644 inline {file}");
        data(&mut s, &content);
        commits += 1;
        let message = match i % 3 {
            0 => Some(format!("Merge branch 'dacli/{:03}-{}'", t.number, t.slug)),
            2 => Some(format!(
                "Task {} (squashed)\n\nDacli-Task: {}",
                t.number, t.id
            )),
            _ => None,
        };
        let Some(message) = message else {
            continue;
        };
        time += 60;
        mark += 1;
        let _ = write!(
            s,
            "commit refs/heads/main\nmark :{mark}\ncommitter bench <bench@example.com> {time} +0000\n"
        );
        data(&mut s, &message);
        s.extend_from_slice(main_tip.as_bytes());
        if i % 3 == 0 {
            let _ = writeln!(s, "merge :{work}");
            merged += 1;
        }
        let _ = writeln!(s, "M 100644 inline {file}");
        data(&mut s, &content);
        commits += 1;
        main_tip = format!("from :{mark}\n");
    }
    s.extend_from_slice(b"done\n");
    let mut child = Command::new("git")
        .current_dir(dir)
        .args(["fast-import", "--quiet", "--done", "--force"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("git fast-import: {e}"))?;
    child
        .stdin
        .take()
        .ok_or("no stdin")?
        .write_all(&s)
        .map_err(|e| e.to_string())?;
    if !child.wait().map_err(|e| e.to_string())?.success() {
        return Err("git fast-import failed".into());
    }
    // The work tree follows main again; then everything is packed as in a long-lived clone.
    git(dir, &["reset", "-q", "--hard", "main"])?;
    git(dir, &["gc", "-q"])?;
    Ok(History {
        branches: tasks.len(),
        commits: commits + 1,
        merged,
    })
}

/// CPU time (user and system, ms) of every child this process has waited for.
#[cfg(unix)]
fn children_cpu_ms() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0.0, |u| {
        let ms =
            |t: nix::sys::time::TimeVal| t.tv_sec() as f64 * 1000.0 + t.tv_usec() as f64 / 1000.0;
        ms(u.user_time()) + ms(u.system_time())
    })
}

#[cfg(not(unix))]
fn children_cpu_ms() -> f64 {
    0.0
}

/// One run of `dacli argv`: wall-clock ms, CPU ms (user and system: on the loaded shared
/// machine the wall time mostly measures the other processes) and its JSON document, which
/// must say `ok`.
fn once(opts: &Options, dir: &Path, argv: &[&str]) -> Result<(f64, f64, Value), String> {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let cpu = children_cpu_ms();
    let started = Instant::now();
    let out = command(&opts.dacli, dir, None, &argv)
        .output()
        .map_err(|e| e.to_string())?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let cpu = children_cpu_ms() - cpu;
    let doc: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "dacli {argv:?}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    if doc["ok"] != true {
        return Err(format!("dacli {argv:?} failed: {doc}"));
    }
    Ok((ms, cpu, doc))
}

/// Wall and CPU samples of one figure, in ms.
#[derive(Default)]
struct Samples {
    wall: Vec<f64>,
    cpu: Vec<f64>,
}

/// Times `argv` `runs` times after one warm-up; the samples, and the last document.
fn time(
    opts: &Options,
    dir: &Path,
    argv: &[&str],
    runs: usize,
) -> Result<(Samples, Value), String> {
    let (_, _, mut last) = once(opts, dir, argv)?;
    let mut samples = Samples::default();
    for _ in 0..runs {
        let (ms, cpu, doc) = once(opts, dir, argv)?;
        samples.wall.push(ms);
        samples.cpu.push(cpu);
        last = doc;
    }
    Ok((samples, last))
}

fn figure(samples: &Samples, rss: Option<u64>) -> Value {
    json!({
        "median_ms": round3(median(&samples.wall)),
        "max_ms": round3(samples.wall.iter().copied().fold(f64::NAN, f64::max)),
        "median_cpu_ms": round3(median(&samples.cpu)),
        "peak_rss_kib": rss,
    })
}

/// Builds the history in the workspace `built` (the last section: the workspace is changed
/// for good), then times a cleanup preview (default `--limit`, and every candidate), an apply
/// retiring every proven branch, and a `delivery reconcile` preview of the whole project.
pub fn measure_git(opts: &Options, built: &Built) -> Result<Value, String> {
    let dir = &built.dir;
    let mut all = tasks(dir)?;
    all.truncate(MOST_BRANCHES);
    let started = Instant::now();
    let h = write_history(dir, &all)?;
    eprintln!(
        "  git: {} branches, {} commits written and packed in {:.1} s",
        h.branches,
        h.commits,
        started.elapsed().as_secs_f64()
    );
    let runs = opts.runs.clamp(1, 3);
    let rss = |argv: &[&str]| {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        crate::rss::peak_kib(&opts.dacli, dir, None, &argv)
    };
    let preview = [
        "repo",
        "cleanup",
        "--no-fetch",
        "--include",
        "local_branches",
        "--json",
    ];
    let (p_default, _) = time(opts, dir, &preview, runs)?;
    let rss_default = rss(&preview);
    let mut every = preview.to_vec();
    every.extend(["--limit", "100000"]);
    let (p_every, plan) = time(opts, dir, &every, runs)?;
    let rss_every = rss(&every);
    let retire = plan["data"]["summary"]["retire"].as_u64().unwrap_or(0);
    let candidates = plan["data"]["candidates"].as_array().map_or(0, |a| a.len());
    eprintln!(
        "  cleanup preview: median {:.0} ms wall, {:.0} ms CPU (default --limit); {:.0} ms wall, {:.0} ms CPU (all {candidates} candidates, {retire} to retire)",
        median(&p_default.wall),
        median(&p_default.cpu),
        median(&p_every.wall),
        median(&p_every.cpu)
    );
    let delivery = [
        "delivery",
        "reconcile",
        "--project",
        PROJECT,
        "--no-fetch",
        "--json",
    ];
    let (d, report) = time(opts, dir, &delivery, runs)?;
    let rss_delivery = rss(&delivery);
    let mut states = serde_json::Map::new();
    for o in report["data"]["observations"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let s = o["state"].as_str().unwrap_or("?").to_string();
        let n = states.get(&s).and_then(Value::as_u64).unwrap_or(0) + 1;
        states.insert(s, json!(n));
    }
    eprintln!(
        "  delivery reconcile: median {:.0} ms wall, {:.0} ms CPU over {} tasks {}",
        median(&d.wall),
        median(&d.cpu),
        report["data"]["observations"]
            .as_array()
            .map_or(0, |a| a.len()),
        Value::Object(states.clone())
    );
    let digest = plan["data"]["plan_digest"].as_str().unwrap_or_default();
    let mut apply = every.clone();
    apply.extend(["--apply", "--digest", digest]);
    let (apply_ms, apply_cpu, applied) = once(opts, dir, &apply)?;
    let retired = applied["data"]["candidates"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["result"] == "done")
        .count();
    eprintln!("  cleanup apply: {apply_ms:.0} ms wall, {apply_cpu:.0} ms CPU, {retired} retired");
    Ok(json!({
        "branches": h.branches,
        "commits": h.commits,
        "merged": h.merged,
        "cleanup_preview": figure(&p_default, rss_default),
        "cleanup_preview_all": figure(&p_every, rss_every),
        "cleanup_candidates": candidates,
        "cleanup_retire": retire,
        "cleanup_apply": {"ms": round3(apply_ms), "cpu_ms": round3(apply_cpu), "retired": retired},
        "delivery_reconcile": figure(&d, rss_delivery),
        "delivery_states": Value::Object(states),
    }))
}
