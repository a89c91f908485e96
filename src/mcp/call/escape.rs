//! The `cli` escape hatch (Tier 2): any command by argv, parsed with the CLI's own grammar
//! (never through a shell), answered with exactly the JSON `dacli <argv> --json` prints.
//! What cannot work inside a server is refused with `mcp.cli_unavailable`: the server itself,
//! anything that streams (`--follow`), and commands whose product is a secret (a token).

use serde_json::{Map, Value, json};

use super::{Answer, Server, outcome_of, refused, text};
use crate::dispatch::{CallResult, Command, Ctx, Error, Input, Mcp, Outcome, Refusal, envelope};

/// Runs a `cli` call whose arguments passed the schema.
pub fn run(server: &Server<'_>, ctx: &Ctx, args: &Map<String, Value>) -> Answer {
    let argv: Vec<String> = args
        .get("argv")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let (result, words) = dispatch(server, ctx, &argv);
    let warnings = ctx.take_warnings();
    let doc = match &result {
        Reply::Help(data) => json!({"ok": true, "data": data}),
        Reply::Call(r) => envelope(r, &warnings),
    };
    let outcome = match &result {
        Reply::Help(_) => "done",
        Reply::Call(r) => outcome_of(r),
    };
    let result = match &result {
        // A refusal reads the same whichever tier refused it: `{"refused": …}`.
        Reply::Call(Ok(Outcome::Refused(r))) => refused(r),
        _ => json!({"content": [text(&doc.to_string())], "isError": outcome == "error"}),
    };
    Answer {
        result,
        outcome,
        argv: Some(words.unwrap_or_else(|| rejected(&argv))),
    }
}

/// How the usage record shows an argv that named no command (it did not parse, or was
/// refused before parsing): the words themselves, each cut short, so the operator sees what
/// agents keep getting wrong.
fn rejected(argv: &[String]) -> String {
    const WORD: usize = 40;
    const ALL: usize = 160;
    if argv.is_empty() {
        return "(empty argv) (rejected)".into();
    }
    let mut shown = String::new();
    for a in argv {
        let mut word: String = a.chars().take(WORD).collect();
        if word.len() < a.len() {
            word.push('…');
        }
        if word.is_empty() || word.contains(char::is_whitespace) {
            word = format!("{word:?}");
        }
        if !shown.is_empty() {
            shown.push(' ');
        }
        shown.push_str(&word);
        if shown.chars().count() > ALL {
            shown = shown.chars().take(ALL).collect();
            shown.push('…');
            break;
        }
    }
    format!("{shown} (rejected)")
}

enum Reply {
    Help(Value),
    Call(CallResult),
}

/// Parses and runs argv; also returns the command words it named, for the usage record.
fn dispatch(server: &Server<'_>, ctx: &Ctx, argv: &[String]) -> (Reply, Option<String>) {
    // Decided on the words before parsing: `agent spawn` without its flags is still refused
    // for what it is, not for a missing flag.
    if let Some(cmd) = named(server, argv)
        && cmd.mcp == Mcp::Never
    {
        let why = match cmd.name {
            "mcp.serve" => "`mcp serve` is this server; it does not nest".to_string(),
            "agent.spawn" => {
                "`agent spawn` prints the new agent's token, and tool results land in transcripts"
                    .to_string()
            }
            other => format!(
                "`{}` cannot run through the cli tool",
                other.replace('.', " ")
            ),
        };
        return (
            Reply::Call(unavailable(argv, &why)),
            Some(cmd.name.replace('.', " ")),
        );
    }
    if argv
        .iter()
        .any(|a| a == "--follow" || a.starts_with("--follow="))
    {
        return (
            Reply::Call(unavailable(
                argv,
                "`--follow` streams until interrupted; a tool call must end",
            )),
            None,
        );
    }
    let mut full = vec!["dacli".to_string()];
    full.extend(argv.iter().cloned());
    let matches = match server.grammar.clone().try_get_matches_from(&full) {
        Ok(m) => m,
        Err(e) => {
            let reply = parse_failure(server, argv, &e);
            let words = match &reply {
                Reply::Help(data) => data["command"].as_str().map(str::to_string),
                Reply::Call(_) => None,
            };
            return (reply, words);
        }
    };
    if matches.get_one::<std::path::PathBuf>("workspace").is_some() {
        let e = Error::usage(
            "`-C` is not available here: the workspace is bound when the server starts",
        )
        .hint("drop -C; run another workspace's server for its files");
        return (Reply::Call(Err(e)), None);
    }
    let mut leaf = &matches;
    let mut words = Vec::new();
    while let Some((name, sub)) = leaf.subcommand() {
        words.push(name.to_string());
        leaf = sub;
    }
    if words.is_empty() && matches.get_flag("version_flag") {
        words.push("version".into());
    }
    let spoken = (!words.is_empty()).then(|| words.join(" "));
    let Some(cmd) = server.table.get(&words.join(".")) else {
        let e = Error::usage("no command given")
            .hint("pass argv like [\"status\"]; [\"--help\"] lists them");
        return (Reply::Call(Err(e)), spoken);
    };
    if cmd.name == "init" && leaf.try_get_one::<bool>("require_token").ok().flatten() == Some(&true)
    {
        return (
            Reply::Call(unavailable(
                argv,
                "`init --require-token` prints a token, and tool results land in transcripts",
            )),
            spoken,
        );
    }
    let result = match ctx.recheck_identity() {
        Ok(Some(refusal)) => Ok(Outcome::Refused(refusal)),
        Ok(None) => server.table.call(ctx, cmd, Input::Cli(leaf)),
        Err(e) => Err(e),
    };
    (Reply::Call(result), spoken)
}

/// The command argv names by its leading words (global flags skipped), before any parsing.
fn named<'a>(server: &'a Server<'_>, argv: &[String]) -> Option<&'a Command> {
    let mut node = &server.grammar;
    let mut words = Vec::new();
    let mut args = argv.iter();
    while let Some(a) = args.next() {
        if a == "-C" || a == "--workspace" {
            args.next();
            continue;
        }
        if a.starts_with('-') {
            continue;
        }
        match node.find_subcommand(a.as_str()) {
            Some(sub) => {
                words.push(a.as_str());
                node = sub;
            }
            None => break,
        }
    }
    server.table.get(&words.join("."))
}

/// `--help` answers with the signature; any other parse failure is a usage error.
fn parse_failure(server: &Server<'_>, argv: &[String], e: &clap::Error) -> Reply {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            Reply::Help(server.table.help_data(argv))
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
            Reply::Call(Err(
                Error::usage(message).hint("append \"--help\" to argv for the command's signature")
            ))
        }
    }
}

fn unavailable(argv: &[String], why: &str) -> CallResult {
    let shown = argv.join(" ");
    let next = if argv.first().map(String::as_str) == Some("agent") {
        format!(
            "Run `dacli {shown}` in a shell (for spawn: `DACLI_AGENT=$(dacli agent spawn …) <runtime>`)."
        )
    } else {
        format!("Run `dacli {shown}` in a shell.")
    };
    Ok(Outcome::Refused(Refusal::new(
        "mcp.cli_unavailable",
        why.to_string(),
        next,
    )))
}
