//! Command descriptors and the table that serves both front ends (ARCHITECTURE.md §4).

use clap::ArgMatches;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{CallResult, Ctx, Error, Outcome};
use crate::model::text::{self, Shape};

/// The policy class of a command: what the guard checks against the caller's grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// Reads only.
    Read,
    /// Creates append-only records only (events, notes, evidence).
    Append,
    /// Rewrites a canonical object; needs rw.
    Mutate,
    /// Executes a previewed transaction or a remote write; needs rw.
    Apply,
}

impl Class {
    /// Whether an `ro` caller is refused.
    pub fn needs_rw(self) -> bool {
        matches!(self, Class::Mutate | Class::Apply)
    }
}

/// How the MCP server exposes a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mcp {
    /// A Tier-1 tool of its own.
    Tier1(&'static str),
    /// Reachable through the `cli` tool.
    EscapeHatch,
    /// Refused through `cli` (`mcp.cli_unavailable`).
    Never,
}

/// What a command needs before it can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Neither workspace nor identity (`version`, `completions`).
    Nothing,
    /// A git work tree but no workspace or identity yet (`init`).
    WorkTree,
    /// A workspace and a resolved identity (everything else).
    Workspace,
}

/// The input of one call, from either front end.
pub enum Input<'a> {
    /// Parsed argv of the command's leaf subcommand.
    Cli(&'a ArgMatches),
    /// A JSON object (MCP arguments, after schema validation).
    Json(serde_json::Value),
}

/// A command's answer: the JSON `data` and the human text, both rendered from one typed
/// response before type erasure.
#[derive(Debug, Clone)]
pub struct Reply {
    pub data: Data,
    pub text: String,
}

/// A reply's JSON `data`: the response serialized once as compact JSON text, which the CLI
/// prints as it is, or a [`serde_json::Value`] once a front end has edited it. A `Value` of
/// ten thousand observations takes about six times the memory of their text (every key of
/// every object is a `String` of its own).
#[derive(Debug, Clone)]
pub enum Data {
    Text(Box<serde_json::value::RawValue>),
    Value(serde_json::Value),
}

impl Data {
    /// The data as a value: parsed from its text (a valid JSON document by construction).
    pub fn to_value(&self) -> serde_json::Value {
        match self {
            Data::Text(raw) => serde_json::from_str(raw.get()).unwrap_or(serde_json::Value::Null),
            Data::Value(v) => v.clone(),
        }
    }

    /// [`Data::to_value`] without a copy of a value.
    pub fn into_value(self) -> serde_json::Value {
        match self {
            Data::Value(v) => v,
            text => text.to_value(),
        }
    }

    /// The value, for a front end that edits it in place.
    pub fn value_mut(&mut self) -> &mut serde_json::Value {
        if let Data::Text(_) = self {
            *self = Data::Value(self.to_value());
        }
        match self {
            Data::Value(v) => v,
            Data::Text(_) => unreachable!("made a value above"),
        }
    }
}

/// The data's compact JSON text.
impl std::fmt::Display for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Data::Text(raw) => f.write_str(raw.get()),
            Data::Value(v) => v.fmt(f),
        }
    }
}

impl serde::Serialize for Data {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Data::Text(raw) => raw.serialize(s),
            Data::Value(v) => v.serialize(s),
        }
    }
}

type Runner = Box<dyn Fn(&Ctx, Input<'_>) -> CallResult + Send + Sync>;

/// One command, declared once in its slice.
pub struct Command {
    /// Dotted, lowercase name; the CLI path is its words (`task.claim` → `dacli task claim`).
    pub name: &'static str,
    pub class: Class,
    pub mcp: Mcp,
    pub needs: Needs,
    /// What an `ro` caller should do instead, when sharper than recording a finding.
    pub ro_alternative: Option<&'static str>,
    /// Takes the clone's writing lock itself (`sync`, whose `--remote` takes it exclusive)
    /// instead of the dispatcher taking it shared for every write.
    pub locks_itself: bool,
    augment: fn(clap::Command) -> clap::Command,
    run: Runner,
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Command")
            .field("name", &self.name)
            .field("class", &self.class)
            .field("mcp", &self.mcp)
            .field("needs", &self.needs)
            .finish()
    }
}

impl Command {
    /// Declares a command from its typed request, body and text renderer.
    ///
    /// `Req`'s doc comment is the `--help` text; it derives `clap::Args` for the CLI and
    /// `serde::Deserialize` (with `deny_unknown_fields`) for JSON input.
    pub fn new<Req, Resp>(
        name: &'static str,
        class: Class,
        run: fn(&Ctx, Req) -> Result<Outcome<Resp>, Error>,
        render: fn(&Resp, &Ctx) -> String,
    ) -> Command
    where
        Req: clap::Args + DeserializeOwned + Classify + 'static,
        Resp: Serialize + 'static,
    {
        let runner = move |ctx: &Ctx, input: Input<'_>| -> CallResult {
            check_text(name, &input, Req::augment_args)?;
            let req: Req = match input {
                Input::Cli(m) => Req::from_arg_matches(m).map_err(|e| {
                    Error::usage(
                        e.to_string()
                            .trim()
                            .trim_start_matches("error: ")
                            .to_string(),
                    )
                })?,
                Input::Json(v) => serde_json::from_value(v)
                    .map_err(|e| Error::usage(format!("invalid arguments: {e}")))?,
            };
            let command_path = name.replace('.', " ");
            let class = req.class(class);
            let alternative = ctx.table().get(name).and_then(|c| c.ro_alternative);
            if let Some(refusal) =
                ctx.guard_class(class, &req.display_path(&command_path), alternative)
            {
                return Ok(Outcome::Refused(refusal));
            }
            // Every write holds the clone's writing lock shared, so that `sync --remote`
            // can commit and integrate while no other dacli process of this clone writes.
            let _writing = match ctx.table().get(name) {
                Some(c)
                    if class != Class::Read && c.needs == Needs::Workspace && !c.locks_itself =>
                {
                    Some(crate::ops::machines::writing(ctx.ws()?)?)
                }
                _ => None,
            };
            match run(ctx, req)? {
                Outcome::Done(resp) => {
                    let data = serde_json::value::to_raw_value(&resp).map_err(|e| {
                        Error::internal(format!("cannot serialize the response of {name}: {e}"))
                    })?;
                    let data = Data::Text(data);
                    // Workspace text reaches a terminal as text: controls are shown, never
                    // sent (the JSON `data` stays exact); with colour on, the palette's own
                    // sequences pass.
                    let text = if ctx.json() {
                        String::new()
                    } else {
                        let text = render(&resp, ctx);
                        let shown = if ctx.color() {
                            crate::model::text::visible_styled(&text)
                        } else {
                            crate::model::text::visible(&text)
                        };
                        match shown {
                            std::borrow::Cow::Borrowed(_) => text,
                            std::borrow::Cow::Owned(shown) => shown,
                        }
                    };
                    Ok(Outcome::Done(super::Reply { data, text }))
                }
                Outcome::Refused(r) => Ok(Outcome::Refused(r)),
            }
        };
        Command {
            name,
            class,
            mcp: Mcp::EscapeHatch,
            needs: Needs::Workspace,
            ro_alternative: None,
            locks_itself: false,
            augment: Req::augment_args,
            run: Box::new(runner),
        }
    }

    /// Sets what the command needs before it runs.
    pub fn needs(mut self, needs: Needs) -> Command {
        self.needs = needs;
        self
    }

    /// Leaves the clone's writing lock to the command (see [`Command::locks_itself`]).
    pub fn locks_itself(mut self) -> Command {
        self.locks_itself = true;
        self
    }

    /// Sets the sharper alternative an `ro` caller is pointed to when refused.
    pub fn ro_alternative(mut self, text: &'static str) -> Command {
        self.ro_alternative = Some(text);
        self
    }

    /// Sets the MCP exposure.
    pub fn mcp(mut self, mcp: Mcp) -> Command {
        self.mcp = mcp;
        self
    }

    /// The CLI words of the command.
    pub fn words(&self) -> impl Iterator<Item = &'static str> {
        self.name.split('.')
    }

    pub(super) fn run(&self, ctx: &Ctx, input: Input<'_>) -> CallResult {
        (self.run)(ctx, input)
    }
}

/// The text fields that may hold more than one line, by command and request field; every
/// other text field of every command is one line. A field missing here is refused a newline,
/// which is the safe side: a new multi-line field is added here on purpose.
pub const MULTI_LINE: &[(&str, &str, Shape)] = &[
    ("answer", "because", Shape::Prose),
    ("answer", "chose", Shape::Prose),
    ("answer", "rejected", Shape::Prose),
    ("answer", "text", Shape::Prose),
    ("ask", "question", Shape::Prose),
    ("note.add", "because", Shape::Prose),
    ("note.add", "body", Shape::Prose),
    ("note.add", "chose", Shape::Prose),
    ("note.add", "goal", Shape::Prose),
    ("note.add", "metric", Shape::Prose),
    ("note.add", "question", Shape::Prose),
    ("note.add", "rejected", Shape::Prose),
    ("project.add", "goal", Shape::Prose),
    ("project.add", "vision", Shape::Prose),
    ("project.edit", "goal", Shape::Prose),
    ("project.edit", "vision", Shape::Prose),
    ("queue.add", "steps", Shape::Prose),
    ("risk.add", "action", Shape::Prose),
    ("risk.edit", "action", Shape::Prose),
    ("run", "cmd", Shape::Lines),
    // A parameter value is data handed to a command, never body text.
    ("run", "param", Shape::Lines),
    ("shortcut.add", "command", Shape::Lines),
    ("shortcut.add", "why", Shape::Prose),
    ("shortcut.promote", "command", Shape::Lines),
    ("shortcut.promote", "why", Shape::Prose),
    ("task.add", "context", Shape::Prose),
    ("task.add", "so_that", Shape::Prose),
    ("task.comment", "text", Shape::Prose),
    ("task.done", "summary", Shape::Prose),
    ("task.edit", "context", Shape::Prose),
    ("task.edit", "so_that", Shape::Prose),
];

/// What the text field `field` of command `command` may hold.
pub fn shape_of(command: &str, field: &str) -> Shape {
    MULTI_LINE
        .iter()
        .find(|(c, f, _)| *c == command && *f == field)
        .map_or(Shape::OneLine, |(_, _, shape)| *shape)
}

/// The one text check every front end passes through (argv, Tier-1 tools, the `cli` tool),
/// before the request is even built: every string value of the input, whatever its field,
/// must fit the field's [`Shape`]. A refusal is `E_USAGE` naming the field as the caller
/// spelled it (`--so-that`, `TITLE`, or the JSON field), and nothing has been written.
fn check_text(
    command: &'static str,
    input: &Input<'_>,
    args: fn(clap::Command) -> clap::Command,
) -> Result<(), Error> {
    let refuse = |field: String, why: text::TextError| {
        Error::usage(format!("`{field}` {why}")).hint(
            "text holds no control character but newline and tab; a one-line field no newline; a multi-line field no `#`/`##` heading line and no unclosed code fence (docs/FORMAT.md)",
        )
    };
    match input {
        Input::Json(v) => {
            let Some(object) = v.as_object() else {
                return Ok(());
            };
            for (field, value) in object {
                let shape = shape_of(command, field);
                let mut bad = None;
                each_string(value, &mut |s| {
                    if bad.is_none()
                        && let Err(why) = text::check(s, shape)
                    {
                        bad = Some(why);
                    }
                });
                if let Some(why) = bad {
                    return Err(refuse(field.clone(), why));
                }
            }
        }
        Input::Cli(m) => {
            for id in m.ids() {
                let id = id.as_str();
                let Ok(Some(raw)) = m.try_get_raw(id) else {
                    continue;
                };
                let shape = shape_of(command, id);
                for value in raw {
                    let Some(s) = value.to_str() else { continue };
                    if let Err(why) = text::check(s, shape) {
                        return Err(refuse(cli_name(args, id), why));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Every string inside a JSON value.
fn each_string(v: &serde_json::Value, f: &mut dyn FnMut(&str)) {
    match v {
        serde_json::Value::String(s) => f(s),
        serde_json::Value::Array(items) => items.iter().for_each(|i| each_string(i, f)),
        serde_json::Value::Object(map) => map.values().for_each(|i| each_string(i, f)),
        _ => {}
    }
}

/// How the CLI spells argument `id`: `--long-flag`, or the positional's value name.
fn cli_name(args: fn(clap::Command) -> clap::Command, id: &str) -> String {
    let cmd = args(clap::Command::new("dacli"));
    let Some(arg) = cmd.get_arguments().find(|a| a.get_id() == id) else {
        return id.to_string();
    };
    if let Some(long) = arg.get_long() {
        return format!("--{long}");
    }
    arg.get_value_names()
        .and_then(|names| names.first())
        .map(|n| n.to_string())
        .unwrap_or_else(|| id.to_uppercase())
}

/// Lets a request raise its class from flags (`doctor --fix` mutates, `doctor` reads) and say
/// how the command is spelled in a refusal.
pub trait Classify {
    /// The class of this particular request; the declared class by default.
    fn class(&self, declared: Class) -> Class {
        declared
    }

    /// The command as named in refusals, e.g. `doctor --fix`.
    fn display_path(&self, path: &str) -> String {
        path.to_string()
    }
}

/// The command table: every command, once, in declaration order.
#[derive(Debug, Default)]
pub struct Table {
    commands: Vec<Command>,
    /// One-line descriptions of command groups (`task`, `agent`, ...), for help.
    groups: Vec<(&'static str, &'static str)>,
}

impl Table {
    /// A table of `commands`. Panics in tests (and only there is it built from fixed input) if
    /// a name is declared twice or is both a command and a group.
    pub fn new(commands: Vec<Command>) -> Table {
        Table {
            commands,
            groups: Vec::new(),
        }
    }

    /// Describes command groups for help (`("task", "Create, claim, check and finish tasks")`).
    pub fn with_groups(mut self, groups: &[(&'static str, &'static str)]) -> Table {
        self.groups.extend_from_slice(groups);
        self
    }

    /// Every command, in declaration order.
    pub fn commands(&self) -> &[Command] {
        &self.commands
    }

    /// The command with this dotted name.
    pub fn get(&self, name: &str) -> Option<&Command> {
        self.commands.iter().find(|c| c.name == name)
    }

    /// The whole CLI grammar: the global flags of COMMANDS.md §1.1 and one subcommand per
    /// word of every command name, with the request's args on each leaf.
    pub fn clap_root(&self) -> clap::Command {
        use clap::{Arg, ArgAction};
        let mut root = clap::Command::new("dacli")
            .about("The shared workspace for teams of coding agents")
            .version(env!("CARGO_PKG_VERSION"))
            .disable_version_flag(true)
            .arg(
                Arg::new("json")
                    .long("json")
                    .global(true)
                    .action(ArgAction::SetTrue)
                    .help("Print exactly one JSON document on stdout"),
            )
            .arg(
                Arg::new("workspace")
                    .short('C')
                    .long("workspace")
                    .value_name("DIR")
                    .global(true)
                    .value_parser(clap::value_parser!(std::path::PathBuf))
                    .help("Find the workspace from DIR (or open DIR itself if it is one)"),
            )
            .arg(
                Arg::new("quiet")
                    .short('q')
                    .long("quiet")
                    .global(true)
                    .action(ArgAction::SetTrue)
                    .help("Suppress human success text; a command's product still prints"),
            )
            .arg(
                Arg::new("no_color")
                    .long("no-color")
                    .global(true)
                    .action(ArgAction::SetTrue)
                    .help("No ANSI colour (also off with NO_COLOR, TERM=dumb, pipes, --json)"),
            )
            .arg(
                Arg::new("wide")
                    .long("wide")
                    .global(true)
                    .action(ArgAction::SetTrue)
                    .help("Full refs, agent ids and titles in tables, however wide the terminal"),
            )
            .arg(
                Arg::new("version_flag")
                    .short('V')
                    .long("version")
                    .action(ArgAction::SetTrue)
                    .help("Same as `dacli version`"),
            );
        let mut tree = Node::default();
        for cmd in &self.commands {
            let words: Vec<&'static str> = cmd.words().collect();
            tree.insert(&words, cmd.augment);
        }
        for child in tree.children {
            root = root.subcommand(child.build());
        }
        for (name, about) in &self.groups {
            if root.find_subcommand(name).is_some() {
                root = root.mut_subcommand(*name, |g| g.about(*about));
            }
        }
        root
    }

    /// Runs a command for a context, with the checks its `needs` require first: workspace
    /// discovery and format, then identity. A panic inside is caught and becomes `E_INTERNAL`.
    pub fn call(&self, ctx: &Ctx, cmd: &Command, input: Input<'_>) -> CallResult {
        // One place renders every refusal and error hint for the caller's front end.
        match self.call_inner(ctx, cmd, input) {
            Ok(Outcome::Refused(mut r)) => {
                r.reason = ctx.hint(&r.reason);
                r.next = ctx.hint(&r.next);
                Ok(Outcome::Refused(r))
            }
            Err(mut e) => {
                e.hints = e.hints.iter().map(|h| ctx.hint(h)).collect();
                Err(e)
            }
            Ok(Outcome::Done(mut reply)) => {
                if ctx.front() == super::hint::Front::Mcp {
                    super::hint::render_fields(reply.data.value_mut());
                }
                Ok(Outcome::Done(reply))
            }
        }
    }

    fn call_inner(&self, ctx: &Ctx, cmd: &Command, input: Input<'_>) -> CallResult {
        let guarded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if cmd.needs == Needs::Workspace {
                if let Some(refusal) = ctx.early_identity_refusal() {
                    return Ok(Outcome::Refused(refusal));
                }
                ctx.ws()?;
                if let Some(refusal) = ctx.resolve_identity()? {
                    return Ok(Outcome::Refused(refusal));
                }
            }
            cmd.run(ctx, input)
        }));
        match guarded {
            Ok(result) => result,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                Err(
                    Error::internal(format!("dacli hit a bug in `{}`: {what}", cmd.name)).hint(
                        "please report it with the command you ran; nothing was half-written",
                    ),
                )
            }
        }
    }
}

/// The command tree before it becomes clap's: built by name, then turned into
/// [`clap::Command`]s once. (Adding each command to a finished clap tree cloned its whole
/// group every time, a tenth of the process floor.)
#[derive(Default)]
struct Node {
    name: &'static str,
    /// The command's own flags; `None` for a group, which needs a subcommand.
    augment: Option<fn(clap::Command) -> clap::Command>,
    /// In the order first named.
    children: Vec<Node>,
}

impl Node {
    fn insert(&mut self, words: &[&'static str], augment: fn(clap::Command) -> clap::Command) {
        let Some((first, rest)) = words.split_first() else {
            return;
        };
        let at = match self.children.iter().position(|c| c.name == *first) {
            Some(at) => at,
            None => {
                self.children.push(Node {
                    name: first,
                    ..Node::default()
                });
                self.children.len() - 1
            }
        };
        let child = &mut self.children[at];
        if rest.is_empty() {
            // A command named again replaces what was there, as a later registration wins.
            *child = Node {
                name: first,
                augment: Some(augment),
                children: Vec::new(),
            };
        } else {
            child.insert(rest, augment);
        }
    }

    fn build(self) -> clap::Command {
        let mut cmd = match self.augment {
            Some(augment) => augment(clap::Command::new(self.name)),
            None => clap::Command::new(self.name)
                .subcommand_required(true)
                .arg_required_else_help(true),
        };
        for child in self.children {
            cmd = cmd.subcommand(child.build());
        }
        cmd
    }
}

impl Table {
    /// `--help --json` data for an argv without the program name: the signature of the
    /// deepest command its words name (COMMANDS.md §1.1). Flags in `args` are skipped.
    pub fn help_data(&self, args: &[String]) -> serde_json::Value {
        let mut cmd = self.clap_root();
        let mut path = vec!["dacli".to_string()];
        for a in args {
            if a.starts_with('-') {
                continue;
            }
            match cmd.find_subcommand(a.as_str()) {
                Some(sub) => {
                    path.push(a.clone());
                    cmd = sub.clone();
                }
                None => break,
            }
        }
        let synopsis = cmd
            .clone()
            .bin_name(path.join(" "))
            .render_usage()
            .to_string();
        let flags: Vec<serde_json::Value> = cmd
            .get_arguments()
            .filter(|a| !matches!(a.get_id().as_str(), "help"))
            .map(|a| {
                let name = match (a.get_long(), a.get_short()) {
                    (Some(l), _) => format!("--{l}"),
                    (None, Some(s)) => format!("-{s}"),
                    (None, None) => a.get_id().to_string(),
                };
                let takes_value = a.get_action().takes_values();
                let repeatable = matches!(
                    a.get_action(),
                    clap::ArgAction::Append | clap::ArgAction::Count
                );
                let default: Vec<String> = a
                    .get_default_values()
                    .iter()
                    .map(|v| v.to_string_lossy().into_owned())
                    .collect();
                serde_json::json!({
                    "name": name,
                    "type": if takes_value { "value" } else { "bool" },
                    "required": a.is_required_set(),
                    "default": default.first(),
                    "repeatable": repeatable,
                })
            })
            .collect();
        serde_json::json!({
            "command": path[1..].join(" "),
            "synopsis": synopsis.trim_start_matches("Usage: "),
            "flags": flags,
        })
    }
}
