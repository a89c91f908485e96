//! The MCP server as a concurrent peer (docs/MCP.md, "Concurrency, cancellation, progress"):
//! a `ping` answered while a long `run_shortcut` runs, a cancelled call whose process group
//! dies and which sends no result, `notifications/progress` for a call carrying a progress
//! token, the protocol edges (`id: null`, a second `initialize`, the id of an oversized line,
//! `cli` refusals, rejected argv in `usage`), and the official Python MCP SDK doing the same
//! as a real client.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Repo, repo_root};

/// A workspace with two shortcuts: `slow` sleeps `secs` seconds; `late` starts a background
/// child that writes `late.txt` after 3 s while the shortcut sleeps 30 s.
fn workspace(secs: u32) -> Repo {
    let repo = Repo::initialized();
    let late = repo.path().join("late.txt");
    for (name, command) in [
        ("slow", format!("sleep {secs}")),
        (
            "late",
            format!("(sleep 3; touch '{}') & sleep 30", late.display()),
        ),
    ] {
        let (code, doc) = repo.json(&[
            "shortcut",
            "add",
            name,
            "--command",
            &command,
            "--effect",
            "read",
            "--summary",
            "A test shortcut",
        ]);
        assert_eq!(code, 0, "{doc}");
    }
    repo
}

/// `dacli mcp serve` with stdout read on a thread, every line kept.
struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    seen: Vec<Value>,
}

impl Peer {
    fn start(repo: &Repo) -> Peer {
        let mut peer = Peer::spawn(repo);
        peer.send(
            &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "it", "version": "1"}}}),
        );
        let init = peer.answer(&json!("init"), Duration::from_secs(30));
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
        peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        peer
    }

    /// The server, not yet initialized.
    fn spawn(repo: &Repo) -> Peer {
        let mut child = repo
            .std_command(&["mcp", "serve"])
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
        Peer {
            child,
            stdin,
            lines: rx,
            seen: Vec::new(),
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

    fn call(&mut self, id: Value, tool: &str, args: Value, progress: Option<&str>) {
        let mut args = args;
        args["schema_version"] = json!(1);
        let mut params = json!({"name": tool, "arguments": args});
        if let Some(token) = progress {
            params["_meta"] = json!({"progressToken": token});
        }
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
    }

    /// Reads lines until the response to `id` (kept with every line before it).
    fn answer(&mut self, id: &Value, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no answer to {id} within {within:?}; seen {:?}", self.seen)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "stdout closed before the answer to {id}; seen {:?}",
                        self.seen
                    )
                }
            };
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            self.seen.push(v.clone());
            if v.get("method").is_none() && &v["id"] == id {
                return v;
            }
        }
    }

    /// Every line the server writes within `wait`.
    fn drain(&mut self, wait: Duration) {
        let deadline = Instant::now() + wait;
        while let Ok(line) = self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            self.seen.push(serde_json::from_str(&line).expect("JSON"));
        }
    }

    fn answers_to(&self, id: &Value) -> usize {
        self.seen
            .iter()
            .filter(|v| v.get("method").is_none() && &v["id"] == id)
            .count()
    }

    /// Closes stdin, collects what is left and the exit code.
    fn finish(mut self) -> (i32, Vec<Value>) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("exits");
        self.drain(Duration::from_millis(200));
        (status.code().unwrap_or(-1), self.seen)
    }
}

fn text_of(answer: &Value) -> Value {
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {answer}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn reads_and_pings_are_answered_while_a_long_shortcut_runs_and_progress_flows() {
    let repo = workspace(4);
    let mut s = Peer::start(&repo);
    let started = Instant::now();
    s.call(
        json!(1),
        "run_shortcut",
        json!({"name": "slow"}),
        Some("tok-1"),
    );
    std::thread::sleep(Duration::from_millis(300));

    let asked = Instant::now();
    s.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    let pong = s.answer(&json!(2), Duration::from_secs(10));
    let ping_ms = asked.elapsed().as_millis();
    assert_eq!(pong["result"], json!({}), "{pong}");
    assert!(
        ping_ms < 1_000,
        "ping waited {ping_ms} ms behind the shortcut"
    );

    let asked = Instant::now();
    s.call(json!(3), "whoami", json!({}), None);
    let who = s.answer(&json!(3), Duration::from_secs(10));
    let read_ms = asked.elapsed().as_millis();
    assert_eq!(text_of(&who)["agent"]["id"], "a-root", "{who}");
    s.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}));
    let list = s.answer(&json!(4), Duration::from_secs(10));
    assert!(
        list["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );
    assert!(
        read_ms < 2_000,
        "a read waited {read_ms} ms behind the shortcut"
    );
    assert_eq!(
        s.answers_to(&json!(1)),
        0,
        "the shortcut cannot be done yet"
    );

    let ran = s.answer(&json!(1), Duration::from_secs(30));
    assert!(started.elapsed() >= Duration::from_secs(4));
    assert_eq!(text_of(&ran)["exit_code"], 0, "{ran}");

    // Progress: the token echoed, values rising, each before the result.
    let at_result = s.seen.iter().position(|v| v["id"] == 1).expect("result");
    let steps: Vec<&Value> = s.seen[..at_result]
        .iter()
        .filter(|v| v["method"] == "notifications/progress")
        .collect();
    assert!(
        steps.len() >= 3,
        "a start step and one per second: {steps:?}"
    );
    for step in &steps {
        assert_eq!(step["params"]["progressToken"], "tok-1", "{step}");
        assert!(
            step["params"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("slow"))
        );
        assert!(step.get("id").is_none(), "a notification has no id: {step}");
    }
    let values: Vec<f64> = steps
        .iter()
        .map(|s| s["params"]["progress"].as_f64().expect("number"))
        .collect();
    assert!(values.windows(2).all(|w| w[1] > w[0]), "{values:?}");
    // A call without a token gets no progress.
    assert!(
        s.seen
            .iter()
            .filter(|v| v["method"] == "notifications/progress")
            .all(|v| v["params"]["progressToken"] == "tok-1")
    );
    let (code, _) = s.finish();
    assert_eq!(code, 0);
}

#[test]
fn a_cancelled_shortcut_loses_its_process_group_and_sends_no_result() {
    let repo = workspace(1);
    let late = repo.path().join("late.txt");
    let mut s = Peer::start(&repo);
    s.call(
        json!("doomed"),
        "run_shortcut",
        json!({"name": "late"}),
        None,
    );
    // Queued behind it on the write lane, and cancelled before it starts.
    s.call(
        json!("queued"),
        "run_shortcut",
        json!({"name": "late"}),
        None,
    );
    std::thread::sleep(Duration::from_millis(500));
    for id in ["queued", "doomed"] {
        s.send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "the user pressed Esc"}}),
        );
    }

    // The write lane is free again at once: the next write runs and answers.
    let asked = Instant::now();
    s.call(json!(5), "run_shortcut", json!({"name": "slow"}), None);
    let next = s.answer(&json!(5), Duration::from_secs(20));
    assert_eq!(text_of(&next)["exit_code"], 0, "{next}");
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "the lane stayed busy with the cancelled call: {:?}",
        asked.elapsed()
    );

    // The background child would have written its file 3 s after the start.
    std::thread::sleep(Duration::from_millis(3_500));
    assert!(!late.exists(), "the cancelled shortcut's child survived");
    let (code, seen) = s.finish();
    assert_eq!(code, 0);
    assert!(
        !seen
            .iter()
            .any(|v| v["id"] == "doomed" || v["id"] == "queued"),
        "a cancelled call answered: {seen:?}"
    );
}

#[test]
fn check_task_with_verify_reports_each_criterion_against_the_total() {
    let repo = workspace(1);
    for args in [
        &["project", "add", "Checkout", "--slug", "checkout"][..],
        &[
            "task",
            "add",
            "Verify me",
            "--accept",
            "first `sleep 1`",
            "--accept",
            "second `sleep 1`",
        ][..],
    ] {
        let (code, doc) = repo.json(args);
        assert_eq!(code, 0, "{doc}");
    }
    let mut s = Peer::start(&repo);
    s.call(
        json!(1),
        "check_task",
        json!({"ref": "checkout/1", "items": [1, 2], "verify": true}),
        Some("verify-7"),
    );
    let checked = s.answer(&json!(1), Duration::from_secs(30));
    assert_eq!(text_of(&checked)["checked"], json!([1, 2]), "{checked}");
    let steps: Vec<(f64, Value, String)> = s
        .seen
        .iter()
        .filter(|v| v["method"] == "notifications/progress")
        .map(|v| {
            assert_eq!(v["params"]["progressToken"], "verify-7", "{v}");
            (
                v["params"]["progress"].as_f64().expect("number"),
                v["params"]["total"].clone(),
                v["params"]["message"]
                    .as_str()
                    .expect("message")
                    .to_string(),
            )
        })
        .collect();
    assert!(
        steps.iter().all(|(_, total, _)| *total == json!(2.0)),
        "{steps:?}"
    );
    assert!(
        steps.windows(2).all(|w| w[1].0 > w[0].0),
        "rising: {steps:?}"
    );
    assert!(
        steps
            .iter()
            .any(|(p, _, m)| *p == 1.0 && m.contains("criterion 2 (2 of 2)")),
        "{steps:?}"
    );
    assert_eq!(steps.last().map(|s| s.0), Some(2.0), "{steps:?}");
    let (code, _) = s.finish();
    assert_eq!(code, 0);
}

#[test]
fn protocol_edges_null_ids_second_handshakes_and_oversized_lines() {
    let repo = workspace(1);
    let mut s = Peer::start(&repo);

    s.send(&json!({"jsonrpc": "2.0", "id": null, "method": "ping"}));
    let null = s.answer(&Value::Null, Duration::from_secs(10));
    assert_eq!(null["error"]["code"], -32600, "{null}");
    assert!(null["error"]["message"].as_str().unwrap().contains("null"));

    s.send(&json!({"jsonrpc": "2.0", "id": 9, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "again", "version": "1"}}}));
    let again = s.answer(&json!(9), Duration::from_secs(10));
    assert_eq!(again["error"]["code"], -32600, "{again}");
    assert!(
        again["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already initialized")
    );

    // Over the 4 MiB cap with its id up front: the error answers that id.
    let pad = "x".repeat(4 * 1024 * 1024 + 10);
    let big = json!({"jsonrpc": "2.0", "id": "big-1", "method": "tools/call",
        "params": {"name": "add_note", "arguments": {"text": pad}}});
    s.send(&big);
    let cut = s.answer(&json!("big-1"), Duration::from_secs(30));
    assert_eq!(cut["error"]["code"], -32600, "{cut}");
    assert!(cut["error"]["message"].as_str().unwrap().contains("4 MiB"));
    // With its id only after the padding: id null, and the message says why.
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"params\":{{\"id\":7,\"pad\":\"{pad}\"}},\"id\":8}}\n"
    );
    s.send_raw(big.as_bytes());
    let cut = s.answer(&Value::Null, Duration::from_secs(30));
    let message = cut["error"]["message"].as_str().unwrap();
    assert!(message.contains("no request `id`"), "{message}");
    assert_eq!(s.answers_to(&json!(7)), 0);

    s.send(&json!({"jsonrpc": "2.0", "id": 10, "method": "ping"}));
    assert_eq!(
        s.answer(&json!(10), Duration::from_secs(10))["result"],
        json!({})
    );
    let (code, _) = s.finish();
    assert_eq!(code, 0);

    // A fresh connection still falls back to the preferred version for an unknown one.
    let repo = Repo::initialized();
    let mut s = Peer::spawn(&repo);
    s.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "1999-01-01", "capabilities": {},
                   "clientInfo": {"name": "old", "version": "1"}}}));
    let init = s.answer(&json!(1), Duration::from_secs(10));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    drop(s.finish());
}

#[test]
fn cli_refusals_read_like_tier_one_and_usage_shows_rejected_argv() {
    let repo = workspace(1);
    let mut s = Peer::start(&repo);
    s.call(json!(1), "cli", json!({"argv": ["mcp", "serve"]}), None);
    let refused = s.answer(&json!(1), Duration::from_secs(10));
    assert_eq!(refused["result"]["isError"], false, "{refused}");
    let body = text_of(&refused);
    assert_eq!(body["refused"]["policy"], "mcp.cli_unavailable", "{body}");
    assert!(
        body["refused"]["next"]
            .as_str()
            .is_some_and(|n| !n.is_empty())
    );
    assert_eq!(
        body.as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["refused".to_string()]),
        "the same shape as a Tier-1 refusal: {body}"
    );

    s.call(json!(2), "cli", json!({"argv": ["task", "shw", "7"]}), None);
    let bad = s.answer(&json!(2), Duration::from_secs(10));
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    s.call(
        json!(3),
        "cli",
        json!({"argv": ["status", "--follow"]}),
        None,
    );
    s.answer(&json!(3), Duration::from_secs(10));
    let (code, _) = s.finish();
    assert_eq!(code, 0);

    let (code, usage) = repo.json(&["usage"]);
    assert_eq!(code, 0, "{usage}");
    let top: Vec<&str> = usage["data"]["cli_top"]
        .as_array()
        .expect("cli_top")
        .iter()
        .map(|c| c["argv"].as_str().expect("argv"))
        .collect();
    assert!(top.contains(&"mcp serve"), "{top:?}");
    assert!(top.contains(&"task shw 7 (rejected)"), "{top:?}");
    assert!(!top.contains(&"?"), "{top:?}");
}

/// Runs `tests/python/<script>` with the SDK's interpreter; returns its JSON summary.
pub(crate) fn run_sdk_script(python: &Path, script: &str, args: &[&str]) -> Value {
    let out = std::process::Command::new(python)
        .arg(repo_root().join("tests/python").join(script))
        .args(args)
        .current_dir(repo_root().join("tests/python"))
        .env_remove("DACLI_AGENT")
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{script} failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{script} printed no JSON summary ({e}): {stdout}"))
}

#[test]
fn the_python_sdk_lists_gets_progress_and_cancels() {
    let Some(python) = crate::support::sdk_python() else {
        return;
    };
    let repo = workspace(3);
    let marker = repo.path().join("late.txt");
    let binary = assert_cmd::cargo::cargo_bin("dacli");
    let summary = run_sdk_script(
        &python,
        "cancel_progress.py",
        &[
            binary.to_str().expect("utf-8 path"),
            repo.path().to_str().expect("utf-8 path"),
            marker.to_str().expect("utf-8 path"),
        ],
    );
    assert!(
        summary["tools"].as_u64().is_some_and(|n| n >= 20),
        "{summary}"
    );
    let steps = summary["progress"].as_array().expect("steps");
    assert!(steps.len() >= 3, "{summary}");
    assert_eq!(summary["marker_written"], false);
    assert!(!marker.exists());
}
