//! The spine as a user runs it: init, status, whoami, version, doctor, completions, exit codes
//! and the JSON envelope, in real git repositories.

use std::process::Stdio;

use serde_json::Value;

use crate::support::{Repo, dacli, git, one_json};

#[test]
fn init_then_status_json_prints_one_ok_document() {
    let repo = Repo::new();
    let (code, init) = repo.json(&["init"]);
    assert_eq!(code, 0, "{init}");
    assert_eq!(init["ok"], true);
    assert_eq!(init["data"]["format"], 2);
    let name = repo
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    assert_eq!(init["data"]["name"], Value::String(name));

    let (code, status) = repo.json(&["status"]);
    assert_eq!(code, 0, "{status}");
    assert_eq!(status["ok"], true);
    assert_eq!(
        status["data"]["workspace"]["id"],
        init["data"]["workspace_id"]
    );
    assert_eq!(status["data"]["projects"], Value::Array(vec![]));
    assert!(status.get("warnings").is_none(), "{status}");
}

#[test]
fn init_writes_exactly_the_documented_files() {
    let repo = Repo::initialized();
    let gitignore = std::fs::read_to_string(repo.ws(".gitignore")).unwrap();
    assert_eq!(
        gitignore,
        "# written by dacli init\nruns/\n.locks/\ncache/\n.dacli-tmp-*\nworktrees/\n"
    );
    let config = std::fs::read_to_string(repo.ws("config.toml")).unwrap();
    assert!(
        config.starts_with("format = 2\nworkspace_id = \""),
        "{config}"
    );
    let root = std::fs::read_to_string(repo.ws("agents/a-root.md")).unwrap();
    for line in [
        "id = \"a-root\"",
        "kind = \"agent\"",
        "grant = \"rw\"",
        "role = \"root\"",
        "status = \"live\"",
    ] {
        assert!(root.contains(line), "missing {line} in\n{root}");
    }
    assert!(
        !root.contains("token_hash"),
        "no token without --require-token"
    );
    // Nothing else: no staging directory left behind.
    let mut top: Vec<_> = std::fs::read_dir(repo.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(top, vec![".dacli", ".git"]);
}

#[test]
fn init_output_is_deterministic_under_the_test_hooks() {
    let repo = Repo::new();
    let (_, init) = repo.json(&["init", "--name", "shop"]);
    insta::assert_json_snapshot!("init_json", init);
    let (_, status) = repo.json(&["status"]);
    insta::assert_json_snapshot!("status_empty_json", status);
}

#[test]
fn reinit_is_refused_with_exit_5_and_changes_nothing() {
    let repo = Repo::initialized();
    let before = std::fs::read(repo.ws("config.toml")).unwrap();
    let (code, doc) = repo.json(&["init"]);
    assert_eq!(code, 5);
    assert_eq!(doc["error"]["code"], "E_EXISTS");
    assert_eq!(std::fs::read(repo.ws("config.toml")).unwrap(), before);
}

#[test]
fn init_outside_a_git_work_tree_is_e_not_a_repo() {
    let dir = tempfile::tempdir().unwrap();
    let out = dacli()
        .current_dir(dir.path())
        .args(["init", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(one_json(&out.stdout)["error"]["code"], "E_NOT_A_REPO");
    assert!(!dir.path().join(".dacli").exists());
}

#[test]
fn init_with_require_token_prints_the_root_token_once_and_stores_only_its_hash() {
    let repo = Repo::new();
    let out = repo.dacli(&["init", "--require-token"]).output().unwrap();
    assert!(out.status.success());
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(token.starts_with("dacli_a-root_"), "{token}");
    let root = std::fs::read_to_string(repo.ws("agents/a-root.md")).unwrap();
    assert!(root.contains("token_hash = \"sha256:"));
    assert!(
        !root.contains(&token[13..]),
        "the secret never reaches the disk"
    );
    // Unset is refused now; the token works.
    let (code, doc) = repo.json(&["whoami"]);
    assert_eq!(code, 3);
    assert_eq!(doc["refused"]["policy"], "identity.token_required");
    let out = repo
        .dacli(&["whoami", "--json"])
        .env("DACLI_AGENT", &token)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let doc = one_json(&out.stdout);
    assert_eq!(doc["data"]["agent"]["id"], "a-root");
    assert_eq!(doc["data"]["source"], "token");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&token));
}

#[test]
fn unknown_command_or_flag_exits_2() {
    let repo = Repo::initialized();
    repo.dacli(&["nosuchcmd"]).assert().code(2);
    repo.dacli(&["status", "--nosuchflag"]).assert().code(2);
    let (code, doc) = repo.json(&["nosuchcmd"]);
    assert_eq!(code, 2);
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["error"]["code"], "E_USAGE");
    let (code, doc) = repo.json(&["status", "--project", "Bad_Slug"]);
    assert_eq!(code, 2);
    assert_eq!(doc["error"]["code"], "E_BAD_SLUG");
}

#[test]
fn outside_any_workspace_exits_4_with_a_hint_to_init() {
    let repo = Repo::new();
    let (code, doc) = repo.json(&["status"]);
    assert_eq!(code, 4);
    assert_eq!(doc["error"]["code"], "E_NO_WORKSPACE");
    let hints = doc["error"]["hints"].to_string();
    assert!(hints.contains("dacli init"), "{hints}");
    let out = repo.dacli(&["status"]).output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert!(out.stdout.is_empty(), "diagnostics go to stderr");
    assert!(String::from_utf8_lossy(&out.stderr).contains("error[E_NO_WORKSPACE]"));
}

#[test]
fn discovery_walks_up_and_honours_dash_c() {
    let repo = Repo::initialized();
    let deep = repo.path().join("src/deep/er");
    std::fs::create_dir_all(&deep).unwrap();
    let out = dacli()
        .current_dir(&deep)
        .args(["status", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let elsewhere = tempfile::tempdir().unwrap();
    for target in [repo.path().to_path_buf(), deep.clone(), repo.ws("")] {
        let out = dacli()
            .current_dir(elsewhere.path())
            .arg("-C")
            .arg(&target)
            .args(["whoami", "--json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "-C {}", target.display());
    }
}

#[test]
fn discovery_from_a_linked_worktree_finds_the_main_workspace() {
    let repo = Repo::initialized();
    repo.write("README.md", "hello\n");
    git(repo.path(), &["add", "README.md"]);
    git(repo.path(), &["commit", "-q", "-m", "init"]);
    let wt = tempfile::tempdir().unwrap();
    let wt_path = wt.path().join("wt");
    git(
        repo.path(),
        &["worktree", "add", "-q", wt_path.to_str().unwrap()],
    );
    // .dacli/ is not committed, so the linked worktree has none of its own.
    assert!(!wt_path.join(".dacli").exists());
    let out = dacli()
        .current_dir(&wt_path)
        .args(["status", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let (_, main) = repo.json(&["status"]);
    assert_eq!(
        one_json(&out.stdout)["data"]["workspace"]["id"],
        main["data"]["workspace"]["id"]
    );
}

#[test]
fn a_newer_or_missing_format_is_refused_with_exit_1_and_nothing_changes() {
    for config in [
        "format = 3\nworkspace_id = \"01KJPWD6M0NXPMMVRRH914WRBV\"\n",
        "workspace_id = \"01KJPWD6M0NXPMMVRRH914WRBV\"\n",
        "format = 0\nworkspace_id = \"01KJPWD6M0NXPMMVRRH914WRBV\"\n",
    ] {
        let repo = Repo::initialized();
        repo.write(".dacli/config.toml", config);
        for cmd in [&["status"][..], &["whoami"], &["doctor", "--fix"]] {
            let (code, doc) = repo.json(cmd);
            assert_eq!(code, 1, "{cmd:?}: {doc}");
            assert_eq!(doc["error"]["code"], "E_FORMAT_UNSUPPORTED");
            let msg = doc["error"]["message"].as_str().unwrap();
            assert!(
                msg.contains(".dacli/config.toml") && msg.contains('2'),
                "{msg}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(repo.ws("config.toml")).unwrap(),
            config
        );
        assert!(!repo.ws(".locks").exists(), "nothing was written");
    }
}

#[test]
fn broken_toml_in_a_project_makes_status_warn_and_continue() {
    let repo = Repo::initialized();
    repo.write(
        ".dacli/projects/good/project.md",
        "+++\nid = \"p-good\"\nkind = \"project\"\ncreated = 2026-03-02T09:10:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJWEY52G6HAMVAWC8FMVE477\"\nstatus = \"active\"\nstage = \"build\"\n+++\n\n# Good\n",
    );
    repo.write(
        ".dacli/projects/bad/project.md",
        "+++\nid = \"p-bad\"\nkind = \"project\nstatus = \"active\"\n+++\n\n# Bad\n",
    );
    let (code, doc) = repo.json(&["status"]);
    assert_eq!(code, 0, "{doc}");
    let projects = doc["data"]["projects"].as_array().unwrap();
    assert_eq!(projects.len(), 1);
    assert_eq!(projects[0]["id"], "p-good");
    assert_eq!(doc["data"]["warnings"], 1);
    let w = &doc["warnings"][0];
    assert_eq!(w["path"], ".dacli/projects/bad/project.md");
    assert_eq!(w["reason"], "toml");
    assert!(w["detail"].as_str().unwrap().starts_with("line 3,"), "{w}");
    // Text mode: the warning goes to stderr, the status to stdout.
    let out = repo.dacli(&["status"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("p-good"));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("warning: .dacli/projects/bad/project.md: toml")
    );
}

#[test]
fn whoami_is_root_when_dacli_agent_is_unset() {
    let repo = Repo::initialized();
    let (code, doc) = repo.json(&["whoami"]);
    assert_eq!(code, 0);
    assert_eq!(doc["data"]["agent"]["id"], "a-root");
    assert_eq!(doc["data"]["agent"]["grant"], "rw");
    assert_eq!(doc["data"]["source"], "unset");
}

#[test]
fn empty_unknown_and_malformed_tokens_are_refused_never_root() {
    let repo = Repo::initialized();
    let cases = [
        ("", "identity.empty_token"),
        ("garbage", "identity.unknown_token"),
        (
            "dacli_a-builder-01KJPX6ZT81TTNRTABC9KBJYTV_21da8978206f5c6671e0c07e9e115e4b9e30691c238642ea126a1e48cc11d357",
            "identity.unknown_token",
        ),
        (
            "dacli_a-root_0000000000000000000000000000000000000000000000000000000000000000",
            "identity.unknown_token",
        ),
        ("dacli_../../etc/passwd_x", "identity.unknown_token"),
    ];
    for (token, policy) in cases {
        let out = repo
            .dacli(&["whoami", "--json"])
            .env("DACLI_AGENT", token)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "token {token:?}");
        let doc = one_json(&out.stdout);
        assert_eq!(doc["refused"]["policy"], policy, "token {token:?}");
        assert!(!doc["refused"]["next"].as_str().unwrap().is_empty());
    }
}

#[test]
fn version_needs_no_workspace_and_dash_v_is_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let out = dacli()
        .current_dir(dir.path())
        .args(["version", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let doc = one_json(&out.stdout);
    assert_eq!(doc["data"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(doc["data"]["format"], 2);
    let v = dacli().current_dir(dir.path()).arg("-V").output().unwrap();
    let version = dacli()
        .current_dir(dir.path())
        .arg("version")
        .output()
        .unwrap();
    assert_eq!(v.stdout, version.stdout);
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("dacli 0.1.0"));
}

#[test]
fn completions_print_a_script_for_each_shell() {
    // The static scripts (`--static`); the dynamic registration is tested in human_completion.
    let dir = tempfile::tempdir().unwrap();
    for (shell, marker) in [
        ("bash", "_dacli()"),
        ("zsh", "#compdef dacli"),
        ("fish", "complete -c dacli"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[dacli]"),
    ] {
        let out = dacli()
            .current_dir(dir.path())
            .args(["completions", shell, "--static"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(script.contains(marker), "{shell}: {marker} missing");
        assert!(script.contains("whoami"), "{shell} completes subcommands");
    }
    let out = dacli()
        .current_dir(dir.path())
        .args(["completions", "zsh", "--json"])
        .output()
        .unwrap();
    let doc = one_json(&out.stdout);
    assert_eq!(doc["data"]["shell"], "zsh");
    assert!(
        doc["data"]["script"]
            .as_str()
            .unwrap()
            .starts_with("#compdef dacli")
    );
    dacli()
        .current_dir(dir.path())
        .args(["completions", "tcsh"])
        .assert()
        .code(2);
}

#[test]
fn help_prints_and_exits_0_and_help_json_is_the_signature() {
    let repo = Repo::initialized();
    let out = repo.dacli(&["status", "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--recent"));
    let (code, doc) = repo.json(&["status", "--help"]);
    assert_eq!(code, 0);
    assert_eq!(doc["data"]["command"], "status");
    let flags: Vec<&str> = doc["data"]["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(
        flags.contains(&"--project") && flags.contains(&"--recent"),
        "{flags:?}"
    );
}

#[test]
fn a_closed_stdout_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("dacli");
    let mut child = std::process::Command::new(bin)
        .current_dir(dir.path())
        .args(["completions", "bash"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Close the read end before dacli writes: its write fails with EPIPE.
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn doctor_reports_a_healthy_workspace_and_fixes_stale_temp_files() {
    let repo = Repo::initialized();
    let (code, doc) = repo.json(&["doctor"]);
    assert_eq!(code, 0, "{doc}");
    let status = |doc: &Value, name: &str| {
        doc["data"]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no check {name}"))["status"]
            .clone()
    };
    for name in [
        "format_version",
        "malformed_files",
        "noncanonical_files",
        "gitignore",
        "identity",
    ] {
        assert_eq!(status(&doc, name), "ok", "{name}");
    }
    assert_eq!(
        status(&doc, "tracked"),
        "warn",
        "an uncommitted workspace is reported"
    );
    git(repo.path(), &["add", ".dacli"]);
    git(repo.path(), &["commit", "-q", "-m", "ws"]);
    let (_, doc) = repo.json(&["doctor"]);
    assert_eq!(status(&doc, "tracked"), "ok");

    // A temp file from a crashed writer, 42 minutes old (the clock is pinned).
    let tmp = repo.write(".dacli/agents/.dacli-tmp-deadbeef", "half");
    let old =
        std::time::SystemTime::from("2026-03-02T08:18:00Z".parse::<jiff::Timestamp>().unwrap());
    std::fs::File::options()
        .write(true)
        .open(&tmp)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let fresh = repo.write(".dacli/agents/.dacli-tmp-fresh", "in flight");
    std::fs::File::options()
        .write(true)
        .open(&fresh)
        .unwrap()
        .set_modified(std::time::SystemTime::from(
            "2026-03-02T08:58:00Z".parse::<jiff::Timestamp>().unwrap(),
        ))
        .unwrap();
    let (code, doc) = repo.json(&["doctor"]);
    assert_eq!(code, 0);
    assert_eq!(status(&doc, "stale_temp_files"), "warn");
    let items = doc["data"]["checks"][3]["items"].clone();
    assert_eq!(items[0]["path"], ".dacli/agents/.dacli-tmp-deadbeef");
    assert_eq!(items[0]["detail"], "42 min old");
    assert_eq!(
        items.as_array().unwrap().len(),
        1,
        "a fresh temp file is not stale"
    );
    let (code, doc) = repo.json(&["doctor", "--fix"]);
    assert_eq!(code, 0);
    assert_eq!(doc["data"]["fixed"], 1);
    assert!(!tmp.exists());
    assert!(fresh.exists(), "only stale temp files are removed");
}

#[test]
fn doctor_check_exits_1_on_errors_and_names_the_file() {
    let repo = Repo::initialized();
    repo.write(".dacli/projects/x/project.md", "no frontmatter here\n");
    repo.write(
        ".dacli/agents/a-root.md.bak",
        "ignored: not an object file\n",
    );
    let (code, doc) = repo.json(&["doctor"]);
    assert_eq!(code, 0);
    let malformed = &doc["data"]["checks"][1];
    assert_eq!(malformed["status"], "error");
    assert_eq!(
        malformed["items"][0]["path"],
        ".dacli/projects/x/project.md"
    );
    assert_eq!(malformed["items"][0]["reason"], "no_frontmatter");
    let (code, doc) = repo.json(&["doctor", "--check"]);
    assert_eq!(code, 1);
    assert_eq!(doc["error"]["code"], "E_LINT");
    assert!(
        doc["error"]["hints"]
            .to_string()
            .contains(".dacli/projects/x/project.md")
    );
}
