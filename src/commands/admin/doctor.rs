//! `dacli doctor`: workspace health, one entry per check (COMMANDS.md §3).

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, ErrorKind, IdentitySource, Outcome};
use crate::ops::{self, admin::Item};
use crate::workspace::{SUPPORTED_FORMAT, Workspace};

use super::init::GITIGNORE;

/// Check the workspace's health: malformed, non-canonical and duplicate files, leftover
/// temp files, locks, the .gitignore, git tracking, your identity and the GitHub token.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Delete stale temp files and add the missing lines to `.dacli/.gitignore` (and
    /// nothing else); needs rw.
    #[arg(long)]
    #[serde(default)]
    fix: bool,
    /// Exit 1 (E_LINT) when any check is an error.
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
    format: FormatInfo,
    checks: Vec<Check>,
    fixed: usize,
}

#[derive(Debug, Serialize)]
struct FormatInfo {
    workspace: i64,
    supported: i64,
}

#[derive(Debug, Serialize)]
struct Check {
    name: &'static str,
    status: &'static str,
    count: usize,
    items: Vec<Item>,
}

fn check(name: &'static str, bad: &'static str, items: Vec<Item>) -> Check {
    Check {
        name,
        status: if items.is_empty() { "ok" } else { bad },
        count: items.len(),
        items,
    }
}

pub(super) fn command() -> Command {
    Command::new("doctor", Class::Read, run, render)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let ws = ctx.ws()?;
    let scan = ops::admin::scan(ws, ctx.now())?;

    let gitignore_path = ws.path(&[".gitignore"]);
    let absent = crate::objects::gitignore::missing(ws, GITIGNORE)?;
    let missing: Vec<Item> = absent
        .iter()
        .map(|l| Item {
            path: ws.display(&gitignore_path),
            reason: "gitignore_missing_line".into(),
            detail: format!("`{l}` is not ignored"),
        })
        .collect();

    let tracked = tracked_items(ws);
    let me = ctx.identity()?;
    let identity = Check {
        name: "identity",
        status: "ok",
        count: 0,
        items: vec![Item {
            path: String::new(),
            reason: match me.source {
                IdentitySource::Token => "token".into(),
                IdentitySource::Unset => "unset".into(),
            },
            detail: format!("{} ({})", me.agent.id, me.agent.grant),
        }],
    };
    let github = github_token_check(ctx, ws);

    // The format-2 upgrade (FORMAT §23): reported as a check, done by `--fix`.
    let upgrade = ops::upgrade::upgrade(ws, !req.fix)?;
    let format_items: Vec<Item> = if req.fix {
        Vec::new()
    } else {
        upgrade_items(&upgrade)
    };

    // The record merge driver (FORMAT §22): `.dacli/.gitattributes` and this clone's config.
    let driver = ops::machines::driver_state(ws)?;
    let mut driver_items = Vec::new();
    if !driver.gitattributes {
        driver_items.push(Item {
            path: ws.display(&ws.path(&[".gitattributes"])),
            reason: "merge_driver_missing".into(),
            detail: "`*.md merge=dacli` is not set: records merged by git can conflict".into(),
        });
    }
    if !driver.config {
        driver_items.push(Item {
            path: String::new(),
            reason: "merge_driver_missing".into(),
            detail: format!(
                "`{}` is not set in this clone's git config",
                ops::machines::DRIVER_KEY
            ),
        });
    }
    for kept in ops::machines::kept_versions(ws)? {
        driver_items.push(Item {
            path: kept,
            reason: "merge_kept".into(),
            detail: "a version the merge driver could not merge field by field, kept beside the merged file".into(),
        });
    }

    let mut fixed = 0;
    let mut missing = missing;
    let mut stale = scan.stale;
    if req.fix {
        let paths: Vec<_> = stale.drain(..).map(|(_, p)| p).collect();
        fixed = ops::admin::fix(ws, &paths, !absent.is_empty(), GITIGNORE)?;
        fixed += upgrade.moved.len() + usize::from(upgrade.format_bumped);
        if !driver.gitattributes || !driver.config {
            let exe = std::env::current_exe()
                .map(|e| {
                    ops::admin::canonical_or_same(&e)
                        .to_string_lossy()
                        .into_owned()
                })
                .unwrap_or_else(|_| "dacli".into());
            if ops::machines::install_driver(ws, &exe)? {
                fixed += 1;
                driver_items.retain(|i| i.reason != "merge_driver_missing");
            }
        }
        if !absent.is_empty() {
            missing.clear();
        }
    }
    let stale_items: Vec<Item> = stale.into_iter().map(|(i, _)| i).collect();

    let checks = vec![
        check("format_version", "warn", format_items),
        check("malformed_files", "error", scan.malformed),
        check("noncanonical_files", "warn", scan.noncanonical),
        check("stale_temp_files", "warn", stale_items),
        check("orphan_locks", "warn", scan.orphan_locks),
        check("held_locks", "warn", scan.held_locks),
        check("duplicate_ids", "error", scan.duplicates),
        check("unknown_folders", "error", scan.unknown_folders),
        check("gitignore", "warn", missing),
        check("merge_driver", "warn", driver_items),
        tracked,
        identity,
        github,
    ];
    if req.check {
        let failing: Vec<&str> = checks
            .iter()
            .filter(|c| c.status == "error")
            .map(|c| c.name)
            .collect();
        if !failing.is_empty() {
            let mut err = Error::new(
                ErrorKind::Operational,
                "E_LINT",
                format!("doctor found errors in: {}", failing.join(", ")),
            );
            for c in checks.iter().filter(|c| c.status == "error") {
                for i in &c.items {
                    err = err.hint(format!("{}: {} ({})", i.path, i.reason, i.detail));
                }
            }
            return Err(err);
        }
    }
    Ok(Outcome::Done(Response {
        format: FormatInfo {
            workspace: if req.fix && upgrade.format_bumped {
                SUPPORTED_FORMAT
            } else {
                upgrade.from_format
            },
            supported: SUPPORTED_FORMAT,
        },
        checks,
        fixed,
    }))
}

/// One item per file the format-2 upgrade renames, and one for `config.toml`'s `format`.
fn upgrade_items(upgrade: &ops::upgrade::Upgrade) -> Vec<Item> {
    let mut items: Vec<Item> = upgrade
        .moved
        .iter()
        .map(|m| Item {
            path: m.from.clone(),
            reason: "format_upgrade".into(),
            detail: format!("`doctor --fix` renames it to {}", m.to),
        })
        .collect();
    if upgrade.format_bumped {
        items.push(Item {
            path: ".dacli/config.toml".into(),
            reason: "format_upgrade".into(),
            detail: format!(
                "format {} is read and written, but `doctor --fix` upgrades it to {SUPPORTED_FORMAT} (paths no other clone can create)",
                upgrade.from_format
            ),
        });
    }
    items
}

fn tracked_items(ws: &Workspace) -> Check {
    let config = ws.display(&ws.path(&["config.toml"]));
    let mut items = Vec::new();
    match crate::git::is_tracked(ws.root(), &config) {
        None => {
            return Check {
                name: "tracked",
                status: "warn",
                count: 1,
                items: vec![Item {
                    path: config,
                    reason: "unknown".into(),
                    detail: "git could not be asked (no git binary, or not a repository)".into(),
                }],
            };
        }
        Some(false) => items.push(Item {
            path: config,
            reason: "untracked".into(),
            detail: "the workspace is not committed: `git add` it so the team shares it".into(),
        }),
        Some(true) => {}
    }
    for dir in ["runs", ".locks", "cache"] {
        let shown = ws.display(&ws.path(&[dir]));
        if crate::git::is_tracked(ws.root(), &shown) == Some(true) {
            items.push(Item {
                path: shown,
                reason: "runtime_tracked".into(),
                detail: "machine-local data is committed; `git rm -r --cached` it".into(),
            });
        }
    }
    check("tracked", "warn", items)
}

fn github_token_check(ctx: &Ctx, ws: &Workspace) -> Check {
    let source = ["GH_TOKEN", "GITHUB_TOKEN"]
        .into_iter()
        .find(|v| ctx.env().is_set(v));
    let linked = ws
        .config
        .doc
        .get("github")
        .and_then(|g| g.get("repo"))
        .is_some();
    let (status, reason, detail) = match (source, linked) {
        (Some(v), _) => ("ok", "present", format!("from {v}")),
        (None, true) => (
            "warn",
            "missing",
            "the workspace is linked to GitHub but neither GH_TOKEN nor GITHUB_TOKEN is set"
                .to_string(),
        ),
        (None, false) => (
            "ok",
            "absent",
            "no GitHub token set (not linked)".to_string(),
        ),
    };
    Check {
        name: "github_token",
        status,
        count: 0,
        items: vec![Item {
            path: String::new(),
            reason: reason.into(),
            detail,
        }],
    }
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    let mut out = String::new();
    for c in &r.checks {
        let mark = match c.status {
            "ok" => "ok   ",
            "warn" => "warn ",
            _ => "ERROR",
        };
        out.push_str(&format!("{mark}  {}", c.name));
        if c.count > 0 {
            out.push_str(&format!(" ({})", c.count));
        }
        out.push('\n');
        for i in &c.items {
            if i.path.is_empty() {
                out.push_str(&format!("       {}: {}\n", i.reason, i.detail));
            } else {
                out.push_str(&format!("       {}: {} ({})\n", i.path, i.reason, i.detail));
            }
        }
    }
    if r.fixed > 0 {
        out.push_str(&format!("removed {} stale temp file(s)\n", r.fixed));
    }
    out
}
