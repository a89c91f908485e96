//! Roles through the CLI: creating and editing them, what they cap and fence at claim and
//! assign time, where questions escalate, and when one may be removed.

use serde_json::{Value, json};

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

fn refusal(doc: &Value) -> (String, String) {
    (
        doc["refused"]["policy"]
            .as_str()
            .unwrap_or_else(|| panic!("not a refusal: {doc}"))
            .to_string(),
        doc["refused"]["next"].as_str().unwrap_or("").to_string(),
    )
}

/// One project `checkout`, an `architect` role and a `builder` role with the given WIP cap
/// and scope.
fn setup(wip: &str) -> Repo {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
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
            "--escalate-to",
            "human",
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
            "--scope",
            "src/**",
            "--out-of-scope",
            "src/secret/**",
            "--escalate-to",
            "architect",
            "--escalate-to",
            "human",
            "--wip",
            wip,
        ],
    );
    repo
}

#[test]
fn role_add_writes_a_canonical_file_and_validates_what_it_names() {
    let repo = Repo::initialized();
    ok(
        &repo,
        &[
            "shortcut",
            "add",
            "test",
            "--command",
            "true",
            "--effect",
            "read",
            "--summary",
            "T",
        ],
    );
    let doc = ok(
        &repo,
        &[
            "role",
            "add",
            "builder",
            "--summary",
            "Implements checkout tasks",
            "--grant",
            "rw",
            "--scope",
            "services/checkout/**",
            "--shortcut",
            "test",
            "--escalate-to",
            "human",
            "--wip",
            "3",
        ],
    );
    assert_eq!(
        doc["data"],
        json!({"role": {"name": "builder", "summary": "Implements checkout tasks", "grant": "rw",
            "scope": ["services/checkout/**"], "out_of_scope": [], "shortcuts": ["test"],
            "escalate_to": ["human"], "wip": 3, "owner": "a-root"}, "effect": "created"})
    );
    let text = std::fs::read_to_string(repo.ws("roles/builder.md")).unwrap();
    assert!(
        text.starts_with("+++\nkind = \"role\"\nname = \"builder\"\ncreated = 2026-03-02T09:00"),
        "{text}"
    );
    assert!(text.ends_with("wip = 3\n+++\n\n# builder\n"), "{text}");
    let fail = |args: &[&str]| {
        let mut all = vec!["role", "add", "x", "--summary", "X", "--grant", "rw"];
        all.extend_from_slice(args);
        repo.json(&all).0
    };
    assert_eq!(fail(&["--shortcut", "ghost"]), 4, "unknown shortcut");
    assert_eq!(fail(&["--escalate-to", "ghost"]), 4, "unknown role");
    assert_eq!(fail(&["--scope", "src/[a"]), 2, "bad glob");
    assert_eq!(fail(&["--escalate-to", "x"]), 2, "escalating to itself");
    assert!(!repo.ws("roles/x.md").exists());
    let (code, _) = repo.json(&["role", "add", "root", "--summary", "R", "--grant", "rw"]);
    assert_eq!(code, 2, "root is reserved");
    let (code, doc) = repo.json(&["role", "add", "builder", "--summary", "B", "--grant", "rw"]);
    assert_eq!((code, doc["error"]["code"].as_str()), (5, Some("E_EXISTS")));
    let (_, ro) = agent(&repo, "builder", 51, "ro");
    let (code, doc) = as_agent(
        &repo,
        &ro,
        &["role", "add", "y", "--summary", "Y", "--grant", "ro"],
    );
    assert_eq!(code, 3);
    assert_eq!(refusal(&doc).0, "grant.read_only");
}

#[test]
fn role_edit_replaces_lists_and_only_the_owner_may() {
    let repo = setup("2");
    // A hand-kept comment and an `[ext]` table survive the rewrite.
    repo.write(
        ".dacli/roles/builder.md",
        "+++\nkind = \"role\"\nname = \"builder\"\ncreated = 2026-03-02T09:05:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJPWPBK0J5MSNHG3G461XDWB\"\nsummary = \"Builds\" # kept\ngrant = \"rw\"\nscope = [\"src/**\"]\nout_of_scope = [\"src/secret/**\"]\nescalate_to = [\"architect\", \"human\"]\nwip = 2\n\n[ext]\nnote = \"x\"\n+++\n\n# builder\n",
    );
    let doc = ok(
        &repo,
        &[
            "role",
            "edit",
            "builder",
            "--scope",
            "lib/**",
            "--scope",
            "src/**",
            "--wip",
            "4",
            "--clear",
            "out-of-scope",
        ],
    );
    assert_eq!(doc["data"]["effect"], "applied");
    assert_eq!(
        doc["data"]["changed"],
        json!(["scope", "out_of_scope", "wip"])
    );
    assert_eq!(doc["data"]["role"]["scope"], json!(["lib/**", "src/**"]));
    assert_eq!(doc["data"]["role"]["out_of_scope"], json!([]));
    let after = std::fs::read_to_string(repo.ws("roles/builder.md")).unwrap();
    assert!(after.contains("summary = \"Builds\" # kept"), "{after}");
    assert!(after.contains("[ext]\nnote = \"x\""), "{after}");
    assert!(!after.contains("out_of_scope"), "{after}");
    let doc = ok(&repo, &["role", "edit", "builder", "--wip", "4"]);
    assert_eq!(doc["data"]["effect"], "unchanged");
    let (code, _) = repo.json(&["role", "edit", "builder"]);
    assert_eq!(code, 2, "an edit with nothing to change");
    let (code, _) = repo.json(&["role", "edit", "ghost", "--wip", "1"]);
    assert_eq!(code, 4);
    let (_, token) = agent(&repo, "builder", 52, "rw");
    let (code, doc) = as_agent(&repo, &token, &["role", "edit", "builder", "--wip", "9"]);
    assert_eq!(code, 3);
    assert_eq!(
        refusal(&doc),
        (
            "role.not_owner".to_string(),
            "Ask a-root to change role builder.".to_string()
        )
    );
}

#[test]
fn the_wip_cap_counts_active_tasks_by_role_at_claim_and_assign() {
    let repo = setup("1");
    ok(&repo, &["task", "add", "First", "--accept", "a"]);
    ok(&repo, &["task", "add", "Second", "--accept", "b"]);
    ok(&repo, &["task", "add", "Third", "--accept", "c"]);
    let (a, ta) = agent(&repo, "builder", 53, "rw");
    let (b, tb) = agent(&repo, "builder", 54, "rw");
    let (code, doc) = as_agent(&repo, &ta, &["task", "claim", "1"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["effect"], "proposed");
    let expected = "Role builder has 1/1 active tasks (checkout/001-first): finish or `dacli task release` one, or ask a-root to raise `wip`.";
    // The same agent, and another agent of the same role: the cap counts tasks by role.
    for token in [&ta, &tb] {
        let (code, doc) = as_agent(&repo, token, &["task", "claim", "2"]);
        assert_eq!(code, 3, "{doc}");
        assert_eq!(
            refusal(&doc),
            ("role.wip_cap".to_string(), expected.to_string())
        );
    }
    assert_eq!(ok(&repo, &["task", "show", "2"])["data"]["status"], "open");
    // Claiming what one already holds is not a new claim.
    let (code, doc) = as_agent(&repo, &ta, &["task", "claim", "1"]);
    assert_eq!(
        (code, doc["data"]["effect"].as_str()),
        (0, Some("unchanged"))
    );
    // The owner's assignment respects the target's role too.
    let (code, doc) = repo.json(&["task", "assign", "2", &b]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(refusal(&doc).0, "role.wip_cap");
    // Root is exempt from role checks.
    ok(&repo, &["task", "claim", "2"]);
    // Releasing frees the slot.
    let (code, doc) = as_agent(&repo, &ta, &["task", "release", "1"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = as_agent(&repo, &tb, &["task", "claim", "3"]);
    assert_eq!(code, 0, "{doc}");
    let list = ok(&repo, &["role", "list"]);
    let builder = list["data"]["roles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "builder")
        .unwrap()
        .clone();
    assert_eq!(
        builder,
        json!({"name": "builder", "grant": "rw", "wip": {"cap": 1, "active": 1}, "live_agents": 2, "summary": "Builds"})
    );
    let show = ok(&repo, &["role", "show", "builder"]);
    assert_eq!(show["data"]["active_tasks"][0]["ref"], "checkout/003-third");
    let ids: Vec<&str> = show["data"]["live_agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["id"].as_str().unwrap())
        .collect();
    let mut want = vec![a.as_str(), b.as_str()];
    want.sort();
    assert_eq!(ids, want);
}

#[test]
fn tasks_traced_outside_the_role_scope_are_refused() {
    let repo = setup("0");
    ok(
        &repo,
        &[
            "task",
            "add",
            "Docs",
            "--accept",
            "a",
            "--trace",
            "docs/x.md",
        ],
    );
    ok(
        &repo,
        &[
            "task",
            "add",
            "Secret",
            "--accept",
            "a",
            "--trace",
            "src/secret/key.rs",
        ],
    );
    ok(
        &repo,
        &[
            "task",
            "add",
            "Code",
            "--accept",
            "a",
            "--trace",
            "src/lib.rs",
        ],
    );
    ok(&repo, &["task", "add", "Untraced", "--accept", "a"]);
    let (id, token) = agent(&repo, "builder", 55, "rw");
    let (code, doc) = as_agent(&repo, &token, &["task", "claim", "1"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(
        refusal(&doc),
        (
            "role.out_of_scope".to_string(),
            "docs/x.md are outside role builder: `dacli ask checkout/001-docs \"…\" --to architect`, or ask a-root to assign a covering role.".to_string()
        )
    );
    let (code, doc) = as_agent(&repo, &token, &["task", "claim", "2"]);
    assert_eq!(code, 3, "out_of_scope beats scope: {doc}");
    assert_eq!(refusal(&doc).0, "role.out_of_scope");
    for n in ["3", "4"] {
        let (code, doc) = as_agent(&repo, &token, &["task", "claim", n]);
        assert_eq!(code, 0, "{n}: {doc}");
    }
    let (code, doc) = repo.json(&["task", "assign", "1", &id]);
    assert_eq!(code, 3);
    let (policy, next) = refusal(&doc);
    assert_eq!(policy, "role.out_of_scope");
    assert!(
        next.contains("assign it to an agent whose role covers them"),
        "{next}"
    );
    ok(&repo, &["task", "claim", "1"]);
}

#[test]
fn ask_follows_escalate_to_and_names_a_dead_end() {
    let repo = setup("0");
    ok(&repo, &["task", "add", "Shim", "--accept", "a"]);
    let (_, token) = agent(&repo, "builder", 56, "rw");
    let (code, doc) = as_agent(&repo, &token, &["ask", "1", "Which index?", "--no-block"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["to"], "architect");
    assert_eq!(doc["data"]["notices"], json!([]));
    // A hand edit leaves builder escalating to a role that does not exist.
    let text = std::fs::read_to_string(repo.ws("roles/builder.md")).unwrap();
    repo.write(
        ".dacli/roles/builder.md",
        text.replace(
            "escalate_to = [\"architect\", \"human\"]",
            "escalate_to = [\"ghost\", \"human\"]",
        ),
    );
    let (code, doc) = as_agent(&repo, &token, &["ask", "1", "Which index?", "--no-block"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        doc["data"]["to"], "human",
        "the route skips the missing edge"
    );
    assert_eq!(doc["data"]["notices"][0]["code"], "missing_edge");
    let message = doc["data"]["notices"][0]["message"].as_str().unwrap();
    assert!(message.contains("builder → ghost"), "{message}");
    repo.write(
        ".dacli/roles/builder.md",
        text.replace(
            "escalate_to = [\"architect\", \"human\"]",
            "escalate_to = [\"ghost\"]",
        ),
    );
    let out = repo
        .dacli(&["ask", "1", "Which index?", "--no-block", "--json"])
        .env("DACLI_AGENT", &token)
        .output()
        .unwrap();
    let doc = crate::support::one_json(&out.stdout);
    assert_eq!(
        doc["data"]["to"],
        Value::Null,
        "a dead end goes to the owner"
    );
    let codes: Vec<&str> = doc["data"]["notices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, vec!["missing_edge", "route_dead_end"]);
    let message = doc["data"]["notices"][1]["message"].as_str().unwrap();
    assert!(
        message.contains("role builder") && message.contains("ghost"),
        "{message}"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("dead-ends"), "{stderr}");
}

#[test]
fn role_rm_is_refused_while_the_role_is_in_use() {
    let repo = setup("0");
    ok(
        &repo,
        &[
            "shortcut",
            "add",
            "migrate",
            "--command",
            "true",
            "--effect",
            "write",
            "--summary",
            "M",
            "--role",
            "architect",
        ],
    );
    let (arch, _) = agent(&repo, "architect", 57, "rw");
    let (code, doc) = repo.json(&["role", "rm", "architect"]);
    assert_eq!(code, 3, "{doc}");
    let (policy, next) = refusal(&doc);
    assert_eq!(policy, "role.in_use");
    assert_eq!(
        next,
        format!(
            "Retire {arch} / drop architect from `escalate_to` of builder / drop architect from `roles` of shortcuts migrate first."
        )
    );
    assert!(repo.ws("roles/architect.md").exists());
    let (_, token) = agent(&repo, "builder", 58, "rw");
    let (code, doc) = as_agent(&repo, &token, &["role", "rm", "builder"]);
    assert_eq!(code, 3);
    assert_eq!(refusal(&doc).0, "role.not_owner");
    ok(&repo, &["agent", "retire", &arch]);
    ok(
        &repo,
        &["role", "edit", "builder", "--escalate-to", "human"],
    );
    ok(&repo, &["shortcut", "rm", "migrate"]);
    let doc = ok(&repo, &["role", "rm", "architect"]);
    assert_eq!(
        doc["data"],
        json!({"role": "architect", "effect": "applied"})
    );
    assert!(!repo.ws("roles/architect.md").exists());
}

#[test]
fn the_example_roles_read_cleanly() {
    let out = crate::support::dacli()
        .args(["-C", ".dacli-example", "role", "list", "--json"])
        .current_dir(crate::support::repo_root())
        .output()
        .unwrap();
    let doc = crate::support::one_json(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    assert!(doc.get("warnings").is_none(), "{doc}");
    let names: Vec<&str> = doc["data"]["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["architect", "builder", "planner", "reviewer"]);
    assert_eq!(
        doc["data"]["roles"][1]["wip"],
        json!({"cap": 3, "active": 2})
    );
}
