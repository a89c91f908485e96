//! Editing in `$VISUAL`/`$EDITOR`: a template opens in the user's editor; what is saved is
//! checked by the command, and on an error the editor reopens with the error on top. What was
//! typed is never lost: it stays in a draft under `.dacli/runs/drafts/` until applied, and an
//! error that ends the edit names that file. An editor needs a terminal: without one (a pipe,
//! a script, the MCP server) the edit is refused at once instead of waiting on an editor
//! nobody sees.

use std::io::IsTerminal;

use super::hint::Front;
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

/// Whether this call may open an editor: the CLI with a terminal on standard input.
pub fn has_terminal(ctx: &Ctx) -> bool {
    ctx.front() == Front::Cli && std::io::stdin().is_terminal()
}

/// Asks `question` on stderr and reads one line of answer from the terminal: for a person at
/// the CLI only (`None`, asking nothing, with `--json`, `--quiet`, an MCP call or no terminal
/// on standard input). An empty answer or the end of input is `None`.
pub fn ask_line(ctx: &Ctx, question: &str) -> Option<String> {
    if ctx.json() || ctx.quiet() || !has_terminal(ctx) {
        return None;
    }
    let mut err = std::io::stderr();
    let _ = std::io::Write::write_all(&mut err, question.as_bytes());
    let _ = std::io::Write::flush(&mut err);
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).ok()?;
    let answer = line.trim();
    (!answer.is_empty()).then(|| answer.to_string())
}

/// The usage error for an editor asked for (`what`, e.g. `task edit 3` with no flags) where
/// there is no terminal; `instead` is the flag form to use there.
pub fn needs_terminal(ctx: &Ctx, what: &str, instead: &str) -> Error {
    let why = if ctx.front() == Front::Mcp {
        "an MCP call has no terminal to open it on"
    } else {
        "standard input is not a terminal"
    };
    Error::usage(format!(
        "`{what}` opens $VISUAL/$EDITOR, which needs a terminal: {why}"
    ))
    .hint(format!("give the fields as flags instead: {instead}"))
}

/// Opens `template` in the editor as draft `<kind>-<ULID>.md` and hands each save (without
/// the marked lines) to `check` until it is done. `None` when the editor was closed without
/// a change (a notice says nothing was written). An emptied file gives up; an editor that
/// fails, or a save left as it was after an error, ends the edit, naming the draft that keeps
/// the text.
pub fn edit_until_valid<T>(
    ctx: &Ctx,
    kind: &str,
    template: &str,
    mut check: impl FnMut(&str) -> Result<Checked<T>, Error>,
) -> Result<Option<T>, Error> {
    if !has_terminal(ctx) {
        return Err(needs_terminal(
            ctx,
            &kind.replace('-', " "),
            "`--help` lists them",
        ));
    }
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
        "{MARK}Lines starting with `{}` are dropped. Save and quit to apply; quit without saving to change nothing; empty the file to give up.\n",
        MARK.trim_end()
    );
    let mut path = ops::drafts::write(ws, &name, &format!("{head}{template}"))?;
    let mut last = unmarked(template);
    let mut failed: Option<String> = None;
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
            .hint(format!("what you typed is kept in {shown}"))
            .hint(format!(
                "edit it again with `$EDITOR {shown}`, then run the command with it or with flags"
            )));
        }
        let text = unmarked(&saved);
        if text.trim().is_empty() {
            path = ops::drafts::write(ws, &name, &last)?;
            return Err(Error::usage("the file was emptied: nothing was written")
                .hint(format!("the last text is kept in {}", ws.display(&path))));
        }
        if let Some(why) = &failed
            && text.trim() == last.trim()
        {
            return Err(Error::usage(format!(
                "the editor was closed without fixing the error: {why}"
            ))
            .hint(format!(
                "what you typed is kept in {shown}; nothing was written"
            )));
        }
        if failed.is_none() && text.trim() == unmarked(template).trim() {
            ops::drafts::remove(ws, &path)?;
            ctx.notice("the editor was closed without changes: nothing was written");
            return Ok(None);
        }
        last = text.clone();
        match check(&text) {
            Ok(Checked::Done(done)) => {
                ops::drafts::remove(ws, &path)?;
                return Ok(Some(done));
            }
            Ok(Checked::Again(why)) => {
                let mut top = format!("{MARK}error: {}\n", why.replace('\n', " "));
                top.push_str(&head);
                path = ops::drafts::write(ws, &name, &format!("{top}{text}"))?;
                failed = Some(why);
            }
            Err(e) => {
                path = ops::drafts::write(ws, &name, &text)?;
                return Err(e.hint(format!("what you typed is kept in {}", ws.display(&path))));
            }
        }
    }
}

/// `text` without the lines dacli marks as its own.
/// A saved template's TOML frontmatter (between `+++` lines) as a JSON table, and the text
/// after its closing line; or what is wrong with its shape.
pub fn frontmatter(
    text: &str,
) -> Result<(serde_json::Map<String, serde_json::Value>, &str), String> {
    let rest = text
        .trim_start()
        .strip_prefix("+++\n")
        .ok_or("the file must start with the `+++` frontmatter line")?;
    let (front, body) = rest
        .split_once("\n+++")
        .ok_or("the frontmatter has no closing `+++` line")?;
    let front: serde_json::Value = toml_edit::de::from_str(front)
        .map_err(|e| format!("frontmatter: {}", e.to_string().replace('\n', " ").trim()))?;
    let serde_json::Value::Object(front) = front else {
        return Err("frontmatter: not a table".into());
    };
    Ok((front, body))
}

fn unmarked(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with(MARK.trim_end()))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// An error the editor can show on top of the draft (bad input, something not found), as one
/// line with its hints; `None` for errors that end the edit.
pub fn as_retry(e: &Error) -> Option<String> {
    if !matches!(e.kind, ErrorKind::Usage | ErrorKind::NotFound) {
        return None;
    }
    let mut why = e.message.clone();
    for h in &e.hints {
        why.push_str(&format!(" ({h})"));
    }
    Some(why)
}
