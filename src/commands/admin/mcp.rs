//! `dacli mcp serve` (declared here; the MCP front end runs it), `dacli mcp config` and
//! `dacli mcp install` (COMMANDS.md §3, docs/MCP.md "Registering the server").

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::dispatch::{Class, Classify, Command, Ctx, Error, ErrorKind, Mcp, Needs, Outcome};
use crate::model::Refusal;
use crate::model::runtime::McpConfig;
use crate::objects::{self, runtimes};
use crate::ops;
use crate::policy::runtime::mcp_snippet;
use crate::store;

/// Serve this workspace over the Model Context Protocol on stdin/stdout (no network, ever).
///
/// One server per agent: identity is bound at launch from DACLI_AGENT, and a refused token or
/// a missing workspace ends it before stdin is read. Register it with `dacli mcp install` (or
/// print the entry with `dacli mcp config`).
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeRequest {}

impl Classify for ServeRequest {}

/// The command is a front end: the composition root hands `mcp serve` to the MCP server
/// before any command runs, and the `cli` tool refuses it (`Mcp::Never`). Reaching this body
/// means something called the table directly.
fn serve(_ctx: &Ctx, _req: ServeRequest) -> Result<Outcome<()>, Error> {
    Err(Error::usage(
        "`mcp serve` speaks MCP on stdin/stdout and runs as its own process: `dacli mcp serve`",
    ))
}

fn render_nothing(_: &(), _: &Ctx) -> String {
    String::new()
}

/// Print the entry that registers `dacli mcp serve` with an MCP client; writes nothing.
///
/// No token is ever printed: Claude Code and Gemini CLI forward DACLI_AGENT by reference,
/// Codex by name (`env_vars`), and Cursor, VS Code and Claude Desktop start the server with
/// the environment they run in. Where DACLI_AGENT is unset the server runs as root (unless the
/// workspace requires a token). With -C DIR the server is started on that workspace.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigRequest {
    /// The client to configure.
    #[arg(long, value_enum)]
    client: Client,
    /// The server's name in the client's configuration.
    #[arg(long, value_name = "NAME", default_value = "dacli")]
    #[serde(default = "dacli")]
    name: String,
    /// How the client starts dacli (a command on PATH, or a path).
    #[arg(long, value_name = "PATH", default_value = "dacli")]
    #[serde(default = "dacli")]
    command: String,
}

fn dacli() -> String {
    "dacli".into()
}

#[derive(Debug, Clone, Copy, clap::ValueEnum, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum Client {
    ClaudeCode,
    Cursor,
    Codex,
    Vscode,
    ClaudeDesktop,
    Gemini,
}

/// Where a client's configuration lives.
#[derive(Debug, Clone, Copy, clap::ValueEnum, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum Scope {
    /// In the work tree, for this project (shared through git where the client expects it).
    Project,
    /// In your home directory, for every project (never in the work tree).
    User,
}

/// How a client passes DACLI_AGENT to a server it starts, when nothing is embedded.
enum Forward {
    /// An `env` entry holding a reference the client expands (`${DACLI_AGENT}`); where the
    /// variable is unset these clients pass the reference through as text, which the server
    /// reads as unset.
    Reference,
    /// Codex's `env_vars`: the named variables are copied from the client's environment when
    /// they are set, and Codex starts servers with nothing else but a short default list.
    Names,
    /// Nothing: the client starts the server with its own environment. Cursor and VS Code
    /// expand `${env:DACLI_AGENT}` to an empty string when it is unset, which the server
    /// refuses (`identity.empty_token`), so no entry is the one form that works either way.
    Inherit,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::Codex => "codex",
            Client::Vscode => "vscode",
            Client::ClaudeDesktop => "claude-desktop",
            Client::Gemini => "gemini",
        }
    }

    fn toml(self) -> bool {
        self == Client::Codex
    }

    /// The object holding the servers in the client's JSON file.
    fn servers_key(self) -> &'static str {
        match self {
            Client::Vscode => "servers",
            Client::Codex => "mcp_servers",
            _ => "mcpServers",
        }
    }

    fn forward(self) -> Forward {
        match self {
            Client::ClaudeCode | Client::Gemini => Forward::Reference,
            Client::Codex => Forward::Names,
            Client::Cursor | Client::Vscode | Client::ClaudeDesktop => Forward::Inherit,
        }
    }

    /// The project file, relative to the work-tree root; `None` for a client without one.
    fn project_file(self) -> Option<&'static str> {
        match self {
            Client::ClaudeCode => Some(".mcp.json"),
            Client::Cursor => Some(".cursor/mcp.json"),
            Client::Codex => Some(".codex/config.toml"),
            Client::Vscode => Some(".vscode/mcp.json"),
            Client::ClaudeDesktop => None,
            Client::Gemini => Some(".gemini/settings.json"),
        }
    }

    /// The user file, relative to the home directory.
    fn user_file(self) -> &'static str {
        let mac = cfg!(target_os = "macos");
        match self {
            Client::ClaudeCode => ".claude.json",
            Client::Cursor => ".cursor/mcp.json",
            Client::Codex => ".codex/config.toml",
            Client::Vscode if mac => "Library/Application Support/Code/User/mcp.json",
            Client::Vscode => ".config/Code/User/mcp.json",
            Client::ClaudeDesktop if mac => {
                "Library/Application Support/Claude/claude_desktop_config.json"
            }
            Client::ClaudeDesktop => ".config/Claude/claude_desktop_config.json",
            Client::Gemini => ".gemini/settings.json",
        }
    }

    /// What the user must still do for the client to read a project file.
    fn trust_step(self, scope: Scope) -> Option<&'static str> {
        match (self, scope) {
            (Client::Codex, Scope::Project) => Some(
                "Codex reads a project's .codex/config.toml only when the project is trusted: trust it when Codex asks, or add it under [projects] with trust_level = \"trusted\" in ~/.codex/config.toml",
            ),
            (Client::ClaudeCode, Scope::Project) => Some(
                "Claude Code asks once to approve the servers of a project's .mcp.json: approve `dacli` when it asks",
            ),
            (Client::Gemini, Scope::Project) => Some(
                "with Trusted Folders on (security.folderTrust.enabled), Gemini CLI reads .gemini/settings.json only in a folder you trusted",
            ),
            _ => None,
        }
    }
}

/// The server entry as a JSON value (every JSON client; Codex's TOML is built from it).
/// `token`: an agent's token to embed (install into a user file only); `None`: forward.
fn entry(client: Client, command: &str, args: &[String], token: Option<&str>) -> Value {
    let mut e = serde_json::Map::new();
    if client == Client::Vscode {
        e.insert("type".into(), json!("stdio"));
    }
    e.insert("command".into(), json!(command));
    e.insert("args".into(), json!(args));
    match (token, client.forward()) {
        (Some(t), _) => {
            e.insert("env".into(), json!({ "DACLI_AGENT": t }));
        }
        (None, Forward::Reference) => {
            e.insert("env".into(), json!({ "DACLI_AGENT": "${DACLI_AGENT}" }));
        }
        (None, Forward::Names) => {
            e.insert("env_vars".into(), json!(["DACLI_AGENT"]));
        }
        (None, Forward::Inherit) => {}
    }
    Value::Object(e)
}

impl Classify for ConfigRequest {}

#[derive(Debug, Serialize)]
pub struct ConfigResponse {
    client: Client,
    file: String,
    format: String,
    snippet: String,
    /// The runtime adapter whose `mcp_config` shaped the snippet, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    adapter: Option<String>,
}

pub(super) fn commands() -> Vec<Command> {
    vec![
        Command::new("mcp.serve", Class::Read, serve, render_nothing).mcp(Mcp::Never),
        Command::new("mcp.config", Class::Read, config, render_config).needs(Needs::Nothing),
        // Through `cli` an agent could write a token into another client's configuration.
        Command::new("mcp.install", Class::Read, install, render_install).mcp(Mcp::Never),
    ]
}

fn check_name(name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "--name `{name}` must be letters, digits, `-` or `_` (it becomes a key in the client's config)"
        )))
    }
}

fn config(ctx: &Ctx, req: ConfigRequest) -> Result<Outcome<ConfigResponse>, Error> {
    check_name(&req.name)?;
    if req.command.is_empty() {
        return Err(Error::usage("--command must not be empty"));
    }
    let mut args: Vec<String> = Vec::new();
    // A client starts the server in a directory of its choosing, so `-C` is absolute; a client
    // with only a user file (claude-desktop) always needs it to find this workspace.
    let dir = match ctx.start_arg() {
        Some(dir) => Some(std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf())),
        None if req.client.project_file().is_none() => ctx
            .ws()
            .ok()
            .map(|ws| ops::admin::canonical_or_same(ws.root())),
        None => None,
    };
    if let Some(dir) = dir {
        args.push("-C".into());
        args.push(dir.to_string_lossy().into_owned());
    }
    args.extend(["mcp".to_string(), "serve".to_string()]);
    let built = entry(req.client, &req.command, &args, None);
    let file = req
        .client
        .project_file()
        .map_or_else(|| format!("~/{}", req.client.user_file()), str::to_string);
    let (format, snippet) = if req.client.toml() {
        let mut doc = toml_edit::DocumentMut::new();
        put_toml(&mut doc, &req.name, &built);
        ("toml", doc.to_string())
    } else {
        let mut servers = serde_json::Map::new();
        servers.insert(req.name.clone(), built);
        let doc = json!({ req.client.servers_key(): servers });
        ("json", pretty(&doc))
    };
    let (file, format, snippet, adapter) = match adapter_config(ctx, req.client) {
        Some((path, cfg)) => {
            let snippet = mcp_snippet(&cfg, &req.name, &req.command, &args, "DACLI_AGENT");
            (cfg.file, cfg.format, snippet, Some(path))
        }
        None => (file, format.to_string(), snippet, None),
    };
    Ok(Outcome::Done(ConfigResponse {
        client: req.client,
        file,
        format,
        snippet,
        adapter,
    }))
}

/// The `mcp_config` of the workspace's adapter for `client` (docs/FORMAT.md §25), with the
/// adapter's path. Without a workspace, an adapter or its `mcp_config`, the built-in snippet
/// is used; a malformed adapter is reported as a warning and skipped.
fn adapter_config(ctx: &Ctx, client: Client) -> Option<(String, McpConfig)> {
    let ws = ctx.ws().ok()?;
    match runtimes::for_client(ws, client.name()) {
        Ok(found) => {
            let l = found?;
            Some((l.path, l.runtime.mcp_config?))
        }
        Err(objects::Error::Store(store::Error::Malformed(problem))) => {
            ctx.warn(problem);
            None
        }
        Err(_) => None,
    }
}

fn pretty(doc: &Value) -> String {
    let mut text = serde_json::to_string_pretty(doc).unwrap_or_else(|_| doc.to_string());
    text.push('\n');
    text
}

/// Sets `[mcp_servers.<name>]` of a Codex configuration from the JSON entry, keeping every
/// other table and key (and their comments) as they are.
fn put_toml(doc: &mut toml_edit::DocumentMut, name: &str, e: &Value) {
    use toml_edit::{Array, InlineTable, Item, Table, value};
    let mut server = Table::new();
    if let Some(c) = e.get("command").and_then(Value::as_str) {
        server["command"] = value(c);
    }
    let mut args = Array::new();
    for a in e
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(a) = a.as_str() {
            args.push(a);
        }
    }
    server["args"] = value(args);
    if let Some(names) = e.get("env_vars").and_then(Value::as_array) {
        let mut arr = Array::new();
        for n in names.iter().filter_map(Value::as_str) {
            arr.push(n);
        }
        server["env_vars"] = value(arr);
    }
    if let Some(env) = e.get("env").and_then(Value::as_object) {
        let mut t = InlineTable::new();
        for (k, v) in env {
            if let Some(v) = v.as_str() {
                t.insert(k, v.into());
            }
        }
        server["env"] = value(t);
    }
    if !doc.contains_key("mcp_servers") {
        let mut servers = Table::new();
        servers.set_implicit(true);
        doc["mcp_servers"] = Item::Table(servers);
    }
    doc["mcp_servers"][name] = Item::Table(server);
}

fn render_config(r: &ConfigResponse, ctx: &Ctx) -> String {
    if !ctx.quiet() {
        let how = match (r.adapter.as_ref(), r.client) {
            (Some(a), _) => format!("shaped by {a}"),
            (None, Client::ClaudeCode | Client::Gemini) => {
                "it forwards DACLI_AGENT by reference; unset, the server runs as root".into()
            }
            (None, Client::Codex) => {
                "it forwards DACLI_AGENT by name; unset, the server runs as root".into()
            }
            (None, _) => {
                "the server inherits the client's DACLI_AGENT; unset, it runs as root".into()
            }
        };
        ctx.notice(format!(
            "paste into {} ({how}); `dacli mcp install --client {}` writes it for you",
            r.file,
            r.client.name()
        ));
    }
    r.snippet.clone()
}

/// Register `dacli mcp serve` in an MCP client's own configuration file, merged with what is
/// there; shows the change as a unified diff first.
///
/// The entry starts this binary by its absolute path on this workspace (`-C` with the
/// work tree's absolute path). Other servers and keys in the file are kept. `--agent NAME`
/// binds the entry to that agent: run it with that agent's token in DACLI_AGENT; the token is
/// written only into your user configuration (never into the work tree) and never printed.
#[derive(Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallRequest {
    /// The client to configure.
    #[arg(long, value_enum)]
    client: Client,
    /// Bind the entry to this agent (its id); DACLI_AGENT must hold its token.
    #[arg(long, value_name = "NAME")]
    #[serde(default)]
    agent: Option<String>,
    /// Which of the client's files to write (default: project; user with --agent and for
    /// claude-desktop, which has no project file).
    #[arg(long, value_enum)]
    #[serde(default)]
    scope: Option<Scope>,
    /// Show the diff only; write nothing.
    #[arg(long)]
    #[serde(default)]
    dry_run: bool,
    /// The server's name in the client's configuration.
    #[arg(long, value_name = "NAME", default_value = "dacli")]
    #[serde(default = "dacli")]
    name: String,
    /// How the client starts dacli (default: the absolute path of this binary).
    #[arg(long, value_name = "PATH")]
    #[serde(default)]
    command: Option<String>,
}

impl Classify for InstallRequest {}

#[derive(Debug, Serialize)]
pub struct InstallResponse {
    client: Client,
    scope: Scope,
    file: String,
    /// The agent the entry is bound to; `null`: it forwards or inherits DACLI_AGENT.
    agent: Option<String>,
    /// The unified diff from the file as it was to the file as written (any token redacted).
    diff: String,
    changed: bool,
    written: bool,
    /// What the user must still do before the client reads the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    trust: Option<&'static str>,
}

fn install(ctx: &Ctx, req: InstallRequest) -> Result<Outcome<InstallResponse>, Error> {
    check_name(&req.name)?;
    let ws = ctx.ws()?;
    let scope = match (req.scope, req.client.project_file(), &req.agent) {
        (Some(Scope::Project), None, _) => {
            return Err(Error::usage(format!(
                "{} has no project configuration; use --scope user",
                req.client.name()
            )));
        }
        (Some(s), _, _) => s,
        (None, None, _) | (None, _, Some(_)) => Scope::User,
        (None, Some(_), None) => Scope::Project,
    };
    let token = match &req.agent {
        None => None,
        Some(name) => match agent_token(ctx, name, scope)? {
            Ok(t) => Some(t),
            Err(r) => return Ok(Outcome::Refused(r)),
        },
    };
    let command = match &req.command {
        Some(c) if c.is_empty() => return Err(Error::usage("--command must not be empty")),
        Some(c) => c.clone(),
        None => this_binary()?,
    };
    let root = ops::admin::canonical_or_same(ws.root());
    let args = vec![
        "-C".to_string(),
        root.to_string_lossy().into_owned(),
        "mcp".into(),
        "serve".into(),
    ];
    let (base, rel) = match scope {
        Scope::Project => (root.clone(), req.client.project_file().unwrap_or_default()),
        Scope::User => (home(ctx)?, req.client.user_file()),
    };
    let path = base.join(rel);
    let shown = path.to_string_lossy().into_owned();
    let old = ops::admin::read_text_or_empty(&path).map_err(|e| {
        Error::new(
            ErrorKind::Operational,
            "E_IO",
            format!("cannot read {shown}: {e}"),
        )
    })?;
    let built = entry(req.client, &command, &args, token.as_deref());
    let new = merged(req.client, &old, &req.name, &built, &shown)?;
    let changed = new != old;
    let redact = |text: &str| match &token {
        Some(t) => text.replace(t.as_str(), "<token of the agent, not shown>"),
        None => text.to_string(),
    };
    let diff = if changed {
        similar::TextDiff::from_lines(&redact(&old), &redact(&new))
            .unified_diff()
            .context_radius(3)
            .header(&shown, &shown)
            .to_string()
    } else {
        String::new()
    };
    let written = changed && !req.dry_run;
    if written {
        let jail = ops::admin::canonical_or_same(&base);
        let fs = ctx.make_fs(base.clone(), jail);
        ops::admin::write_client_file(&fs, &path, &new, token.is_some())?;
    }
    Ok(Outcome::Done(InstallResponse {
        client: req.client,
        scope,
        file: shown,
        agent: req.agent.clone(),
        diff,
        changed,
        written,
        trust: req.client.trust_step(scope),
    }))
}

/// The caller's token when the caller is `name`. A token goes only into a user file: a file
/// in the work tree is one `git add` away from being shared.
fn agent_token(ctx: &Ctx, name: &str, scope: Scope) -> Result<Result<String, Refusal>, Error> {
    if scope == Scope::Project {
        return Ok(Err(Refusal::new(
            "mcp.token_in_work_tree",
            format!("--agent {name} would write a token into the work tree"),
            "Install an agent's entry into your user configuration: add `--scope user` (or leave --scope out).",
        )));
    }
    let me = ctx.identity()?;
    let token = ctx.env().get("DACLI_AGENT").filter(|t| !t.is_empty());
    match token {
        Some(t) if me.agent.id == name => Ok(Ok(t.to_string())),
        _ => Ok(Err(Refusal::new(
            "mcp.agent_token_required",
            format!(
                "you are {}; binding an entry to {name} needs {name}'s token",
                me.agent.id
            ),
            format!(
                "Run it with that agent's token: `DACLI_AGENT=<token of {name}> dacli mcp install --client … --agent {name}`."
            ),
        ))),
    }
}

fn this_binary() -> Result<String, Error> {
    let exe = std::env::current_exe().map_err(|e| {
        Error::new(
            ErrorKind::Operational,
            "E_IO",
            format!("cannot tell where this dacli binary is: {e}"),
        )
        .hint("pass --command /absolute/path/to/dacli")
    })?;
    let exe = ops::admin::canonical_or_same(&exe);
    Ok(exe.to_string_lossy().into_owned())
}

fn home(ctx: &Ctx) -> Result<PathBuf, Error> {
    match ctx.env().get("HOME").filter(|h| !h.is_empty()) {
        Some(h) if Path::new(h).is_absolute() => Ok(PathBuf::from(h)),
        _ => Err(Error::usage(
            "HOME is unset or not absolute: it locates the user configuration; use --scope project",
        )),
    }
}

/// `old` (a client's file, or empty) with the server `name` set to `e`, everything else kept.
fn merged(client: Client, old: &str, name: &str, e: &Value, shown: &str) -> Result<String, Error> {
    let malformed = |why: String| {
        Error::new(
            ErrorKind::Operational,
            "E_MALFORMED",
            format!("cannot merge into {shown}: {why}"),
        )
        .hint("fix the file (or move it aside) and run `dacli mcp install` again; nothing was written")
    };
    if client.toml() {
        let mut doc: toml_edit::DocumentMut = old
            .parse()
            .map_err(|err: toml_edit::TomlError| malformed(err.to_string()))?;
        if doc.get("mcp_servers").is_some_and(|s| !s.is_table_like()) {
            return Err(malformed("`mcp_servers` is not a table".into()));
        }
        put_toml(&mut doc, name, e);
        return Ok(doc.to_string());
    }
    let mut doc: Value = if old.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(old).map_err(|err| malformed(format!("not JSON ({err})")))?
    };
    let Some(root) = doc.as_object_mut() else {
        return Err(malformed("the document is not a JSON object".into()));
    };
    let servers = root
        .entry(client.servers_key())
        .or_insert_with(|| json!({}));
    let Some(servers) = servers.as_object_mut() else {
        return Err(malformed(format!(
            "`{}` is not an object",
            client.servers_key()
        )));
    };
    servers.insert(name.to_string(), e.clone());
    Ok(pretty(&doc))
}

fn render_install(r: &InstallResponse, ctx: &Ctx) -> String {
    if !ctx.quiet() {
        let what = match (r.changed, r.written) {
            (false, _) => format!("{} already holds this entry; nothing to write", r.file),
            (true, true) => format!("wrote {}", r.file),
            (true, false) => format!("dry run: {} is unchanged", r.file),
        };
        ctx.notice(what);
        if let Some(t) = r.trust {
            ctx.notice(t);
        }
    }
    r.diff.clone()
}
