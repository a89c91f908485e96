//! Registration that works the first time (issue 23 §3): the entries `mcp config` prints and
//! `mcp install` writes are launched exactly as each client launches a stdio server — its
//! variable expansion (with its behaviour for an unset variable), the environment it passes
//! on — and must complete `initialize` and `whoami` as the intended identity. The real Python
//! MCP SDK then runs the seed's canonical workflows against the server (`tests/python/`).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command as Std, Stdio};

use serde_json::{Value, json};

use crate::support::{Repo, git};

const CLIENTS: [&str; 6] = [
    "claude-code",
    "cursor",
    "codex",
    "vscode",
    "claude-desktop",
    "gemini",
];

fn bin() -> String {
    assert_cmd::cargo::cargo_bin("dacli")
        .to_string_lossy()
        .into_owned()
}

/// The environment a client itself runs in: a shell's PATH and HOME, plus whatever the
/// caller adds (a parent agent sets DACLI_AGENT for its child).
fn client_env(home: &Path, extra: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.insert("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into());
    env.insert("HOME".into(), home.to_string_lossy().into_owned());
    env.insert("USER".into(), "tester".into());
    env.insert("LANG".into(), "C.UTF-8".into());
    for (k, v) in extra {
        env.insert((*k).into(), (*v).into());
    }
    env
}

/// `${NAME}` / `${NAME:-default}` (Claude Code; Gemini CLI also `$NAME`): an unset variable
/// without a default stays as the literal text.
fn expand_shell(s: &str, env: &BTreeMap<String, String>, bare: bool) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(body) = after.strip_prefix('{')
            && let Some(end) = body.find('}')
        {
            let inner = &body[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            match (env.get(name), default) {
                (Some(v), None) => out.push_str(v),
                (Some(v), Some(_)) if !v.is_empty() => out.push_str(v),
                (_, Some(d)) => out.push_str(d),
                (None, None) => out.push_str(&format!("${{{inner}}}")),
            }
            rest = &body[end + 1..];
            continue;
        }
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        if bare && name_len > 0 {
            let name = &after[..name_len];
            match env.get(name) {
                Some(v) => out.push_str(v),
                None => out.push_str(&format!("${name}")),
            }
            rest = &after[name_len..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `${env:NAME}` (Cursor, VS Code): an unset variable becomes the empty string.
fn expand_env_colon(s: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("${env:") {
        out.push_str(&rest[..i]);
        let body = &rest[i + 6..];
        let end = body.find('}').expect("closed reference");
        out.push_str(env.get(&body[..end]).map_or("", String::as_str));
        rest = &body[end + 1..];
    }
    out.push_str(rest);
    out
}

/// What a client runs for a server entry: the program, its arguments and its environment.
struct Launch {
    command: String,
    args: Vec<String>,
    env: BTreeMap<String, String>,
}

/// Applies `client`'s rules to its server `entry` (a JSON object; Codex's TOML converted).
fn launch_as(client: &str, entry: &Value, parent: &BTreeMap<String, String>) -> Launch {
    let expand = |s: &str| -> String {
        match client {
            "claude-code" => expand_shell(s, parent, false),
            "gemini" => expand_shell(s, parent, true),
            "cursor" | "vscode" => expand_env_colon(s, parent),
            // Codex and Claude Desktop expand nothing.
            _ => s.to_string(),
        }
    };
    let command = expand(entry["command"].as_str().expect("command"));
    let args: Vec<String> = entry["args"]
        .as_array()
        .map(|a| a.iter().map(|x| expand(x.as_str().expect("arg"))).collect())
        .unwrap_or_default();
    // The environment a server starts with before the entry's own `env`.
    let mut env: BTreeMap<String, String> = match client {
        // Codex passes a short default list, plus the variables `env_vars` names when set.
        "codex" => {
            let mut e: BTreeMap<String, String> = parent
                .iter()
                .filter(|(k, _)| {
                    [
                        "HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "TERM", "TMPDIR",
                    ]
                    .contains(&k.as_str())
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            for name in entry["env_vars"].as_array().into_iter().flatten() {
                let name = name.as_str().expect("name");
                if let Some(v) = parent.get(name) {
                    e.insert(name.into(), v.clone());
                }
            }
            e
        }
        // Claude Desktop starts servers with a minimal environment of its own.
        "claude-desktop" => parent
            .iter()
            .filter(|(k, _)| ["HOME", "PATH", "USER"].contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        // Claude Code, Cursor, VS Code and Gemini CLI pass their own environment on.
        _ => parent.clone(),
    };
    for (k, v) in entry["env"].as_object().into_iter().flatten() {
        env.insert(k.clone(), expand(v.as_str().expect("env value")));
    }
    Launch { command, args, env }
}

/// Starts the server as launched, completes `initialize` and calls `whoami`: `Ok(agent id)`,
/// or `Err(stderr)` when the server would not start.
fn whoami(l: &Launch, cwd: &Path) -> Result<String, String> {
    let mut child = Std::new(&l.command)
        .args(&l.args)
        .env_clear()
        .envs(&l.env)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{} does not start: {e}", l.command));
    let mut stdin = child.stdin.take().expect("stdin");
    for m in [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"launch-test","version":"1"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{"schema_version":1}}}),
    ] {
        // A server that refused to start has closed its stdin.
        let _ = writeln!(stdin, "{m}");
    }
    drop(stdin);
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read");
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("read");
    let status = child.wait().expect("exits");
    let answer = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["id"] == 2);
    match answer {
        Some(a) => {
            let text = a["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_else(|| panic!("whoami result: {a}"));
            let me: Value = serde_json::from_str(text).expect("whoami JSON");
            assert!(status.success(), "{err}");
            Ok(me["agent"]["id"].as_str().expect("agent id").to_string())
        }
        None => Err(format!("exit {:?}: {err}", status.code())),
    }
}

/// The server entry named `dacli` in a client's file or printed snippet.
fn entry_of(client: &str, text: &str) -> Value {
    if client == "codex" {
        let doc: toml_edit::DocumentMut = text.parse().expect("TOML");
        let t = doc["mcp_servers"]["dacli"]
            .as_table()
            .expect("server table");
        let strings = |k: &str| -> Option<Value> {
            t.get(k).and_then(|i| i.as_array()).map(|a| {
                Value::Array(
                    a.iter()
                        .map(|v| json!(v.as_str().expect("string")))
                        .collect(),
                )
            })
        };
        let mut e = json!({"command": t["command"].as_str().expect("command")});
        if let Some(a) = strings("args") {
            e["args"] = a;
        }
        if let Some(n) = strings("env_vars") {
            e["env_vars"] = n;
        }
        if let Some(env) = t.get("env").and_then(|i| i.as_inline_table()) {
            let m: serde_json::Map<String, Value> = env
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v.as_str().expect("string"))))
                .collect();
            e["env"] = Value::Object(m);
        }
        return e;
    }
    let doc: Value = serde_json::from_str(text).expect("JSON");
    let key = if client == "vscode" {
        "servers"
    } else {
        "mcpServers"
    };
    doc[key]["dacli"].clone()
}

struct Setup {
    repo: Repo,
    home: tempfile::TempDir,
}

fn setup(init: &[&str]) -> (Setup, Option<String>) {
    let repo = Repo::new();
    let mut args = vec!["init"];
    args.extend_from_slice(init);
    let out = repo.dacli(&args).output().expect("init");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let root_token = String::from_utf8(out.stdout).ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("dacli_"))
            .map(str::to_string)
    });
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-qm", "init"]);
    let home = tempfile::tempdir().expect("home");
    (Setup { repo, home }, root_token)
}

fn spawn_agent(s: &Setup, token: Option<&str>) -> (String, String) {
    let mut cmd = s.repo.dacli(&["agent", "spawn", "--grant", "rw"]);
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    let out = cmd.output().expect("spawn");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_string();
    let id = token
        .strip_prefix("dacli_")
        .and_then(|r| r.rsplit_once('_'))
        .map(|(id, _)| id.to_string())
        .expect("token shape");
    (token, id)
}

/// `mcp config` for `client`, started the way the user's shell would find dacli.
fn printed(s: &Setup, client: &str) -> String {
    let dir = s.repo.path().to_string_lossy().into_owned();
    let out = s
        .repo
        .dacli(&[
            "-C",
            &dir,
            "mcp",
            "config",
            "--client",
            client,
            "--command",
            &bin(),
        ])
        .env("HOME", s.home.path())
        .output()
        .expect("config");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn install(s: &Setup, args: &[&str], token: Option<&str>) -> (i32, Value) {
    let mut all = vec!["mcp", "install", "--json"];
    all.extend_from_slice(args);
    let mut cmd = s.repo.dacli(&all);
    cmd.env("HOME", s.home.path());
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    let out = cmd.output().expect("install");
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), doc)
}

#[test]
fn every_printed_entry_starts_as_root_where_no_agent_is_named() {
    let (s, _) = setup(&[]);
    for client in CLIENTS {
        let entry = entry_of(client, &printed(&s, client));
        let l = launch_as(client, &entry, &client_env(s.home.path(), &[]));
        assert_eq!(
            whoami(&l, s.home.path()).as_deref(),
            Ok("a-root"),
            "{client}: {entry}"
        );
    }
}

#[test]
fn every_printed_entry_forwards_the_token_of_an_agent_whose_client_carries_one() {
    let (s, _) = setup(&[]);
    let (token, id) = spawn_agent(&s, None);
    // Claude Desktop starts servers with its own minimal environment: an agent's identity
    // reaches it only through `mcp install --agent`.
    for client in CLIENTS.iter().filter(|c| **c != "claude-desktop") {
        let entry = entry_of(client, &printed(&s, client));
        let l = launch_as(
            client,
            &entry,
            &client_env(s.home.path(), &[("DACLI_AGENT", &token)]),
        );
        assert_eq!(
            whoami(&l, s.home.path()).as_deref(),
            Ok(id.as_str()),
            "{client}"
        );
    }
}

#[test]
fn a_workspace_that_requires_tokens_refuses_the_unexpanded_reference() {
    let (s, root_token) = setup(&["--require-token"]);
    let root_token = root_token.expect("init --require-token prints root's token");
    let entry = entry_of("claude-code", &printed(&s, "claude-code"));
    let l = launch_as("claude-code", &entry, &client_env(s.home.path(), &[]));
    assert_eq!(l.env["DACLI_AGENT"], "${DACLI_AGENT}");
    let err = whoami(&l, s.home.path()).expect_err("no anonymous root");
    assert!(err.contains("identity.token_required"), "{err}");
    let l = launch_as(
        "claude-code",
        &entry,
        &client_env(s.home.path(), &[("DACLI_AGENT", &root_token)]),
    );
    assert_eq!(whoami(&l, s.home.path()).as_deref(), Ok("a-root"));
}

#[test]
fn installed_entries_start_from_any_directory_with_the_absolute_binary_and_workspace() {
    let (s, _) = setup(&[]);
    let root = std::fs::canonicalize(s.repo.path()).expect("canonical");
    for client in CLIENTS {
        let (code, doc) = install(&s, &["--client", client], None);
        assert_eq!(code, 0, "{client}: {doc}");
        let file = PathBuf::from(doc["data"]["file"].as_str().expect("file"));
        assert!(doc["data"]["written"].as_bool().expect("written"), "{doc}");
        assert!(
            doc["data"]["diff"]
                .as_str()
                .expect("diff")
                .starts_with("--- ")
        );
        let entry = entry_of(
            client,
            &std::fs::read_to_string(&file).expect("written file"),
        );
        assert_eq!(entry["command"], json!(bin()), "{client}");
        assert_eq!(entry["args"][0], "-C");
        assert_eq!(entry["args"][1], json!(root.to_string_lossy()));
        if client == "claude-desktop" {
            assert!(file.starts_with(s.home.path()), "user scope only: {file:?}");
        } else {
            assert!(
                file.starts_with(&root),
                "project scope by default: {file:?}"
            );
        }
        // Launched from the home directory: nothing depends on where the client runs.
        let l = launch_as(client, &entry, &client_env(s.home.path(), &[]));
        assert_eq!(
            whoami(&l, s.home.path()).as_deref(),
            Ok("a-root"),
            "{client}"
        );
        // Installing again changes nothing.
        let (_, again) = install(&s, &["--client", client], None);
        assert_eq!(again["data"]["changed"], false, "{client}: {again}");
    }
    let codex = install(&s, &["--client", "codex"], None).1;
    assert!(
        codex["data"]["trust"]
            .as_str()
            .is_some_and(|t| t.contains("trusted")),
        "{codex}"
    );
}

#[test]
fn an_agents_entry_carries_its_identity_in_the_user_file_only() {
    let (s, _) = setup(&[]);
    let (token, id) = spawn_agent(&s, None);
    for client in CLIENTS {
        // Into the work tree: refused, whatever the client.
        if client != "claude-desktop" {
            let (code, doc) = install(
                &s,
                &["--client", client, "--agent", &id, "--scope", "project"],
                Some(&token),
            );
            assert_eq!(code, 3, "{client}: {doc}");
            assert_eq!(doc["refused"]["policy"], "mcp.token_in_work_tree");
        }
        let (code, doc) = install(&s, &["--client", client, "--agent", &id], Some(&token));
        assert_eq!(code, 0, "{client}: {doc}");
        assert_eq!(doc["data"]["scope"], "user");
        let text = doc.to_string();
        assert!(!text.contains(&token), "the token is never printed: {text}");
        let file = PathBuf::from(doc["data"]["file"].as_str().expect("file"));
        assert!(file.starts_with(s.home.path()), "{file:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).expect("file").permissions().mode();
            assert_eq!(mode & 0o077, 0, "{client}: {file:?} is private");
        }
        let entry = entry_of(client, &std::fs::read_to_string(&file).expect("file"));
        // The client itself carries no token: the entry does.
        let l = launch_as(client, &entry, &client_env(s.home.path(), &[]));
        assert_eq!(
            whoami(&l, s.home.path()).as_deref(),
            Ok(id.as_str()),
            "{client}"
        );
    }
    let tracked = std::process::Command::new("git")
        .current_dir(s.repo.path())
        .args(["status", "--porcelain", "--untracked-files=all"])
        .output()
        .expect("git status");
    assert!(
        !String::from_utf8_lossy(&tracked.stdout).contains(".json"),
        "nothing was written into the work tree"
    );
    // Someone else's token cannot bind an entry to this agent.
    let (code, doc) = install(&s, &["--client", "cursor", "--agent", &id], None);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["refused"]["policy"], "mcp.agent_token_required");
}

#[test]
fn install_merges_into_the_clients_file_and_a_dry_run_writes_nothing() {
    let (s, _) = setup(&[]);
    let mcp = s.repo.path().join(".mcp.json");
    let before = "{\"mcpServers\":{\"other\":{\"command\":\"other-server\"}},\"keep\":{\"a\":1}}";
    std::fs::write(&mcp, before).unwrap();
    let (code, doc) = install(&s, &["--client", "claude-code", "--dry-run"], None);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["written"], false);
    assert!(
        doc["data"]["diff"]
            .as_str()
            .unwrap()
            .contains("+    \"dacli\": {"),
        "{doc}"
    );
    assert_eq!(std::fs::read_to_string(&mcp).unwrap(), before);
    let (code, _) = install(&s, &["--client", "claude-code"], None);
    assert_eq!(code, 0);
    let after: Value = serde_json::from_str(&std::fs::read_to_string(&mcp).unwrap()).unwrap();
    assert_eq!(after["mcpServers"]["other"]["command"], "other-server");
    assert_eq!(after["keep"]["a"], 1);
    assert!(after["mcpServers"]["dacli"]["args"].is_array());

    let codex = s.repo.path().join(".codex/config.toml");
    std::fs::create_dir_all(codex.parent().unwrap()).unwrap();
    let toml = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"other-server\"\n";
    std::fs::write(&codex, toml).unwrap();
    let (code, _) = install(&s, &["--client", "codex"], None);
    assert_eq!(code, 0);
    let after = std::fs::read_to_string(&codex).unwrap();
    assert!(after.starts_with(toml), "{after}");
    assert!(after.contains("[mcp_servers.dacli]"), "{after}");

    // A file that is not what the client reads is named, and left alone.
    let cursor = s.repo.path().join(".cursor/mcp.json");
    std::fs::create_dir_all(cursor.parent().unwrap()).unwrap();
    std::fs::write(&cursor, "{ // a comment\n}").unwrap();
    let (code, doc) = install(&s, &["--client", "cursor"], None);
    assert_eq!(code, 1, "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(".cursor/mcp.json")),
        "{doc}"
    );
    assert_eq!(
        std::fs::read_to_string(&cursor).unwrap(),
        "{ // a comment\n}"
    );
}

fn shop_for_workflows() -> (Repo, String, String) {
    let repo = Repo::initialized();
    let ok = |args: &[&str]| {
        let out = repo.dacli(args).output().expect("runs");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .trim()
            .to_string()
    };
    ok(&["project", "add", "Shop", "--goal", "Sell things"]);
    ok(&[
        "task",
        "add",
        "Totals in cents",
        "--accept",
        "sums are integers",
        "--accept",
        "no float anywhere",
    ]);
    ok(&["task", "add", "Fees", "--accept", "fees listed"]);
    ok(&["task", "add", "Rounding", "--accept", "one rounding rule"]);
    let builder = ok(&["agent", "spawn", "--grant", "rw"]);
    let ro = ok(&["agent", "spawn", "--grant", "ro"]);
    (repo, builder, ro)
}

fn workflow(python: &Path, repo: &Repo, builder: &str, ro: &str, name: &str) -> Value {
    let script = crate::support::repo_root().join("tests/python/workflows.py");
    let out = Std::new(python)
        .arg(&script)
        .arg(bin())
        .arg(repo.path())
        .arg(name)
        .env_remove("DACLI_AGENT")
        .env("DACLI_TEST_BUILDER_TOKEN", builder)
        .env("DACLI_TEST_RO_TOKEN", ro)
        .env("DACLI_TEST_CLOCK", "2026-03-02T10:00:00Z")
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "workflow {name}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON line")
}

#[test]
fn the_python_sdk_runs_the_three_canonical_workflows() {
    let Some(python) = crate::support::sdk_python() else {
        return;
    };
    let (repo, builder, ro) = shop_for_workflows();

    let w = workflow(&python, &repo, &builder, &ro, "work");
    assert_eq!(w["tools"], 22, "{w}");
    assert_eq!(
        w["early_finish"]["policy"], "dod.unchecked_acceptance",
        "{w}"
    );
    // Over MCP the refusal names the tool to call, not a shell command.
    let next = w["early_finish"]["next"].as_str().expect("next");
    assert!(next.contains("check_task {"), "{next}");
    assert!(!next.contains("dacli task check"), "{next}");
    assert_eq!(w["checked"], json!([1, 2]), "{w}");
    assert_eq!(w["finish"]["status"], "done", "{w}");

    let r = workflow(&python, &repo, &builder, &ro, "read_only");
    assert_eq!(r["grant"], "ro");
    assert_eq!(r["claim"], "proposed", "an ro claim is an event: {r}");
    assert_eq!(r["add_task"]["policy"], "grant.read_only", "{r}");
    assert!(
        !r["titles"]
            .as_array()
            .expect("titles")
            .contains(&json!("Sneaky task")),
        "{r}"
    );

    let a = workflow(&python, &repo, &builder, &ro, "ask");
    assert_eq!(a["blocks"], true, "{a}");
    assert_eq!(a["brief_has_answer"], true, "{a}");
    assert_eq!(a["brief_has_rejected"], true, "{a}");
}

/// One MCP session as root: `initialize`, then `calls` in order; the results of the calls.
fn mcp_calls(repo: &Repo, calls: &[(&str, Value)]) -> Vec<Value> {
    let mut child = Std::new(bin())
        .args(["mcp", "serve"])
        .current_dir(repo.path())
        .env_remove("DACLI_AGENT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("server starts");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "{}", json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})).unwrap();
    for (i, (tool, args)) in calls.iter().enumerate() {
        let mut args = args.clone();
        args["schema_version"] = json!(1);
        writeln!(stdin, "{}", json!({"jsonrpc":"2.0","id":i + 1,"method":"tools/call","params":{"name":tool,"arguments":args}})).unwrap();
    }
    drop(stdin);
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child.wait().unwrap();
    let answers: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (1..=calls.len())
        .map(|i| {
            answers
                .iter()
                .find(|a| a["id"] == i)
                .unwrap_or_else(|| panic!("no answer {i}: {out}"))["result"]
                .clone()
        })
        .collect()
}

#[test]
fn next_hints_and_the_briefs_shortcuts_name_tools_over_mcp_and_commands_over_the_cli() {
    let (repo, _, _) = shop_for_workflows();
    let ok = |args: &[&str]| {
        let out = repo.dacli(args).output().expect("runs");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    ok(&[
        "shortcut",
        "add",
        "test",
        "--command",
        "true",
        "--effect",
        "read",
        "--summary",
        "Run the tests",
    ]);
    let r = mcp_calls(
        &repo,
        &[
            ("get_context", json!({"ref": "shop/1"})),
            ("finish_task", json!({"ref": "shop/1"})),
        ],
    );
    let brief = r[0]["content"][0]["text"].as_str().expect("brief");
    assert!(
        brief.contains("- `run_shortcut {\"name\":\"test\"}` — Run the tests"),
        "{brief}"
    );
    let refusal: Value =
        serde_json::from_str(r[1]["content"][0]["text"].as_str().expect("text")).unwrap();
    let next = refusal["refused"]["next"].as_str().expect("next");
    assert!(
        next.contains("`check_task {\"ref\":\"shop/001-totals-in-cents\",\"items\":[1]}`"),
        "{next}"
    );

    let cli = ok(&["context", "shop/1"]);
    assert!(cli.contains("- `dacli run test` — Run the tests"), "{cli}");
    let (code, refused) = repo.json(&["task", "done", "shop/1"]);
    assert_eq!(code, 3);
    assert!(
        refused["refused"]["next"]
            .as_str()
            .is_some_and(|n| n.contains("`dacli task check shop/001-totals-in-cents --n 1`")),
        "{refused}"
    );
}

/// The inspector CLI (`tests/inspector`), installed with `npm ci` when missing; `None` (the
/// test skips) without Node.js, as the inspector test in `tests/it/mcp.rs` does.
fn inspector() -> Option<PathBuf> {
    if Std::new("node").arg("--version").output().is_err()
        || Std::new("npm").arg("--version").output().is_err()
    {
        eprintln!("SKIPPED: node/npm not found; the MCP inspector needs Node.js");
        return None;
    }
    let prefix = crate::support::repo_root().join("tests/inspector");
    let bin = prefix.join("node_modules/.bin/mcp-inspector");
    if !bin.exists() {
        let out = Std::new("npm")
            .current_dir(&prefix)
            .args(["ci", "--no-audit", "--no-fund"])
            .output()
            .expect("npm runs");
        assert!(
            out.status.success(),
            "npm ci in tests/inspector failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Some(bin)
}

/// One `tools/call` through `mcp-inspector --cli`, which starts its own server with the
/// caller's token (`None`: root): the payload of the result, which must not be an error.
fn inspect(inspector: &Path, repo: &Repo, token: Option<&str>, tool: &str, args: &[&str]) -> Value {
    let mut cmd = Std::new(inspector);
    cmd.current_dir(repo.path())
        .arg("--cli")
        .arg(bin())
        .args([
            "mcp",
            "serve",
            "--method",
            "tools/call",
            "--tool-name",
            tool,
        ])
        .arg("--tool-arg")
        .arg("schema_version=1")
        .args(args)
        .env_remove("DACLI_AGENT")
        .env("DACLI_TEST_CLOCK", "2026-03-02T10:00:00Z");
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    let out = cmd.output().expect("inspector runs");
    assert!(
        out.status.success(),
        "inspector {tool} {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("inspector prints JSON");
    assert_eq!(r["isError"], false, "{tool}: {r}");
    let text = r["content"][0]["text"].as_str().expect("text").to_string();
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

#[test]
fn the_inspector_cli_runs_the_three_canonical_workflows() {
    let Some(insp) = inspector() else { return };
    let (repo, builder, ro) = shop_for_workflows();
    let b = Some(builder.as_str());

    // 1. context → claim → refused finish → check → note → finish.
    let brief = inspect(&insp, &repo, b, "get_context", &["ref=shop/1"]);
    assert!(
        brief
            .as_str()
            .is_some_and(|t| t.contains("# Task: Totals in cents")),
        "{brief}"
    );
    let claim = inspect(&insp, &repo, b, "claim_task", &["ref=shop/1"]);
    assert_eq!(claim["effect"], "proposed", "{claim}");
    let early = inspect(&insp, &repo, b, "finish_task", &["ref=shop/1"]);
    assert_eq!(
        early["refused"]["policy"], "dod.unchecked_acceptance",
        "{early}"
    );
    assert!(
        early["refused"]["next"]
            .as_str()
            .is_some_and(|n| n.contains("check_task {"))
    );
    let checked = inspect(
        &insp,
        &repo,
        b,
        "check_task",
        &["ref=shop/1", "items=[1,2]"],
    );
    assert_eq!(checked["checked"], json!([1, 2]), "{checked}");
    let note = inspect(
        &insp,
        &repo,
        b,
        "add_note",
        &[
            "kind=finding",
            "title=Refunds round twice",
            "severity=major",
            "about=shop/1",
        ],
    );
    assert!(note.get("refused").is_none(), "{note}");
    let done = inspect(
        &insp,
        &repo,
        b,
        "finish_task",
        &["ref=shop/1", "summary=Totals in integer cents"],
    );
    assert_eq!(done["status"], "done", "{done}");

    // 2. An ro agent: its claim is an event, its owner mutation a refusal result.
    let r = Some(ro.as_str());
    let claim = inspect(&insp, &repo, r, "claim_task", &["ref=shop/2"]);
    assert_eq!(claim["effect"], "proposed", "{claim}");
    let refused = inspect(&insp, &repo, r, "add_task", &["title=Sneaky task"]);
    assert_eq!(refused["refused"]["policy"], "grant.read_only", "{refused}");

    // 3. ask → answer (root, its own server) → the answer in the asker's brief.
    let asked = inspect(
        &insp,
        &repo,
        b,
        "ask",
        &["ref=shop/3", "question=Round half-even or half-up?"],
    );
    let question = asked["question"].as_str().expect("question id").to_string();
    let words = "Use half-even: it is what the ledger does.";
    let answered = inspect(
        &insp,
        &repo,
        None,
        "answer",
        &[
            &format!("question={question}"),
            &format!("text={words}"),
            "as=decision",
            "chose=half-even",
            "rejected=half-up",
            "because=ledger parity",
        ],
    );
    assert!(answered.get("refused").is_none(), "{answered}");
    let brief = inspect(&insp, &repo, b, "get_context", &["ref=shop/3"]);
    assert!(brief.as_str().is_some_and(|t| t.contains(words)), "{brief}");
}

/// Printed without `-C`, or with a relative one, an entry still names the workspace by an
/// absolute path where the client starts the server elsewhere: claude-desktop has only a user
/// file, and `-C .` would mean the client's own directory.
#[test]
fn printed_entries_name_the_workspace_absolutely_wherever_the_client_starts_them() {
    let (s, _) = setup(&[]);
    for args in [
        vec!["mcp", "config", "--client", "claude-desktop"],
        vec!["-C", ".", "mcp", "config", "--client", "cursor"],
    ] {
        let mut all = args.clone();
        let b = bin();
        all.extend(["--command", b.as_str()]);
        let out = s.repo.dacli(&all).output().expect("config");
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8(out.stdout).expect("utf-8");
        let client = args.last().expect("client");
        let entry = entry_of(client, &text);
        let l = launch_as(client, &entry, &client_env(s.home.path(), &[]));
        assert_eq!(
            whoami(&l, s.home.path()).as_deref(),
            Ok("a-root"),
            "{args:?}: {entry}"
        );
    }
}
