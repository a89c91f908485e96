//! Editing in `$VISUAL`/`$EDITOR`: a template opens in the user's editor; what is saved is
//! checked by the command, and on an error the editor reopens with the error on top. What was
//! typed is never lost: it stays in a draft under `.dacli/runs/drafts/` until applied, and an
//! error that ends the edit names that file.

use super::{Ctx, Error, ErrorKind};
use crate::exec;
use crate::ops;

/// Lines dacli puts on top of a draft (errors, instructions); they are dropped when read.
const MARK: &str = "#! ";

/// What a check of the saved text says.
pub enum Checked<T> {
    /// Applied: the edit is done.
    Done(T),
    /// The text does not parse or is refused as input: reopen with this message on top.
    Again(String),
}

/// Opens `template` in the editor as draft `<kind>-<ULID>.md` and hands each save (without
/// the marked lines) to `check` until it is done. An empty or unchanged save gives up; an
/// editor that fails ends the edit, naming the draft that keeps the text.
pub fn edit_until_valid<T>(
    ctx: &Ctx,
    kind: &str,
    template: &str,
    mut check: impl FnMut(&str) -> Result<Checked<T>, Error>,
) -> Result<T, Error> {
    let ws = ctx.ws()?;
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|v| ctx.env().get(v).filter(|e| !e.trim().is_empty()))
        .ok_or_else(|| {
            Error::usage("no editor: set $VISUAL or $EDITOR (for example `export EDITOR=vi`)")
                .hint("or give the fields as flags; `--help` lists them")
        })?
        .to_string();
    let name = format!("{kind}-{}.md", ctx.new_ulid());
    let head = format!(
        "{MARK}Lines starting with `{}` are dropped. Save and quit to apply; empty the file to give up.\n",
        MARK.trim_end()
    );
    let mut path = ops::drafts::write(ws, &name, &format!("{head}{template}"))?;
    let mut last = template.to_string();
    loop {
        let shown = ws.display(&path);
        let code = exec::run_editor(&editor, &path, ws.root()).map_err(|e| {
            Error::new(
                ErrorKind::Operational,
                "E_EDITOR",
                format!("cannot run the editor `{editor}`: {e}"),
            )
            .hint(format!("what you typed is kept in {shown}"))
        })?;
        let saved = std::fs::read_to_string(&path).unwrap_or_default();
        if code != 0 {
            return Err(Error::new(
                ErrorKind::Operational,
                "E_EDITOR",
                format!("the editor `{editor}` exited with code {code}; nothing was written"),
            )
            .hint(format!("what you typed is kept in {shown}")));
        }
        let text: String = saved
            .lines()
            .filter(|l| !l.starts_with(MARK.trim_end()))
            .map(|l| format!("{l}\n"))
            .collect();
        if text.trim().is_empty() {
            path = ops::drafts::write(ws, &name, &last)?;
            return Err(Error::usage("the file was emptied: nothing was written")
                .hint(format!("the last text is kept in {}", ws.display(&path))));
        }
        if text.trim() == template.trim() {
            ops::drafts::remove(ws, &path)?;
            return Err(Error::usage("nothing was typed: nothing was written"));
        }
        last = text.clone();
        match check(&text) {
            Ok(Checked::Done(done)) => {
                ops::drafts::remove(ws, &path)?;
                return Ok(done);
            }
            Ok(Checked::Again(why)) => {
                let mut top = format!("{MARK}error: {}\n", why.replace('\n', " "));
                top.push_str(&head);
                path = ops::drafts::write(ws, &name, &format!("{top}{text}"))?;
            }
            Err(e) => {
                path = ops::drafts::write(ws, &name, &text)?;
                return Err(e.hint(format!("what you typed is kept in {}", ws.display(&path))));
            }
        }
    }
}
