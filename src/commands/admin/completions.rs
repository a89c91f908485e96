//! `dacli completions <shell>`.

use clap_complete::Shell;
use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Needs, Outcome};

/// Print a shell completion script, e.g. `dacli completions zsh > ~/.zfunc/_dacli`.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: ShellName,
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
    script: String,
}

pub(super) fn command() -> Command {
    Command::new("completions", Class::Read, run, render).needs(Needs::Nothing)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let shell = match req.shell {
        ShellName::Bash => Shell::Bash,
        ShellName::Zsh => Shell::Zsh,
        ShellName::Fish => Shell::Fish,
        ShellName::Powershell => Shell::PowerShell,
        ShellName::Elvish => Shell::Elvish,
    };
    let mut cmd = ctx.table().clap_root();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "dacli", &mut buf);
    let script = String::from_utf8(buf)
        .map_err(|_| Error::internal("the completion script is not UTF-8"))?;
    Ok(Outcome::Done(Response {
        shell: req.shell,
        script,
    }))
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    r.script.clone()
}
