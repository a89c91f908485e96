//! RELIABILITY S1 / H43, the token canary: a spawned agent runs every command of the table
//! and calls every MCP tool; afterwards its token appears in no output, event, file, log or
//! error (only in the one `agent spawn` output that hands it over), and its hash only in its
//! own agent record.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::reliability_hostile::mcp_batch_as;
use crate::support::{Repo, git, one_json};

/// Everything one run printed.
struct Seen {
    argv: Vec<String>,
    code: i32,
    stdout: String,
    stderr: String,
}

struct Script<'r> {
    repo: &'r Repo,
    token: String,
    seen: Vec<Seen>,
    /// Command names (dotted) that ran at least once.
    covered: BTreeSet<String>,
}

impl Script<'_> {
    /// Runs `dacli <args> --json` as the scripted agent and returns the document.
    fn run(&mut self, args: &[&str]) -> Value {
        let mut all: Vec<&str> = args.to_vec();
        all.push("--json");
        let out = self
            .repo
            .dacli(&all)
            .env("DACLI_AGENT", &self.token)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let doc = if args.first() == Some(&"mcp") && args.get(1) == Some(&"serve") {
            Value::Null
        } else {
            one_json(&out.stdout)
        };
        let words: Vec<&str> = args
            .iter()
            .take_while(|a| !a.starts_with('-'))
            .copied()
            .collect();
        for n in (1..=words.len().min(2)).rev() {
            self.covered.insert(words[..n].join("."));
        }
        self.seen.push(Seen {
            argv: all.iter().map(|s| s.to_string()).collect(),
            code: out.status.code().unwrap_or(-1),
            stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
        assert_ne!(self.seen.last().unwrap().code, 70, "{args:?}: {doc}");
        doc
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if e.file_name() == ".git" {
            continue;
        }
        let ft = std::fs::symlink_metadata(&p).unwrap().file_type();
        if ft.is_dir() {
            files(&p, out);
        } else if ft.is_file() {
            out.push(p);
        }
    }
}

fn spawn(repo: &Repo, token: Option<&str>, grant: &str) -> (String, String, Seen) {
    let mut cmd = repo.dacli(&["agent", "spawn", "--grant", grant, "--json"]);
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    let out = cmd.output().unwrap();
    let doc = one_json(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    let seen = Seen {
        argv: vec!["agent".into(), "spawn".into()],
        code: 0,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    (
        doc["data"]["agent"]["id"].as_str().unwrap().to_string(),
        doc["data"]["token"].as_str().unwrap().to_string(),
        seen,
    )
}

#[test]
fn h43_s1_the_token_of_a_spawned_agent_never_leaves_its_spawn_output() {
    let repo = Repo::initialized();
    for args in [
        &["project", "add", "Checkout", "--slug", "checkout"][..],
        &["task", "add", "Shim", "--accept", "works"],
        &["task", "add", "Other", "--accept", "works"],
    ] {
        let (code, doc) = repo.json(args);
        assert_eq!(code, 0, "{doc}");
    }
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-qm", "workspace"]);
    let (me, token, handed_over) = spawn(&repo, None, "rw");
    let mut s = Script {
        repo: &repo,
        token: token.clone(),
        seen: Vec::new(),
        covered: BTreeSet::new(),
    };
    s.run(&[
        "mcp", "install", "--client", "cursor", "--agent", &me, "--scope", "project",
    ]);

    // Admin and identity.
    for args in [
        &["version"][..],
        &["whoami"],
        &["doctor"],
        &["doctor", "--fix"],
        // What git runs as the record merge driver: three files in, the merged one out.
        &[
            "merge-driver",
            ".dacli/projects/checkout/project.md",
            ".dacli/projects/checkout/project.md",
            ".dacli/projects/checkout/project.md",
        ],
        &["completions", "bash"],
        &["man"],
        &["capabilities"],
        &["usage"],
        &["mcp", "config", "--client", "claude-code"],
        &["mcp", "install", "--client", "codex", "--dry-run"],
        &["init"],
    ] {
        s.run(args);
    }
    // Agents: a grandchild spawned and retired by the scripted agent.
    let (child, child_token, child_spawn) = spawn(&repo, Some(&token), "ro");
    s.covered.insert("agent.spawn".into());
    s.covered.insert("agent".into());
    for args in [
        &["agent", "list"][..],
        &["agent", "show", &me],
        &["agent", "tree"],
        &["agent", "retire", &child],
    ] {
        s.run(args);
    }
    // Roles, projects, tasks.
    for args in [
        &[
            "role",
            "add",
            "tester",
            "--summary",
            "Tests",
            "--grant",
            "ro",
        ][..],
        &["role", "edit", "tester", "--wip", "1"],
        &["role", "list"],
        &["role", "show", "tester"],
        &["role", "rm", "tester"],
        &["project", "add", "Second", "--slug", "second"],
        &["project", "list"],
        &["project", "show", "second"],
        &["project", "edit", "second", "--title", "Second project"],
        &[
            "task",
            "add",
            "Mine",
            "--project",
            "second",
            "--accept",
            "plain",
            "--accept",
            "`true` passes",
        ],
        &["task", "list", "--all"],
        &["task", "show", "second/1"],
        &["task", "edit", "second/1", "--priority", "must"],
        &["task", "depend", "second/1", "--on", "checkout/2"],
        &["task", "depend", "second/1", "--remove", "checkout/2"],
        &["task", "claim", "second/1"],
        &["task", "release", "second/1"],
        &["task", "assign", "second/1", &me],
        &["task", "block", "second/1", "--reason", "waiting"],
        &["task", "unblock", "second/1"],
        &["task", "comment", "second/1", "a comment"],
        &["task", "check", "second/1", "--n", "1"],
        &["task", "check", "second/1", "--n", "2", "--verify"],
        &["task", "done", "second/1", "--summary", "done"],
        &["task", "reopen", "second/1", "--reason", "again"],
        &["accept", "second/1"],
        &["task", "handover", "second/1", "--to", "a-root"],
        // Another's task: events and refusals.
        &["task", "claim", "checkout/1"],
        &["task", "check", "checkout/1", "--n", "1"],
        &["task", "done", "checkout/1"],
        &["task", "edit", "checkout/1", "--priority", "must"],
    ] {
        s.run(args);
    }
    let asked = s.run(&["ask", "checkout/2", "Which rounding?", "--no-block"]);
    let question = asked["data"]["question"]
        .as_str()
        .unwrap_or("0000000000")
        .to_string();
    s.run(&["answer", &question, "Half-even."]);
    s.run(&["threads"]);
    s.run(&["sync"]);
    s.run(&["review"]);
    s.run(&["log", "checkout/2"]);
    s.run(&["search", "rounding"]);
    let events = s.run(&["events", "list"]);
    let event = events["data"]["events"][0]["id"]
        .as_str()
        .unwrap_or("01KJPWD6M0J1DV1Y5M7RSQG6X0")
        .to_string();
    s.run(&["events", "show", &event]);
    s.run(&["events", "tail", "-n", "5"]);
    // Knowledge.
    let note = s.run(&[
        "note",
        "add",
        "finding",
        "Seen a thing",
        "--severity",
        "minor",
        "--about",
        "checkout/1",
    ]);
    let note_id = note["data"]["note"]["id"]
        .as_str()
        .unwrap_or("n-x")
        .to_string();
    for args in [
        &["note", "list"][..],
        &["note", "show", &note_id],
        &[
            "risk",
            "add",
            "Rounding drift",
            "--project",
            "second",
            "--impact",
            "low",
            "--likelihood",
            "low",
        ],
        &["risk", "list"],
        &["risk", "edit", "rounding-drift", "--status", "closed"],
        &[
            "glossary",
            "add",
            "--project",
            "second",
            "cent",
            "one hundredth",
        ],
        &["glossary", "show", "--project", "second"],
        // Insight.
        &["status"],
        &["next"],
        &["wbs"],
        &["burndown", "--project", "second"],
        &["velocity"],
        &["lint"],
        &["context", "checkout/1"],
        // Templates, shortcuts, queues.
        &["template", "list"],
        &["template", "show", "standard"],
        &[
            "template",
            "add",
            "mine",
            "--summary",
            "Mine",
            "--stage",
            "build",
        ],
        &[
            "shortcut",
            "add",
            "echo",
            "--command",
            "printf '%s' {{v}}",
            "--effect",
            "read",
            "--summary",
            "Echo",
            "--param",
            "v",
        ],
        &["shortcut", "list"],
        &["shortcut", "show", "echo"],
        &["run", "echo", "--param", "v=hello"],
        &["run", "--list"],
        &["run", "--cmd", "true"],
    ] {
        s.run(args);
    }
    let adhoc = s.run(&["run", "--cmd", "true"]);
    let run_event = adhoc["data"]["event"].as_str().unwrap_or("0").to_string();
    for args in [
        &[
            "shortcut",
            "promote",
            "truth",
            "--from-event",
            &run_event,
            "--effect",
            "read",
            "--summary",
            "True",
        ][..],
        &["shortcut", "rm", "echo"],
        &[
            "queue", "add", "release", "--step", "Build", "--step", "Ship",
        ],
        &["queue", "list"],
        &["queue", "next", "release"],
        &["queue", "advance", "release", "--key", "k1"],
        &["queue", "advance", "release", "--dead", "broken"],
        &["queue", "resume", "release"],
        &["queue", "rm", "release"],
        &["repo", "cleanup"],
        &[
            "delivery",
            "reconcile",
            "--offline",
            "--project",
            "checkout",
        ],
        &["events", "scan"],
        &["events", "reconcile"],
        &["events", "archive", "--before", "2000-01-01T00:00:00Z"],
        &["runtime", "add", "claude", "--preset", "claude-code"],
        &["runtime", "list"],
        &["runtime", "show", "claude"],
        &["runtime", "doctor", "claude", "--timeout-ms", "500"],
        &["runtime", "rm", "claude"],
    ] {
        s.run(args);
    }
    // `events restore` needs an archived segment; tests/it/git.rs archives and restores one.
    s.covered.insert("events.restore".into());
    // `runtime route` needs a role to route; tests/it/runtimes.rs covers it.
    s.covered.insert("runtime.route".into());
    // The GitHub commands need a (fake) GitHub; tests/it/github.rs runs each against wiremock
    // with its own token canary (the GitHub token never appears in output or files).
    for name in [
        "github.consent.grant",
        "github.consent.revoke",
        "github.link",
        "github.projection",
        "github.pull",
        "github.push",
        "github.sync",
        "pr.diagnose",
        "release-train.land",
        "release-train.open",
        "release-train.plan",
        "release-train.resume",
        "release-train.status",
    ] {
        s.covered.insert(name.into());
    }

    // Every MCP tool, in one server bound to the token.
    let calls: Vec<Value> = [
        ("whoami", json!({})),
        ("status", json!({})),
        ("get_context", json!({"ref": "checkout/2"})),
        (
            "add_task",
            json!({"title": "Via MCP", "project": "checkout"}),
        ),
        ("list_tasks", json!({"all": true})),
        ("claim_task", json!({"ref": "checkout/2"})),
        (
            "check_task",
            json!({"ref": "checkout/2", "items": [1], "evidence": "seen"}),
        ),
        ("finish_task", json!({"ref": "checkout/2"})),
        (
            "block_task",
            json!({"ref": "checkout/2", "reason": "waiting"}),
        ),
        (
            "add_note",
            json!({"kind": "finding", "title": "Via MCP", "severity": "minor"}),
        ),
        (
            "ask",
            json!({"ref": "checkout/2", "question": "Really?", "blocks": false}),
        ),
        ("answer", json!({"question": question, "answer": "Yes."})),
        ("run_shortcut", json!({"name": "truth"})),
        ("queue_next", json!({"slug": "release"})),
        ("queue_advance", json!({"slug": "release", "key": "k9"})),
        ("cleanup_repository", json!({})),
        ("reconcile_delivery", json!({"project": "checkout"})),
        ("reconcile_event_journal", json!({"operation": "scan"})),
        ("diagnose_pr", json!({"pr": 1})),
        ("release_train", json!({"operation": "status"})),
        ("github_projection", json!({"project": "checkout"})),
        ("cli", json!({"argv": ["agent", "show", me]})),
        ("cli", json!({"argv": ["doctor"]})),
        // Pasting the token into an argument is stopped before anything can echo it.
        ("claim_task", json!({"ref": token})),
    ]
    .into_iter()
    .map(|(name, mut args)| {
        args["schema_version"] = json!(1);
        json!({"name": name, "arguments": args})
    })
    .collect();
    let mut input = String::from(
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"canary\",\"version\":\"1\"}}}\n{\"jsonrpc\":\"2.0\",\"id\":\"list\",\"method\":\"tools/list\"}\n",
    );
    for (i, c) in calls.iter().enumerate() {
        input.push_str(&format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": c})
        ));
    }
    let (code, replies, mcp_stderr) = mcp_batch_as(&repo, input.as_bytes(), Some(&token));
    assert_eq!(code, 0, "{mcp_stderr}");
    assert_eq!(replies.len(), calls.len() + 2);
    let served: BTreeSet<&str> = replies[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let called: BTreeSet<&str> = calls.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(called, served, "every served tool is called");
    s.covered.insert("mcp.serve".into());

    // Every command of the table ran at least once.
    let (_, caps) = repo.json(&["capabilities"]);
    let commands: BTreeSet<String> = caps["data"]["capabilities"]
        .as_object()
        .unwrap()
        .keys()
        .filter_map(|k| k.strip_prefix("cli.command."))
        .map(str::to_string)
        .collect();
    let missing: Vec<&String> = commands.difference(&s.covered).collect();
    assert!(
        missing.is_empty(),
        "commands the script never ran: {missing:?}"
    );
    // Each step did real work (done or refused); only `init` fails, the workspace exists.
    let failed: Vec<String> = s
        .seen
        .iter()
        .filter(|x| x.code != 0 && x.code != 3 && x.argv[0] != "init")
        .map(|x| format!("{} -> {}: {}", x.argv.join(" "), x.code, x.stdout))
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));

    // The canary: each token only in the output that handed it over.
    for (secret, owner_record, spawn_out) in [
        (&token, me.clone(), &handed_over),
        (&child_token, child.clone(), &child_spawn),
    ] {
        assert!(spawn_out.stdout.contains(secret.as_str()));
        assert!(!spawn_out.stderr.contains(secret.as_str()));
        for x in &s.seen {
            assert!(
                !x.stdout.contains(secret.as_str()) && !x.stderr.contains(secret.as_str()),
                "token printed by {:?}",
                x.argv
            );
        }
        for r in &replies {
            assert!(
                !r.to_string().contains(secret.as_str()),
                "token in MCP: {r}"
            );
        }
        assert!(!mcp_stderr.contains(secret.as_str()));
        let hash = dacli::model::agent::token_hash(secret);
        let digest = hash.trim_start_matches("sha256:").to_string();
        let mut all = Vec::new();
        files(repo.path(), &mut all);
        assert!(
            all.len() > 40,
            "the run wrote records, events, logs: {}",
            all.len()
        );
        for f in &all {
            let text = String::from_utf8_lossy(&std::fs::read(f).unwrap()).into_owned();
            let rel = f.strip_prefix(repo.path()).unwrap().to_string_lossy();
            assert!(!text.contains(secret.as_str()), "token in {rel}");
            if rel != format!(".dacli/agents/{owner_record}.md") {
                assert!(!text.contains(&digest), "token hash in {rel}");
            }
        }
        for x in s.seen.iter().chain([&handed_over, &child_spawn]) {
            assert!(!x.stdout.contains(&digest) && !x.stderr.contains(&digest));
        }
    }
    println!(
        "canary: {} CLI runs over {} commands, {} MCP calls over {} tools",
        s.seen.len() + 2,
        commands.len(),
        calls.len(),
        served.len()
    );
}
