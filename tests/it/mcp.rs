//! The MCP server, driven over its real stdin/stdout (`dacli mcp serve`): both protocol eras,
//! the 22 tools, refusals as results, schema errors, hostile lines, identity at launch, the
//! token canary, the capabilities manifest, the usage record, golden schemas, docs parity,
//! the context budget of `tools/list`, and `@modelcontextprotocol/inspector --cli`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command as Std, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};
use sha2::Digest as _;

use crate::lifecycle::agent;
use crate::support::{Repo, repo_root};

/// The 22 tools, in the order `tools/list` serves them.
const TOOLS: [&str; 22] = [
    "whoami",
    "status",
    "get_context",
    "add_task",
    "list_tasks",
    "claim_task",
    "check_task",
    "finish_task",
    "block_task",
    "add_note",
    "ask",
    "answer",
    "run_shortcut",
    "queue_next",
    "queue_advance",
    "cleanup_repository",
    "reconcile_delivery",
    "reconcile_event_journal",
    "diagnose_pr",
    "release_train",
    "github_projection",
    "cli",
];

const MODERN: &str = "2026-07-28";

/// A running `dacli mcp serve` with its stdout read line by line on a thread (also driven by
/// other suites, e.g. `runtimes`).
pub(crate) struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every stdout line seen, for the canary.
    seen: Vec<String>,
    next_id: i64,
}

fn server_command(dir: &Path, token: Option<&str>, extra: &[(&str, &str)]) -> Std {
    let mut cmd = Std::new(assert_cmd::cargo::cargo_bin("dacli"));
    cmd.current_dir(dir).args(["mcp", "serve"]);
    for var in [
        "DACLI_AGENT",
        "NO_COLOR",
        "DACLI_TEST_FAULT",
        "DACLI_TEST_PANIC",
    ] {
        cmd.env_remove(var);
    }
    // Later than any setup step of a test, so ids minted by the server sort after them.
    cmd.env("DACLI_TEST_CLOCK", "2026-03-02T10:00:00Z")
        .env("DACLI_TEST_SEED", "4242");
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd
}

impl Server {
    fn start(repo: &Repo, token: Option<&str>) -> Server {
        Server::start_with(repo.path(), token, &[])
    }

    pub(crate) fn start_with(dir: &Path, token: Option<&str>, extra: &[(&str, &str)]) -> Server {
        let mut child = server_command(dir, token, extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("server starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Server {
            child,
            stdin,
            lines: rx,
            seen: Vec::new(),
            next_id: 100,
        }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write");
        stdin.flush().expect("flush");
    }

    fn send(&mut self, message: &Value) {
        self.send_raw(format!("{message}\n").as_bytes());
    }

    /// The next stdout line, which must be one JSON-RPC 2.0 message.
    fn recv(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(30))
            .expect("the server answers within 30 s");
        self.seen.push(line.clone());
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        assert!(
            v.get("result").is_some() != v.get("error").is_some(),
            "exactly one of result and error: {line}"
        );
        v
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let reply = self.recv();
        assert_eq!(reply["id"], id, "{reply}");
        reply
    }

    pub(crate) fn initialize(&mut self, version: &str) -> Value {
        let r = self.request(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r
    }

    /// A tools/call result (legacy era).
    pub(crate) fn call(&mut self, tool: &str, mut args: Value) -> Value {
        if args.get("schema_version").is_none() {
            args["schema_version"] = json!(1);
        }
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        r["result"].clone()
    }

    /// Closes stdin and waits: (exit code, stderr).
    pub(crate) fn finish(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let out = self.child.wait_with_output().expect("exits");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

/// The JSON a tool result carries in its first text block.
fn body(result: &Value) -> Value {
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {result}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

pub(crate) fn assert_done(result: &Value) -> Value {
    assert_eq!(result["isError"], false, "{result}");
    let b = body(result);
    assert!(
        b.get("refused").is_none() && b.get("error").is_none(),
        "{b}"
    );
    b
}

fn assert_refused(result: &Value, policy: &str) -> Value {
    assert_eq!(
        result["isError"], false,
        "a refusal is a normal result: {result}"
    );
    let b = body(result);
    assert_eq!(b["refused"]["policy"], policy, "{b}");
    assert!(b["refused"]["next"].as_str().is_some_and(|n| !n.is_empty()));
    b
}

fn assert_error(result: &Value, code: &str) -> Value {
    assert_eq!(result["isError"], true, "{result}");
    let b = body(result);
    assert_eq!(b["error"]["code"], code, "{b}");
    b
}

/// A workspace with project `checkout` and task 1 ("Add the shim", one plain criterion).
fn workspace() -> Repo {
    let repo = Repo::initialized();
    let (code, doc) = repo.json(&["project", "add", "Checkout", "--slug", "checkout"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = repo.json(&["task", "add", "Add the shim", "--accept", "it works"]);
    assert_eq!(code, 0, "{doc}");
    repo
}

fn names(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_string())
        .collect()
}

#[test]
fn legacy_era_transcript_lifecycle_refusal_and_hostile_lines() {
    let repo = workspace();
    let mut s = Server::start(&repo, None);

    let init = s.initialize("2025-06-18");
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "dacli");
    assert_eq!(
        init["result"]["serverInfo"]["version"],
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(
        init["result"]["capabilities"],
        json!({"tools": {"listChanged": false}})
    );
    // One handshake per connection (mcp_server.rs has the version fallback).
    let again = s.initialize("1999-01-01");
    assert_eq!(again["error"]["code"], -32600, "{again}");

    let list = s.request("tools/list", json!({}));
    assert_eq!(names(&list["result"]), TOOLS);
    for tool in list["result"]["tools"].as_array().expect("tools") {
        let name = &tool["name"];
        assert!(
            tool["title"].as_str().is_some_and(|t| !t.is_empty()),
            "{name}"
        );
        assert!(
            tool["description"].as_str().is_some_and(|d| d.len() > 40),
            "{name}"
        );
        let a = &tool["annotations"];
        assert!(
            a["destructiveHint"].is_boolean() && a["openWorldHint"].is_boolean(),
            "{name}"
        );
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}");
        assert_eq!(schema["additionalProperties"], false, "{name}");
        assert_eq!(
            schema["properties"]["schema_version"],
            json!({"type": "integer", "minimum": 1, "maximum": 1})
        );
        assert!(
            schema["required"]
                .as_array()
                .expect("required")
                .contains(&json!("schema_version"))
        );
    }
    let annotations = |n: &str| {
        list["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .find(|t| t["name"] == n)
            .expect("tool")["annotations"]
            .clone()
    };
    assert_eq!(annotations("list_tasks")["readOnlyHint"], true);
    assert_eq!(annotations("run_shortcut")["destructiveHint"], true);
    assert_eq!(annotations("diagnose_pr")["openWorldHint"], true);
    assert_eq!(annotations("add_task")["openWorldHint"], false);

    // The brief comes first in an agent's loop.
    // The brief is the content itself: Markdown an agent reads, not JSON about it.
    let brief = s.call("get_context", json!({"ref": "checkout/1"}));
    assert_eq!(brief["isError"], false, "{brief}");
    let text = brief["content"][0]["text"]
        .as_str()
        .expect("the Markdown brief");
    assert!(text.starts_with("<!-- dacli brief"), "{text}");
    assert!(text.contains("# Task: Add the shim"), "{text}");
    let unknown = s.call("get_context", json!({"ref": "checkout/99"}));
    assert_error(&unknown, "E_NOT_FOUND");

    let claimed = assert_done(&s.call("claim_task", json!({"ref": "checkout/1"})));
    assert_eq!(claimed["status"], "active");
    assert_eq!(claimed["effect"], "applied");

    // An unchecked box: a refusal, returned as a normal result.
    assert_refused(
        &s.call("finish_task", json!({"ref": "checkout/1"})),
        "dod.unchecked_acceptance",
    );
    let checked = assert_done(&s.call(
        "check_task",
        json!({"ref": "checkout/1", "items": [1], "evidence": "ran it by hand"}),
    ));
    assert_eq!(checked["acceptance"], json!({"checked": 1, "total": 1}));
    let note = assert_done(&s.call(
        "add_note",
        json!({"kind": "finding", "title": "The shim rounds twice", "severity": "minor", "about": "checkout/1"}),
    ));
    assert_eq!(note["note"]["kind"], "finding");
    let done = assert_done(&s.call(
        "finish_task",
        json!({"ref": "checkout/1", "summary": "shim added"}),
    ));
    assert_eq!(done["status"], "done");
    assert_eq!(done["resolution"], "completed");

    // Compact rows, as the CLI would list them.
    let rows = assert_done(&s.call("list_tasks", json!({"all": true})));
    assert_eq!(
        rows["columns"],
        json!(["id", "ref", "title", "status", "priority", "assignee"])
    );
    assert_eq!(rows["tasks"][0].as_array().expect("row").len(), 6);
    assert_eq!(rows["tasks"][0][1], "checkout/001-add-the-shim");
    assert_eq!(rows["tasks"][0][3], "done");

    // Schema errors: isError E_SCHEMA naming the field, nothing run.
    let e = assert_error(
        &s.call("list_tasks", json!({"ready": "yes please"})),
        "E_SCHEMA",
    );
    assert!(
        e["error"]["message"]
            .as_str()
            .expect("m")
            .contains("`ready`")
    );
    let r = s.request("tools/call", json!({"name": "whoami", "arguments": {}}));
    let e = assert_error(&r["result"], "E_SCHEMA");
    assert!(
        e["error"]["message"]
            .as_str()
            .expect("m")
            .contains("schema_version")
    );
    let e = assert_error(&s.call("whoami", json!({"schema_version": 2})), "E_SCHEMA");
    assert!(
        e["error"]["message"]
            .as_str()
            .expect("m")
            .contains("schema_version")
    );
    assert_error(
        &s.call("add_task", json!({"title": "x", "priority": "urgent"})),
        "E_SCHEMA",
    );

    // Hostile lines: each answered, and the server keeps serving.
    s.send_raw(b"hello\n");
    let r = s.recv();
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );
    s.send_raw(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n");
    let r = s.recv();
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (Value::Null, json!(-32600))
    );
    let mut big = vec![b'x'; 5 * 1024 * 1024];
    big.push(b'\n');
    s.send_raw(&big);
    assert_eq!(s.recv()["error"]["code"], -32600);
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}}));
    assert_eq!(s.request("foo/bar", json!({}))["error"]["code"], -32601);
    assert_eq!(
        s.request(
            "tools/call",
            json!({"name": "no_such_tool", "arguments": {"schema_version": 1}})
        )["error"]["code"],
        -32602
    );
    assert_eq!(s.request("ping", json!({}))["result"], json!({}));
    assert_eq!(
        assert_done(&s.call("whoami", json!({})))["agent"]["id"],
        "a-root"
    );

    let (code, _) = s.finish();
    assert_eq!(code, 0, "EOF ends the server with 0");
    let done_files = std::fs::read_dir(repo.ws("projects/checkout/tasks/done"))
        .expect("done/")
        .count();
    assert_eq!(done_files, 1, "the task file moved to done/");
}

#[test]
fn modern_era_is_stateless_with_meta_on_every_request() {
    let repo = workspace();
    let mut s = Server::start(&repo, None);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let d = s.request("server/discover", json!({"_meta": meta}));
    let r = &d["result"];
    assert_eq!(r["resultType"], "complete");
    assert!(
        r["supportedVersions"]
            .as_array()
            .expect("list")
            .contains(&json!(MODERN))
    );
    assert_eq!(r["serverInfo"]["name"], "dacli");
    assert_eq!(r["capabilities"]["tools"], json!({"listChanged": false}));
    assert!(
        r["instructions"]
            .as_str()
            .is_some_and(|i| i.contains("get_context"))
    );

    let list = s.request("tools/list", json!({"_meta": meta}));
    assert_eq!(names(&list["result"]), TOOLS);
    assert_eq!(list["result"]["resultType"], "complete");
    assert!(list["result"]["ttlMs"].as_u64().is_some_and(|t| t > 0));
    assert_eq!(list["result"]["cacheScope"], "public");

    let call = s.request(
        "tools/call",
        json!({"_meta": meta, "name": "claim_task", "arguments": {"schema_version": 1, "ref": "checkout/1"}}),
    );
    assert_eq!(call["result"]["resultType"], "complete");
    assert_eq!(assert_done(&call["result"])["status"], "active");

    let old = json!({
        "io.modelcontextprotocol/protocolVersion": "2030-01-01",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let e = s.request("tools/list", json!({"_meta": old}));
    assert_eq!(e["error"]["code"], -32022);
    assert_eq!(e["error"]["data"]["requested"], "2030-01-01");
    assert!(
        e["error"]["data"]["supported"]
            .as_array()
            .expect("list")
            .contains(&json!(MODERN))
    );

    // A modern connection that drops _meta.
    assert_eq!(s.request("tools/list", json!({}))["error"]["code"], -32602);
    assert_eq!(s.finish().0, 0);

    // A connection that chose no era: not initialized, but ping answers.
    let mut s = Server::start(&repo, None);
    assert_eq!(s.request("ping", json!({}))["result"], json!({}));
    assert_eq!(s.request("tools/list", json!({}))["error"]["code"], -32600);
    assert_eq!(
        s.request("server/discover", json!({}))["error"]["code"],
        -32602
    );
    s.finish();
}

#[test]
fn an_ro_identity_gets_the_same_tools_and_its_writes_become_events_or_refusals() {
    let repo = workspace();
    let (id, token) = agent(&repo, "reviewer", 1, "ro");
    let mut root = Server::start(&repo, None);
    root.initialize("2025-11-25");
    let root_list = root.request("tools/list", json!({}));
    root.finish();

    let mut s = Server::start(&repo, Some(&token));
    s.initialize("2025-11-25");
    let list = s.request("tools/list", json!({}));
    assert_eq!(
        list["result"], root_list["result"],
        "identical for every identity"
    );
    assert_eq!(assert_done(&s.call("whoami", json!({})))["agent"]["id"], id);
    let claim = assert_done(&s.call("claim_task", json!({"ref": "checkout/1"})));
    assert_eq!(claim["effect"], "proposed");
    let finding = assert_done(&s.call(
        "add_note",
        json!({"kind": "finding", "title": "Rounding differs", "severity": "major", "about": "checkout/1"}),
    ));
    assert_eq!(finding["effect"], "proposed");
    assert_refused(
        &s.call("add_task", json!({"title": "More work"})),
        "grant.read_only",
    );
    assert_refused(
        &s.call("add_note", json!({"kind": "decision", "title": "Use cents", "chose": "a", "rejected": "b", "because": "c"})),
        "grant.read_only",
    );
    let (code, stderr) = s.finish();
    assert_eq!(code, 0);
    assert!(!stderr.contains(&token));
}

#[test]
fn identity_is_bound_at_launch_and_a_bad_one_never_reads_stdin() {
    let repo = workspace();
    let (builder, token) = agent(&repo, "builder", 2, "rw");
    let wrong = format!("{}0", &token[..token.len() - 1]);
    let out = server_command(repo.path(), Some(&wrong), &[])
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stdout.is_empty(), "stdout is protocol only");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("identity.unknown_token"), "{err}");
    assert!(!err.contains(&wrong) && !err.contains(&token));

    let out = server_command(repo.path(), Some(""), &[])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(3));

    let empty = tempfile::tempdir().expect("dir");
    crate::support::git(empty.path(), &["init", "-q"]);
    let out = server_command(empty.path(), None, &[])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("E_NO_WORKSPACE"));

    // Retired after launch: the next call is refused, as a result.
    let mut s = Server::start(&repo, Some(&token));
    s.initialize("2025-11-25");
    assert_done(&s.call("whoami", json!({})));
    let (code, doc) = repo.json(&["agent", "retire", &builder]);
    assert_eq!(code, 0, "{doc}");
    assert_refused(&s.call("status", json!({})), "identity.retired");
    s.finish();
}

/// RELIABILITY T15/C5: one server per agent. A second `mcp serve` as the same agent is
/// refused before it reads stdin; another agent is not affected; once the first server ends
/// (even killed), the agent may serve again.
#[test]
fn a_second_server_for_the_same_agent_is_refused() {
    let repo = workspace();
    let (_, token) = agent(&repo, "builder", 2, "rw");
    let (_, other) = agent(&repo, "builder", 3, "rw");
    let mut first = Server::start(&repo, Some(&token));
    first.initialize("2025-11-25");
    let out = server_command(repo.path(), Some(&token), &[])
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stdout.is_empty(), "stdout is protocol only");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mcp.agent_busy"), "{err}");
    assert!(!err.contains(&token), "{err}");

    let mut second = Server::start(&repo, Some(&other));
    second.initialize("2025-11-25");
    assert_done(&second.call("whoami", json!({})));
    second.finish();

    // Killed, not closed: the kernel releases the lock with the process.
    first.child.kill().expect("kill");
    first.child.wait().expect("reaped");
    let mut again = Server::start(&repo, Some(&token));
    again.initialize("2025-11-25");
    assert_done(&again.call("whoami", json!({})));
    let (code, stderr) = again.finish();
    assert_eq!(code, 0, "{stderr}");
}

/// `run_shortcut` and the queue tools through a real server: a parameter reaches the program
/// as one literal word, the run is an event, `queue_next` serves the step at the cursor and
/// `queue_advance` with one key moves the cursor once.
#[test]
fn run_shortcut_and_the_queue_tools_map_onto_their_commands() {
    let repo = workspace();
    for args in [
        &[
            "shortcut",
            "add",
            "echo",
            "--command",
            "printf '%s' {{v}} > out.txt",
            "--effect",
            "read",
            "--summary",
            "Print v",
            "--param",
            "v",
        ][..],
        &[
            "queue",
            "add",
            "release",
            "--step",
            "`./scripts/test.sh`",
            "--step",
            "Tag it",
        ][..],
    ] {
        let (code, doc) = repo.json(args);
        assert_eq!(code, 0, "{args:?}: {doc}");
    }
    let mut s = Server::start(&repo, None);
    s.initialize("2025-11-25");

    let listed = assert_done(&s.call("run_shortcut", json!({"list": true})));
    assert_eq!(listed["shortcuts"][0]["name"], "echo", "{listed}");
    let ran = assert_done(&s.call(
        "run_shortcut",
        json!({"name": "echo", "params": {"v": "a b; touch HACKED"}}),
    ));
    assert_eq!(ran["exit_code"], 0, "{ran}");
    assert_eq!(
        std::fs::read_to_string(repo.path().join("out.txt")).unwrap(),
        "a b; touch HACKED"
    );
    assert!(!repo.path().join("HACKED").exists());

    let next = assert_done(&s.call("queue_next", json!({"queue": "release"})));
    assert_eq!(
        next["step"],
        json!({"n": 1, "text": "`./scripts/test.sh`"}),
        "{next}"
    );
    for _ in 0..2 {
        let adv = assert_done(&s.call("queue_advance", json!({"queue": "release", "key": "ci-1"})));
        assert_eq!(adv["cursor"], 1, "{adv}");
    }
    let next = assert_done(&s.call("queue_next", json!({"queue": "release"})));
    assert_eq!(next["step"]["n"], 2, "{next}");
    let dead = s.call(
        "queue_advance",
        json!({"queue": "release", "outcome": "dead"}),
    );
    assert_eq!(
        dead["isError"], true,
        "a dead outcome needs its reason: {dead}"
    );
    s.finish();
    let (code, q) = repo.json(&["queue", "list"]);
    assert_eq!(code, 0);
    assert_eq!(q["data"]["queues"][0]["cursor"], 1);
}

#[test]
fn a_panic_inside_a_call_is_an_internal_error_and_the_server_keeps_serving() {
    let repo = workspace();
    let mut s = Server::start_with(repo.path(), None, &[("DACLI_TEST_PANIC", "whoami")]);
    s.initialize("2025-11-25");
    assert_error(&s.call("whoami", json!({})), "E_INTERNAL");
    assert_done(&s.call("status", json!({})));
    assert_eq!(s.finish().0, 0);
}

#[test]
fn the_cli_tool_runs_commands_and_refuses_what_cannot_run_in_a_server() {
    let repo = workspace();
    let mut s = Server::start(&repo, None);
    s.initialize("2025-11-25");
    let r = s.call("cli", json!({"argv": ["task", "show", "checkout/1"]}));
    let doc = assert_done(&r);
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["data"]["title"], "Add the shim");
    // Exactly what `dacli task show checkout/1 --json` prints.
    let (_, cli_doc) = repo.json(&["task", "show", "checkout/1"]);
    assert_eq!(doc, cli_doc);

    let help = assert_done(&s.call("cli", json!({"argv": ["task", "claim", "--help"]})));
    assert_eq!(help["data"]["command"], "task claim");
    for argv in [
        json!(["mcp", "serve"]),
        json!(["agent", "spawn", "--role", "builder"]),
        json!(["init", "--require-token"]),
        json!(["events", "tail", "--follow"]),
    ] {
        let b = assert_refused(&s.call("cli", json!({"argv": argv})), "mcp.cli_unavailable");
        assert!(b.get("ok").is_none(), "the Tier-1 refusal shape: {argv}");
    }
    let e = assert_error(
        &s.call("cli", json!({"argv": ["-C", "/tmp", "status"]})),
        "E_USAGE",
    );
    assert_eq!(e["ok"], false);
    assert_error(&s.call("cli", json!({"argv": ["nope"]})), "E_USAGE");
    // argv is data, never a shell line.
    let r = s.call("cli", json!({"argv": ["status; touch pwned"]}));
    assert_error(&r, "E_USAGE");
    assert!(!repo.path().join("pwned").exists());
    s.finish();
}

/// Every file under `dir`, recursively.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn the_token_never_appears_in_any_response_log_or_file() {
    let repo = workspace();
    let (_, token) = agent(&repo, "builder", 3, "rw");
    let mut s = Server::start(&repo, Some(&token));
    s.initialize("2025-11-25");
    s.request("tools/list", json!({}));
    s.call("whoami", json!({}));
    s.call("status", json!({}));
    s.call("claim_task", json!({"ref": "checkout/1"}));
    s.call(
        "check_task",
        json!({"ref": "checkout/1", "all": true, "evidence": "checked"}),
    );
    s.call(
        "add_note",
        json!({"kind": "finding", "title": "Seen", "severity": "minor"}),
    );
    s.call(
        "ask",
        json!({"ref": "checkout/1", "question": "Is cents right?", "blocks": false}),
    );
    s.call("finish_task", json!({"ref": "checkout/1"}));
    s.call("cli", json!({"argv": ["doctor"]}));
    s.call("cli", json!({"argv": ["agent", "show", "a-root"]}));
    // An agent that pastes its token into an argument is stopped before anything echoes it.
    let e = assert_error(&s.call("claim_task", json!({"ref": token})), "E_SCHEMA");
    assert!(
        e["error"]["message"]
            .as_str()
            .expect("m")
            .contains("DACLI_AGENT")
    );
    let seen = s.seen.clone();
    let (code, stderr) = s.finish();
    assert_eq!(code, 0);
    for line in &seen {
        assert!(!line.contains(&token), "token in a response: {line}");
    }
    assert!(!stderr.contains(&token), "token on stderr");
    let mut all = Vec::new();
    files(&repo.ws(""), &mut all);
    assert!(
        all.iter()
            .any(|p| p.to_string_lossy().contains("runs/usage"))
    );
    for f in all {
        let bytes = std::fs::read(&f).expect("read");
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&token),
            "token in {}",
            f.display()
        );
    }
}

#[test]
fn capabilities_come_from_the_registry_that_serves_tools_list() {
    let repo = workspace();
    let mut s = Server::start(&repo, None);
    s.initialize("2025-11-25");
    let list = s.request("tools/list", json!({}))["result"].clone();
    s.finish();
    let (code, doc) = repo.json(&["capabilities"]);
    assert_eq!(code, 0, "{doc}");
    let caps = doc["data"]["capabilities"].as_object().expect("map");
    let advertised: Vec<&str> = caps
        .keys()
        .filter_map(|k| k.strip_prefix("mcp.tool."))
        .collect();
    assert_eq!(advertised, TOOLS);
    for tool in list["tools"].as_array().expect("tools") {
        let name = tool["name"].as_str().expect("name");
        let served = tool["inputSchema"].to_string();
        let digest = format!(
            "sha256:{}",
            sha2::Sha256::digest(served.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        let cap = &caps[&format!("mcp.tool.{name}")];
        assert_eq!(cap["schema_sha256"], digest, "{name}");
        assert_eq!(cap["schema_version"], 1);
        assert_eq!(cap["server_version"], env!("CARGO_PKG_VERSION"));
        // Every served tool's command is in this build's table.
        assert_eq!(cap["available"], true, "{name}");
    }
    assert_eq!(caps["mcp.tool.get_context"]["wraps"], "context");
    assert_eq!(caps["mcp.tool.get_context"]["available"], true);
    assert_eq!(caps["mcp.tool.diagnose_pr"]["available"], true);
    assert_eq!(caps["mcp.tool.claim_task"]["available"], true);
    assert_eq!(
        caps["cli.command.task.add"],
        json!({"class": "mutate", "mcp": "tier1:add_task"})
    );
    assert_eq!(caps["cli.command.mcp.serve"]["mcp"], "never");
    assert_eq!(caps["cli.command.doctor"]["mcp"], "cli");
    assert_eq!(doc["data"]["server"]["name"], "dacli");
    // No workspace needed.
    let out = crate::support::dacli()
        .current_dir(std::env::temp_dir())
        .args(["capabilities", "--json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let (_, v) = repo.json(&["version"]);
    assert!(
        v["data"]["mcp_protocols"]
            .as_array()
            .expect("list")
            .contains(&json!("2025-11-25"))
    );
}

#[test]
fn the_usage_record_counts_calls_without_their_content() {
    let repo = workspace();
    let mut s = Server::start(&repo, None);
    s.initialize("2025-11-25");
    s.call("whoami", json!({}));
    s.call("status", json!({}));
    s.call("status", json!({}));
    s.call("finish_task", json!({"ref": "checkout/1"}));
    s.call("list_tasks", json!({"ready": "nope"}));
    s.call("cli", json!({"argv": ["task", "show", "checkout/1"]}));
    s.finish();
    let (code, doc) = repo.json(&["usage", "--since", "3650d"]);
    assert_eq!(code, 0, "{doc}");
    let d = &doc["data"];
    assert_eq!(d["calls"], 6);
    assert_eq!(d["by_tool"]["status"], 2);
    assert_eq!(d["outcomes"], json!({"done": 4, "refused": 1, "error": 1}));
    assert_eq!(d["cli_share"], 0.17);
    assert_eq!(d["cli_top"], json!([{"argv": "task show", "calls": 1}]));
    let (_, only) = repo.json(&["usage", "--since", "3650d", "--tool", "status"]);
    assert_eq!(only["data"]["calls"], 2);
    let mut logs = Vec::new();
    files(&repo.ws("runs/usage"), &mut logs);
    let text = std::fs::read_to_string(&logs[0]).expect("log");
    assert!(
        !text.contains("checkout/1"),
        "no arguments in the record: {text}"
    );
    // Machine-local: git does not see it.
    let st = Std::new("git")
        .current_dir(repo.path())
        .args(["status", "--porcelain", "--untracked-files=all"])
        .output()
        .expect("git");
    assert!(!String::from_utf8_lossy(&st.stdout).contains("runs/"));
}

#[test]
fn mcp_config_prints_ready_to_paste_snippets_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let run = |args: &[&str]| -> Value {
        let out = crate::support::dacli()
            .current_dir(dir.path())
            .args(args)
            .arg("--json")
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0));
        crate::support::one_json(&out.stdout)
    };
    let d = run(&["mcp", "config", "--client", "claude-code"]);
    assert_eq!(d["data"]["file"], ".mcp.json");
    let snippet: Value =
        serde_json::from_str(d["data"]["snippet"].as_str().expect("snippet")).expect("JSON");
    assert_eq!(
        snippet,
        json!({"mcpServers": {"dacli": {"command": "dacli", "args": ["mcp", "serve"], "env": {"DACLI_AGENT": "${DACLI_AGENT}"}}}})
    );
    let d = run(&["mcp", "config", "--client", "cursor", "--name", "shop"]);
    assert_eq!(d["data"]["file"], ".cursor/mcp.json");
    let snippet: Value =
        serde_json::from_str(d["data"]["snippet"].as_str().expect("snippet")).expect("JSON");
    // Cursor expands an unset `${env:…}` to "", which the server refuses: the entry names no
    // variable and the server inherits Cursor's environment.
    assert_eq!(snippet["mcpServers"]["shop"].get("env"), None);
    let d = run(&["-C", "work/shop", "mcp", "config", "--client", "codex"]);
    assert_eq!(d["data"]["format"], "toml");
    // A client starts the server in a directory of its own: `-C` is made absolute.
    let shop = dir.path().join("work/shop");
    assert_eq!(
        d["data"]["snippet"],
        format!(
            "[mcp_servers.dacli]\ncommand = \"dacli\"\nargs = [\"-C\", \"{}\", \"mcp\", \"serve\"]\nenv_vars = [\"DACLI_AGENT\"]\n",
            shop.display()
        )
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("dir").count(),
        0,
        "writes nothing"
    );
}

/// Whether `new` keeps every promise of `old`: no property removed or retyped, no enum value
/// dropped, no newly required field. `path` names where a break is.
fn compatible(old: &Value, new: &Value, path: &str, breaks: &mut Vec<String>) {
    if old.get("type") != new.get("type") {
        breaks.push(format!(
            "{path}: type {} became {}",
            old["type"], new["type"]
        ));
        return;
    }
    let enum_of = |v: &Value| v.get("enum").and_then(Value::as_array).cloned();
    if let (Some(o), n) = (enum_of(old), enum_of(new)) {
        let n = n.unwrap_or_default();
        for value in o.iter().filter(|v| !n.contains(v)) {
            breaks.push(format!("{path}: enum value {value} removed"));
        }
    }
    // A value pinned by `const` may be pinned by `minimum` = `maximum` instead; dropping a
    // pin accepts more (a relaxation), pinning another value or a free one does not.
    let pinned = |v: &Value| {
        v.get("const").cloned().or_else(|| {
            (v.get("minimum").is_some() && v.get("minimum") == v.get("maximum"))
                .then(|| v["minimum"].clone())
        })
    };
    if pinned(new).is_some() && pinned(old) != pinned(new) {
        breaks.push(format!("{path}: const changed"));
    }
    if let Some(props) = old.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            match new.get("properties").and_then(|p| p.get(k)) {
                Some(nv) => compatible(v, nv, &format!("{path}.{k}"), breaks),
                None => breaks.push(format!("{path}.{k}: removed or renamed")),
            }
        }
    }
    let required = |v: &Value| -> Vec<Value> {
        v.get("required")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let old_required = required(old);
    for r in required(new).iter().filter(|r| !old_required.contains(r)) {
        breaks.push(format!("{path}: {r} became required"));
    }
    if let (Some(o), Some(n)) = (old.get("items"), new.get("items")) {
        compatible(o, n, &format!("{path}[]"), breaks);
    }
}

#[test]
fn the_compatibility_check_catches_removed_retyped_and_newly_required_fields() {
    let old = json!({"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "string", "enum": ["x", "y"]}}, "required": []});
    let mut breaks = Vec::new();
    let added = json!({"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "string", "enum": ["x", "y", "z"]}, "c": {"type": "boolean"}}, "required": []});
    compatible(&old, &added, "t", &mut breaks);
    assert!(breaks.is_empty(), "{breaks:?}");
    let broken = json!({"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "string", "enum": ["x"]}}, "required": ["b"]});
    compatible(&old, &broken, "t", &mut breaks);
    assert_eq!(breaks.len(), 3, "{breaks:?}");
    let pinned = json!({"type": "object", "properties": {"v": {"type": "integer", "const": 1}, "f": {"type": "boolean", "const": true}}});
    let mut breaks = Vec::new();
    let relaxed = json!({"type": "object", "properties": {"v": {"type": "integer", "minimum": 1, "maximum": 1}, "f": {"type": "boolean"}}});
    compatible(&pinned, &relaxed, "t", &mut breaks);
    assert!(breaks.is_empty(), "{breaks:?}");
    let repinned = json!({"type": "object", "properties": {"v": {"type": "integer", "minimum": 2, "maximum": 2}, "f": {"type": "boolean"}}});
    compatible(&pinned, &repinned, "t", &mut breaks);
    assert_eq!(breaks, ["t.v: const changed"]);
    let renamed =
        json!({"type": "object", "properties": {"b": old["properties"]["b"]}, "required": []});
    let mut breaks = Vec::new();
    compatible(&old, &renamed, "t", &mut breaks);
    assert_eq!(breaks, ["t.a: removed or renamed"]);
}

fn served_list() -> Value {
    let repo = workspace();
    let mut s = Server::start(&repo, None);
    s.initialize("2025-11-25");
    let list = s.request("tools/list", json!({}))["result"].clone();
    s.finish();
    list
}

/// `fixtures/mcp/<tool>.json` are the published schemas. A served schema must keep every
/// promise of its fixture unless its `schema_version` changed; `DACLI_BLESS_MCP=1` rewrites the
/// fixtures after a compatible change (adding an optional field).
#[test]
fn published_schemas_are_golden_and_changes_stay_compatible() {
    let list = served_list();
    let dir = repo_root().join("fixtures/mcp");
    let bless = std::env::var_os("DACLI_BLESS_MCP").is_some();
    let mut problems = Vec::new();
    for tool in list["tools"].as_array().expect("tools") {
        let name = tool["name"].as_str().expect("name");
        let schema = &tool["inputSchema"];
        let path = dir.join(format!("{name}.json"));
        let golden: Option<Value> = std::fs::read_to_string(&path)
            .ok()
            .map(|t| serde_json::from_str(&t).expect("fixture is JSON"));
        if let Some(old) = &golden {
            let same_version = version(old) == version(schema);
            if same_version {
                compatible(old, schema, name, &mut problems);
            }
        }
        if bless {
            std::fs::create_dir_all(&dir).expect("mkdir");
            let text = serde_json::to_string_pretty(schema).expect("json") + "\n";
            std::fs::write(&path, text).expect("write fixture");
        } else if golden.as_ref() != Some(schema) {
            problems.push(format!(
                "{name}: differs from {} (after a compatible change, rerun with DACLI_BLESS_MCP=1)",
                path.display()
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The input schema version a schema pins: `minimum` = `maximum` in the portable dialect,
/// `const` in fixtures written before it.
fn version(schema: &Value) -> Value {
    let v = &schema["properties"]["schema_version"];
    match v.get("const") {
        Some(c) => c.clone(),
        None if v["minimum"] == v["maximum"] => v["minimum"].clone(),
        None => Value::Null,
    }
}

/// The fields of a schema and, for enumerated ones, their values.
fn fields(schema: &Value) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for (k, v) in schema["properties"].as_object().expect("properties") {
        if k == "schema_version" {
            continue;
        }
        let values = v
            .get("enum")
            .or_else(|| v.get("items").and_then(|i| i.get("enum")))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|x| x.as_str().expect("str").to_string())
                    .collect()
            })
            .unwrap_or_default();
        out.push((k.clone(), values));
    }
    out
}

/// docs/MCP.md's tool table names exactly the served tools, in order, with their fields and
/// enumerations: `` `field` `` or `` `field` (a, b) ``.
#[test]
fn docs_mcp_md_lists_exactly_the_served_tools_fields_and_enums() {
    let list = served_list();
    let doc = std::fs::read_to_string(repo_root().join("docs/MCP.md")).expect("docs/MCP.md");
    let rows: Vec<&str> = doc
        .lines()
        .skip_while(|l| !l.starts_with("| Tool | Wraps | Fields"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let served = list["tools"].as_array().expect("tools");
    assert_eq!(rows.len(), served.len(), "one row per tool");
    for (row, tool) in rows.iter().zip(served) {
        let cells: Vec<&str> = row.split(" | ").collect();
        let name = cells[0].trim_start_matches("| ").trim_matches('`');
        assert_eq!(name, tool["name"], "order and names");
        let mut documented = Vec::new();
        let cell = cells[2];
        for part in cell.split("; ").filter(|p| *p != "—") {
            let field = part
                .split('`')
                .nth(1)
                .expect("`field`")
                .trim_end_matches('!');
            let values = part
                .split_once(" (")
                .map(|(_, v)| {
                    v.trim_end_matches(')')
                        .split(", ")
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            documented.push((field.to_string(), values));
        }
        assert_eq!(documented, fields(&tool["inputSchema"]), "{name}");
    }
}

/// The per-agent context tax (spec QUALITY.md: ≤ 4,000 cl100k tokens for the whole list),
/// counted with the real cl100k_base encoder the brief ships.
#[test]
fn tools_list_stays_within_the_context_budget() {
    let list = served_list();
    let text = list.to_string();
    let tokens = dacli::brief::tokens::Tokenizer::Cl100kBase.count(&text);
    eprintln!("tools/list: {} bytes, {tokens} cl100k tokens", text.len());
    assert!(tokens <= 4000, "tools/list is {tokens} cl100k tokens");
}

/// `@modelcontextprotocol/inspector --cli`, a real client: it lists the tools, calls some,
/// and every input schema compiles under Ajv's strict mode (JSON Schema 2020-12).
#[test]
fn the_mcp_inspector_lists_and_calls_the_tools() {
    if Std::new("node").arg("--version").output().is_err()
        || Std::new("npm").arg("--version").output().is_err()
    {
        eprintln!("SKIPPED: node/npm not found; the MCP inspector test needs Node.js");
        return;
    }
    let prefix = repo_root().join("tests/inspector");
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
    let repo = workspace();
    let dacli = assert_cmd::cargo::cargo_bin("dacli");
    let inspect = |args: &[&str]| -> Value {
        let out = Std::new(&bin)
            .current_dir(repo.path())
            .arg("--cli")
            .arg(&dacli)
            .args(["mcp", "serve"])
            .args(args)
            .env_remove("DACLI_AGENT")
            .env("DACLI_TEST_CLOCK", "2026-03-02T10:00:00Z")
            .output()
            .expect("inspector runs");
        assert!(
            out.status.success(),
            "inspector {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("inspector prints JSON")
    };
    let list = inspect(&["--method", "tools/list"]);
    assert_eq!(names(&list), TOOLS);
    let r = inspect(&[
        "--method",
        "tools/call",
        "--tool-name",
        "list_tasks",
        "--tool-arg",
        "schema_version=1",
        "ready=true",
    ]);
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(body(&r)["tasks"][0][1], "checkout/001-add-the-shim");
    let r = inspect(&[
        "--method",
        "tools/call",
        "--tool-name",
        "finish_task",
        "--tool-arg",
        "schema_version=1",
        "ref=checkout/1",
    ]);
    assert_eq!(body(&r)["refused"]["policy"], "dod.unchecked_acceptance");

    let schemas = repo.path().join("schemas.json");
    std::fs::write(&schemas, list["tools"].to_string()).expect("write");
    let out = Std::new("node")
        .current_dir(&prefix)
        .arg("strict.mjs")
        .arg(&schemas)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "Ajv strict mode rejected a schema: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
