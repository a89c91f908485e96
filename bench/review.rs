//! The `review` section of `bench run`: `search` on the built workspace (warm, and the first
//! search that builds its index), and `review` and `log` over a history of 1,000 commits that
//! touch 10,000 task files, each figure with its ratio to the `--version` floor.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use crate::mkws::Built;
use crate::run::{Options, command, median, min, round3};
use crate::timing::{git, timed};

/// Commits in the review history, and task files each one changes.
const COMMITS: usize = 1_000;
const PER_COMMIT: usize = 10;

/// Issue 25's target for `review` over the whole history.
const REVIEW_TARGET_MS: u64 = 2_000;

/// Issue 25's target for a warm `search`, as a ratio to the `--version` floor.
const SEARCH_TARGET_RATIO: f64 = 3.0;

/// Times `argv` in `dir`: `opts.warmup` unmeasured runs, then `opts.runs` measured ones.
fn time(opts: &Options, dir: &Path, argv: &[&str]) -> Result<Vec<f64>, String> {
    let mut samples = Vec::new();
    for i in 0..opts.warmup + opts.runs {
        let (ms, _, _) = timed(&opts.dacli, dir, argv)?;
        if i >= opts.warmup {
            samples.push(ms);
        }
    }
    Ok(samples)
}

/// A figure's times, and the peak RSS of one more run of it alone.
fn figure(opts: &Options, dir: &Path, argv: &[&str], samples: &[f64], floor: f64) -> Value {
    let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
    json!({
        "median_ms": round3(median(samples)),
        "min_ms": round3(min(samples)),
        "ratio_to_floor": round3(median(samples) / floor),
        "peak_rss_kib": crate::rss::peak_kib(&opts.dacli, dir, None, &argv),
    })
}

pub fn measure(opts: &Options, built: &Built) -> Result<Value, String> {
    let floor = median(&time(opts, &built.dir, &["--version"])?);
    // The first search after the index is deleted builds it; every later one is warm.
    let cache = built.dir.join(".dacli/cache/search.sqlite");
    let _ = std::fs::remove_file(&cache);
    let started = Instant::now();
    let out = command(
        &opts.dacli,
        &built.dir,
        None,
        &["search".into(), "part".into(), "--json".into()],
    )
    .output()
    .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "search failed: {}",
            String::from_utf8_lossy(&out.stdout)
        ));
    }
    let first_ms = started.elapsed().as_secs_f64() * 1000.0;
    let search_argv = ["search", "part", "--json", "--limit", "20"];
    let search = time(opts, &built.dir, &search_argv)?;
    let phrase_argv = ["search", "\"in part\"", "--kind", "task", "--json"];
    let phrase = time(opts, &built.dir, &phrase_argv)?;
    let search_ratio = median(&search) / floor;
    eprintln!(
        "  search        first {first_ms:>7.1} ms  warm median {:>7.2} ms  x{search_ratio:.2}  phrase x{:.2}  (target x{SEARCH_TARGET_RATIO}: {})",
        median(&search),
        median(&phrase) / floor,
        verdict(search_ratio <= SEARCH_TARGET_RATIO)
    );

    let history = built
        .dir
        .parent()
        .ok_or("the workspace has no parent directory")?
        .join("review-history");
    let (from, task) = build_history(&opts.dacli, &history)?;
    let range = format!("{from}..HEAD");
    let review_argv = ["review", range.as_str(), "--json"];
    let review = time(opts, &history, &review_argv)?;
    let log_argv = ["log", task.as_str(), "--limit", "5", "--json"];
    let log = time(opts, &history, &log_argv)?;
    let review_figure = figure(opts, &history, &review_argv, &review, floor);
    let log_figure = figure(opts, &history, &log_argv, &log, floor);
    let mib = |v: &Value| {
        v["peak_rss_kib"]
            .as_u64()
            .map_or("?".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
    };
    eprintln!(
        "  review        {COMMITS} commits, {} task files: median {:>7.1} ms  x{:.2}  rss {}  (target {REVIEW_TARGET_MS} ms: {})",
        COMMITS * PER_COMMIT,
        median(&review),
        median(&review) / floor,
        mib(&review_figure),
        verdict(median(&review) <= REVIEW_TARGET_MS as f64)
    );
    eprintln!(
        "  log           {task} over {} commits: median {:>7.1} ms  x{:.2}  rss {}",
        COMMITS + 1,
        median(&log),
        median(&log) / floor,
        mib(&log_figure)
    );
    Ok(json!({
        "floor_ms": round3(floor),
        "search": {
            "tasks": built.counts.open + built.counts.active + built.counts.blocked + built.counts.done,
            "events": built.counts.events,
            "first_ms": round3(first_ms),
            "warm": figure(opts, &built.dir, &search_argv, &search, floor),
            "phrase": figure(opts, &built.dir, &phrase_argv, &phrase, floor),
            "target_ratio": SEARCH_TARGET_RATIO,
            "meets_target": search_ratio <= SEARCH_TARGET_RATIO,
        },
        "review": {
            "commits": COMMITS,
            "task_files": COMMITS * PER_COMMIT,
            "range": review_figure,
            "target_ms": REVIEW_TARGET_MS,
            "meets_target": median(&review) <= REVIEW_TARGET_MS as f64,
            "log": log_figure,
        },
    }))
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "not met" }
}
/// A ULID-shaped string from a number (Crockford base32, fixed time part).
fn ulid(n: usize) -> String {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let mut tail = Vec::new();
    let mut v = n;
    for _ in 0..16 {
        tail.push(ALPHABET[v % 32]);
        v /= 32;
    }
    tail.reverse();
    format!("01KJPX6ZT8{}", String::from_utf8_lossy(&tail))
}

fn task_file(i: usize, rev: usize, checked: bool, extra_log: usize) -> String {
    let mut log = String::from("- 2026-03-02T09:20:11Z a-root created\n");
    for k in 0..extra_log {
        log.push_str(&format!(
            "- 2026-03-03T10:{:02}:00Z a-root checked 1\n",
            k % 60
        ));
    }
    format!(
        "+++\nid = \"t-{}\"\nkind = \"task\"\ncreated = 2026-03-02T09:20:11Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"{}\"\npriority = \"should\"\n+++\n\n# Benchmark history task {i}\n\n## Acceptance\n- [{}] It works\n\n## Log\n{log}",
        ulid(i),
        ulid(rev),
        if checked { "x" } else { " " },
    )
}

/// A repository with a workspace, one commit adding `COMMITS * PER_COMMIT` tasks and
/// `COMMITS` commits each checking `PER_COMMIT` of them, written with `git fast-import`.
/// Returns the commit the tasks were added in and a task reference for `log`.
fn build_history(dacli: &Path, dir: &Path) -> Result<(String, String), String> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| e.to_string())?;
    }
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    git(dir, &["init", "-q", "-b", "main"])?;
    crate::mkws::cli(dacli, dir, None, &["init"])?;
    crate::mkws::cli(
        dacli,
        dir,
        None,
        &["project", "add", "History", "--slug", "hist"],
    )?;
    git(dir, &["add", "-A"])?;
    git(dir, &["commit", "-q", "-m", "workspace"])?;
    let base = git(dir, &["rev-parse", "HEAD"])?;
    let total = COMMITS * PER_COMMIT;
    let path = |i: usize| {
        format!(
            ".dacli/projects/hist/tasks/open/{:05}-benchmark-history-task-{i}.md",
            i + 1
        )
    };
    let mut stream = Vec::new();
    let data = |out: &mut Vec<u8>, s: &str| {
        let _ = write!(out, "data {}\n{s}\n", s.len());
    };
    let when = 1_772_000_000u64;
    let _ = write!(
        stream,
        "commit refs/heads/main\nmark :1\ncommitter bench <bench@example.com> {when} +0000\n"
    );
    data(&mut stream, "add the tasks");
    let _ = writeln!(stream, "from {base}");
    for i in 0..total {
        let _ = writeln!(stream, "M 100644 inline {}", path(i));
        data(&mut stream, &task_file(i, i, false, 0));
    }
    for c in 0..COMMITS {
        let _ = write!(
            stream,
            "commit refs/heads/main\nmark :{}\ncommitter bench <bench@example.com> {} +0000\n",
            c + 2,
            when + 60 * (c as u64 + 1)
        );
        data(&mut stream, &format!("check batch {c}"));
        let _ = writeln!(stream, "from :{}", c + 1);
        for k in 0..PER_COMMIT {
            let i = c * PER_COMMIT + k;
            let _ = writeln!(stream, "M 100644 inline {}", path(i));
            data(&mut stream, &task_file(i, total + i, true, 1));
        }
    }
    let mut child = Command::new("git")
        .current_dir(dir)
        .args(["fast-import", "--quiet", "--force"])
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| format!("git fast-import: {e}"))?;
    child
        .stdin
        .take()
        .ok_or("no stdin")?
        .write_all(&stream)
        .map_err(|e| e.to_string())?;
    let status = child.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err("git fast-import failed".into());
    }
    git(dir, &["reset", "-q", "--hard", "main"])?;
    let from = git(dir, &["rev-parse", &format!("HEAD~{COMMITS}")])?;
    Ok((from, "hist/1".to_string()))
}
