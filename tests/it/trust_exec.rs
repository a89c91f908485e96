//! Issue 22, holes 1, 5 and 6: no shortcut parameter becomes shell code, no child process
//! (or its output) gets a token, and a release build ignores every test hook. Each test is
//! the issue's reproduction plus the attack class around it, through the CLI and MCP.

use std::path::Path;
use std::process::Command as Std;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::lifecycle::agent;
use crate::reliability_hostile::mcp_batch_as;
use crate::support::{Repo, one_json};

const INIT: &str = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"trust","version":"1"}}}"#;

/// `initialize`, then one `tools/call` per `(tool, arguments)`, ids 1, 2, ….
fn mcp_input(calls: &[(&str, Value)]) -> Vec<u8> {
    let mut out = format!("{INIT}\n");
    for (i, (tool, args)) in calls.iter().enumerate() {
        let mut args = args.clone();
        args["schema_version"] = json!(1);
        let m = json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
            "params": {"name": tool, "arguments": args}});
        out.push_str(&format!("{m}\n"));
    }
    out.into_bytes()
}

/// The reply of call `id` (1-based).
fn reply(replies: &[Value], id: u64) -> &Value {
    replies
        .iter()
        .find(|r| r["id"] == json!(id))
        .unwrap_or_else(|| panic!("no reply {id}: {replies:?}"))
}

/// The JSON in a tool result's first text block.
fn tool_body(r: &Value) -> Value {
    serde_json::from_str(r["result"]["content"][0]["text"].as_str().expect("text")).expect("json")
}

fn as_agent(repo: &Repo, token: &str, args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.push("--json");
    let out = repo.dacli(&all).env("DACLI_AGENT", token).output().unwrap();
    (out.status.code().unwrap_or(-1), one_json(&out.stdout))
}

fn add_shortcut(repo: &Repo, name: &str, command: &str, raw: bool) -> (i32, Value) {
    let mut args = vec![
        "shortcut",
        "add",
        name,
        "--command",
        command,
        "--param",
        "v",
        "--effect",
        "read",
        "--summary",
        "s",
    ];
    if raw {
        args.extend(["--raw", "v"]);
    }
    repo.json(&args)
}

/// Values an attacker would try: command substitution, separators, quotes of both kinds,
/// `$IFS`, globs, options, newlines, arithmetic, and escapes.
const PAYLOADS: &[&str] = &[
    "$(touch pwned)",
    "`touch pwned`",
    ";touch pwned",
    "; touch pwned #",
    "|touch pwned",
    "&&touch pwned",
    "&touch pwned&",
    "a\ntouch pwned",
    "a\ttouch pwned",
    "'",
    "\"",
    "'; touch pwned; '",
    "\"; touch pwned; \"",
    "\"$(touch pwned)\"",
    "'$(touch pwned)'",
    "$IFS",
    "${IFS}touch${IFS}pwned",
    "$((1+1))",
    "a[$(touch pwned)]",
    "*",
    "?",
    "[a-z]*",
    "{a,b}",
    "~",
    "$HOME",
    "-n",
    "--help",
    "-e \\x41",
    "\\",
    "\\\"",
    "}}",
    "{{v}}",
    "${DACLI_P_v}",
    ")",
    "<(touch pwned)",
    ">pwned",
    "\u{a0}",
    "",
];

/// Templates with the value in every position the rule accepts, and what `out.txt` must hold
/// (`%` stands for the value).
const POSITIONS: &[(&str, &str)] = &[
    ("printf '%s' {{v}} > out.txt", "%"),
    ("printf '%s' \"{{v}}\" > out.txt", "%"),
    ("printf '%s' \"msg: {{v}}!\" > out.txt", "msg: %!"),
    ("printf '%s' x{{v}}y > out.txt", "x%y"),
    ("printf '%s' --opt={{v}} > out.txt", "--opt=%"),
    ("printf '%s' {{v}}\"{{v}}\" > out.txt", "%%"),
    ("printf '%s' [[ -- {{v}} ]] > out.txt", "--%"),
    ("sh -c 'printf %s \"$1\"' sh {{v}} > out.txt", "%"),
    ("for w in {{v}}; do printf '%s' \"$w\"; done > out.txt", "%"),
    ("true && printf '%s' {{v}} | cat > out.txt", "%"),
    ("f() { printf '%s' {{v}}; }; f > out.txt", "%"),
    ("printf '%s' {{v}} > out.txt # {{v}}", "%"),
    (
        "cat <<'EOF' > /dev/null\n$(touch pwned)\nEOF\nprintf '%s' {{v}} > out.txt",
        "%",
    ),
    ("printf '%s' {{v}} 2>/dev/null >out.txt", "%"),
];

#[test]
fn r22_1_the_reproduction_runs_no_code_and_unsafe_templates_are_refused() {
    let repo = Repo::initialized();
    let (code, doc) = repo.json(&[
        "shortcut",
        "add",
        "dq",
        "--command",
        "echo \"msg: {{msg}}\"",
        "--param",
        "msg",
        "--effect",
        "read",
        "--summary",
        "s",
    ]);
    assert_eq!(code, 0, "{doc}");
    let (_, ro) = agent(&repo, "reviewer", 1, "ro");
    let (code, ran) = as_agent(&repo, &ro, &["run", "dq", "--param", "msg=$(id > pwned)"]);
    assert_eq!(code, 0, "{ran}");
    assert_eq!(ran["data"]["output"]["stdout_tail"], "msg: $(id > pwned)\n");
    assert!(!repo.path().join("pwned").exists(), "the value ran as code");
    // The dry run shows the exact command line that runs: the value travels in a variable.
    let (code, dry) = as_agent(
        &repo,
        &ro,
        &["run", "dq", "--param", "msg=$(id > pwned)", "--dry-run"],
    );
    assert_eq!(code, 0, "{dry}");
    assert_eq!(
        dry["data"]["command"],
        "env DACLI_P_msg='$(id > pwned)' sh -c 'echo \"msg: ${DACLI_P_msg}\"'"
    );
    let shown = Std::new("sh")
        .arg("-c")
        .arg(dry["data"]["command"].as_str().unwrap())
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert_eq!(
        shown.stdout, b"msg: $(id > pwned)\n",
        "the shown line runs the same"
    );
    assert!(!repo.path().join("pwned").exists());

    // The issue's two other templates, and every place a value could become code, are
    // refused when the shortcut is created, naming the placeholder and the place.
    for (template, place) in [
        ("echo '{{v}}'", "single quotes"),
        ("sh -c \"echo {{v}}\"", "code"),
        ("sh -c 'echo {{v}}'", "single quotes"),
        ("bash -lc \"{{v}}\"", "code"),
        ("sudo -u root sh -c \"x {{v}}\"", "code"),
        ("xargs sh -c {{v}}", "code"),
        ("find . -exec sh -c {{v}} \\;", "code"),
        ("echo `echo {{v}}`", "backticks"),
        ("echo $(echo {{v}})", "command substitution"),
        ("echo $(( {{v}} ))", "arithmetic"),
        ("echo ${x:-{{v}}}", "parameter expansion"),
        ("echo $'{{v}}'", "$'"),
        ("cat <<EOF\n{{v}}\nEOF", "here-document"),
        ("echo \\{{v}}", "backslash"),
        ("echo ${{v}}", "after `$`"),
        ("{{v}} --version", "program"),
        ("X={{v}} ./x", "assignment"),
        ("eval {{v}}", "eval"),
        ("python3 -c \"print('{{v}}')\"", "code"),
        ("python3 -c \"print({{v}})\"", "code"),
        ("perl -e {{v}}", "code"),
        ("ssh host {{v}}", "ssh"),
        ("git -c {{v}} status", "code"),
        ("echo x [[ ; sh -c ]] \"{{v}}\"", "code"),
    ] {
        let (code, doc) = add_shortcut(&repo, "bad", template, false);
        assert_eq!(code, 2, "{template}: {doc}");
        assert_eq!(doc["error"]["code"], "E_USAGE", "{template}: {doc}");
        let msg = doc["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains("`{{v}}`") && msg.contains(place),
            "{template}: {msg}"
        );
        assert!(!repo.ws("shortcuts/bad.md").exists(), "{template}: written");
    }
}

#[test]
fn r22_1_hostile_values_arrive_as_data_in_every_accepted_position() {
    let repo = Repo::initialized();
    let (_, ro) = agent(&repo, "reviewer", 1, "ro");
    let mut tries = 0;
    for (i, (template, expected)) in POSITIONS.iter().enumerate() {
        let name = format!("p{i}");
        let (code, doc) = add_shortcut(&repo, &name, template, false);
        assert_eq!(code, 0, "{template}: {doc}");
        for payload in PAYLOADS {
            if payload.is_empty() && template.contains("[[") {
                continue;
            }
            let param = format!("v={payload}");
            let (code, doc) = as_agent(&repo, &ro, &["run", &name, "--param", &param]);
            if payload.starts_with('-') && code == 2 {
                // Where the value starts a word, a leading `-` could be an option: refused.
                let msg = doc["error"]["message"].as_str().unwrap_or_default();
                assert!(msg.contains("starts with `-`"), "{template}: {msg}");
                tries += 1;
                continue;
            }
            assert_eq!(code, 0, "{template} / {payload:?}: {doc}");
            let out = std::fs::read_to_string(repo.path().join("out.txt")).unwrap();
            assert_eq!(
                out,
                expected.replace('%', payload),
                "{template} / {payload:?}"
            );
            assert!(
                !repo.path().join("pwned").exists(),
                "{template} / {payload:?} ran code"
            );
            tries += 1;
        }
    }
    assert!(tries > 500, "{tries}");

    // A raw parameter is split into words, never read as code.
    let (code, doc) = add_shortcut(&repo, "raw", "printf '[%s]' {{v}} > out.txt", true);
    assert_eq!(code, 0, "{doc}");
    for payload in PAYLOADS {
        let param = format!("v={payload}");
        let (code, doc) = as_agent(&repo, &ro, &["run", "raw", "--param", &param]);
        assert_eq!(code, 0, "raw {payload:?}: {doc}");
        assert!(!repo.path().join("pwned").exists(), "raw {payload:?}");
    }
    let (_, doc) = as_agent(&repo, &ro, &["run", "raw", "--param", "v=-a  b;c"]);
    assert_eq!(doc["data"]["exit_code"], 0);
    assert_eq!(
        std::fs::read_to_string(repo.path().join("out.txt")).unwrap(),
        "[-a][b;c]"
    );
}

#[test]
fn r22_1_over_mcp_values_are_data_and_unsafe_templates_are_refused() {
    let repo = Repo::initialized();
    let (code, doc) = add_shortcut(&repo, "dq", "printf '%s' \"msg: {{v}}\" > out.txt", false);
    assert_eq!(code, 0, "{doc}");
    let (_, ro) = agent(&repo, "reviewer", 1, "ro");
    let (_, rw) = agent(&repo, "builder", 2, "rw");
    let hostile = "$(touch pwned)`touch pwned`;touch pwned\n'\"";
    let input = mcp_input(&[
        (
            "run_shortcut",
            json!({"name": "dq", "params": {"v": hostile}}),
        ),
        (
            "cli",
            json!({"argv": ["run", "dq", "--param", format!("v={hostile}")]}),
        ),
    ]);
    let (_, replies, stderr) = mcp_batch_as(&repo, &input, Some(&ro));
    for id in [1, 2] {
        let r = reply(&replies, id);
        assert_eq!(r["result"]["isError"], false, "{r} {stderr}");
    }
    assert_eq!(
        std::fs::read_to_string(repo.path().join("out.txt")).unwrap(),
        format!("msg: {hostile}")
    );
    assert!(!repo.path().join("pwned").exists());

    // `shortcut add` and `shortcut promote` through the `cli` tool refuse the issue's
    // templates and write nothing.
    let calls: Vec<(&str, Value)> = ["echo '{{v}}'", "sh -c \"echo {{v}}\""]
        .iter()
        .map(|t| {
            (
                "cli",
                json!({"argv": ["shortcut", "add", "bad", "--command", t, "--param", "v",
                    "--effect", "read", "--summary", "s"]}),
            )
        })
        .collect();
    let (_, replies, _) = mcp_batch_as(&repo, &mcp_input(&calls), Some(&rw));
    for id in [1, 2] {
        let r = reply(&replies, id);
        assert_eq!(r["result"]["isError"], true, "{r}");
        let body = tool_body(r);
        assert_eq!(body["error"]["code"], "E_USAGE", "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("`{{v}}`")
        );
    }
    assert!(!repo.ws("shortcuts/bad.md").exists());
    for _ in 0..2 {
        let (code, doc) = as_agent(&repo, &rw, &["run", "--cmd", "echo hi"]);
        assert_eq!(code, 0, "{doc}");
    }
    let (_, events) = repo.json(&["events", "list", "--kind", "run"]);
    let adhoc = events["data"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["summary"] == "echo hi")
        .unwrap_or_else(|| panic!("{events}"))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, doc) = as_agent(
        &repo,
        &rw,
        &[
            "shortcut",
            "promote",
            "bad",
            "--from-event",
            &adhoc,
            "--command",
            "sh -c \"echo {{v}}\"",
            "--param",
            "v",
            "--effect",
            "read",
            "--summary",
            "s",
        ],
    );
    assert_eq!(
        (code, doc["error"]["code"].as_str()),
        (2, Some("E_USAGE")),
        "{doc}"
    );
    assert!(!repo.ws("shortcuts/bad.md").exists());
}

#[test]
fn r22_1_a_stored_unsafe_shortcut_is_flagged_by_lint_and_never_runs() {
    let repo = Repo::initialized();
    let (code, doc) = add_shortcut(&repo, "old", "echo {{v}}", false);
    assert_eq!(code, 0, "{doc}");
    // A file written before the rule (or by hand): the placeholder sits in `sh -c` code.
    let path = repo.ws("shortcuts/old.md");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace(
            "command = \"echo {{v}}\"",
            "command = \"sh -c \\\"echo {{v}}\\\"\"",
        ),
    )
    .unwrap();
    let (code, lint) = repo.json(&["lint"]);
    assert_eq!(code, 0, "{lint}");
    let found: Vec<&Value> = lint["data"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "unsafe_template")
        .collect();
    assert_eq!(found.len(), 1, "{lint}");
    assert_eq!(found[0]["severity"], "error");
    assert_eq!(found[0]["path"], ".dacli/shortcuts/old.md");
    let (code, _) = repo.json(&["lint", "--check"]);
    assert_eq!(code, 1);
    let (_, ro) = agent(&repo, "reviewer", 1, "ro");
    let (code, doc) = as_agent(&repo, &ro, &["run", "old", "--param", "v=$(touch pwned)"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["error"]["code"], "E_MALFORMED");
    assert!(!repo.path().join("pwned").exists());
}

/// A printing command that tries every way a child could learn the caller's token: its
/// environment, and its parent's through `/proc`.
const SNOOP: &str = "printf '[%s][%s][%s]\\n' \"$DACLI_AGENT\" \"$GH_TOKEN\" \"$GITHUB_TOKEN\"; env | grep -c -e DACLI_AGENT -e GH_TOKEN -e GITHUB_TOKEN; cat /proc/$PPID/environ 2>/dev/null | tr '\\0' '\\n' | grep '^DACLI_AGENT=' ; cat other.txt";

#[test]
fn r22_5_children_never_get_the_token_and_output_is_redacted() {
    let repo = Repo::initialized();
    let (_, rw) = agent(&repo, "builder", 1, "rw");
    let (_, other) = agent(&repo, "reviewer", 2, "ro");
    // Another agent's token, lying in a file a command prints.
    repo.write("other.txt", format!("other={other}\n"));
    let gh = "ghp_canary0123456789abcdefghijklmnopqrstu";
    let (code, doc) = repo.json(&[
        "shortcut",
        "add",
        "snoop",
        "--command",
        SNOOP,
        "--effect",
        "read",
        "--summary",
        "s",
    ]);
    assert_eq!(code, 0, "{doc}");

    let check = |what: &str, text: &str| {
        assert!(
            !text.contains(&rw),
            "{what}: the caller's token leaked:\n{text}"
        );
        assert!(
            !text.contains(&other),
            "{what}: another token leaked:\n{text}"
        );
        assert!(
            !text.contains(gh),
            "{what}: the GitHub token leaked:\n{text}"
        );
    };
    // `run NAME` and `run --cmd`, JSON and human (streamed) output.
    for args in [&["run", "snoop"][..], &["run", "--cmd", SNOOP]] {
        for json in [true, false] {
            let mut all = args.to_vec();
            if json {
                all.push("--json");
            }
            let out = repo
                .dacli(&all)
                .env("DACLI_AGENT", &rw)
                .env("GH_TOKEN", gh)
                .env("GITHUB_TOKEN", gh)
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            assert_eq!(out.status.code(), Some(0), "{args:?}: {stdout}{stderr}");
            check(&format!("{args:?} json={json}"), &stdout);
            check(&format!("{args:?} json={json}"), &stderr);
            let stdout = if json {
                one_json(&out.stdout)["data"]["output"]["stdout_tail"]
                    .as_str()
                    .unwrap()
                    .to_string()
            } else {
                stdout
            };
            assert!(stdout.contains("[][][]\n0\n"), "{args:?}: {stdout}");
            assert!(
                stdout.contains("other=[redacted token]"),
                "{args:?}: {stdout}"
            );
            if Path::new("/proc/self/environ").exists() {
                assert!(
                    stdout.contains("DACLI_AGENT=[redacted token]"),
                    "{args:?}: {stdout}"
                );
            }
        }
    }

    // `task check --verify`: the criterion's command sees no token, and the refusal that
    // quotes its last line is redacted.
    let (code, doc) = repo.json(&["project", "add", "Default", "--slug", "default"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = as_agent(
        &repo,
        &rw,
        &[
            "task",
            "add",
            "Leak",
            "--project",
            "default",
            "--accept",
            "leaks `printf '[%s]' \"$DACLI_AGENT\" > seen.txt; cat other.txt; exit 1`",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    let out = repo
        .dacli(&["task", "check", "1", "--n", "1", "--verify", "--json"])
        .env("DACLI_AGENT", &rw)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("dod.verify_failed"), "{text}");
    assert!(text.contains("other=[redacted token]"), "{text}");
    check("task check --verify", &text);
    assert_eq!(
        std::fs::read_to_string(repo.path().join("seen.txt")).unwrap(),
        "[]"
    );

    // MCP: `run_shortcut` and `cli`, with the server launched with the token.
    let input = mcp_input(&[
        ("run_shortcut", json!({"name": "snoop"})),
        ("cli", json!({"argv": ["run", "--cmd", SNOOP]})),
    ]);
    let (_, replies, stderr) = mcp_batch_as(&repo, &input, Some(&rw));
    check("mcp stderr", &stderr);
    for id in [1, 2] {
        let r = reply(&replies, id);
        assert_eq!(r["result"]["isError"], false, "{r}");
        let text = r.to_string();
        check(&format!("mcp call {id}"), &text);
        assert!(text.contains("other=[redacted token]"), "{text}");
    }
}

#[test]
fn r22_5_the_mcp_guard_refuses_any_agent_token_of_the_workspace() {
    let repo = Repo::initialized();
    let (code, doc) = repo.json(&["project", "add", "Default", "--slug", "default"]);
    assert_eq!(code, 0, "{doc}");
    let (_, mine) = agent(&repo, "builder", 1, "rw");
    let (_, theirs) = agent(&repo, "reviewer", 2, "ro");
    let dead = format!("dacli_a-nobody_{}", "0".repeat(64));
    let input = mcp_input(&[
        (
            "add_note",
            json!({"kind": "finding", "title": format!("mine {mine}"), "severity": "minor"}),
        ),
        (
            "add_note",
            json!({"kind": "finding", "title": "theirs", "body": format!("see {theirs}."),
                "severity": "minor"}),
        ),
        (
            "cli",
            json!({"argv": ["note", "add", "finding", format!("x{theirs}x"), "--severity", "minor"]}),
        ),
        (
            "add_note",
            json!({"kind": "finding", "title": "not a token", "body": dead, "severity": "minor"}),
        ),
        // The secret alone rebuilds the token (agent ids are public), in either case.
        (
            "add_note",
            json!({"kind": "finding", "title": "secret", "severity": "minor",
                "body": format!("leak {}", theirs.rsplit('_').next().expect("secret"))}),
        ),
        (
            "cli",
            json!({"argv": ["task", "list", "--tag",
                theirs.rsplit('_').next().expect("secret").to_ascii_uppercase()]}),
        ),
    ]);
    let (_, replies, stderr) = mcp_batch_as(&repo, &input, Some(&mine));
    for id in [1, 2, 3, 5, 6] {
        let r = reply(&replies, id);
        assert_eq!(r["result"]["isError"], true, "{id}: {r} {stderr}");
        let body = tool_body(r);
        assert_eq!(body["error"]["code"], "E_SCHEMA", "{body}");
        let text = r.to_string();
        assert!(!text.contains(&mine) && !text.contains(&theirs), "{text}");
    }
    // A token-shaped string that is nobody's token is data.
    let r = reply(&replies, 4);
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert!(!r.to_string().contains("refused"), "{r}");
    let (_, notes) = repo.json(&["note", "list"]);
    let shown = notes.to_string();
    assert!(shown.contains("not a token"), "{shown}");
    assert!(!shown.contains("theirs"), "{shown}");
    assert!(!shown.contains("leak"), "{shown}");
    assert!(
        !shown.contains(&mine) && !shown.contains(&theirs),
        "{shown}"
    );
}

#[test]
fn r22_5_git_subprocesses_never_get_the_token() {
    // `repo cleanup` fetches the base from origin with `git fetch`, which runs the remote's
    // upload-pack: here a script, as a hook or credential helper would be.
    let repo = Repo::initialized();
    let (_, rw) = agent(&repo, "builder", 1, "rw");
    crate::support::git(
        repo.path(),
        &["commit", "-q", "--allow-empty", "-m", "start"],
    );
    let origin = tempfile::tempdir().unwrap();
    crate::support::git(origin.path(), &["init", "-q", "--bare", "-b", "main"]);
    let url = origin.path().to_str().unwrap();
    crate::support::git(repo.path(), &["remote", "add", "origin", url]);
    crate::support::git(repo.path(), &["push", "-q", "origin", "main"]);
    let leak = repo.path().join("leak.txt");
    let script = repo.path().join("upload-pack.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '[%s]' \"$DACLI_AGENT\" > '{}'\nexec git-upload-pack \"$@\"\n",
            leak.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    crate::support::git(
        repo.path(),
        &[
            "config",
            "remote.origin.uploadpack",
            script.to_str().unwrap(),
        ],
    );
    let (code, doc) = as_agent(&repo, &rw, &["repo", "cleanup", "--base", "main"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["base"]["source"], "fetched", "{doc}");
    assert_eq!(std::fs::read_to_string(&leak).unwrap(), "[]");
}

/// Builds the `hooks-off` profile (release settings: debug assertions off) into its own
/// target directory and returns the binary. A missing cargo fails the test: CI has it.
fn hooks_off_binary() -> std::path::PathBuf {
    let root = crate::support::repo_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = root.join("target").join("hooks-off");
    let started = std::time::Instant::now();
    let out = Std::new(&cargo)
        .current_dir(&root)
        .args([
            "build",
            "--profile",
            "hooks-off",
            "--bin",
            "dacli",
            "--target-dir",
        ])
        .arg(&target)
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap_or_else(|e| {
            panic!("cargo ({cargo}) must be available to build the release profile: {e}")
        });
    assert!(
        out.status.success(),
        "cargo build --profile hooks-off failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("hooks-off build: {} ms", started.elapsed().as_millis());
    target.join("hooks-off").join("dacli")
}

#[test]
fn r22_6_a_release_build_ignores_every_test_hook() {
    let bin = hooks_off_binary();
    let spawn_secret = |clock: &str| -> (String, Value) {
        let dir = tempfile::tempdir().unwrap();
        crate::support::git(dir.path(), &["init", "-q", "-b", "main"]);
        let run = |args: &[&str]| {
            let out = Std::new(&bin)
                .current_dir(dir.path())
                .args(args)
                .env_remove("DACLI_AGENT")
                .env("DACLI_TEST_SEED", "42")
                .env("DACLI_TEST_CLOCK", clock)
                .env("DACLI_TEST_FAULT", "write:1")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{args:?}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            one_json(&out.stdout)
        };
        run(&["init", "--json"]);
        let spawned = run(&["agent", "spawn", "--grant", "rw", "--json"]);
        let token = spawned["data"]["token"].as_str().unwrap().to_string();
        run(&["run", "--cmd", "true", "--json"]);
        let (code, events) = {
            let out = Std::new(&bin)
                .current_dir(dir.path())
                .args(["events", "list", "--json"])
                .env("DACLI_TEST_CLOCK", clock)
                .output()
                .unwrap();
            (out.status.code(), one_json(&out.stdout))
        };
        assert_eq!(code, Some(0), "{events}");
        (token, events)
    };
    let before = jiff::Timestamp::now();
    let (a, events) = spawn_secret("2001-01-01T00:00:00Z");
    let (b, _) = spawn_secret("2001-01-01T00:00:00Z");
    let secret = |t: &str| t.rsplit('_').next().unwrap().to_string();
    assert_ne!(secret(&a), secret(&b), "DACLI_TEST_SEED fixed the secret");
    assert_ne!(a, b);
    // Every event is stamped now, not at the pinned clock.
    let list = events["data"]["events"].as_array().unwrap();
    assert!(!list.is_empty(), "{events}");
    for e in list {
        let at: jiff::Timestamp = e["at"]
            .as_str()
            .or(e["created"].as_str())
            .unwrap_or_else(|| panic!("no time in {e}"))
            .parse()
            .unwrap();
        assert!(
            at.as_second() >= before.as_second() - 5,
            "DACLI_TEST_CLOCK backdated an event: {e}"
        );
    }
    // The debug build the rest of the suite uses does obey them (the hooks exist).
    let seeded = |_: ()| {
        let repo = Repo::new();
        let run = |args: &[&str]| {
            let out = crate::support::dacli()
                .current_dir(repo.path())
                .args(args)
                .env("DACLI_TEST_SEED", "42")
                .output()
                .unwrap();
            one_json(&out.stdout)
        };
        run(&["init", "--json"]);
        run(&["agent", "spawn", "--grant", "rw", "--json"])["data"]["token"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(seeded(()), seeded(()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// For any value without NUL, the expansion of a bare, a double-quoted and a glued
    /// placeholder, run by `sh` with the expansion's variables, prints exactly the value.
    #[test]
    fn r22_1_any_value_round_trips_through_sh(
        s in any::<String>().prop_map(|s| s.replace('\0', ""))
    ) {
        use dacli::model::shortcut::Param;
        use dacli::policy::shortcut::Template;
        let t = Template::parse(
            "printf '%s|' {{v}} \"q {{v}}\" x{{v}}y",
            &["v"],
        )
        .unwrap();
        let p = Param {
            name: "v".into(),
            required: false,
            raw: false,
            default: None,
            description: None,
        };
        let values = [("v".to_string(), s.clone())].into_iter().collect();
        if s.starts_with('-') {
            // `{{v}}` starts a word: a leading `-` could pose as an option there.
            prop_assert!(t.expand(&[p], &values).is_err());
            return Ok(());
        }
        let e = t.expand(&[p], &values).unwrap();
        // The command is the same text whatever the value: the value is never in it.
        prop_assert_eq!(
            &e.command,
            "printf '%s|' \"${DACLI_P_v}\" \"q ${DACLI_P_v}\" x\"${DACLI_P_v}\"y"
        );
        let out = Std::new("sh")
            .arg("-c")
            .arg(&e.command)
            .envs(e.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()
            .unwrap();
        prop_assert!(out.status.success());
        prop_assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{s}|q {s}|x{s}y|")
        );
    }
}

/// Templates that run their own data are refused at `shortcut add`: output piped into a shell
/// or `xargs`, a loop variable run as the program, bash's variable-name and `$[ ]` forms. A
/// value that could pose as an option (`git log --output=FILE` writes a file an `ro` agent
/// chose) is refused at the run, where no `--` ends the options before it.
#[test]
fn r22_1_templates_that_run_their_data_and_option_values_are_refused() {
    let repo = Repo::initialized();
    let (_, ro) = agent(&repo, "reviewer", 1, "ro");
    for (template, place) in [
        ("echo \"{{v}}\" | sh", "piped into `sh`"),
        ("printf %s {{v}} | bash", "piped into `bash`"),
        ("echo {{v}} | xargs -I{} sh -c '{}'", "piped into `xargs`"),
        ("for x in {{v}}; do $x; done", "is an expansion"),
        ("printf -v {{v}} x", "printf -v"),
        ("[ -v {{v}} ]", "[ -v"),
        ("echo $[ {{v}} ]", "bash arithmetic"),
        ("coproc {{v}}", "program"),
    ] {
        let (code, doc) = add_shortcut(&repo, "bad", template, false);
        assert_eq!(code, 2, "{template}: {doc}");
        let msg = doc["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains("`{{v}}`") && msg.contains(place),
            "{template}: {msg}"
        );
        assert!(!repo.ws("shortcuts/bad.md").exists(), "{template}: written");
    }
    // Option injection: the run is refused before anything starts, and `--` makes it data.
    let (code, doc) = add_shortcut(&repo, "touchit", "touch {{v}}", false);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = as_agent(&repo, &ro, &["run", "touchit", "--param", "v=--version"]);
    assert_eq!(code, 2, "{doc}");
    let msg = doc["error"]["message"].as_str().unwrap();
    assert!(msg.contains("`v` starts with `-`"), "{msg}");
    let (code, doc) = add_shortcut(&repo, "touchsafe", "touch -- {{v}}", false);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = as_agent(&repo, &ro, &["run", "touchsafe", "--param", "v=-made"]);
    assert_eq!(code, 0, "{doc}");
    assert!(
        repo.path().join("-made").exists(),
        "`--` passes the value as a name"
    );
    assert!(!repo.path().join("pwned").exists());
}
