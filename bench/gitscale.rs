//! `bench run --sections git`: `repo cleanup` and `delivery reconcile` on a repository of real
//! size (issue 27). Task branches are made for the workspace's tasks (at most
//! [`MOST_BRANCHES`]), a third merged with `--no-ff`, a third unmerged, a third squash-merged
//! with a `Dacli-Task:` trailer: 5,000 branches give 8,334 commits. The history is written by
//! `git fast-import` and packed by `git gc` (refs packed, a commit-graph written), as a
//! long-lived clone is.
//!
//! The figures are taken at a fifth, half and all of the branches ([`STAGES`]) with the same
//! tasks in the workspace, so what grows with the number of branches alone is visible: each
//! stage adds branches to the same history and measures again; an apply runs in a copy of
//! the workspace, so the next stage starts from every branch still there.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use crate::mkws::{Built, PROJECT};
use crate::run::{Options, median, round3};
use crate::timing::{git, timed};

/// Task branches made at most (the figure).
pub const MOST_BRANCHES: usize = 5_000;

/// One task of the workspace, as its file names it.
struct TaskRef {
    id: String,
    number: u32,
    slug: String,
}

/// The parts of all the branches each stage has: a fifth, half, all.
const STAGES: [(usize, usize); 3] = [(1, 5), (1, 2), (1, 1)];

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

/// Adds the history of `tasks[from..to]` to the workspace's repository (the first call also
/// commits the workspace): for task `i`, a branch `dacli/<NNN>-<slug>` forked from the
/// current mainline with one commit; `i % 3 == 0` is merged with `--no-ff`, `1` stays
/// unmerged, `2` is squash-merged (its change committed on main with `Dacli-Task: <id>`).
/// Then everything is packed as in a long-lived clone.
fn write_history(dir: &Path, tasks: &[TaskRef], from: usize, to: usize) -> Result<(), String> {
    if from == 0 {
        git(dir, &["add", "-A"])?;
        git(dir, &["commit", "-qm", "workspace", "--allow-empty"])?;
    }
    let start = git(dir, &["rev-parse", "main"])?;
    let mut s: Vec<u8> = Vec::new();
    let mut mark = 0u64;
    let mut main_tip = format!("from {start}\n");
    let data = |s: &mut Vec<u8>, text: &str| {
        let _ = write!(s, "data {}\n{text}\n", text.len());
    };
    for (i, t) in tasks.iter().enumerate().take(to).skip(from) {
        let branch = format!("refs/heads/dacli/{:03}-{}", t.number, t.slug);
        let file = format!("work/{:05}.txt", t.number);
        let content = format!("work of task {} ({})\n", t.number, t.slug);
        let mut time = 1_767_225_600 + 120 * i as u64; // from 2026-01-01
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
        }
        let _ = writeln!(s, "M 100644 inline {file}");
        data(&mut s, &content);
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
    git(dir, &["reset", "-q", "--hard", "main"])?;
    git(dir, &["gc", "-q"])?;
    Ok(())
}

/// One run of `dacli argv` as [`timed`], whose JSON document must say `ok`.
fn once(opts: &Options, dir: &Path, argv: &[&str]) -> Result<(f64, f64, Value), String> {
    let (ms, cpu, out) = timed(&opts.dacli, dir, argv)?;
    let doc: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("dacli {argv:?}: not JSON ({e})"))?;
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

/// Times `argv` `runs` times after one warm-up, then measures its peak RSS in one more run;
/// the figure and the last document.
fn measure(
    opts: &Options,
    dir: &Path,
    argv: &[&str],
    runs: usize,
) -> Result<(Value, Samples, Value), String> {
    let (_, _, mut last) = once(opts, dir, argv)?;
    let mut samples = Samples::default();
    for _ in 0..runs {
        let (ms, cpu, doc) = once(opts, dir, argv)?;
        samples.wall.push(ms);
        samples.cpu.push(cpu);
        last = doc;
    }
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let rss = crate::rss::peak_kib(&opts.dacli, dir, None, &argv);
    let figure = json!({
        "median_ms": round3(median(&samples.wall)),
        "max_ms": round3(samples.wall.iter().copied().fold(f64::NAN, f64::max)),
        "median_cpu_ms": round3(median(&samples.cpu)),
        "peak_rss_kib": rss,
    });
    Ok((figure, samples, last))
}

/// A copy of the workspace `dir` beside it, for a run that changes it.
fn copy_of(dir: &Path, name: &str) -> Result<std::path::PathBuf, String> {
    let copy = dir.with_file_name(name);
    let _ = std::fs::remove_dir_all(&copy);
    let out = Command::new("cp")
        .arg("-a")
        .arg(dir)
        .arg(&copy)
        .output()
        .map_err(|e| format!("cp: {e}"))?;
    if !out.status.success() {
        return Err(format!("cp: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(copy)
}

/// The figures with `branches` branches in the workspace `dir`.
fn stage(opts: &Options, dir: &Path, branches: usize, tasks: usize) -> Result<Value, String> {
    let runs = opts.runs.clamp(1, 3);
    let preview = [
        "repo",
        "cleanup",
        "--no-fetch",
        "--include",
        "local_branches",
        "--json",
    ];
    let (p_default, default_s, _) = measure(opts, dir, &preview, runs)?;
    let mut every = preview.to_vec();
    every.extend(["--limit", "100000"]);
    let (p_every, every_s, plan) = measure(opts, dir, &every, runs)?;
    let retire = plan["data"]["summary"]["retire"].as_u64().unwrap_or(0);
    let candidates = plan["data"]["candidates"].as_array().map_or(0, |a| a.len());
    let delivery = [
        "delivery",
        "reconcile",
        "--project",
        PROJECT,
        "--no-fetch",
        "--json",
    ];
    let (d, d_s, report) = measure(opts, dir, &delivery, runs)?;
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
    // The apply changes the repository for good: it runs in copies, one timed and one for
    // its peak RSS.
    let digest = plan["data"]["plan_digest"].as_str().unwrap_or_default();
    let mut apply = every.clone();
    apply.extend(["--apply", "--digest", digest]);
    let timed_copy = copy_of(dir, "git-apply")?;
    let (apply_ms, apply_cpu, applied) = once(opts, &timed_copy, &apply)?;
    let _ = std::fs::remove_dir_all(&timed_copy);
    let retired = applied["data"]["candidates"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["result"] == "done")
        .count();
    let rss_copy = copy_of(dir, "git-apply")?;
    let argv: Vec<String> = apply.iter().map(|s| s.to_string()).collect();
    let apply_rss = crate::rss::peak_kib(&opts.dacli, &rss_copy, None, &argv);
    let _ = std::fs::remove_dir_all(&rss_copy);
    let mib = |f: &Value| {
        f["peak_rss_kib"]
            .as_u64()
            .map_or("?".to_string(), |k| format!("{:.0}", k as f64 / 1024.0))
    };
    eprintln!(
        "  git, {branches} branches, {tasks} tasks: preview {:.0} ms CPU ({} MiB), all {candidates} candidates {:.0} ms CPU ({} MiB); reconcile {:.0} ms CPU ({} MiB) {}; apply {retired} retired {apply_cpu:.0} ms CPU ({} MiB)",
        median(&default_s.cpu),
        mib(&p_default),
        median(&every_s.cpu),
        mib(&p_every),
        median(&d_s.cpu),
        mib(&d),
        Value::Object(states.clone()),
        apply_rss.map_or("?".to_string(), |k| format!("{:.0}", k as f64 / 1024.0)),
    );
    Ok(json!({
        "branches": branches,
        "tasks": tasks,
        "cleanup_preview": p_default,
        "cleanup_preview_all": p_every,
        "cleanup_candidates": candidates,
        "cleanup_retire": retire,
        "cleanup_apply": {
            "ms": round3(apply_ms),
            "cpu_ms": round3(apply_cpu),
            "retired": retired,
            "peak_rss_kib": apply_rss,
        },
        "delivery_reconcile": d,
        "delivery_states": Value::Object(states),
    }))
}

/// Builds the history in the workspace `built` stage by stage (the last section: the
/// workspace is changed for good) and measures each stage: a cleanup preview (default
/// `--limit`, and every candidate), an apply retiring every proven branch, and a `delivery
/// reconcile` preview of the whole project.
pub fn measure_git(opts: &Options, built: &Built) -> Result<Value, String> {
    let dir = &built.dir;
    let all = tasks(dir)?;
    let most = all.len().min(MOST_BRANCHES);
    let mut stages = Vec::new();
    let mut made = 0;
    for (num, den) in STAGES {
        let branches = most * num / den;
        if branches == 0 || branches == made {
            continue;
        }
        let started = Instant::now();
        write_history(dir, &all, made, branches)?;
        made = branches;
        let commits = git(dir, &["rev-list", "--count", "--all"])?;
        eprintln!(
            "  git: {branches} branches, {commits} commits written and packed in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let mut figures = stage(opts, dir, branches, all.len())?;
        figures["commits"] = json!(commits.parse::<u64>().unwrap_or(0));
        stages.push(figures);
    }
    Ok(json!({ "stages": stages }))
}
