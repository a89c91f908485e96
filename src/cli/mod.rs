//! L7: the command-line front end. It parses argv with the grammar the command table builds,
//! runs the command through the table, and prints: one JSON document with `--json`, otherwise
//! human text on stdout and diagnostics on stderr. No command logic lives here.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};

use clap::error::ErrorKind as ClapErrorKind;

use crate::dispatch::text::{CYAN, RED, Style, YELLOW, paint};
use crate::model::text::visible;

use crate::dispatch::{
    CallResult, Ctx, Env, Error, Input, Outcome, Output, Table, envelope, envelope_text, exit_code,
};

/// A front end that takes the process over for one command (`mcp serve`): it gets the table,
/// the environment and the `-C` directory, and returns the exit code.
pub type Takeover = fn(&Table, Env, Option<std::path::PathBuf>) -> u8;

/// Runs one CLI invocation and returns the process exit code. A command named in `takeovers`
/// is handed to that front end once argv has parsed.
pub fn run(table: &Table, args: Vec<OsString>, env: Env, takeovers: &[(&str, Takeover)]) -> u8 {
    let json = args.iter().skip(1).any(|a| a == "--json");
    let matches = match table.clap_root().try_get_matches_from(&args) {
        Ok(m) => m,
        Err(e) => return parse_failure(table, &args, e, json),
    };
    let no_color = matches.get_flag("no_color");
    let stdout_tty = std::io::stdout().is_terminal();
    let output = Output {
        json,
        quiet: matches.get_flag("quiet"),
        color: !json && !no_color && color_env(&env) && stdout_tty,
        err_color: !json && !no_color && color_env(&env) && std::io::stderr().is_terminal(),
        width: (!json && !matches.get_flag("wide") && stdout_tty).then(|| terminal_width(&env)),
    };
    let start = matches.get_one::<std::path::PathBuf>("workspace").cloned();
    let mut leaf = &matches;
    let mut words = Vec::new();
    while let Some((name, sub)) = leaf.subcommand() {
        words.push(name.to_string());
        leaf = sub;
    }
    if let Some((_, front_end)) = takeovers.iter().find(|(n, _)| *n == words.join(".")) {
        return front_end(table, env, start);
    }
    let ctx = Ctx::new(table, env, start, output);
    if words.is_empty() {
        if matches.get_flag("version_flag") {
            words.push("version".into());
        } else {
            return finish(
                &ctx,
                Err(Error::usage("no command given").hint("run `dacli --help` for the list")),
            );
        }
    }
    let name = words.join(".");
    let Some(cmd) = table.get(&name) else {
        return finish(
            &ctx,
            Err(Error::usage(format!(
                "unknown command `{}`",
                words.join(" ")
            ))),
        );
    };
    let result = table.call(&ctx, cmd, Input::Cli(leaf));
    let result = if ctx.json() {
        result
    } else {
        teach(result, &words, &args)
    };
    finish(&ctx, result)
}

/// Gives an error that names no next command one (human text only; JSON keeps the command's
/// own hints): a usage error points at the command's
/// `--help`, and a lock timeout at running the same command again.
fn teach(result: CallResult, words: &[String], args: &[OsString]) -> CallResult {
    let Err(mut e) = result else { return result };
    let line: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| {
            let a = a.to_string_lossy();
            if a.contains(' ') || a.is_empty() {
                format!("\"{a}\"")
            } else {
                a.into_owned()
            }
        })
        .collect();
    // `` for example `--project core` `` becomes the whole command to run, and an ambiguous
    // reference's `` use `core/1` `` the command with that reference.
    let named = e.message.split('`').nth(1).map(str::to_string);
    for h in &mut e.hints {
        if let Some(flag) = h
            .strip_prefix("for example `--")
            .and_then(|f| f.strip_suffix('`'))
        {
            *h = format!("for example `dacli {} --{flag}`", line.join(" "));
        } else if e.code == "E_AMBIGUOUS"
            && let (Some(pick), Some(given)) = (
                h.strip_prefix("use `").and_then(|f| f.strip_suffix('`')),
                named.as_deref(),
            )
        {
            let with: Vec<&str> = line
                .iter()
                .map(|a| if a == given { pick } else { a.as_str() })
                .collect();
            *h = format!("use `dacli {}`", with.join(" "));
        }
    }
    let names_command =
        |e: &Error| e.message.contains("`dacli ") || e.hints.iter().any(|h| h.contains("`dacli "));
    if names_command(&e) {
        return Err(e);
    }
    match e.code {
        "E_LOCK_TIMEOUT" => Err(e.hint(format!("then run it again: `dacli {}`", line.join(" ")))),
        _ if e.kind == crate::dispatch::ErrorKind::Usage => Err(e.hint(format!(
            "`dacli {} --help` lists its arguments",
            words.join(" ")
        ))),
        _ => Err(e),
    }
}

/// Colour is not turned off by the environment (`NO_COLOR`, `TERM=dumb`).
fn color_env(env: &Env) -> bool {
    !env.is_set("NO_COLOR") && env.get("TERM") != Some("dumb")
}

/// The terminal's width: `COLUMNS` when it is set, else what the terminal on stdout says,
/// else 80.
fn terminal_width(env: &Env) -> usize {
    if let Some(n) = env
        .get("COLUMNS")
        .and_then(|c| c.trim().parse::<usize>().ok())
        && n > 0
    {
        return n;
    }
    #[cfg(target_os = "linux")]
    if let Ok(size) = rustix::termios::tcgetwinsize(std::io::stdout())
        && size.ws_col > 0
    {
        return usize::from(size.ws_col);
    }
    80
}

/// Prints the outcome of a call and returns its exit code.
fn finish(ctx: &Ctx, result: CallResult) -> u8 {
    let warnings = ctx.take_warnings();
    let mut code = exit_code(&result);
    let mut err = std::io::stderr().lock();
    let paint_err = |style: Style, text: &str| paint(ctx.err_color(), style, text);
    for notice in ctx.take_notices() {
        let _ = writeln!(err, "note: {}", visible(&notice));
    }
    if ctx.json() {
        let mut text = envelope_text(result, &warnings).unwrap_or_else(|e| {
            code = 70;
            format!(r#"{{"ok":false,"error":{{"code":"E_INTERNAL","message":"cannot print JSON: {e}","hints":[]}}}}"#)
        });
        text.push('\n');
        return emit(&text, code);
    }
    for w in &warnings {
        let detail = if w.detail.is_empty() {
            String::new()
        } else {
            format!(" ({})", w.detail)
        };
        let line = format!("{}: {}{detail}", w.path, w.reason);
        let _ = writeln!(err, "{} {}", paint_err(YELLOW, "warning:"), visible(&line));
    }
    match &result {
        Ok(Outcome::Done(reply)) => emit(&reply.text, code),
        Ok(Outcome::Refused(r)) => {
            let head = paint_err(RED, &format!("refused [{}]:", visible(&r.policy)));
            // A reason that is a list (one `- ` line per unmet item) starts on its own line.
            if r.reason.starts_with("- ") {
                let _ = writeln!(err, "{head}");
                for line in r.reason.lines() {
                    let _ = writeln!(err, "  {}", visible(line));
                }
            } else {
                let _ = writeln!(err, "{head} {}", visible(&r.reason));
            }
            let _ = writeln!(err, "{} {}", paint_err(CYAN, "next:"), visible(&r.next));
            code
        }
        Err(e) => {
            let head = paint_err(RED, &format!("error[{}]:", e.code));
            let _ = writeln!(err, "{head} {}", visible(&e.message));
            for h in &e.hints {
                let _ = writeln!(err, "{} {}", paint_err(CYAN, "hint:"), visible(h));
            }
            code
        }
    }
}

/// Writes to stdout. A reader that closed the pipe (`dacli ... | head`) is not a failure.
fn emit(text: &str, code: u8) -> u8 {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => code,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(_) => 1,
    }
}

/// argv did not parse: help and version print and exit 0; everything else is exit 2.
fn parse_failure(table: &Table, args: &[OsString], e: clap::Error, json: bool) -> u8 {
    match e.kind() {
        ClapErrorKind::DisplayHelp | ClapErrorKind::DisplayVersion => {
            if json {
                let words: Vec<String> = args
                    .iter()
                    .skip(1)
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect();
                let doc = serde_json::json!({"ok": true, "data": table.help_data(&words)});
                emit(&format!("{doc}\n"), 0)
            } else {
                emit(&e.render().to_string(), 0)
            }
        }
        _ => {
            let message = e
                .render()
                .to_string()
                .lines()
                .next()
                .unwrap_or("invalid arguments")
                .trim_start_matches("error: ")
                .to_string();
            let result: CallResult = Err(Error::usage(message)
                .hint("run `dacli --help` (or `dacli <command> --help`) for usage"));
            if json {
                emit(&format!("{}\n", envelope(&result, &[])), exit_code(&result))
            } else {
                let words = command_words(table, args);
                let help = if words.is_empty() {
                    "hint: `dacli --help` lists the commands".to_string()
                } else {
                    format!(
                        "hint: `dacli {} --help` lists its arguments",
                        words.join(" ")
                    )
                };
                let text = e
                    .render()
                    .to_string()
                    .replace("For more information, try '--help'.", &help);
                let _ = write!(std::io::stderr(), "{text}");
                exit_code(&result)
            }
        }
    }
}

/// The command words of `args` (`["task", "list"]`), as far as they name subcommands.
fn command_words(table: &Table, args: &[OsString]) -> Vec<String> {
    let mut node = table.clap_root();
    let mut words = Vec::new();
    let mut it = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned());
    while let Some(a) = it.next() {
        if a == "-C" || a == "--workspace" {
            it.next();
            continue;
        }
        if a.starts_with('-') {
            continue;
        }
        match node.find_subcommand(&a).cloned() {
            Some(sub) => {
                words.push(a);
                node = sub;
            }
            None => break,
        }
    }
    words
}

/// The command reference (docs/COMMANDS.md), generated from the command table so it cannot
/// drift: one section per command with its synopsis, description, flags, class and MCP
/// exposure. A test keeps the committed file equal to this output.
pub fn reference(table: &Table) -> String {
    use crate::dispatch::Mcp;
    let mut root = table.clap_root();
    root.build();
    let mut out = String::from(
        "# Command reference\n\n<!-- Generated from the command table by `dacli::cli::reference`; do not edit by hand.\n     Regenerate with `DACLI_BLESS=1 cargo test --test it docs`. -->\n\n",
    );
    out.push_str("Every command takes the global flags `--json`, `-C/--workspace DIR`, `-q/--quiet`, `--no-color` and `--wide`.\n");
    out.push_str("Class: `read` changes nothing; `append` only creates append-only records (any agent, ro included); `mutate` and `apply` need an rw grant.\n\n");
    let mut names: Vec<&str> = table.commands().iter().map(|c| c.name).collect();
    names.sort();
    for name in names {
        let Some(cmd) = table.get(name) else { continue };
        let mut node = root.clone();
        for word in name.split('.') {
            match node.find_subcommand(word) {
                Some(sub) => node = sub.clone(),
                None => break,
            }
        }
        let path = format!("dacli {}", name.replace('.', " "));
        out.push_str(&format!("## `{path}`\n\n"));
        let usage = node
            .clone()
            .bin_name(&path)
            .render_usage()
            .to_string()
            .trim_start_matches("Usage: ")
            .to_string();
        out.push_str(&format!("```\n{usage}\n```\n\n"));
        if let Some(about) = node.get_long_about().or(node.get_about()) {
            out.push_str(&format!("{}\n\n", about.to_string().trim()));
        }
        let class = serde_json::to_value(cmd.class)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let mcp = match cmd.mcp {
            Mcp::Tier1(tool) => format!("MCP tool `{tool}`"),
            Mcp::EscapeHatch => "MCP: through the `cli` tool".to_string(),
            Mcp::Never => "not available over MCP".to_string(),
        };
        out.push_str(&format!("Class `{class}` · {mcp}\n\n"));
        let args: Vec<&clap::Arg> = node
            .get_arguments()
            .filter(|a| !a.is_global_set() && a.get_id() != "help")
            .collect();
        if !args.is_empty() {
            out.push_str("| argument | value | default | description |\n|---|---|---|---|\n");
            for a in args {
                let name = match (a.get_long(), a.get_short()) {
                    (Some(l), Some(s)) => format!("`-{s}`, `--{l}`"),
                    (Some(l), None) => format!("`--{l}`"),
                    (None, Some(s)) => format!("`-{s}`"),
                    (None, None) => format!(
                        "`{}`",
                        a.get_value_names()
                            .and_then(|v| v.first())
                            .map_or_else(|| a.get_id().as_str().to_uppercase(), |v| v.to_string())
                    ),
                };
                let value = if a.get_action().takes_values() {
                    let names = a
                        .get_value_names()
                        .map(|v| {
                            v.iter()
                                .map(|x| x.to_string())
                                .collect::<Vec<_>>()
                                .join(" ")
                        })
                        .unwrap_or_else(|| a.get_id().as_str().to_uppercase());
                    let possible: Vec<String> = a
                        .get_possible_values()
                        .iter()
                        .map(|p| p.get_name().to_string())
                        .collect();
                    let mut v = if possible.is_empty() {
                        names
                    } else {
                        possible.join("\\|")
                    };
                    if matches!(a.get_action(), clap::ArgAction::Append) {
                        v.push_str(" (repeatable)");
                    }
                    if a.is_required_set() {
                        v.push_str(" (required)");
                    }
                    v
                } else {
                    "flag".to_string()
                };
                let default = if !a.get_action().takes_values() {
                    String::new()
                } else {
                    a.get_default_values()
                        .iter()
                        .map(|d| d.to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let help = a
                    .get_help()
                    .map(|h| h.to_string().replace('\n', " ").replace('|', "\\|"))
                    .unwrap_or_default();
                out.push_str(&format!("| {name} | {value} | {default} | {help} |\n"));
            }
            out.push('\n');
        }
    }
    out
}
