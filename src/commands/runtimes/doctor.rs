//! `runtime doctor`: never trust, always probe. Each adapter's binary is looked up on PATH,
//! its version probe and help probes run through `exec` (no shell, with a timeout, never with
//! a dangerous-permission flag), and every declared flag is checked against the help text.
//! Completed probes are cached per binary under `runs/runtimes/`, keyed by the binary's real
//! path, size and mtime, and run again as soon as one of those changes.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::dispatch::text::{ago_text, table};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, Outcome};
use crate::exec::{self, Found, Stamp};
use crate::model::runtime::{MAX_TIMEOUT_MS, MIN_TIMEOUT_MS, Probe, ProbeOutcome, Runtime};
use crate::objects::runtimes::{self, Located};
use crate::policy::runtime::{
    CapabilityCheck, FlagCheck, Lookup, dangerous_token, judge, probe_ran,
};
use crate::workspace::Workspace;

/// Probe the installed runtimes: find each binary on PATH, read its version, check every
/// declared flag against its --help, and report each capability as verified, absent or
/// unknown.
///
/// Probes run without a shell, with a timeout, and never with a flag the adapter lists as
/// dangerous. Results are cached per machine (under .dacli/runs/) until the binary's path,
/// size or mtime changes; --fresh probes again regardless.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Only this runtime (default: every one).
    name: Option<String>,
    /// Timeout of each probe in milliseconds (default: the adapter's `detect.timeout_ms`).
    #[arg(long = "timeout-ms", value_name = "MS")]
    #[serde(default)]
    timeout_ms: Option<u64>,
    /// Ignore the cache and probe every binary again.
    #[arg(long)]
    #[serde(default)]
    fresh: bool,
}

impl Classify for Request {}

/// A probe as reported: what ran and how it ended (its output stays in the cache).
#[derive(Debug, Serialize)]
struct ProbeView {
    args: Vec<String>,
    outcome: ProbeOutcome,
    exit_code: Option<i32>,
    ms: u64,
    garbage: Option<String>,
    detail: Option<String>,
}

impl ProbeView {
    fn of(p: &Probe) -> ProbeView {
        ProbeView {
            args: p.args.clone(),
            outcome: p.outcome,
            exit_code: p.exit_code,
            ms: p.ms,
            garbage: p.garbage.clone(),
            detail: p.detail.clone(),
        }
    }
}

#[derive(Debug, Serialize)]
struct Report {
    name: String,
    binary: String,
    /// `ok`, `degraded` or `missing`.
    status: &'static str,
    found: bool,
    /// Where it was found: relative to the work-tree root, or `~/…`; null elsewhere (no
    /// absolute path is ever output).
    path: Option<String>,
    /// The 1-based index of the PATH entry it was found in.
    path_entry: Option<usize>,
    version: Option<String>,
    /// Whether the probes came from the cache.
    cached: bool,
    probed_at: Option<String>,
    timeout_ms: u64,
    probes: Vec<ProbeView>,
    flags: Vec<FlagCheck>,
    capabilities: Vec<CapabilityCheck>,
    problems: Vec<String>,
}

#[derive(Debug, Default, Serialize)]
struct Summary {
    ok: usize,
    degraded: usize,
    missing: usize,
}

#[derive(Debug, Serialize)]
pub struct Response {
    runtimes: Vec<Report>,
    summary: Summary,
}

pub(super) fn command() -> Command {
    Command::new("runtime.doctor", Class::Read, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    if let Some(ms) = req.timeout_ms
        && !(MIN_TIMEOUT_MS..=MAX_TIMEOUT_MS).contains(&ms)
    {
        return Err(Error::usage(format!(
            "--timeout-ms must be between {MIN_TIMEOUT_MS} and {MAX_TIMEOUT_MS}"
        )));
    }
    let located: Vec<Located> = match &req.name {
        Some(name) => vec![
            runtimes::load(ws, name)
                .map_err(|e| Error::from(e).hint("list runtimes with `dacli runtime list`"))?,
        ],
        None => super::all_runtimes(ctx)?,
    };
    let mut summary = Summary::default();
    let mut reports = Vec::new();
    for l in &located {
        let report = examine(ctx, ws, &l.runtime, &req);
        match report.status {
            "ok" => summary.ok += 1,
            "missing" => summary.missing += 1,
            _ => summary.degraded += 1,
        }
        reports.push(report);
    }
    Ok(Outcome::Done(Response {
        runtimes: reports,
        summary,
    }))
}

/// Probes (or recalls) one runtime and judges it.
fn examine(ctx: &Ctx, ws: &Workspace, rt: &Runtime, req: &Request) -> Report {
    let timeout_ms = req.timeout_ms.unwrap_or(rt.detect.timeout_ms);
    let path_var = ctx.env().get("PATH");
    let found = exec::which(&rt.binary, path_var, ws.root());
    let stamped = found
        .as_ref()
        .and_then(|f| exec::stamp(&f.path).map(|s| (f, s)));
    let Some((found, stamp)) = stamped else {
        let why = match &found {
            Some(_) => format!("`{}` was found but its file cannot be read", rt.binary),
            None => missing_text(rt, path_var),
        };
        let verdict = judge(rt, &Lookup::Missing(why), None, &[]);
        return Report {
            name: rt.name.clone(),
            binary: rt.binary.clone(),
            status: verdict.status,
            found: false,
            path: None,
            path_entry: None,
            version: None,
            cached: false,
            probed_at: None,
            timeout_ms,
            probes: Vec::new(),
            flags: verdict.flags,
            capabilities: verdict.capabilities,
            problems: verdict.problems,
        };
    };
    let wanted: Vec<Vec<String>> = std::iter::once(rt.detect.version.clone())
        .chain(rt.detect.help.iter().cloned())
        .collect();
    let recalled = if req.fresh {
        None
    } else {
        recall(ws, &stamp, &wanted)
    };
    let cached = recalled.is_some();
    let (probes, probed_at) = match recalled {
        Some(hit) => hit,
        None => {
            let probes = probe_all(rt, &found.path, &wanted, timeout_ms);
            let at = crate::model::format_time(ctx.now());
            crate::ops::runtimes::remember_probes(ws, &found.path, &stamp, &probes, &at);
            (probes, at)
        }
    };
    let verdict = judge(
        rt,
        &Lookup::Found,
        probes.first(),
        probes.get(1..).unwrap_or(&[]),
    );
    Report {
        name: rt.name.clone(),
        binary: rt.binary.clone(),
        status: verdict.status,
        found: true,
        path: shown_path(ctx, ws, found),
        path_entry: found.path_entry,
        version: verdict.version,
        cached,
        probed_at: Some(probed_at),
        timeout_ms,
        probes: probes.iter().map(ProbeView::of).collect(),
        flags: verdict.flags,
        capabilities: verdict.capabilities,
        problems: verdict.problems,
    }
}

fn missing_text(rt: &Runtime, path_var: Option<&str>) -> String {
    if rt.binary.contains('/') {
        return format!(
            "`{}` does not exist or is not an executable file (relative to the work-tree root)",
            rt.binary
        );
    }
    let entries = path_var.map_or(0, |p| std::env::split_paths(p).count());
    format!(
        "`{}` is not on PATH ({entries} entries searched): install it, or set `binary` in the adapter",
        rt.binary
    )
}

/// The cached probes for `stamp`, when the cache holds every wanted probe for this very
/// binary: same real path, size and mtime.
fn recall(ws: &Workspace, stamp: &Stamp, wanted: &[Vec<String>]) -> Option<(Vec<Probe>, String)> {
    let cache = runtimes::read_cache(ws, &stamp.real_path)?;
    if cache.size != stamp.size || cache.mtime_ns != stamp.mtime_ns {
        return None;
    }
    let probes: Option<Vec<Probe>> = wanted
        .iter()
        .map(|args| cache.probes.iter().find(|p| &p.args == args).cloned())
        .collect();
    Some((probes?, cache.probed_at))
}

/// Runs the wanted probes in order. A probe holding a dangerous flag is refused, not run;
/// once the version probe has timed out, the help probes are skipped (the binary hangs).
fn probe_all(rt: &Runtime, program: &Path, wanted: &[Vec<String>], timeout_ms: u64) -> Vec<Probe> {
    let mut out: Vec<Probe> = Vec::new();
    for args in wanted {
        if out
            .first()
            .is_some_and(|v| v.outcome == ProbeOutcome::TimedOut)
        {
            out.push(Probe::not_run(
                args,
                ProbeOutcome::Skipped,
                "the version probe timed out",
            ));
            continue;
        }
        if let Some(flag) = dangerous_token(args, &rt.dangerous) {
            out.push(Probe::not_run(
                args,
                ProbeOutcome::Refused,
                format!("`{flag}` is a dangerous-permission flag"),
            ));
            continue;
        }
        out.push(
            match exec::run_argv(program, args, Duration::from_millis(timeout_ms)) {
                Ok(ran) => {
                    let mut output = ran.stdout;
                    output.extend_from_slice(&ran.stderr);
                    let mut probe =
                        probe_ran(args, ran.exit_code, ran.timed_out, ran.duration_ms, &output);
                    if ran.timed_out {
                        probe.detail = Some(format!("{timeout_ms} ms"));
                    }
                    probe
                }
                Err(e) => Probe::not_run(args, ProbeOutcome::FailedToStart, e.kind().to_string()),
            },
        );
    }
    out
}

/// Where the binary is, as output may show it: relative to the work-tree root, or to the
/// home directory as `~/…`; otherwise nothing (never an absolute path).
fn shown_path(ctx: &Ctx, ws: &Workspace, found: &Found) -> Option<String> {
    let slashes = |p: &Path| p.to_string_lossy().replace('\\', "/");
    if let Ok(rel) = found.path.strip_prefix(ws.root()) {
        return Some(slashes(rel));
    }
    let home = ctx.env().get("HOME").filter(|h| h.len() > 1)?;
    found
        .path
        .strip_prefix(home)
        .ok()
        .map(|rel| format!("~/{}", slashes(rel)))
}

fn render(r: &Response, ctx: &Ctx) -> String {
    if r.runtimes.is_empty() {
        return "no runtimes to check (add one: dacli runtime add NAME --preset claude-code|codex|gemini|generic-exec)\n".into();
    }
    let now = ctx.now();
    let mut rows = vec![vec![
        "RUNTIME".to_string(),
        "STATUS".into(),
        "VERSION".into(),
        "BINARY".into(),
        "PROBED".into(),
    ]];
    for rep in &r.runtimes {
        let binary = match (&rep.path, rep.path_entry, rep.found) {
            (Some(p), _, _) => p.clone(),
            (None, Some(i), true) => format!("{} (PATH entry {i})", rep.binary),
            (None, None, true) => rep.binary.clone(),
            (_, _, false) => format!("{} (not found)", rep.binary),
        };
        let probed = match (&rep.probed_at, rep.cached) {
            (Some(at), true) => format!("cached, {}", ago_text(now, at)),
            (Some(_), false) => "now".to_string(),
            (None, _) => "-".to_string(),
        };
        rows.push(vec![
            rep.name.clone(),
            rep.status.to_string(),
            rep.version.clone().unwrap_or_else(|| "-".into()),
            binary,
            probed,
        ]);
    }
    let mut out = table(&rows, &[]);
    out.push('\n');
    out.push_str(&capability_matrix(r));
    for rep in r.runtimes.iter().filter(|rep| !rep.problems.is_empty()) {
        out.push_str(&format!("\n{}:\n", rep.name));
        for p in &rep.problems {
            out.push_str(&format!("  - {p}\n"));
        }
    }
    out
}

/// One row per capability, one column per runtime: `verified`, `absent`, `unknown`, or `-`
/// for a capability the runtime does not declare.
fn capability_matrix(r: &Response) -> String {
    let mut names: Vec<&str> = Vec::new();
    for rep in &r.runtimes {
        for c in &rep.capabilities {
            if !names.contains(&c.name.as_str()) {
                names.push(&c.name);
            }
        }
    }
    let mut header = vec!["CAPABILITY".to_string()];
    header.extend(r.runtimes.iter().map(|rep| rep.name.clone()));
    let mut rows = vec![header];
    for name in names {
        let mut row = vec![name.to_string()];
        for rep in &r.runtimes {
            let cell = rep
                .capabilities
                .iter()
                .find(|c| c.name == name)
                .map_or("-", |c| if c.declared { c.status.as_str() } else { "-" });
            row.push(cell.to_string());
        }
        rows.push(row);
    }
    table(&rows, &[])
}
