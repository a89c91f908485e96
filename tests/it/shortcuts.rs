//! Shortcuts and `run` through the CLI: values reach the program as literal words under dash
//! and bash, the gates go by effect, toolkit and confirmation, every run is an event, and the
//! catalogue is ranked by uses and capped at 12.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::Value;

use crate::lifecycle::agent;
use crate::support::Repo;

fn ok(repo: &Repo, args: &[&str]) -> Value {
    let (code, doc) = repo.json(args);
    assert_eq!(code, 0, "{args:?}: {doc}");
    doc
}

fn as_agent(repo: &Repo, token: &str, args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.push("--json");
    let out = repo.dacli(&all).env("DACLI_AGENT", token).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        crate::support::one_json(&out.stdout),
    )
}

fn refused(doc: &Value) -> (&str, &str) {
    (
        doc["refused"]["policy"]
            .as_str()
            .unwrap_or_else(|| panic!("not a refusal: {doc}")),
        doc["refused"]["next"].as_str().unwrap_or(""),
    )
}

/// Every `run` event file, parsed as (frontmatter text, body).
fn run_events(repo: &Repo) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![repo.ws("events")];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with("-run.md") {
                let text = std::fs::read_to_string(&p).unwrap();
                let (front, body) = text
                    .strip_prefix("+++\n")
                    .and_then(|t| t.split_once("+++\n"))
                    .unwrap();
                out.push((front.to_string(), body.trim_start_matches('\n').to_string()));
            }
        }
    }
    out.sort();
    out
}

/// A workspace with one project and a shortcut that prints its one parameter to `out.txt`.
fn echo_repo() -> Repo {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    ok(
        &repo,
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
        ],
    );
    repo
}

/// A directory whose `sh` is `shell`, to put first on PATH: dacli runs `sh -c`, so this is
/// how the same run goes through dash or bash.
fn shell_dir(shell: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    let real = ["/bin", "/usr/bin", "/usr/local/bin"]
        .iter()
        .map(|d| Path::new(d).join(shell))
        .find(|p| p.exists())?;
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&real, dir.path().join("sh")).unwrap();
    let path = dir.path().to_path_buf();
    Some((dir, path))
}

const PAYLOADS: &[&str] = &[
    "$(touch PWNED)",
    "`touch PWNED`",
    "; touch PWNED",
    "| touch PWNED",
    "&& touch PWNED",
    "|| touch PWNED",
    "& touch PWNED",
    "> PWNED",
    "--upload-pack=touch PWNED",
    "-n",
    "-",
    "line one\ntouch PWNED\nline three",
    "it's'; touch PWNED; '",
    "\"; touch PWNED; \"",
    "\\'; touch PWNED #",
    "back\\slash\\",
    "*",
    "~",
    "~root/x",
    "$HOME",
    "${IFS}touch${IFS}PWNED",
    "$((6*7))",
    "héllo wörld ✓ 日本語 🦀",
    "",
    "a  b\tc",
    "%s%n%d",
    "'''",
    "$'\\x41'",
    "!!",
    "{{v}} [[ x ]]",
];

fn injection_table(shell: &str) {
    let Some((_keep, bin)) = shell_dir(shell) else {
        println!("skipped: no `{shell}` on this machine (install it: apt-get install -y {shell})");
        return;
    };
    let repo = echo_repo();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut refused = 0;
    for payload in PAYLOADS {
        let _ = std::fs::remove_file(repo.path().join("out.txt"));
        let param = format!("v={payload}");
        let out = repo
            .dacli(&["run", "echo", "--param", &param, "--json"])
            .env("PATH", &path)
            .output()
            .unwrap();
        let doc = crate::support::one_json(&out.stdout);
        if payload.starts_with('-') {
            // A leading `-` could be read as an option where the value starts a word: refused
            // before anything runs, naming the parameter.
            assert_eq!(out.status.code(), Some(2), "{shell} {payload:?}: {doc}");
            let msg = doc["error"]["message"].as_str().unwrap_or_default();
            assert!(msg.contains("`v` starts with `-`"), "{msg}");
            refused += 1;
            continue;
        }
        assert_eq!(out.status.code(), Some(0), "{shell} {payload:?}: {doc}");
        assert!(
            !repo.path().join("PWNED").exists(),
            "{shell}: {payload:?} created the sentinel"
        );
        let got = std::fs::read(repo.path().join("out.txt")).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            *payload,
            "{shell}: the program must receive the exact bytes"
        );
    }
    assert_eq!(run_events(&repo).len(), PAYLOADS.len() - refused);
}

#[test]
fn parameter_values_are_literal_words_under_dash() {
    assert!(PAYLOADS.len() >= 20);
    injection_table("dash");
}

#[test]
fn parameter_values_are_literal_words_under_bash() {
    injection_table("bash");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    /// `sh -c 'printf %s <quoted s>'` prints exactly `s`, for any string without NUL.
    #[test]
    fn quoting_round_trips_through_sh(s in any::<String>().prop_map(|s| s.replace('\0', ""))) {
        let quoted = dacli::policy::shortcut::quote(&s);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {quoted}"))
            .output()
            .unwrap();
        prop_assert!(out.status.success());
        prop_assert_eq!(String::from_utf8_lossy(&out.stdout), s);
    }
}

#[test]
fn an_ro_agent_runs_read_shortcuts_and_is_refused_write_ones() {
    let repo = Repo::initialized();
    for (name, effect) in [("peek", "read"), ("poke", "write")] {
        let command = format!("printf {name} > {name}.txt");
        ok(
            &repo,
            &[
                "shortcut",
                "add",
                name,
                "--command",
                &command,
                "--effect",
                effect,
                "--summary",
                name,
            ],
        );
    }
    ok(
        &repo,
        &[
            "role",
            "add",
            "reviewer",
            "--summary",
            "Reviews",
            "--grant",
            "ro",
            "--shortcut",
            "peek",
            "--shortcut",
            "poke",
            "--escalate-to",
            "human",
        ],
    );
    let (_, token) = agent(&repo, "reviewer", 41, "ro");
    let (code, doc) = as_agent(&repo, &token, &["run", "peek"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["shortcut"], "peek");
    assert_eq!(doc["data"]["exit_code"], 0);
    assert!(repo.path().join("peek.txt").exists());
    // The gate is by effect: the same agent, the same class of command, a write effect.
    let (code, doc) = as_agent(&repo, &token, &["run", "poke"]);
    assert_eq!(code, 3, "{doc}");
    let (policy, next) = refused(&doc);
    assert_eq!(policy, "grant.read_only");
    assert!(next.contains("ask human to run it"), "{next}");
    assert!(!repo.path().join("poke.txt").exists());
    // run --list and run --dry-run are open to ro agents (regression guard 1).
    let (code, list) = as_agent(&repo, &token, &["run", "--list"]);
    assert_eq!(code, 0, "{list}");
    let names: Vec<&str> = list["data"]["shortcuts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["peek"], "only what the agent may run");
    let (code, dry) = as_agent(&repo, &token, &["run", "poke", "--dry-run"]);
    assert_eq!(code, 0, "{dry}");
    assert_eq!(dry["data"]["dry_run"], true);
    assert_eq!(dry["data"]["command"], "printf poke > poke.txt");
    assert_eq!(dry["data"]["gate"]["allowed"], false);
    assert_eq!(dry["data"]["gate"]["policy"], "grant.read_only");
    assert!(
        !repo.path().join("poke.txt").exists(),
        "a dry run runs nothing"
    );
    // An ro agent cannot run arbitrary commands.
    let (code, doc) = as_agent(&repo, &token, &["run", "--cmd", "touch PWNED"]);
    assert_eq!(code, 3);
    let (policy, next) = refused(&doc);
    assert_eq!(policy, "grant.read_only");
    assert!(next.contains("dacli run --list"), "{next}");
    assert!(!repo.path().join("PWNED").exists());
    // One run event, by the ro agent, for the read shortcut.
    let events = run_events(&repo);
    assert_eq!(events.len(), 1);
    assert!(events[0].0.contains("shortcut = \"peek\""));
}

#[test]
fn a_shortcut_without_a_valid_effect_never_runs() {
    let repo = Repo::initialized();
    for (name, effect_line) in [("bare", ""), ("odd", "effect = \"maybe\"\n")] {
        repo.write(
            &format!(".dacli/shortcuts/{name}.md"),
            format!(
                "+++\nkind = \"shortcut\"\nname = \"{name}\"\ncreated = 2026-03-02T09:06:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJPWR660YQF1Y2A1E4WME2TC\"\nsummary = \"s\"\ncommand = \"touch PWNED\"\n{effect_line}+++\n\n# {name}\n"
            ),
        );
        let (code, doc) = repo.json(&["run", name]);
        assert_eq!(code, 3, "{doc}");
        let (policy, next) = refused(&doc);
        assert_eq!(policy, "shortcut.no_effect");
        assert!(next.contains("a-root sets `effect`"), "{next}");
        assert!(!repo.path().join("PWNED").exists());
    }
    assert!(run_events(&repo).is_empty());
    let list = ok(&repo, &["shortcut", "list"]);
    assert_eq!(
        list["data"]["shortcuts"][0]["refused_by"],
        "shortcut.no_effect"
    );
    assert_eq!(list["data"]["shortcuts"][0]["effect"], Value::Null);
    let (code, doc) = repo.json(&[
        "shortcut",
        "add",
        "x",
        "--command",
        "true",
        "--effect",
        "maybe",
        "--summary",
        "x",
    ]);
    assert_eq!(code, 2, "an invalid effect is refused at creation: {doc}");
}

#[test]
fn a_destructive_shortcut_needs_confirmation() {
    let repo = Repo::initialized();
    ok(
        &repo,
        &[
            "shortcut",
            "add",
            "wipe",
            "--command",
            "touch WIPED",
            "--effect",
            "destructive",
            "--summary",
            "Wipe",
        ],
    );
    let (code, doc) = repo.json(&["run", "wipe"]);
    assert_eq!(code, 3);
    let (policy, next) = refused(&doc);
    assert_eq!(policy, "shortcut.unconfirmed_destructive");
    assert!(
        next.contains("--confirmed") && next.contains("dacli ask"),
        "{next}"
    );
    assert!(!repo.path().join("WIPED").exists());
    ok(&repo, &["run", "wipe", "--confirmed"]);
    assert!(repo.path().join("WIPED").exists());
}

#[test]
fn toolkits_and_shortcut_roles_are_enforced_and_root_is_exempt() {
    let repo = Repo::initialized();
    for name in ["a", "b"] {
        let command = format!("touch {name}.ran");
        ok(
            &repo,
            &[
                "shortcut",
                "add",
                name,
                "--command",
                &command,
                "--effect",
                "read",
                "--summary",
                name,
            ],
        );
    }
    ok(
        &repo,
        &[
            "role",
            "add",
            "architect",
            "--summary",
            "Designs",
            "--grant",
            "rw",
        ],
    );
    ok(
        &repo,
        &[
            "shortcut",
            "add",
            "c",
            "--command",
            "touch c.ran",
            "--effect",
            "write",
            "--summary",
            "c",
            "--role",
            "architect",
        ],
    );
    ok(
        &repo,
        &[
            "role",
            "add",
            "builder",
            "--summary",
            "Builds",
            "--grant",
            "rw",
            "--shortcut",
            "a",
            "--shortcut",
            "c",
            "--escalate-to",
            "architect",
        ],
    );
    let (_, token) = agent(&repo, "builder", 42, "rw");
    let (code, doc) = as_agent(&repo, &token, &["run", "b"]);
    assert_eq!(code, 3);
    let (policy, next) = refused(&doc);
    assert_eq!(policy, "shortcut.not_in_toolkit");
    // `c` is in the role's list but reserved for architect: the refusal names what really runs.
    assert_eq!(next, "Role builder may run a; ask architect to run b.");
    // In the toolkit, but the shortcut is reserved for another role.
    let (code, doc) = as_agent(&repo, &token, &["run", "c"]);
    assert_eq!(code, 3);
    assert_eq!(refused(&doc).0, "shortcut.not_in_toolkit");
    assert!(
        doc["refused"]["reason"]
            .as_str()
            .unwrap()
            .contains("architect")
    );
    let (code, doc) = as_agent(&repo, &token, &["run", "a"]);
    assert_eq!(code, 0, "{doc}");
    // Root is exempt from both checks.
    ok(&repo, &["run", "b"]);
    ok(&repo, &["run", "c"]);
    for f in ["a.ran", "b.ran", "c.ran"] {
        assert!(repo.path().join(f).exists(), "{f}");
    }
}

#[test]
fn templates_and_dirs_are_validated_at_creation() {
    let repo = Repo::initialized();
    let add = |extra: &[&str]| {
        let mut args = vec!["shortcut", "add", "t", "--effect", "read", "--summary", "T"];
        args.extend_from_slice(extra);
        repo.json(&args)
    };
    for (command, needle) in [
        ("x {{filter}}", "filter"),
        ("x {{f", "never closed"),
        ("x [[ --f {{f}}", "never closed"),
        ("x [[ [[ {{f}} ]] ]]", "do not nest"),
        ("x {{F}}", "not a placeholder"),
    ] {
        let (code, doc) = add(&["--command", command, "--param", "f"]);
        assert_eq!(code, 2, "{command}: {doc}");
        let message = doc["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{command}: {message}");
    }
    let (code, doc) = add(&["--command", "x", "--param", "Bad"]);
    assert_eq!(code, 2, "{doc}");
    let (code, doc) = add(&["--command", "x", "--required", "nope"]);
    assert_eq!(code, 2, "{doc}");
    let (code, doc) = add(&["--command", "x", "--dir", "../outside"]);
    assert_eq!(
        (code, doc["error"]["code"].as_str()),
        (2, Some("E_PATH_ESCAPE"))
    );
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.path().join("esc")).unwrap();
    let (code, doc) = add(&["--command", "x", "--dir", "esc/sub"]);
    assert_eq!(
        (code, doc["error"]["code"].as_str()),
        (2, Some("E_PATH_ESCAPE")),
        "{doc}"
    );
    let (code, doc) = add(&["--command", "x", "--role", "ghost"]);
    assert_eq!(code, 4, "{doc}");
    assert!(
        !repo.ws("shortcuts").exists(),
        "nothing is written by a refused creation"
    );
    // Defaults, required, raw, descriptions and dir are reachable through flags.
    std::fs::create_dir_all(repo.path().join("svc")).unwrap();
    let doc = ok(
        &repo,
        &[
            "shortcut",
            "add",
            "test",
            "--command",
            "./run.sh {{suite}} [[ --filter {{filter}} ]] {{flags}}",
            "--effect",
            "read",
            "--summary",
            "Run tests",
            "--param",
            "suite=unit",
            "--param",
            "filter",
            "--param",
            "flags",
            "--required",
            "suite",
            "--raw",
            "flags",
            "--describe",
            "filter=substring of test names",
            "--dir",
            "svc",
            "--why",
            "Only the fast suite.",
        ],
    );
    let s = &doc["data"]["shortcut"];
    assert_eq!(s["dir"], "svc");
    assert_eq!(
        s["params"],
        serde_json::json!([
            {"name": "suite", "required": true, "raw": false, "default": "unit", "description": null},
            {"name": "filter", "required": false, "raw": false, "default": null, "description": "substring of test names"},
            {"name": "flags", "required": false, "raw": true, "default": null, "description": null},
        ])
    );
    let text = std::fs::read_to_string(repo.ws("shortcuts/test.md")).unwrap();
    let keys: Vec<&str> = text
        .lines()
        .skip(1)
        .take_while(|l| *l != "+++")
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_once(" = ").map(|(k, _)| k))
        .collect();
    assert_eq!(
        keys,
        vec![
            "kind",
            "name",
            "created",
            "created_by",
            "owner",
            "rev",
            "summary",
            "command",
            "effect",
            "params",
            "dir"
        ],
        "{text}"
    );
    assert!(text.contains("params = [\n  { name = \"suite\", required = true, raw = false, default = \"unit\" },\n"), "{text}");
    assert!(text.ends_with("# test\n\nOnly the fast suite.\n"), "{text}");
    let (code, doc) = repo.json(&[
        "shortcut",
        "add",
        "test",
        "--command",
        "x",
        "--effect",
        "read",
        "--summary",
        "again",
    ]);
    assert_eq!((code, doc["error"]["code"].as_str()), (5, Some("E_EXISTS")));
    let dry = ok(
        &repo,
        &["run", "test", "--dry-run", "--param", "flags=-v -x"],
    );
    // Values travel in variables; the shown line is the exact command that runs.
    assert_eq!(
        dry["data"]["command"],
        "env DACLI_P_suite='unit' DACLI_P_filter='' DACLI_P_flags='-v -x' sh -c './run.sh \"${DACLI_P_suite}\" ${DACLI_P_flags}'"
    );
    let dry = ok(
        &repo,
        &[
            "run",
            "test",
            "--dry-run",
            "--param",
            "filter=a b",
            "--param",
            "suite=it",
        ],
    );
    assert_eq!(
        dry["data"]["command"],
        "env DACLI_P_suite='it' DACLI_P_filter='a b' DACLI_P_flags='' sh -c './run.sh \"${DACLI_P_suite}\" --filter \"${DACLI_P_filter}\" ${DACLI_P_flags}'"
    );
}

#[test]
fn parameters_are_checked_when_running() {
    let repo = Repo::initialized();
    ok(
        &repo,
        &[
            "shortcut",
            "add",
            "reset",
            "--command",
            "printf %s {{database}} > db.txt",
            "--effect",
            "write",
            "--summary",
            "Reset",
            "--param",
            "database",
            "--required",
            "database",
        ],
    );
    let (code, doc) = repo.json(&["run", "reset"]);
    assert_eq!(code, 2, "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("database")
    );
    let (code, _) = repo.json(&["run", "reset", "--param", "db=x"]);
    assert_eq!(code, 2, "an unknown key is a usage error");
    let (code, _) = repo.json(&["run", "reset", "--param", "database"]);
    assert_eq!(code, 2, "KEY=VALUE is required");
    let (code, _) = repo.json(&["run", "nosuch"]);
    assert_eq!(code, 4);
    assert!(run_events(&repo).is_empty(), "nothing ran");
    ok(
        &repo,
        &["run", "reset", "--param", "database=checkout_test"],
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("db.txt")).unwrap(),
        "checkout_test"
    );
}

#[test]
fn every_run_is_an_event_and_failures_are_reported_with_their_event() {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    ok(&repo, &["task", "add", "Shim", "--accept", "works"]);
    std::fs::create_dir_all(repo.path().join("svc")).unwrap();
    ok(
        &repo,
        &[
            "shortcut",
            "add",
            "env",
            "--command",
            "printf '%s %s %s' \"$DACLI_SHORTCUT\" \"$DACLI_TASK\" \"$(basename \"$PWD\")\" > ../env.txt; echo done",
            "--effect",
            "read",
            "--summary",
            "Env",
            "--dir",
            "svc",
        ],
    );
    let doc = ok(&repo, &["run", "env", "--task", "1"]);
    let task_id = ok(&repo, &["task", "show", "1"])["data"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        std::fs::read_to_string(repo.path().join("env.txt")).unwrap(),
        format!("env {task_id} svc")
    );
    let d = &doc["data"];
    assert_eq!(d["task"]["id"], task_id.as_str());
    assert_eq!(d["dir"], "svc");
    assert_eq!(d["output"]["stdout_tail"], "done\n");
    assert_eq!(d["output"]["bytes"], 5);
    let events = run_events(&repo);
    assert_eq!(events.len(), 1);
    let (front, body) = &events[0];
    for line in [
        "event_kind = \"run\"",
        "shortcut = \"env\"",
        "exit_code = 0",
        &format!("task = \"{task_id}\""),
        "dir = \"svc\"",
    ] {
        assert!(front.contains(line), "{line} in {front}");
    }
    assert!(front.contains("duration_ms = "), "{front}");
    assert!(
        body.starts_with("printf '%s %s %s'"),
        "the body is the expanded command: {body}"
    );
    ok(
        &repo,
        &[
            "shortcut",
            "add",
            "fail",
            "--command",
            "echo first; echo broken >&2; exit 3",
            "--effect",
            "read",
            "--summary",
            "Fails",
        ],
    );
    let (code, doc) = repo.json(&["run", "fail"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["error"]["code"], "E_COMMAND_FAILED");
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("exited 3") && message.contains("broken"),
        "{message}"
    );
    let events = run_events(&repo);
    assert_eq!(events.len(), 2, "a failed run is recorded too");
    let failed = events
        .iter()
        .find(|(f, _)| f.contains("shortcut = \"fail\""))
        .unwrap();
    assert!(failed.0.contains("exit_code = 3"));
    let id = failed
        .0
        .lines()
        .find_map(|l| l.strip_prefix("id = "))
        .unwrap()
        .trim_matches('"');
    assert!(
        message.contains(id),
        "the message names the event: {message}"
    );
    let show = ok(&repo, &["shortcut", "show", "fail"]);
    assert_eq!(show["data"]["uses"], 1);
    assert_eq!(show["data"]["last_run"]["exit_code"], 3);
    assert_eq!(show["data"]["last_run"]["event"], id);
    // The timeout kills the command (exit 124) and is recorded like any other run.
    ok(
        &repo,
        &[
            "shortcut",
            "add",
            "slow",
            "--command",
            "sleep 30",
            "--effect",
            "read",
            "--summary",
            "Slow",
        ],
    );
    let (code, doc) = repo.json(&["run", "slow", "--timeout", "1"]);
    assert_eq!(code, 1, "{doc}");
    assert!(doc["error"]["message"].as_str().unwrap().contains("124"));
    assert!(
        run_events(&repo)
            .iter()
            .any(|(f, _)| f.contains("shortcut = \"slow\"") && f.contains("exit_code = 124"))
    );
}

#[test]
fn a_dir_that_escapes_through_a_symlink_never_runs() {
    let repo = Repo::initialized();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.path().join("esc")).unwrap();
    repo.write(
        ".dacli/shortcuts/out.md",
        "+++\nkind = \"shortcut\"\nname = \"out\"\ncreated = 2026-03-02T09:06:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJPWR660YQF1Y2A1E4WME2TC\"\nsummary = \"s\"\ncommand = \"touch PWNED\"\neffect = \"read\"\ndir = \"esc\"\n+++\n\n# out\n",
    );
    let (code, doc) = repo.json(&["run", "out"]);
    assert_eq!(
        (code, doc["error"]["code"].as_str()),
        (2, Some("E_PATH_ESCAPE")),
        "{doc}"
    );
    let (code, _) = repo.json(&["run", "out", "--dry-run"]);
    assert_eq!(code, 2);
    assert!(!outside.path().join("PWNED").exists());
    assert!(run_events(&repo).is_empty());
}

#[test]
fn a_twice_run_adhoc_command_is_promoted() {
    let repo = Repo::initialized();
    let (code, doc) = repo.json(&["run", "--cmd", "printf x >> adhoc.txt"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["shortcut"], "adhoc");
    let first = doc["data"]["event"].as_str().unwrap().to_string();
    let (code, doc) = repo.json(&[
        "shortcut",
        "promote",
        "append",
        "--from-event",
        &first,
        "--effect",
        "write",
        "--summary",
        "Append",
    ]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(refused(&doc).0, "shortcut.not_repeated");
    ok(&repo, &["run", "--cmd", "printf x >> adhoc.txt"]);
    assert_eq!(
        std::fs::read_to_string(repo.path().join("adhoc.txt")).unwrap(),
        "xx"
    );
    let doc = ok(
        &repo,
        &[
            "shortcut",
            "promote",
            "append",
            "--from-event",
            &first,
            "--effect",
            "write",
            "--summary",
            "Append",
        ],
    );
    assert_eq!(doc["data"]["runs"], 2);
    assert_eq!(doc["data"]["shortcut"]["command"], "printf x >> adhoc.txt");
    assert_eq!(doc["data"]["shortcut"]["effect"], "write");
    let ran = ok(&repo, &["run", "append"]);
    assert_eq!(
        std::fs::read_to_string(repo.path().join("adhoc.txt")).unwrap(),
        "xxx"
    );
    let named = ran["data"]["event"].as_str().unwrap();
    let (code, doc) = repo.json(&[
        "shortcut",
        "promote",
        "again",
        "--from-event",
        named,
        "--effect",
        "write",
        "--summary",
        "Again",
    ]);
    assert_eq!(code, 3);
    assert_eq!(refused(&doc).0, "shortcut.not_adhoc");
    // A parameterised template may replace the literal command.
    let doc = ok(
        &repo,
        &[
            "shortcut",
            "promote",
            "append-to",
            "--from-event",
            &first,
            "--effect",
            "write",
            "--summary",
            "Append to a file",
            "--command",
            "printf x >> {{file}}",
            "--param",
            "file",
            "--required",
            "file",
        ],
    );
    assert_eq!(doc["data"]["shortcut"]["params"][0]["required"], true);
}

#[test]
fn run_list_ranks_by_uses_shows_twelve_and_announces_the_rest() {
    let repo = Repo::initialized();
    for i in 0..14 {
        let name = format!("s{i:02}");
        ok(
            &repo,
            &[
                "shortcut",
                "add",
                &name,
                "--command",
                "true",
                "--effect",
                "read",
                "--summary",
                &name,
            ],
        );
    }
    ok(
        &repo,
        &[
            "shortcut",
            "add",
            "w",
            "--command",
            "true",
            "--effect",
            "write",
            "--summary",
            "w",
            "--param",
            "x",
        ],
    );
    for name in ["s13", "s13", "s07"] {
        ok(&repo, &["run", name]);
    }
    let doc = ok(&repo, &["run", "--list"]);
    let names: Vec<&str> = doc["data"]["shortcuts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 12);
    assert_eq!(
        &names[..4],
        &["s13", "s07", "s00", "s01"],
        "by uses, then name"
    );
    assert_eq!(doc["data"]["omitted"], 3);
    assert_eq!(doc["data"]["limit"], 12);
    assert_eq!(doc["data"]["shortcuts"][0]["uses"], 2);
    let out = repo.dacli(&["run", "--list"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("… 3 more: dacli run --list --all"), "{text}");
    let all = ok(&repo, &["run", "--list", "--all"]);
    assert_eq!(all["data"]["shortcuts"].as_array().unwrap().len(), 15);
    assert_eq!(all["data"]["omitted"], 0);
    let w = all["data"]["shortcuts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "w")
        .unwrap();
    assert_eq!(w["params"], serde_json::json!(["x?"]));
    let list = ok(&repo, &["shortcut", "list"]);
    assert_eq!(
        list["data"]["shortcuts"].as_array().unwrap().len(),
        15,
        "untruncated"
    );
    let (code, _) = repo.json(&["run", "--list", "--dry-run"]);
    assert_eq!(code, 2, "--list takes only --all");
}

#[test]
fn shortcut_rm_checks_ownership_and_references() {
    let repo = Repo::initialized();
    for name in ["test", "lint", "old"] {
        ok(
            &repo,
            &[
                "shortcut",
                "add",
                name,
                "--command",
                "true",
                "--effect",
                "read",
                "--summary",
                name,
            ],
        );
    }
    ok(
        &repo,
        &[
            "role",
            "add",
            "builder",
            "--summary",
            "Builds",
            "--grant",
            "rw",
            "--shortcut",
            "lint",
        ],
    );
    let config = std::fs::read_to_string(repo.ws("config.toml")).unwrap();
    repo.write(
        ".dacli/config.toml",
        format!("{config}[definition_of_done]\ntest_shortcut = \"test\"\n"),
    );
    let (_, token) = agent(&repo, "builder", 43, "rw");
    let (code, doc) = as_agent(&repo, &token, &["shortcut", "rm", "old"]);
    assert_eq!(code, 3);
    let (policy, next) = refused(&doc);
    assert_eq!(
        (policy, next),
        ("shortcut.not_owner", "Ask a-root to remove shortcut old.")
    );
    let (code, doc) = repo.json(&["shortcut", "rm", "lint"]);
    assert_eq!(code, 3);
    let (policy, next) = refused(&doc);
    assert_eq!(policy, "shortcut.in_use");
    assert!(next.contains("builder"), "{next}");
    let (code, doc) = repo.json(&["shortcut", "rm", "test"]);
    assert_eq!(code, 3);
    assert!(refused(&doc).1.contains("definition_of_done.test_shortcut"));
    assert!(repo.ws("shortcuts/test.md").exists() && repo.ws("shortcuts/lint.md").exists());
    let doc = ok(&repo, &["shortcut", "rm", "old"]);
    assert_eq!(
        doc["data"],
        serde_json::json!({"shortcut": "old", "effect": "applied"})
    );
    assert!(!repo.ws("shortcuts/old.md").exists());
    let (code, _) = repo.json(&["shortcut", "rm", "old"]);
    assert_eq!(code, 4);
}

#[test]
fn accept_runs_the_test_shortcut_when_its_latest_run_is_missing() {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    ok(&repo, &["task", "add", "Shim", "--accept", "works"]);
    ok(
        &repo,
        &[
            "shortcut",
            "add",
            "test",
            "--command",
            "printf \"$DACLI_TASK\" > tested.txt",
            "--effect",
            "read",
            "--summary",
            "Tests",
        ],
    );
    let config = std::fs::read_to_string(repo.ws("config.toml")).unwrap();
    repo.write(
        ".dacli/config.toml",
        format!("{config}[definition_of_done]\ntest_shortcut = \"test\"\n"),
    );
    let (code, doc) = repo.json(&["accept", "1", "--check-remaining", "--no-test"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(refused(&doc).0, "dod.test_not_run");
    assert!(
        !repo.path().join("tested.txt").exists(),
        "--no-test runs nothing"
    );
    let doc = ok(&repo, &["accept", "1", "--check-remaining"]);
    assert_eq!(doc["data"]["accepted"][0]["number"], 1);
    assert_eq!(
        doc["data"]["ran"][0]["command"],
        "printf \"$DACLI_TASK\" > tested.txt"
    );
    assert_eq!(doc["data"]["ran"][0]["exit_code"], 0);
    let id = doc["data"]["accepted"][0]["id"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(repo.path().join("tested.txt")).unwrap(),
        id
    );
    assert_eq!(ok(&repo, &["task", "show", "1"])["data"]["status"], "done");
    let events = run_events(&repo);
    assert_eq!(events.len(), 1);
    assert!(events[0].0.contains(&format!("task = \"{id}\"")));
}
