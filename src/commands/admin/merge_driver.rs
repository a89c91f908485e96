//! `dacli merge-driver`: the git merge driver of workspace records (FORMAT §22). git runs it
//! as `merge.dacli.driver` for every `.dacli/**/*.md` both sides changed; it is not meant to
//! be typed.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, ErrorKind, Mcp, Needs, Outcome};
use crate::ops;

/// Merge one record file both sides of a git merge changed, field by field (git runs it as
/// `merge-driver %O %A %B %P`); the result replaces OURS. Never writes a conflict marker.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
#[command(hide = true)]
pub struct Request {
    /// The common ancestor's version (`%O`).
    base: PathBuf,
    /// Our version (`%A`), replaced by the result.
    ours: PathBuf,
    /// Their version (`%B`).
    theirs: PathBuf,
    /// The path in the repository (`%P`), for the report.
    #[serde(default)]
    path: Option<String>,
}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    path: Option<String>,
    merged: ops::machines::Merged,
}

pub(super) fn command() -> Command {
    Command::new("merge-driver", Class::Read, run, render)
        .needs(Needs::WorkTree)
        .mcp(Mcp::Never)
}

fn run(ctx: &Ctx, req: Request) -> Result<Outcome<Response>, Error> {
    let root = ops::admin::work_tree_root(ctx.start_dir()).ok_or_else(|| {
        Error::new(
            ErrorKind::Operational,
            "E_NOT_A_REPO",
            "merge-driver runs inside a git work tree (git runs it during a merge)",
        )
    })?;
    let fs = ctx.make_fs(root.clone(), root.clone());
    let at = |p: &PathBuf| {
        if p.is_absolute() {
            p.clone()
        } else {
            ctx.start_dir().join(p)
        }
    };
    let name = req
        .path
        .as_deref()
        .unwrap_or("record")
        .replace(['/', '\\'], "%");
    let saved = root
        .join(".dacli")
        .join("runs")
        .join("merges")
        .join(format!("{}-{name}", ctx.new_ulid()));
    let merged = ops::machines::merge_files(
        &fs,
        &at(&req.base),
        &at(&req.ours),
        &at(&req.theirs),
        &saved,
    )?;
    Ok(Outcome::Done(Response {
        path: req.path,
        merged,
    }))
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    match &r.merged {
        ops::machines::Merged::Fields => String::new(),
        ops::machines::Merged::Kept { saved } => format!(
            "{}: kept ours; theirs is saved at {saved} (`dacli doctor` lists it)\n",
            r.path.as_deref().unwrap_or("record")
        ),
    }
}
