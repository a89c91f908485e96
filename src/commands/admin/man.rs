//! `dacli man`: the manual page, generated from the command table.

use serde::{Deserialize, Serialize};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, Needs, Outcome};

/// Print the dacli manual page (roff), e.g. `dacli man > ~/.local/share/man/man1/dacli.1`.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {}

impl Classify for Request {}

#[derive(Debug, Serialize)]
pub struct Response {
    page: String,
}

pub(super) fn command() -> Command {
    Command::new("man", Class::Read, run, render).needs(Needs::Nothing)
}

fn run(ctx: &Ctx, _req: Request) -> Result<Outcome<Response>, Error> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(ctx.table().clap_root())
        .render(&mut buf)
        .map_err(|e| Error::internal(format!("cannot render the man page: {e}")))?;
    let page = String::from_utf8(buf).map_err(|_| Error::internal("the man page is not UTF-8"))?;
    Ok(Outcome::Done(Response { page }))
}

fn render(r: &Response, _ctx: &Ctx) -> String {
    r.page.clone()
}
