//! `dacli lint`: every finding in the workspace, with a code and a severity, sorted by path
//! then code; `--fix` repairs what the caller may repair.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::lint_scan::{Found, scan};
use crate::dispatch::{Class, Classify, Command, Ctx, Error, ErrorKind, Outcome};
use crate::ops::lint_fix::{Fixer, apply};
use crate::policy::lint::Severity;
use crate::workspace::Workspace;
use crate::workspace::names::{check_repo_path, check_slug};

/// Check the workspace files against the format: errors (malformed files, incomplete decisions
/// and metrics, risks without an action) and warnings (missing acceptance, non-canonical bytes,
/// stale temp files, duplicates, unknown roles, broken references, ...), sorted by path, then
/// code. `--fix` rewrites non-canonical files you own, removes stale temp files and renumbers
/// duplicate task numbers (FORMAT §22).
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Only findings in these files or directories (relative to the work-tree root).
    #[arg(value_name = "PATH")]
    #[serde(default)]
    paths: Vec<String>,
    /// Only findings in this project's directory (slug or `p-<slug>`).
    #[arg(long, value_name = "PROJECT")]
    #[serde(default)]
    project: Option<String>,
    /// Repair what you may: rewrite your non-canonical files, remove stale temp files,
    /// renumber your duplicate task numbers; needs rw.
    #[arg(long)]
    #[serde(default)]
    fix: bool,
    /// Exit 1 (E_LINT) when an error remains.
    #[arg(long)]
    #[serde(default)]
    check: bool,
}

impl Classify for Request {
    fn class(&self, declared: Class) -> Class {
        if self.fix { Class::Mutate } else { declared }
    }

    fn display_path(&self, path: &str) -> String {
        if self.fix {
            format!("{path} --fix")
        } else {
            path.to_string()
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Response {
    findings: Vec<FindingView>,
    summary: Summary,
}

#[derive(Debug, Serialize)]
struct FindingView {
    code: &'static str,
    severity: Severity,
    path: String,
    object: Option<String>,
    message: String,
    fixable: bool,
    /// Under `--fix`: why a fixable finding was left alone (`not_owner`).
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped: Option<&'static str>,
    /// Under `--fix`: the finding was repaired by this run.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    fixed: bool,
}

#[derive(Debug, Serialize)]
struct Summary {
    /// Errors that remain.
    errors: usize,
    /// Warnings that remain.
    warnings: usize,
    fixed: usize,
}

pub(super) fn command() -> Command {
    Command::new("lint", Class::Read, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let filter = Filter::new(ws, &req)?;
    let found = filtered_scan(ctx, ws, &filter)?;
    let views = if req.fix {
        fix_all(ctx, ws, &filter, found)?
    } else {
        found.into_iter().map(|f| view(f, false, None)).collect()
    };
    let remaining = |s: Severity| views.iter().filter(|v| !v.fixed && v.severity == s).count();
    let summary = Summary {
        errors: remaining(Severity::Error),
        warnings: remaining(Severity::Warning),
        fixed: views.iter().filter(|v| v.fixed).count(),
    };
    if req.check && summary.errors > 0 {
        let mut err = Error::new(
            ErrorKind::Operational,
            "E_LINT",
            format!("lint found {} error(s)", summary.errors),
        );
        for v in views
            .iter()
            .filter(|v| !v.fixed && v.severity == Severity::Error)
        {
            err = err.hint(format!("{}: {} ({})", v.path, v.code, v.message));
        }
        return Err(err);
    }
    Ok(Outcome::Done(Response {
        findings: views,
        summary,
    }))
}

fn filtered_scan(ctx: &Ctx, ws: &Workspace, filter: &Filter) -> Result<Vec<Found>, Error> {
    let mut found: Vec<Found> = scan(ctx, ws)?
        .into_iter()
        .filter(|f| filter.keeps(&f.path))
        .collect();
    found.sort_by(|a, b| (&a.path, a.code, &a.message).cmp(&(&b.path, b.code, &b.message)));
    Ok(found)
}

/// Applies every fix, then scans again: one repair can settle findings elsewhere (removing a
/// note's copy settles the duplicate at the path that stays), so what remains is what a fresh
/// `lint` would report, plus the findings this run fixed.
fn fix_all(
    ctx: &Ctx,
    ws: &Workspace,
    filter: &Filter,
    found: Vec<Found>,
) -> Result<Vec<FindingView>, Error> {
    let mut views = Vec::new();
    let mut skipped: BTreeSet<(String, &'static str)> = BTreeSet::new();
    for f in found {
        let Some(fix) = &f.fix else {
            continue;
        };
        let me = ctx.identity()?.agent.id.clone();
        let at = crate::model::format_time(ctx.now());
        let mint = || ctx.new_ulid();
        let by = Fixer {
            me: &me,
            at: &at,
            mint: &mint,
        };
        if apply(&by, ws, fix)? {
            views.push(view(f, true, None));
        } else {
            skipped.insert((f.path.clone(), f.code));
        }
    }
    for f in filtered_scan(ctx, ws, filter)? {
        let why = skipped
            .contains(&(f.path.clone(), f.code))
            .then_some("not_owner");
        views.push(view(f, false, why));
    }
    views.sort_by(|a, b| (&a.path, a.code, &a.message).cmp(&(&b.path, b.code, &b.message)));
    Ok(views)
}

fn view(f: Found, fixed: bool, skipped: Option<&'static str>) -> FindingView {
    FindingView {
        code: f.code,
        severity: f.severity,
        path: f.path,
        object: f.object,
        message: f.message,
        fixable: f.fix.is_some(),
        skipped,
        fixed,
    }
}

/// Which findings the caller asked about: `PATH...` (files or directories) and `--project`.
struct Filter {
    paths: Vec<String>,
    project: Option<String>,
}

impl Filter {
    fn new(ws: &Workspace, req: &Request) -> Result<Filter, Error> {
        let mut paths = Vec::new();
        for p in &req.paths {
            let rel = Path::new(p)
                .strip_prefix(ws.root())
                .map(|r| r.to_string_lossy().into_owned())
                .unwrap_or_else(|_| p.clone());
            let rel = rel
                .trim_start_matches("./")
                .trim_end_matches('/')
                .to_string();
            check_repo_path(&rel).map_err(|why| {
                Error::new(ErrorKind::Usage, "E_PATH_ESCAPE", why)
                    .hint("give paths relative to the work-tree root, as lint prints them")
            })?;
            if std::fs::symlink_metadata(ws.root().join(&rel)).is_err() {
                return Err(Error::not_found(format!("no file or directory `{rel}`"))
                    .hint("give paths relative to the work-tree root, as lint prints them"));
            }
            paths.push(rel);
        }
        let project = match req.project.as_deref() {
            None => None,
            Some(p) => {
                let slug = p.strip_prefix("p-").unwrap_or(p);
                check_slug(slug).map_err(Error::bad_slug)?;
                let dir = ws.path(&["projects", slug]);
                if !dir.join("project.md").exists() {
                    return Err(
                        Error::not_found(format!("no project `{slug}` in this workspace"))
                            .hint("list projects with `dacli status`"),
                    );
                }
                Some(ws.display(&dir))
            }
        };
        Ok(Filter { paths, project })
    }

    fn keeps(&self, path: &str) -> bool {
        let under = |dir: &str| path == dir || path.starts_with(&format!("{dir}/"));
        (self.paths.is_empty() || self.paths.iter().any(|p| under(p)))
            && self.project.as_deref().is_none_or(under)
    }
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    let mut out = String::new();
    for f in &r.findings {
        let mark = match (f.fixed, f.severity) {
            (true, _) => "fixed",
            (false, Severity::Error) => "error",
            (false, Severity::Warning) => "warning",
        };
        let skipped = match f.skipped {
            Some(why) => format!(" [not fixed: {why}]"),
            None => String::new(),
        };
        out.push_str(&format!(
            "{}: {mark}[{}]: {}{skipped}\n",
            f.path, f.code, f.message
        ));
    }
    let s = &r.summary;
    out.push_str(&format!(
        "{} error(s), {} warning(s){}\n",
        s.errors,
        s.warnings,
        if s.fixed > 0 {
            format!(", {} fixed", s.fixed)
        } else {
            String::new()
        }
    ));
    out
}
