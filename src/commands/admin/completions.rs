//! `dacli completions <shell>`, and the dynamic shell completion it registers.
//!
//! The registration script calls `COMPLETE=<shell> dacli -- <words>` while the user types;
//! [`complete_from_env`] answers from the command grammar plus what exists in the workspace:
//! task refs, project slugs, agent ids, shortcut and queue names (clap_complete's dynamic
//! completion). Candidates are read from the workspace with nothing written, not even the
//! index cache; outside a workspace there are none, and nothing is printed on stderr.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::OnceLock;

use clap_complete::Shell;
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use clap_complete::env::EnvCompleter;
use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Needs, Outcome, Table};
use crate::objects::{agents, index, projects, queues, shortcuts};
use crate::workspace::Workspace;

/// Print the shell completion script, e.g. `dacli completions bash >> ~/.bashrc` or
/// `source <(dacli completions bash)`.
///
/// The script completes commands and flags, and the task refs, project slugs, agent ids,
/// shortcut and queue names of the workspace you are in (it asks `dacli` as you type).
/// `--static` prints a script of commands and flags only, which never runs `dacli`.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: ShellName,
    /// Commands and flags only, without the workspace's names.
    #[arg(long = "static")]
    #[serde(default, rename = "static")]
    fixed: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
enum ShellName {
    Bash,
    Zsh,
    Fish,
    Powershell,
    Elvish,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    shell: ShellName,
    dynamic: bool,
    script: String,
}

pub(super) fn command() -> Command {
    Command::new("completions", Class::Read, run, render).needs(Needs::Nothing)
}

/// The environment variable the registration script sets to ask for completions.
const VAR: &str = "COMPLETE";

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let mut buf = Vec::new();
    if req.fixed {
        let shell = match req.shell {
            ShellName::Bash => Shell::Bash,
            ShellName::Zsh => Shell::Zsh,
            ShellName::Fish => Shell::Fish,
            ShellName::Powershell => Shell::PowerShell,
            ShellName::Elvish => Shell::Elvish,
        };
        let mut cmd = ctx.table().clap_root();
        clap_complete::generate(shell, &mut cmd, "dacli", &mut buf);
    } else {
        let shell: &dyn EnvCompleter = match req.shell {
            ShellName::Bash => &clap_complete::env::Bash,
            ShellName::Zsh => &clap_complete::env::Zsh,
            ShellName::Fish => &clap_complete::env::Fish,
            ShellName::Powershell => &clap_complete::env::Powershell,
            ShellName::Elvish => &clap_complete::env::Elvish,
        };
        shell
            .write_registration(VAR, "dacli", "dacli", "dacli", &mut buf)
            .map_err(|e| Error::internal(format!("cannot write the completion script: {e}")))?;
    }
    let script = String::from_utf8(buf)
        .map_err(|_| Error::internal("the completion script is not UTF-8"))?;
    Ok(Outcome::Done(Response {
        shell: req.shell,
        dynamic: !req.fixed,
        script,
    }))
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    r.script.clone()
}

/// The `-C` directory of the command line being completed, when it names one.
static START: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Answers a completion request when `COMPLETE` is set (the registration script's call):
/// prints the candidates for `args` and returns `Some(exit code)`; `None` otherwise, when
/// the command runs as usual.
pub fn complete_from_env(table: &Table, args: &[OsString], cwd: PathBuf) -> Option<u8> {
    let _ = START.set(workspace_arg(args));
    let done = clap_complete::CompleteEnv::with_factory(|| with_candidates(table.clap_root()))
        .var(VAR)
        .bin("dacli")
        .try_complete(args.iter().cloned(), Some(&cwd));
    match done {
        Ok(true) => Some(0),
        Ok(false) => None,
        Err(e) => {
            let _ = e.print();
            Some(2)
        }
    }
}

/// The `-C DIR` / `--workspace DIR` of the words being completed (after `--`).
fn workspace_arg(args: &[OsString]) -> Option<PathBuf> {
    let words: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let start = words.iter().position(|w| w == "--").map_or(0, |i| i + 1);
    let mut it = words[start..].iter();
    while let Some(w) = it.next() {
        if w == "-C" || w == "--workspace" {
            return it.next().map(PathBuf::from);
        }
        if let Some(d) = w.strip_prefix("--workspace=") {
            return Some(PathBuf::from(d));
        }
        if let Some(d) = w.strip_prefix("-C").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(d));
        }
    }
    None
}

/// What kind of thing an argument names.
#[derive(Clone, Copy)]
enum Names {
    Tasks,
    TasksAndProjects,
    Projects,
    Agents,
    Shortcuts,
    Queues,
}

/// What the argument `arg` of command `path` (its words) names, by its value name.
fn names_of(path: &[String], arg: &clap::Arg) -> Option<Names> {
    let value = arg
        .get_value_names()
        .and_then(|v| v.first())
        .map_or_else(|| arg.get_id().as_str().to_uppercase(), |v| v.to_string());
    let first = path.first().map(String::as_str);
    let positional = arg.is_positional();
    match value.as_str() {
        v if v.starts_with("REF") && v.contains("PROJECT") => Some(Names::TasksAndProjects),
        v if v.starts_with("REF") => Some(Names::Tasks),
        "TASK" | "REFERENCE" => Some(Names::Tasks),
        "PROJECT" | "P" => Some(Names::Projects),
        v if v.starts_with("AGENT") => Some(Names::Agents),
        "NAME" if first == Some("run") && positional => Some(Names::Shortcuts),
        "NAME" if first == Some("shortcut") && (positional || arg.get_id() == "shortcut") => {
            (path.get(1).map(String::as_str) != Some("add")).then_some(Names::Shortcuts)
        }
        "NAME" if arg.get_long() == Some("shortcut") => Some(Names::Shortcuts),
        "SLUG" if first == Some("queue") && positional => {
            (path.get(1).map(String::as_str) != Some("add")).then_some(Names::Queues)
        }
        _ => None,
    }
}

/// `cmd` with workspace candidates attached to every argument that names a task, project,
/// agent, shortcut or queue.
fn with_candidates(cmd: clap::Command) -> clap::Command {
    fn walk(mut cmd: clap::Command, path: &mut Vec<String>) -> clap::Command {
        let ids: Vec<(clap::Id, Names)> = cmd
            .get_arguments()
            .filter_map(|a| names_of(path, a).map(|n| (a.get_id().clone(), n)))
            .collect();
        for (id, names) in ids {
            cmd = cmd.mut_arg(id, |a| {
                a.add(ArgValueCandidates::new(move || candidates(names)))
            });
        }
        let subs: Vec<String> = cmd
            .get_subcommands()
            .map(|s| s.get_name().to_string())
            .collect();
        for name in subs {
            path.push(name.clone());
            let sub = cmd.find_subcommand(&name).cloned();
            if let Some(sub) = sub {
                let sub = walk(sub, path);
                cmd = cmd.mut_subcommand(&name, |_| sub);
            }
            path.pop();
        }
        cmd
    }
    walk(cmd, &mut Vec::new())
}

/// The names of kind `names` in the workspace the command line is in; none outside one.
fn candidates(names: Names) -> Vec<CompletionCandidate> {
    let start = START.get().cloned().flatten();
    let Some(ws) = crate::dispatch::read_only_workspace(start.as_deref()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if matches!(names, Names::Tasks | Names::TasksAndProjects) {
        out.extend(tasks(&ws));
    }
    if matches!(names, Names::Projects | Names::TasksAndProjects) {
        let listing = projects::list(&ws).map(|l| l.items).unwrap_or_default();
        out.extend(
            listing
                .into_iter()
                .map(|p| CompletionCandidate::new(&p.slug).help(Some(p.title.into()))),
        );
    }
    match names {
        Names::Agents => {
            let listing = agents::list(&ws).map(|l| l.items).unwrap_or_default();
            out.extend(
                listing
                    .into_iter()
                    .filter(|a| a.status == crate::model::agent::AgentStatus::Live)
                    .map(|a| {
                        let grant = match a.grant {
                            crate::model::Grant::Rw => "rw",
                            crate::model::Grant::Ro => "ro",
                        };
                        let help = format!("{} ({grant})", a.role.as_deref().unwrap_or("agent"));
                        CompletionCandidate::new(&a.id).help(Some(help.into()))
                    }),
            );
        }
        Names::Shortcuts => {
            let listing = shortcuts::list(&ws).map(|l| l.items).unwrap_or_default();
            out.extend(listing.into_iter().map(|s| {
                CompletionCandidate::new(&s.shortcut.name)
                    .help(Some(s.shortcut.summary.clone().into()))
            }));
        }
        Names::Queues => {
            let listing = queues::list(&ws).map(|l| l.items).unwrap_or_default();
            out.extend(listing.into_iter().map(|q| {
                CompletionCandidate::new(&q.queue.slug).help(Some(q.queue.title.clone().into()))
            }));
        }
        _ => {}
    }
    out
}

/// Every task as its short ref (`core/12`), its title as help; tasks not done first.
fn tasks(ws: &Workspace) -> Vec<CompletionCandidate> {
    let mut listing = index::all_tasks(ws).map(|l| l.items).unwrap_or_default();
    listing.sort_by_key(|t| {
        (
            t.status() == crate::model::task::Status::Done,
            t.project().to_string(),
            t.number(),
        )
    });
    listing
        .iter()
        .enumerate()
        .map(|(i, t)| {
            CompletionCandidate::new(format!("{}/{}", t.project(), t.number()))
                .help(Some(t.title().to_string().into()))
                .display_order(Some(i))
        })
        .collect()
}
