//! Runtime adapters and `runtime doctor` (issue 12), with fake runtime binaries: small shell
//! scripts made in each test and put first on a test PATH. Each fake logs every call (its
//! arguments and whether it saw a token) next to itself, so the tests can tell a probe from a
//! cache hit and check that no dangerous flag and no token ever reached a probed program.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::lifecycle::agent;
use crate::mcp::{Server, assert_done};
use crate::support::{Repo, one_json};

/// A fake Claude Code: a version line, and a help text with every flag of the preset.
const CLAUDE: &str = r#"#!/bin/sh
echo "$*|${DACLI_AGENT:-no-token}" >> "$0.calls"
case "$1" in
  --version) echo "1.0.33 (Claude Code)" ;;
  --help) cat <<'HELP'
Usage: claude [options] [command] [prompt]

Options:
  -p, --print                     Print response and exit (useful for pipes)
  --output-format <format>        Output format (only works with --print): "text", "json"
  --mcp-config <configs...>       Load MCP servers from JSON files or strings
  --permission-mode <mode>        Permission mode to use for the session
  --dangerously-skip-permissions  Bypass all permission checks
HELP
  ;;
  *) echo "unexpected arguments: $*" >&2; exit 2 ;;
esac
"#;

/// A fake Codex whose help lacks `--sandbox` (as if a release had dropped it).
const CODEX_WITHOUT_SANDBOX: &str = r#"#!/bin/sh
echo "$*|${DACLI_AGENT:-no-token}" >> "$0.calls"
if [ "$1" = "--version" ]; then echo "codex-cli 0.46.0"; exit 0; fi
if [ "$1" = "exec" ]; then
  printf 'Run Codex non-interactively\n\nUsage: codex exec [OPTIONS] [PROMPT]\n\n      --json  Print events to stdout as JSONL\n'
  exit 0
fi
printf 'Codex CLI\n\nCommands:\n  exec  Run Codex non-interactively\n  mcp   Manage MCP servers\n\nOptions:\n  -c, --config <key=value>  Override a configuration value\n'
"#;

/// Puts `script` at `<dir>/<name>`, executable.
fn fake_in(dir: &Path, name: &str, script: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A fake runtime binary in the repository's `fakebin/`.
fn fake(repo: &Repo, name: &str, script: &str) -> PathBuf {
    fake_in(&repo.path().join("fakebin"), name, script)
}

/// `fakebin/` first, then the real PATH (git and sh must still be found).
fn test_path(repo: &Repo) -> String {
    format!(
        "{}:{}",
        repo.path().join("fakebin").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The calls a fake received, one `args|token` line each.
fn calls(fake: &Path) -> Vec<String> {
    let log = fake.with_file_name(format!(
        "{}.calls",
        fake.file_name().unwrap().to_string_lossy()
    ));
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

/// Runs dacli with `--json` and the test PATH: (exit code, the JSON document).
fn run(repo: &Repo, args: &[&str]) -> (i32, Value) {
    let out = repo
        .dacli(args)
        .arg("--json")
        .env("PATH", test_path(repo))
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), one_json(&out.stdout))
}

/// `runtime doctor ARGS --json`, which must succeed: its data.
fn doctor(repo: &Repo, args: &[&str]) -> Value {
    let mut all = vec!["runtime", "doctor"];
    all.extend_from_slice(args);
    let (code, doc) = run(repo, &all);
    assert_eq!(code, 0, "{doc}");
    doc["data"].clone()
}

fn add(repo: &Repo, args: &[&str]) {
    let mut all = vec!["runtime", "add"];
    all.extend_from_slice(args);
    let (code, doc) = run(repo, &all);
    assert_eq!(code, 0, "{doc}");
}

/// The status of capability `name` in one runtime's report.
fn capability<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no capability {name}: {report}"))
}

fn problems(report: &Value) -> Vec<String> {
    report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn presets_write_canonical_adapters_that_list_and_show() {
    let repo = Repo::initialized();
    let (code, doc) = run(
        &repo,
        &["runtime", "add", "claude", "--preset", "claude-code"],
    );
    assert_eq!(code, 0, "{doc}");
    let rt = &doc["data"]["runtime"];
    assert_eq!(doc["data"]["effect"], "created");
    assert_eq!(rt["binary"], "claude");
    assert_eq!(
        rt["invoke"]["read_only_sandbox"],
        json!(["--permission-mode", "plan"])
    );
    assert_eq!(
        rt["env_passthrough"],
        json!(["ANTHROPIC_API_KEY", "DACLI_AGENT"])
    );
    assert_eq!(rt["mcp_config"]["file"], ".mcp.json");
    let text = std::fs::read_to_string(repo.ws("runtimes/claude.md")).unwrap();
    let keys: Vec<&str> = text
        .lines()
        .skip(1)
        .take_while(|l| *l != "+++")
        .map(|l| l.split(" = ").next().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "kind",
            "name",
            "created",
            "created_by",
            "owner",
            "rev",
            "summary",
            "preset",
            "binary",
            "detect",
            "invoke",
            "capabilities",
            "dangerous",
            "env_passthrough",
            "mcp_config"
        ]
    );
    assert!(text.ends_with("server. `claude --version` prints `X.Y.Z (Claude Code)`.\n"));
    assert!(
        text.contains("--print"),
        "the body names the flags relied on"
    );

    add(
        &repo,
        &[
            "tool",
            "--preset",
            "generic-exec",
            "--binary",
            "scripts/agent",
            "--env",
            "TOOL_HOME",
        ],
    );
    let (_, list) = run(&repo, &["runtime", "list"]);
    let names: Vec<&str> = list["data"]["runtimes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["claude", "tool"]);
    let (code, show) = run(&repo, &["runtime", "show", "tool"]);
    assert_eq!(code, 0);
    assert_eq!(show["data"]["runtime"]["prompt"], "stdin");
    assert_eq!(
        show["data"]["runtime"]["env_passthrough"],
        json!(["DACLI_AGENT", "TOOL_HOME"])
    );
    assert_eq!(show["data"]["path"], ".dacli/runtimes/tool.md");

    // Taken name, missing --binary, bad slug, unknown runtime, ro caller.
    let (code, doc) = run(&repo, &["runtime", "add", "claude", "--preset", "codex"]);
    assert_eq!((code, doc["error"]["code"].as_str()), (5, Some("E_EXISTS")));
    let (code, _) = run(
        &repo,
        &["runtime", "add", "any", "--preset", "generic-exec"],
    );
    assert_eq!(code, 2);
    let (code, doc) = run(&repo, &["runtime", "add", "Bad Name", "--preset", "codex"]);
    assert_eq!(
        (code, doc["error"]["code"].as_str()),
        (2, Some("E_BAD_SLUG"))
    );
    let (code, _) = run(
        &repo,
        &[
            "runtime",
            "add",
            "x",
            "--preset",
            "codex",
            "--binary",
            "codex --yolo",
        ],
    );
    assert_eq!(code, 2);
    let (code, _) = run(&repo, &["runtime", "show", "nope"]);
    assert_eq!(code, 4);
    let (_, reviewer) = agent(&repo, "reviewer", 1, "ro");
    let out = repo
        .dacli(&["runtime", "add", "cx", "--preset", "codex", "--json"])
        .env("DACLI_AGENT", &reviewer)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        one_json(&out.stdout)["refused"]["policy"],
        "grant.read_only"
    );
    assert!(!repo.ws("runtimes/cx.md").exists());
}

#[test]
fn doctor_verifies_a_runtime_whose_every_flag_is_in_its_help() {
    let repo = Repo::initialized();
    let bin = fake(&repo, "claude", CLAUDE);
    add(&repo, &["claude", "--preset", "claude-code"]);
    // An ro agent may run the doctor; its token never reaches the probed program.
    let (_, token) = agent(&repo, "reviewer", 1, "ro");
    let out = repo
        .dacli(&["runtime", "doctor", "--json"])
        .env("PATH", test_path(&repo))
        .env("DACLI_AGENT", &token)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let data = one_json(&out.stdout)["data"].clone();
    let r = &data["runtimes"][0];
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["version"], "1.0.33");
    assert_eq!(
        (r["found"].as_bool(), r["path"].as_str()),
        (Some(true), Some("fakebin/claude"))
    );
    assert_eq!(r["path_entry"], 1);
    assert_eq!(r["cached"], false);
    for name in ["non_interactive", "read_only_sandbox", "json_output", "mcp"] {
        assert_eq!(capability(r, name)["status"], "verified", "{name}");
    }
    assert!(
        r["flags"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["status"] == "verified")
    );
    assert_eq!(
        data["summary"],
        json!({"ok": 1, "degraded": 0, "missing": 0})
    );
    assert_eq!(calls(&bin), ["--version|no-token", "--help|no-token"]);

    // A help probe holding a dangerous flag is refused, never run.
    let file = repo.ws("runtimes/claude.md");
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "help = [[\"--help\"]]",
        "help = [[\"--help\", \"--dangerously-skip-permissions\"]]",
    );
    std::fs::write(&file, text).unwrap();
    let r = &doctor(&repo, &["claude"])["runtimes"][0];
    assert_eq!(r["probes"][1]["outcome"], "refused", "{r}");
    assert_eq!(capability(r, "mcp")["status"], "unknown");
    assert_eq!(r["status"], "degraded");
    assert!(
        calls(&bin).iter().all(|c| !c.contains("dangerously")),
        "{:?}",
        calls(&bin)
    );

    // Human text: a table of runtimes and a capability matrix.
    let out = repo
        .dacli(&["runtime", "doctor"])
        .env("PATH", test_path(&repo))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("RUNTIME  STATUS    VERSION  BINARY"),
        "{text}"
    );
    assert!(text.contains("CAPABILITY"), "{text}");
    assert!(
        text.contains(
            "was not run: `--dangerously-skip-permissions` is a dangerous-permission flag"
        ),
        "{text}"
    );
}

#[test]
fn a_binary_outside_the_work_tree_is_shown_without_an_absolute_path() {
    let repo = Repo::initialized();
    let home = tempfile::tempdir().unwrap();
    fake_in(&home.path().join("bin"), "claude", CLAUDE);
    add(&repo, &["claude", "--preset", "claude-code"]);
    let path = format!(
        "{}:{}",
        home.path().join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    for (home_var, shown) in [
        (Some(home.path()), json!("~/bin/claude")),
        (None, Value::Null),
    ] {
        let mut cmd = repo.dacli(&["runtime", "doctor", "--json"]);
        cmd.env("PATH", &path);
        match home_var {
            Some(h) => cmd.env("HOME", h),
            None => cmd.env_remove("HOME"),
        };
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(
            !stdout.contains(&home.path().display().to_string()),
            "{stdout}"
        );
        let r = one_json(stdout.as_bytes())["data"]["runtimes"][0].clone();
        assert_eq!(
            (r["path"].clone(), r["path_entry"].clone()),
            (shown, json!(1))
        );
        assert_eq!(r["status"], "ok");
    }
}

#[test]
fn an_absent_binary_is_missing_and_nothing_is_verified() {
    let repo = Repo::initialized();
    add(
        &repo,
        &[
            "gemini",
            "--preset",
            "gemini",
            "--binary",
            "dacli-test-no-such-runtime",
        ],
    );
    add(
        &repo,
        &[
            "local",
            "--preset",
            "generic-exec",
            "--binary",
            "scripts/no-agent",
        ],
    );
    let data = doctor(&repo, &[]);
    let r = &data["runtimes"][0];
    assert_eq!(
        (r["name"].as_str(), r["status"].as_str()),
        (Some("gemini"), Some("missing"))
    );
    assert_eq!(r["found"], false);
    assert_eq!(r["version"], Value::Null);
    assert!(
        r["capabilities"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["status"] == "absent"),
        "{r}"
    );
    assert!(
        r["flags"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["status"] == "unknown")
    );
    assert!(
        problems(r)[0].starts_with("`dacli-test-no-such-runtime` is not on PATH"),
        "{r}"
    );
    let local = &data["runtimes"][1];
    assert_eq!(local["status"], "missing");
    assert!(problems(local)[0].contains("does not exist or is not an executable file"));
    assert_eq!(data["summary"]["missing"], 2);
}

#[test]
fn a_hanging_binary_times_out_and_is_probed_again_next_time() {
    let repo = Repo::initialized();
    let bin = fake(
        &repo,
        "claude",
        "#!/bin/sh\necho \"$*\" >> \"$0.calls\"\nsleep 30\n",
    );
    add(&repo, &["claude", "--preset", "claude-code"]);
    let started = std::time::Instant::now();
    let r = doctor(&repo, &["--timeout-ms", "1000"])["runtimes"][0].clone();
    assert!(started.elapsed().as_secs() < 15, "the probe was bounded");
    assert_eq!(r["status"], "degraded");
    assert_eq!(r["probes"][0]["outcome"], "timed_out");
    assert_eq!(r["probes"][1]["outcome"], "skipped");
    assert_eq!(r["version"], Value::Null);
    for name in ["non_interactive", "read_only_sandbox", "json_output", "mcp"] {
        assert_eq!(capability(&r, name)["status"], "unknown", "{name}");
    }
    assert_eq!(
        problems(&r)[0],
        "`claude --version` timed out after 1000 ms"
    );
    // A timeout is not cached: the next doctor probes again.
    let again = doctor(&repo, &["--timeout-ms", "1000"])["runtimes"][0].clone();
    assert_eq!(again["cached"], false);
    assert_eq!(calls(&bin), ["--version", "--version"]);
}

#[test]
fn garbage_output_gives_a_precise_line_and_no_false_verified() {
    let repo = Repo::initialized();
    fake(
        &repo,
        "codex",
        "#!/bin/sh\nprintf 'codex \\000\\377\\376 --sandbox --json exec --config'\n",
    );
    add(&repo, &["codex", "--preset", "codex"]);
    let r = doctor(&repo, &[])["runtimes"][0].clone();
    assert_eq!(r["status"], "degraded");
    assert_eq!(r["version"], Value::Null);
    assert_eq!(r["probes"][0]["garbage"], "NUL bytes");
    let p = problems(&r);
    assert!(
        p.contains(&"`codex --version` printed garbage (NUL bytes), not a version".to_string()),
        "{p:?}"
    );
    assert!(
        p.contains(
            &"`codex --help` printed garbage (NUL bytes); no flag can be checked in it".to_string()
        ),
        "{p:?}"
    );
    assert!(
        r["capabilities"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["status"] != "verified"),
        "{r}"
    );
    // Printable nonsense: the version pattern finds nothing.
    fake(&repo, "codex", "#!/bin/sh\necho 'all systems nominal'\n");
    let r = doctor(&repo, &[])["runtimes"][0].clone();
    assert_eq!(r["cached"], false, "the binary changed");
    assert!(
        problems(&r)[0].starts_with("`codex --version` printed 20 bytes matching no version"),
        "{r}"
    );
    assert_eq!(capability(&r, "json_output")["status"], "absent");
}

#[test]
fn a_flag_missing_from_help_is_absent_with_a_precise_line() {
    let repo = Repo::initialized();
    let bin = fake(&repo, "codex", CODEX_WITHOUT_SANDBOX);
    add(&repo, &["codex", "--preset", "codex"]);
    let r = doctor(&repo, &["codex"])["runtimes"][0].clone();
    assert_eq!(r["status"], "degraded", "{r}");
    assert_eq!(r["version"], "0.46.0");
    assert_eq!(capability(&r, "read_only_sandbox")["status"], "absent");
    for name in ["non_interactive", "json_output", "mcp"] {
        assert_eq!(capability(&r, name)["status"], "verified", "{name}: {r}");
    }
    assert_eq!(
        problems(&r),
        [
            "`--sandbox` (invoke.read_only_sandbox) is not in the output of `codex --help` and `codex exec --help`"
        ]
    );
    assert_eq!(
        calls(&bin),
        [
            "--version|no-token",
            "--help|no-token",
            "exec --help|no-token"
        ]
    );
}

#[test]
fn an_unchanged_binary_is_served_from_the_cache_and_a_changed_one_is_probed_again() {
    let repo = Repo::initialized();
    let bin = fake(&repo, "claude", CLAUDE);
    add(&repo, &["claude", "--preset", "claude-code"]);
    let first = doctor(&repo, &[])["runtimes"][0].clone();
    assert_eq!(first["cached"], false);
    assert_eq!(calls(&bin).len(), 2);
    let cache_files: Vec<_> = std::fs::read_dir(repo.ws("runs/runtimes"))
        .unwrap()
        .collect();
    assert_eq!(
        cache_files.len(),
        1,
        "one cache file per binary, under runs/"
    );

    let second = doctor(&repo, &[])["runtimes"][0].clone();
    assert_eq!(second["cached"], true);
    assert_eq!(calls(&bin).len(), 2, "served from the cache: no probe ran");
    assert_eq!(second["probed_at"], first["probed_at"]);
    assert_eq!(second["capabilities"], first["capabilities"]);

    // A new size: probed again, and the new version is seen.
    std::fs::write(&bin, CLAUDE.replace("1.0.33", "2.0.1")).unwrap();
    let third = doctor(&repo, &[])["runtimes"][0].clone();
    assert_eq!(
        (third["cached"].as_bool(), third["version"].as_str()),
        (Some(false), Some("2.0.1"))
    );
    assert_eq!(calls(&bin).len(), 4);

    // Same size, new mtime: probed again.
    let file = std::fs::OpenOptions::new().write(true).open(&bin).unwrap();
    file.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .unwrap();
    drop(file);
    assert_eq!(doctor(&repo, &[])["runtimes"][0]["cached"], false);
    assert_eq!(calls(&bin).len(), 6);
    assert_eq!(doctor(&repo, &[])["runtimes"][0]["cached"], true);
    // --fresh ignores the cache.
    assert_eq!(doctor(&repo, &["--fresh"])["runtimes"][0]["cached"], false);
    assert_eq!(calls(&bin).len(), 8);
}

#[test]
fn a_secret_in_env_passthrough_is_refused_at_add_and_reported_by_lint() {
    let repo = Repo::initialized();
    let secret = "sk-ant-api03-Zq8Xr2Lm5Np7Tv9Wb4Yc6";
    let out = repo
        .dacli(&[
            "runtime",
            "add",
            "claude",
            "--preset",
            "claude-code",
            "--env",
            "HOME",
            "--env",
            secret,
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let doc = one_json(&out.stdout);
    assert_eq!(doc["refused"]["policy"], "runtime.secret_in_env");
    assert!(
        doc["refused"]["reason"]
            .as_str()
            .unwrap()
            .contains("--env entry 2")
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains(secret));
    assert!(!String::from_utf8_lossy(&out.stderr).contains(secret));
    assert!(!repo.ws("runtimes/claude.md").exists(), "nothing written");
    let (code, doc) = run(
        &repo,
        &[
            "runtime",
            "add",
            "claude",
            "--preset",
            "claude-code",
            "--env",
            "NOT A NAME",
        ],
    );
    assert_eq!((code, doc["error"]["code"].as_str()), (2, Some("E_USAGE")));

    // A hand edit puts a value in the file: lint reports it, without repeating it.
    add(&repo, &["claude", "--preset", "claude-code"]);
    let file = repo.ws("runtimes/claude.md");
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("\"ANTHROPIC_API_KEY\"", &format!("\"{secret}\""))
        .replace(
            "non_interactive = [\"--print\"]",
            "non_interactive = [\"--print\", \"--dangerously-skip-permissions\"]",
        );
    std::fs::write(&file, text).unwrap();
    let (code, doc) = run(&repo, &["lint"]);
    assert_eq!(code, 0);
    let finding = doc["data"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "secret_in_env")
        .unwrap_or_else(|| panic!("no secret_in_env: {doc}"))
        .clone();
    assert_eq!(finding["severity"], "error");
    assert_eq!(finding["path"], ".dacli/runtimes/claude.md");
    assert!(!doc.to_string().contains(secret));
    let dangerous: Vec<&Value> = doc["data"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "dangerous_flag")
        .collect();
    assert_eq!(dangerous.len(), 1, "{doc}");
    assert_eq!(dangerous[0]["severity"], "warning");
    let (code, _) = run(&repo, &["lint", "--check"]);
    assert_eq!(code, 1);
    // The doctor says so too.
    let r = doctor(&repo, &[])["runtimes"][0].clone();
    assert!(
        problems(&r)
            .iter()
            .any(|p| p.starts_with("`env_passthrough` entry 1 looks like an API key")),
        "{r}"
    );
    assert!(!r.to_string().contains(secret));
}

/// Adds `runtime = "<runtime>"` to a role file by hand (`runtime route` refuses a runtime
/// that does not exist).
fn route(repo: &Repo, role: &str, runtime: &str) {
    let file = repo.ws(&format!("roles/{role}.md"));
    let text = std::fs::read_to_string(&file).unwrap();
    let (front, body) = text[4..].split_once("+++\n").unwrap();
    std::fs::write(
        &file,
        format!("+++\n{front}runtime = \"{runtime}\"\n+++\n{body}"),
    )
    .unwrap();
}

#[test]
fn runtime_rm_is_refused_while_a_role_routes_to_it() {
    let repo = Repo::initialized();
    add(&repo, &["claude", "--preset", "claude-code"]);
    let (code, doc) = run(
        &repo,
        &[
            "role",
            "add",
            "builder",
            "--summary",
            "Builds",
            "--grant",
            "rw",
            "--wip",
            "2",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    let role_file = repo.ws("roles/builder.md");
    let before = std::fs::read_to_string(&role_file).unwrap();
    let (code, doc) = run(&repo, &["runtime", "route", "claude", "--role", "builder"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        doc["data"],
        json!({"runtime": "claude", "roles": [{"role": "builder", "before": null, "after": "claude"}], "effect": "applied"})
    );
    let after = std::fs::read_to_string(&role_file).unwrap();
    assert!(
        after.contains("wip = 2\nruntime = \"claude\"\n+++\n"),
        "{after}"
    );
    // Only `rev` changes besides the new key.
    let masked = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with("runtime = "))
            .map(|l| {
                if l.starts_with("rev = ") {
                    "rev".into()
                } else {
                    l.to_string()
                }
            })
            .collect()
    };
    assert_eq!(masked(&before), masked(&after));
    assert_ne!(
        before,
        after.replace("runtime = \"claude\"\n", ""),
        "a fresh rev"
    );
    let (_, again) = run(&repo, &["runtime", "route", "claude", "--role", "builder"]);
    assert_eq!(again["data"]["effect"], "unchanged");
    let (_, list) = run(&repo, &["runtime", "list"]);
    assert_eq!(list["data"]["runtimes"][0]["routed_by"], json!(["builder"]));
    let (code, _) = run(&repo, &["runtime", "route", "ghost", "--role", "builder"]);
    assert_eq!(code, 4, "no such runtime");

    let (code, doc) = run(&repo, &["runtime", "rm", "claude"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["refused"]["policy"], "runtime.in_use");
    assert!(
        doc["refused"]["next"]
            .as_str()
            .unwrap()
            .contains("`dacli runtime route --clear --role builder`"),
        "{doc}"
    );
    assert!(repo.ws("runtimes/claude.md").exists());

    // Another rw agent owns neither the runtime nor the role.
    let (_, token) = agent(&repo, "builder", 2, "rw");
    for (args, policy) in [
        (
            vec!["runtime", "rm", "claude", "--json"],
            "runtime.not_owner",
        ),
        (
            vec!["runtime", "route", "--clear", "--role", "builder", "--json"],
            "role.not_owner",
        ),
    ] {
        let out = repo
            .dacli(&args)
            .env("DACLI_AGENT", &token)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(one_json(&out.stdout)["refused"]["policy"], policy);
    }

    // A role naming a runtime that does not exist (a hand edit) is linted.
    let (code, doc) = run(
        &repo,
        &[
            "role",
            "add",
            "planner",
            "--summary",
            "Plans",
            "--grant",
            "rw",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    route(&repo, "planner", "ghost");
    let (_, lint) = run(&repo, &["lint"]);
    let unknown: Vec<&Value> = lint["data"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "unknown_runtime")
        .collect();
    assert_eq!(unknown.len(), 1, "{lint}");
    assert_eq!(unknown[0]["path"], ".dacli/roles/planner.md");

    let (code, doc) = run(&repo, &["runtime", "route", "--clear", "--role", "builder"]);
    assert_eq!(
        (code, doc["data"]["roles"][0]["after"].clone()),
        (0, Value::Null)
    );
    assert!(
        !std::fs::read_to_string(&role_file)
            .unwrap()
            .contains("runtime =")
    );
    let (code, doc) = run(&repo, &["runtime", "rm", "claude"]);
    assert_eq!((code, doc["data"]["effect"].as_str()), (0, Some("applied")));
    assert!(!repo.ws("runtimes/claude.md").exists());
    let (code, _) = run(&repo, &["runtime", "rm", "claude"]);
    assert_eq!(code, 4);
}

#[test]
fn mcp_config_reuses_the_adapters_mcp_config() {
    let repo = Repo::initialized();
    let (_, builtin) = run(&repo, &["mcp", "config", "--client", "codex"]);
    assert!(builtin["data"].get("adapter").is_none());
    add(&repo, &["cx", "--preset", "codex"]);
    let (_, doc) = run(&repo, &["mcp", "config", "--client", "codex"]);
    assert_eq!(doc["data"]["adapter"], ".dacli/runtimes/cx.md");
    assert_eq!(
        doc["data"]["snippet"], builtin["data"]["snippet"],
        "the preset matches the built-in"
    );
    // An edited adapter shapes the snippet.
    let file = repo.ws("runtimes/cx.md");
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace(
            "file = \".codex/config.toml\"",
            "file = \"~/.codex/config.toml\"",
        )
        .replace("env = \"names\"", "env = \"${VAR}\"");
    std::fs::write(&file, text).unwrap();
    let (_, doc) = run(&repo, &["mcp", "config", "--client", "codex"]);
    assert_eq!(doc["data"]["file"], "~/.codex/config.toml");
    assert_eq!(
        doc["data"]["snippet"],
        "[mcp_servers.dacli]\ncommand = \"dacli\"\nargs = [\"mcp\", \"serve\"]\nenv = { DACLI_AGENT = \"${DACLI_AGENT}\" }\n"
    );
    // A malformed adapter is skipped with a warning; the built-in snippet is printed.
    add(&repo, &["claude-code", "--preset", "claude-code"]);
    std::fs::write(
        repo.ws("runtimes/claude-code.md"),
        "+++\nkind = \"runtime\"\n+++\n",
    )
    .unwrap();
    let (code, doc) = run(&repo, &["mcp", "config", "--client", "claude-code"]);
    assert_eq!(code, 0);
    assert_eq!(doc["data"]["file"], ".mcp.json");
    assert_eq!(doc["warnings"][0]["path"], ".dacli/runtimes/claude-code.md");
}

#[test]
fn runtime_doctor_over_the_mcp_cli_tool_returns_the_cli_json() {
    let repo = Repo::initialized();
    fake(&repo, "claude", CLAUDE);
    fake(&repo, "codex", CODEX_WITHOUT_SANDBOX);
    add(&repo, &["claude", "--preset", "claude-code"]);
    add(&repo, &["codex", "--preset", "codex"]);
    add(
        &repo,
        &[
            "gemini",
            "--preset",
            "gemini",
            "--binary",
            "dacli-test-no-such-runtime",
        ],
    );
    doctor(&repo, &[]);
    let (code, cli) = run(&repo, &["runtime", "doctor"]);
    assert_eq!(code, 0);
    assert_eq!(
        cli["data"]["summary"],
        json!({"ok": 1, "degraded": 1, "missing": 1})
    );
    let path = test_path(&repo);
    let mut s = Server::start_with(repo.path(), None, &[("PATH", path.as_str())]);
    s.initialize("2025-11-25");
    let over_mcp = assert_done(&s.call("cli", json!({"argv": ["runtime", "doctor"]})));
    assert_eq!(over_mcp, cli);
    s.finish();
}
