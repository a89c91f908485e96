//! The benchmark harness of spec QUALITY.md §1 (run through `bench/mkws` and `bench/run`).
//!
//! `bench mkws N DIR` builds a workspace of N tasks in a new git repository at DIR and checks
//! its counts through the CLI; `bench run [--sizes ...]` builds one workspace per size in a
//! temporary directory, times the §1 figures against the `--version` floor and writes
//! `bench/results/<date>.json`. Both take the dacli binary to measure from `--dacli PATH`
//! (the wrappers pass the release build). `bench rss PROG ARGS...` runs one command and prints
//! its exit code and peak resident set size; `run` measures memory through it.

// A harness spawns processes, writes files and reads the clock: that is its whole job.
#![allow(clippy::disallowed_methods)]

mod gitscale;
mod mixed;
mod mkws;
mod review;
mod rss;
mod run;
mod timing;

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("mkws") => mkws_main(&args[1..]),
        Some("run") => run::main(&args[1..]),
        Some("rss") => rss::main(&args[1..]),
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str = "usage: bench mkws [--dacli PATH] [--events E] N DIR | bench run [--dacli PATH] [--sizes 100,1000,10000] [--events E | --events-per-task K] [--runs R] [--sections cli,mcp,mixed,cold,review,git] [--mcp-calls C] [--out FILE] | bench rss PROG [ARGS...]";

/// The value after flag `name`, removed from `args`.
fn take_flag(args: &mut Vec<String>, name: &str) -> Option<String> {
    let at = args.iter().position(|a| a == name)?;
    args.remove(at);
    (at < args.len()).then(|| args.remove(at))
}

/// The dacli binary: `--dacli`, else `dacli` next to this harness's target directory.
fn dacli_path(args: &mut Vec<String>) -> Result<PathBuf, String> {
    if let Some(p) = take_flag(args, "--dacli") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // <target>/<profile>/examples/bench -> <target>/<profile>/dacli
    exe.parent()
        .and_then(|p| p.parent())
        .map(|p| p.join("dacli"))
        .filter(|p| p.exists())
        .ok_or_else(|| "pass --dacli PATH (no dacli binary next to the harness)".to_string())
}

fn mkws_main(args: &[String]) -> Result<(), String> {
    let mut args = args.to_vec();
    let dacli = dacli_path(&mut args)?;
    let events = take_flag(&mut args, "--events")
        .map(|e| {
            e.parse::<usize>()
                .map_err(|_| format!("--events must be a number, not `{e}`"))
        })
        .transpose()?;
    let [n, dir] = args.as_slice() else {
        return Err(USAGE.to_string());
    };
    let n: usize = n
        .parse()
        .map_err(|_| format!("N must be a number, not `{n}`"))?;
    let started = std::time::Instant::now();
    let built = mkws::build(&dacli, std::path::Path::new(dir), n, events)?;
    println!(
        "built {} tasks in {} ({:.1} s), verified through the CLI: {:?}",
        n,
        built.dir.display(),
        started.elapsed().as_secs_f64(),
        built.counts
    );
    println!("context task: {}", built.context_task);
    for (name, (id, token)) in [
        ("planner", &built.agents.planner),
        ("reviewer", &built.agents.reviewer),
    ]
    .into_iter()
    .chain(built.agents.builders.iter().map(|b| ("builder", b)))
    {
        println!("{name} {id} DACLI_AGENT={token}");
    }
    Ok(())
}
