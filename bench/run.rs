//! `bench run`: the figures of spec QUALITY.md §1 on workspaces of each size, as ratios to the
//! `--version` floor of the same run, checked against the targets of §2.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mkws::{self, Built, PROJECT};

pub struct Options {
    pub dacli: PathBuf,
    sizes: Vec<usize>,
    /// Events per task; `None`: N/10 events in all (mkws's default).
    events_per_task: Option<usize>,
    /// Events in all, whatever the size (`--events`).
    events: Option<usize>,
    pub runs: usize,
    pub warmup: usize,
    mcp_calls: usize,
    sections: Vec<String>,
    out: PathBuf,
}

/// The sections of a run, in the order they run (`--sections` picks some).
const SECTIONS: [&str; 6] = ["cli", "mcp", "mixed", "cold", "review", "git"];

pub fn main(args: &[String]) -> Result<(), String> {
    let mut args = args.to_vec();
    let dacli = crate::dacli_path(&mut args)?;
    let sizes = crate::take_flag(&mut args, "--sizes").unwrap_or_else(|| "100,1000,10000".into());
    let number = |v: Option<String>, default: usize| -> Result<usize, String> {
        v.map_or(Ok(default), |v| {
            v.parse().map_err(|_| format!("not a number: {v}"))
        })
    };
    let runs = number(crate::take_flag(&mut args, "--runs"), 20)?;
    let mcp_calls = number(crate::take_flag(&mut args, "--mcp-calls"), 200)?;
    let events_per_task = crate::take_flag(&mut args, "--events-per-task")
        .map(|v| v.parse().map_err(|_| format!("not a number: {v}")))
        .transpose()?;
    let events = crate::take_flag(&mut args, "--events")
        .map(|v| {
            v.parse()
                .map_err(|_| format!("--events: not a number: {v}"))
        })
        .transpose()?;
    if events.is_some() && events_per_task.is_some() {
        return Err("give --events or --events-per-task, not both".into());
    }
    let sections: Vec<String> = crate::take_flag(&mut args, "--sections").map_or_else(
        || SECTIONS.iter().map(|s| s.to_string()).collect(),
        |v| v.split(',').map(|s| s.trim().to_string()).collect(),
    );
    if let Some(bad) = sections.iter().find(|s| !SECTIONS.contains(&s.as_str())) {
        return Err(format!(
            "--sections: unknown section `{bad}` (known: {})",
            SECTIONS.join(",")
        ));
    }
    let date = jiff::Timestamp::now().strftime("%Y-%m-%d").to_string();
    let out = crate::take_flag(&mut args, "--out").map_or_else(
        || PathBuf::from(format!("bench/results/{date}.json")),
        PathBuf::from,
    );
    if !args.is_empty() {
        return Err(format!("unexpected arguments {args:?}\n{}", crate::USAGE));
    }
    let opts = Options {
        dacli,
        sizes: sizes
            .split(',')
            .map(|s| {
                s.trim()
                    .parse()
                    .map_err(|_| format!("--sizes: not a number: {s}"))
            })
            .collect::<Result<_, _>>()?,
        events_per_task,
        events,
        runs: runs.max(1),
        warmup: 3,
        mcp_calls: mcp_calls.max(1),
        sections,
        out,
    };
    // The machine is shared: the load around the run says how far to trust its figures.
    let load_start = load_average();
    let scratch = tempfile::Builder::new()
        .prefix("dacli-bench-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let timer = if has_hyperfine() {
        "hyperfine"
    } else {
        "own loop"
    };
    eprintln!("timing with {timer}; {} runs per figure", opts.runs);
    let mut per_size = serde_json::Map::new();
    for &n in &opts.sizes {
        eprintln!("N = {n}: building the workspace");
        let started = Instant::now();
        let events = opts.events.or(opts.events_per_task.map(|k| k * n));
        let built = mkws::build(&opts.dacli, &scratch.path().join(n.to_string()), n, events)?;
        eprintln!(
            "  built and verified in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        per_size.insert(n.to_string(), measure(&opts, &built)?);
    }
    let results = json!({
        "date": date,
        "dacli": version(&opts.dacli),
        "machine": machine(),
        "load_average": {"start": load_start, "end": load_average()},
        "timer": timer,
        "runs": opts.runs,
        "events_per_task": opts.events_per_task,
        "events": opts.events,
        "sections": opts.sections,
        "sizes": per_size,
    });
    let targets = targets(&results);
    let mut results = results;
    results["targets"] = targets;
    if let Some(dir) = opts.out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let text = serde_json::to_string_pretty(&results).map_err(|e| e.to_string())? + "\n";
    std::fs::write(&opts.out, text).map_err(|e| format!("{}: {e}", opts.out.display()))?;
    print_table(&results);
    println!("\nwritten to {}", opts.out.display());
    Ok(())
}

/// One CLI figure: a name and the argv of run `i` (writes need a fresh title per run).
struct Figure<'a> {
    name: &'static str,
    token: Option<&'a str>,
    argv: Box<dyn Fn(usize) -> Vec<String> + 'a>,
    /// The same argv on every run, so hyperfine may time it.
    fixed: bool,
}

fn fixed<'a>(name: &'static str, token: Option<&'a str>, argv: &[&str]) -> Figure<'a> {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    Figure {
        name,
        token,
        argv: Box::new(move |_| argv.clone()),
        fixed: true,
    }
}

fn measure(opts: &Options, built: &Built) -> Result<Value, String> {
    let builder = built.agents.builders[0].1.as_str();
    let planner = built.agents.planner.1.as_str();
    let task = built.context_task.as_str();
    let figures = vec![
        fixed("version", None, &["--version"]),
        fixed("status", Some(builder), &["status", "--json"]),
        fixed(
            "task_list",
            Some(builder),
            &["task", "list", "--json", "--limit", "50"],
        ),
        Figure {
            name: "task_add",
            token: Some(planner),
            argv: Box::new(|i| {
                vec![
                    "task".into(),
                    "add".into(),
                    format!("Benchmark task number {i} of this run"),
                    "--project".into(),
                    PROJECT.into(),
                    "--accept".into(),
                    "It works".into(),
                    "--json".into(),
                ]
            }),
            fixed: false,
        },
        Figure {
            name: "note_add",
            token: Some(builder),
            argv: Box::new(move |i| {
                vec![
                    "note".into(),
                    "add".into(),
                    "finding".into(),
                    format!("Benchmark finding number {i} of this run"),
                    "--about".into(),
                    task.into(),
                    "--severity".into(),
                    "minor".into(),
                    "--body".into(),
                    "Seen while benchmarking.".into(),
                    "--json".into(),
                ]
            }),
            fixed: false,
        },
        fixed("context_md", Some(builder), &["context", task]),
        fixed(
            "context_json",
            Some(builder),
            &["context", task, "--format", "json", "--json"],
        ),
        fixed("whoami", Some(builder), &["whoami", "--json"]),
        fixed(
            "task_show",
            Some(builder),
            &["task", "show", task, "--json"],
        ),
        fixed(
            "events_list",
            Some(builder),
            &["events", "list", "--limit", "5", "--json"],
        ),
        fixed(
            "note_list",
            Some(builder),
            &["note", "list", "--limit", "1", "--json"],
        ),
    ];
    let wants = |s: &str| opts.sections.iter().any(|x| x == s);
    let mut out = json!({
        "tasks": built.counts.open + built.counts.active + built.counts.blocked + built.counts.done,
        "events": built.counts.events,
        "notes": built.counts.notes,
    });
    if wants("cli") {
        out["cli"] = measure_cli(opts, built, &figures)?;
    }
    if wants("mcp") {
        out["mcp"] = measure_mcp(opts, built)?;
    }
    if wants("mixed") {
        out["mixed"] = crate::mixed::measure_mixed(opts, built)?;
    }
    if wants("cold") {
        out["cold"] = crate::mixed::measure_cold(opts, built)?;
    }
    if wants("review") {
        out["review"] = crate::review::measure(opts, built)?;
    }
    // Last: it adds a history of task branches to the workspace and retires some of them.
    if wants("git") {
        out["git"] = crate::gitscale::measure_git(opts, built)?;
    }
    Ok(out)
}

fn measure_cli(opts: &Options, built: &Built, figures: &[Figure<'_>]) -> Result<Value, String> {
    let mut cli = serde_json::Map::new();
    let mut floor = None;
    for f in figures {
        let samples = time_figure(opts, &built.dir, f)?;
        let median = median(&samples);
        let floor_ms = *floor.get_or_insert(median);
        let rss = crate::rss::peak_kib(&opts.dacli, &built.dir, f.token, &(f.argv)(10_000));
        eprintln!(
            "  {:<13} median {:>7.2} ms  min {:>7.2} ms  x{:.2}  rss {}",
            f.name,
            median,
            min(&samples),
            median / floor_ms,
            rss.map_or("?".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
        );
        cli.insert(
            f.name.into(),
            json!({
                "median_ms": round3(median),
                "min_ms": round3(min(&samples)),
                "p10_ms": round3(percentile(&samples, 10.0)),
                "p90_ms": round3(percentile(&samples, 90.0)),
                "max_ms": round3(samples.iter().copied().fold(f64::NAN, f64::max)),
                "ratio_to_floor": round3(median / floor_ms),
                "peak_rss_kib": rss,
            }),
        );
    }
    Ok(Value::Object(cli))
}

fn has_hyperfine() -> bool {
    Command::new("hyperfine")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Wall-clock samples in milliseconds, after warm-up runs.
fn time_figure(opts: &Options, dir: &Path, f: &Figure<'_>) -> Result<Vec<f64>, String> {
    if f.fixed && has_hyperfine() {
        return hyperfine(opts, dir, f);
    }
    let mut samples = Vec::new();
    for i in 0..opts.warmup + opts.runs {
        let mut cmd = command(&opts.dacli, dir, f.token, &(f.argv)(i));
        let started = Instant::now();
        let out = cmd.output().map_err(|e| e.to_string())?;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        if !out.status.success() {
            return Err(format!(
                "{} failed: {}{}",
                f.name,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        if i >= opts.warmup {
            samples.push(ms);
        }
    }
    Ok(samples)
}

fn hyperfine(opts: &Options, dir: &Path, f: &Figure<'_>) -> Result<Vec<f64>, String> {
    let export = dir.join(".bench-hyperfine.json");
    let mut line = shell_quote(&opts.dacli.to_string_lossy());
    for a in (f.argv)(0) {
        line.push(' ');
        line.push_str(&shell_quote(&a));
    }
    let mut cmd = Command::new("hyperfine");
    cmd.current_dir(dir)
        .args(["-N", "--style", "none", "--warmup"])
        .arg(opts.warmup.to_string())
        .arg("--runs")
        .arg(opts.runs.to_string())
        .arg("--export-json")
        .arg(&export)
        .arg(&line)
        .env_remove("DACLI_AGENT")
        .stdout(Stdio::null());
    if let Some(t) = f.token {
        cmd.env("DACLI_AGENT", t);
    }
    let status = cmd.status().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("hyperfine failed on {}", f.name));
    }
    let doc: Value = serde_json::from_slice(&std::fs::read(&export).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&export);
    Ok(doc["results"][0]["times"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_f64)
                .map(|s| s * 1000.0)
                .collect()
        })
        .unwrap_or_default())
}

fn shell_quote(s: &str) -> String {
    if s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_./=:".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

pub fn command(dacli: &Path, dir: &Path, token: Option<&str>, argv: &[String]) -> Command {
    let mut cmd = Command::new(dacli);
    cmd.current_dir(dir).args(argv).env_remove("DACLI_AGENT");
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    cmd
}

/// One `mcp serve` process: start to first response, `tools/list`, then warm calls.
fn measure_mcp(opts: &Options, built: &Built) -> Result<Value, String> {
    let started = Instant::now();
    let mut child = command(
        &opts.dacli,
        &built.dir,
        Some(&built.agents.builders[0].1),
        &["mcp".into(), "serve".into()],
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut id = 0;
    let mut request = |method: &str, params: Value| -> Result<(String, f64), String> {
        id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let t = Instant::now();
        writeln!(stdin, "{msg}").map_err(|e| e.to_string())?;
        stdin.flush().map_err(|e| e.to_string())?;
        let mut line = String::new();
        stdout.read_line(&mut line).map_err(|e| e.to_string())?;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let v: Value = serde_json::from_str(&line).map_err(|e| format!("{method}: {e}: {line}"))?;
        if v.get("error").is_some() || v["result"]["isError"] == true {
            return Err(format!("{method} failed: {line}"));
        }
        Ok((line, ms))
    };
    request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
    )?;
    let start_ms = started.elapsed().as_secs_f64() * 1000.0;
    let (list, _) = request("tools/list", json!({}))?;
    let list: Value = serde_json::from_str(&list).map_err(|e| e.to_string())?;
    let tools = list["result"].to_string();
    let tool_count = list["result"]["tools"].as_array().map_or(0, Vec::len);
    let tokens = dacli::brief::tokens::Tokenizer::Cl100kBase.count(&tools);
    let mut calls = serde_json::Map::new();
    for (tool, args) in [
        ("status", json!({})),
        ("list_tasks", json!({})),
        ("get_context", json!({"ref": built.context_task})),
    ] {
        let mut args = args;
        args["schema_version"] = json!(1);
        let mut samples = Vec::new();
        let (mut bytes, mut text_bytes) = (0, 0);
        for _ in 0..opts.mcp_calls {
            let (line, ms) = request(
                "tools/call",
                json!({"name": tool, "arguments": args.clone()}),
            )?;
            bytes = line.len();
            // What enters the agent's context: the result text, not the JSON-RPC framing.
            text_bytes = serde_json::from_str::<Value>(&line)
                .ok()
                .and_then(|v| v["result"]["content"][0]["text"].as_str().map(str::len))
                .unwrap_or(0);
            samples.push(ms);
        }
        let p50 = percentile(&samples, 50.0);
        let p99 = percentile(&samples, 99.0);
        eprintln!(
            "  mcp {tool:<11} p50 {p50:>6.2} ms  p99 {p99:>6.2} ms  {text_bytes} bytes of text"
        );
        calls.insert(
            tool.into(),
            json!({"p50_ms": round3(p50), "p99_ms": round3(p99), "min_ms": round3(min(&samples)), "response_bytes": bytes, "text_bytes": text_bytes}),
        );
    }
    drop(stdin);
    let _ = child.wait_timeout_or_kill(Duration::from_secs(10));
    eprintln!(
        "  mcp start to first response {start_ms:.2} ms; tools/list {} bytes, {tokens} cl100k tokens",
        tools.len()
    );
    Ok(json!({
        "start_to_first_response_ms": round3(start_ms),
        "tools": tool_count,
        "tools_list_bytes": tools.len(),
        "tools_list_tokens_cl100k": tokens,
        "calls": calls,
    }))
}

trait WaitTimeout {
    fn wait_timeout_or_kill(&mut self, limit: Duration) -> std::io::Result<()>;
}

impl WaitTimeout for std::process::Child {
    /// Waits for the server to exit after its stdin closed, killing it past `limit`.
    fn wait_timeout_or_kill(&mut self, limit: Duration) -> std::io::Result<()> {
        let started = Instant::now();
        while started.elapsed() < limit {
            if self.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill()?;
        self.wait().map(|_| ())
    }
}

pub fn median(s: &[f64]) -> f64 {
    percentile(s, 50.0)
}

pub fn min(s: &[f64]) -> f64 {
    s.iter().copied().fold(f64::INFINITY, f64::min)
}

/// Nearest-rank percentile.
pub fn percentile(s: &[f64], p: f64) -> f64 {
    let mut v = s.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn version(dacli: &Path) -> Value {
    Command::new(dacli)
        .args(["--json", "version"])
        .output()
        .ok()
        .and_then(|o| serde_json::from_slice::<Value>(&o.stdout).ok())
        .map_or(Value::Null, |v| v["data"].clone())
}

/// The 1-, 5- and 15-minute load averages (Linux), if readable.
fn load_average() -> Value {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map_or(Value::Null, |l| {
            json!(
                l.split_whitespace()
                    .take(3)
                    .filter_map(|x| x.parse::<f64>().ok())
                    .collect::<Vec<_>>()
            )
        })
}

fn machine() -> Value {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let model = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|c| {
        c.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, m)| m.trim().to_string())
    });
    json!({"cpus": cpus, "cpu": model, "os": std::env::consts::OS})
}

/// The targets this run can judge (spec QUALITY.md §2 and the engine's bounds on first, warm,
/// cold and large-journal reads), each with its value and verdict.
fn targets(results: &Value) -> Value {
    let mut out = Vec::new();
    let sizes = &results["sizes"];
    let largest = sizes
        .as_object()
        .and_then(|m| m.keys().filter_map(|k| k.parse::<usize>().ok()).max());
    let Some(big) = largest else {
        return json!([]);
    };
    let at = &sizes[big.to_string()];
    let mut push = |figure: String, target: &str, value: Value, met: bool| {
        out.push(json!({"figure": figure, "target": target, "value": value, "met": met}));
    };
    let ratio = |f: &str| at["cli"][f]["ratio_to_floor"].as_f64();
    for f in [
        "context_md",
        "context_json",
        "status",
        "task_list",
        "task_add",
        "note_add",
        "whoami",
        "task_show",
    ] {
        if let Some(r) = ratio(f) {
            push(
                format!("{f} at N={big}, ratio to floor"),
                "<= 3",
                json!(r),
                r <= 3.0,
            );
        }
    }
    // Warm reads, the journal's reads included: every figure is read twice or more in a run.
    for f in [
        "status",
        "task_list",
        "context_md",
        "task_show",
        "events_list",
        "note_list",
    ] {
        if let Some(r) = ratio(f) {
            push(
                format!("warm {f} at N={big}, ratio to floor"),
                "<= 2.5",
                json!(r),
                r <= 2.5,
            );
        }
    }
    if let Some(add) = at["cli"].get("task_add") {
        // Steady: nine runs in ten within the bound of a write, not only the median.
        let floor = at["cli"]["version"]["median_ms"]
            .as_f64()
            .unwrap_or(f64::NAN);
        let p90 = add["p90_ms"].as_f64().unwrap_or(f64::NAN) / floor;
        push(
            format!(
                "task_add p90 at N={big}, ratio to floor (spread: p10 {} / median {} / p90 {} / max {} ms)",
                add["p10_ms"], add["median_ms"], add["p90_ms"], add["max_ms"]
            ),
            "<= 3",
            json!(round3(p90)),
            p90 <= 3.0,
        );
    }
    if sizes.get("1000").is_some() && big > 1000 && at.get("cli").is_some() {
        for (f, limit) in [
            ("task_add", 1.5),
            ("note_add", 1.5),
            ("context_md", 1.5),
            ("context_json", 1.5),
            ("whoami", 1.5),
            ("status", 3.0),
            ("task_list", 3.0),
        ] {
            let g = at["cli"][f]["median_ms"].as_f64().unwrap_or(f64::NAN)
                / sizes["1000"]["cli"][f]["median_ms"]
                    .as_f64()
                    .unwrap_or(f64::NAN);
            push(
                format!("{f} growth N=1000 -> N={big}"),
                &format!("<= {limit}"),
                json!(round3(g)),
                g <= limit,
            );
        }
    }
    if at.get("mcp").is_some() {
        for tool in ["status", "list_tasks", "get_context"] {
            let c = &at["mcp"]["calls"][tool];
            let (p50, p99) = (
                c["p50_ms"].as_f64().unwrap_or(f64::NAN),
                c["p99_ms"].as_f64().unwrap_or(f64::NAN),
            );
            push(
                format!("mcp {tool} p50 at N={big} (ms)"),
                "<= 2",
                json!(p50),
                p50 <= 2.0,
            );
            push(
                format!("mcp {tool} p99 at N={big} (ms)"),
                "<= 10",
                json!(p99),
                p99 <= 10.0,
            );
        }
        let start = at["mcp"]["start_to_first_response_ms"]
            .as_f64()
            .unwrap_or(f64::NAN);
        push(
            "mcp serve start to first response (ms)".into(),
            "<= 20",
            json!(start),
            start <= 20.0,
        );
    }
    // Every figure that carries its own verdict: the mixed workload's writes and first reads,
    // and the cold reads with their rebuild.
    if let Some(writes) = at["mixed"]["writes"].as_object() {
        for (kind, row) in writes {
            for (what, v) in row.as_object().into_iter().flatten() {
                if v.get("met").is_none() {
                    continue;
                }
                let figure = if what == "write" {
                    format!("mixed: {kind} itself at N={big}, ratio to floor")
                } else if kind == "none" {
                    format!("mixed: warm {what} at N={big}, ratio to floor")
                } else {
                    format!("mixed: {what} after {kind} at N={big}, ratio to floor")
                };
                push(
                    figure,
                    v["target"].as_str().unwrap_or_default(),
                    v["ratio_to_floor"].clone(),
                    v["met"] == true,
                );
            }
        }
    }
    if let Some(reads) = at["cold"]["reads"].as_object() {
        for (read, v) in reads {
            push(
                format!("cold {read} at N={big} (ms)"),
                v["target"].as_str().unwrap_or_default(),
                v["median_ms"].clone(),
                v["met"] == true,
            );
            push(
                format!(
                    "cold {read} rebuilt the index (cache back {}, next read x{})",
                    v["cache_dir_rebuilt"].as_str().unwrap_or_default(),
                    v["next_read"]["ratio_to_floor"]
                ),
                v["rebuilt"]["target"].as_str().unwrap_or_default(),
                v["rebuilt"]["met"].clone(),
                v["rebuilt"]["met"] == true,
            );
        }
    }
    let rss = peak_rss(at);
    if let Some((kib, what)) = rss {
        push(
            format!("peak RSS of any command at N={big} (MiB; largest: {what})"),
            &format!("<= {}", crate::mixed::RSS_LIMIT_KIB / 1024),
            json!(round3(kib as f64 / 1024.0)),
            kib > 0 && kib <= crate::mixed::RSS_LIMIT_KIB,
        );
    }
    if at.get("mcp").is_some() {
        let tokens = at["mcp"]["tools_list_tokens_cl100k"]
            .as_u64()
            .unwrap_or(u64::MAX);
        push(
            "tools/list cl100k tokens".into(),
            "<= 4000",
            json!(tokens),
            tokens <= 4000,
        );
    }
    if let Some(page) = sizes
        .get("1000")
        .and_then(|s| s["mcp"]["calls"]["list_tasks"]["text_bytes"].as_u64())
    {
        push(
            "list_tasks default page at N=1000 (bytes of result text)".into(),
            "<= 8192",
            json!(page),
            page <= 8192,
        );
    }
    Value::Array(out)
}

/// The largest peak RSS of any command measured at one size, and which command it was.
fn peak_rss(at: &Value) -> Option<(u64, String)> {
    let mut all: Vec<(u64, String)> = Vec::new();
    for (name, v) in at["cli"].as_object().into_iter().flatten() {
        all.extend(v["peak_rss_kib"].as_u64().map(|k| (k, name.clone())));
    }
    for (kind, row) in at["mixed"]["writes"].as_object().into_iter().flatten() {
        for (what, v) in row.as_object().into_iter().flatten() {
            let name = if what == "write" {
                kind.clone()
            } else {
                format!("{what} after {kind}")
            };
            all.extend(v["peak_rss_kib"].as_u64().map(|k| (k, name)));
        }
    }
    for (read, v) in at["cold"]["reads"].as_object().into_iter().flatten() {
        all.extend(
            v["peak_rss_kib"]
                .as_u64()
                .map(|k| (k, format!("cold {read}"))),
        );
    }
    let review = &at["review"];
    for (name, v) in [
        ("search", &review["search"]["warm"]),
        ("phrase search", &review["search"]["phrase"]),
        ("review", &review["review"]["range"]),
        ("log", &review["review"]["log"]),
    ] {
        all.extend(v["peak_rss_kib"].as_u64().map(|k| (k, name.to_string())));
    }
    for stage in at["git"]["stages"].as_array().into_iter().flatten() {
        let branches = stage["branches"].as_u64().unwrap_or(0);
        for step in [
            "cleanup_preview",
            "cleanup_preview_all",
            "cleanup_apply",
            "delivery_reconcile",
        ] {
            all.extend(
                stage[step]["peak_rss_kib"]
                    .as_u64()
                    .map(|k| (k, format!("{step} at {branches} branches"))),
            );
        }
    }
    all.into_iter().max_by_key(|(k, _)| *k)
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// `ms xratio` and the verdict of a figure that carries one.
fn cell(v: &Value) -> String {
    if v.is_null() {
        return "-".into();
    }
    let verdict = match v.get("met") {
        Some(Value::Bool(true)) => " ok",
        Some(Value::Bool(false)) => " NO",
        _ => "",
    };
    format!(
        "{:.2} x{:.2}{verdict}",
        num(&v["median_ms"]),
        num(&v["ratio_to_floor"])
    )
}

fn print_table(results: &Value) {
    let Some(sizes) = results["sizes"].as_object() else {
        return;
    };
    println!(
        "\nload average (1, 5, 15 min): {} at the start, {} at the end",
        results["load_average"]["start"], results["load_average"]["end"]
    );
    let names: Vec<&String> = sizes.keys().collect();
    let any = |section: &str| {
        names
            .iter()
            .any(|n| sizes[n.as_str()].get(section).is_some())
    };
    if any("cli") {
        print!("\n{:<34}", "figure (median ms, xfloor, RSS)");
        for n in &names {
            print!("{:>22}", format!("N={n}"));
        }
        println!();
        let cli_rows = [
            "version",
            "status",
            "task_list",
            "task_add",
            "note_add",
            "context_md",
            "context_json",
            "whoami",
            "task_show",
            "events_list",
            "note_list",
        ];
        for f in cli_rows {
            print!("{f:<34}");
            for n in &names {
                let c = &sizes[n.as_str()]["cli"][f];
                print!(
                    "{:>22}",
                    format!(
                        "{:.2} x{:.2} {:.0}M",
                        num(&c["median_ms"]),
                        num(&c["ratio_to_floor"]),
                        num(&c["peak_rss_kib"]) / 1024.0
                    )
                );
            }
            println!();
        }
        print!("{:<34}", "task_add spread p10/p90/max ms");
        for n in &names {
            let c = &sizes[n.as_str()]["cli"]["task_add"];
            print!(
                "{:>22}",
                format!(
                    "{:.1}/{:.1}/{:.1}",
                    num(&c["p10_ms"]),
                    num(&c["p90_ms"]),
                    num(&c["max_ms"])
                )
            );
        }
        println!();
    }
    if any("mcp") {
        for tool in ["status", "list_tasks", "get_context"] {
            print!("{:<34}", format!("mcp {tool} p50/p99 ms"));
            for n in &names {
                let c = &sizes[n.as_str()]["mcp"]["calls"][tool];
                print!(
                    "{:>22}",
                    format!("{:.2} / {:.2}", num(&c["p50_ms"]), num(&c["p99_ms"]))
                );
            }
            println!();
        }
        print!("{:<34}", "mcp start to first response ms");
        for n in &names {
            print!(
                "{:>22}",
                format!(
                    "{:.2}",
                    num(&sizes[n.as_str()]["mcp"]["start_to_first_response_ms"])
                )
            );
        }
        println!();
        if let Some(m) = names
            .iter()
            .map(|n| &sizes[n.as_str()]["mcp"])
            .find(|m| !m.is_null())
        {
            println!(
                "tools/list: {} tools, {} bytes, {} cl100k tokens",
                m["tools"], m["tools_list_bytes"], m["tools_list_tokens_cl100k"]
            );
        }
    }
    for n in &names {
        let at = &sizes[n.as_str()];
        if let Some(writes) = at["mixed"]["writes"].as_object() {
            println!(
                "\nmixed workload at N={n} ({} events; floor {:.2} ms): the write, then the first read after it (median ms, xfloor, verdict)",
                at["events"],
                num(&at["mixed"]["floor_ms"])
            );
            print!("{:<10}{:>22}", "write", "write itself");
            for read in crate::mixed::READS {
                print!("{read:>22}");
            }
            println!();
            for (kind, row) in writes {
                print!("{kind:<10}{:>22}", cell(&row["write"]));
                for read in crate::mixed::READS {
                    print!("{:>22}", cell(&row[read]));
                }
                println!();
            }
        }
        if let Some(reads) = at["cold"]["reads"].as_object() {
            println!(
                "\ncold reads at N={n} (.dacli/cache/ deleted before each; floor {:.2} ms; target <= {} ms)",
                num(&at["cold"]["floor_ms"]),
                crate::mixed::COLD_LIMIT_MS
            );
            println!(
                "{:<10}{:>18}{:>10}{:>8}{:>18}{:>12}{:>9}",
                "read", "median/min ms", "verdict", "RSS", "next read", "cache back", "rebuilt"
            );
            for (read, v) in reads {
                println!(
                    "{read:<10}{:>18}{:>10}{:>8}{:>18}{:>12}{:>9}",
                    format!("{:.1}/{:.1}", num(&v["median_ms"]), num(&v["min_ms"])),
                    if v["met"] == true { "ok" } else { "NO" },
                    format!("{:.0}M", num(&v["peak_rss_kib"]) / 1024.0),
                    format!(
                        "{:.2} x{:.2}",
                        num(&v["next_read"]["median_ms"]),
                        num(&v["next_read"]["ratio_to_floor"])
                    ),
                    v["cache_dir_rebuilt"].as_str().unwrap_or_default(),
                    if v["rebuilt"]["met"] == true {
                        "ok"
                    } else {
                        "NO"
                    },
                );
            }
        }
    }
    println!("\ntargets (spec QUALITY.md §2 and the engine's bounds):");
    for t in results["targets"].as_array().into_iter().flatten() {
        println!(
            "  [{}] {}: {} (target {})",
            if t["met"] == true { "met" } else { "NOT met" },
            t["figure"].as_str().unwrap_or_default(),
            t["value"],
            t["target"].as_str().unwrap_or_default()
        );
    }
}
