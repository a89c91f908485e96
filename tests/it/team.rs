//! The team commands as a lead uses them: spawning child identities, listing, showing and
//! drawing the lineage, retiring, and what a token can and cannot do afterwards.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{CLOCK, Repo, one_json, repo_root};

/// Every dacli process under the pinned seed mints the same ids; each spawn in these tests
/// gets its own seed so that agents differ, as they would with OS randomness.
static NEXT_SEED: AtomicU64 = AtomicU64::new(1000);

/// Runs `dacli <args> --json` as `token` (root when `None`) with a fresh seed.
fn run_as(repo: &Repo, token: Option<&str>, args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.push("--json");
    let mut cmd = pinned(repo, &all);
    cmd.env(
        "DACLI_TEST_SEED",
        NEXT_SEED.fetch_add(1, Ordering::Relaxed).to_string(),
    );
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    let out = cmd.output().expect("runs");
    (out.status.code().unwrap_or(-1), one_json(&out.stdout))
}

/// Spawns as `token` and returns (agent id, token); panics unless it succeeds.
fn spawn(repo: &Repo, token: Option<&str>, args: &[&str]) -> (String, String) {
    let mut all = vec!["agent", "spawn"];
    all.extend_from_slice(args);
    let (code, doc) = run_as(repo, token, &all);
    assert_eq!(code, 0, "{doc}");
    (
        doc["data"]["agent"]["id"].as_str().unwrap().to_string(),
        doc["data"]["token"].as_str().unwrap().to_string(),
    )
}

/// Spawns with a chosen seed (hence a known id order); panics unless it succeeds.
fn spawn_seeded(repo: &Repo, token: Option<&str>, grant: &str, seed: &str) -> (String, String) {
    let mut cmd = pinned(repo, &["agent", "spawn", "--grant", grant, "--json"]);
    cmd.env("DACLI_TEST_SEED", seed);
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    let out = cmd.output().expect("runs");
    let doc = one_json(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    (
        doc["data"]["agent"]["id"].as_str().unwrap().to_string(),
        doc["data"]["token"].as_str().unwrap().to_string(),
    )
}

fn write_role(repo: &Repo, name: &str, grant: &str) {
    repo.write(
        &format!(".dacli/roles/{name}.md"),
        format!(
            "+++\nkind = \"role\"\nname = \"{name}\"\ncreated = 2026-03-02T09:05:00Z\n\
             created_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJPWPBK0J5MSNHG3G461XDWA\"\n\
             summary = \"The {name}\"\ngrant = \"{grant}\"\n+++\n\n# {name}\n"
        ),
    );
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every file under `dir`, recursively, with its bytes.
fn all_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            out.extend(all_files(&path));
        } else {
            out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
    out.sort();
    out
}

fn agents_dir(repo: &Repo) -> Vec<(String, Vec<u8>)> {
    all_files(&repo.ws("agents"))
}

fn record(repo: &Repo, id: &str) -> String {
    std::fs::read_to_string(repo.ws(&format!("agents/{id}.md"))).unwrap()
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort();
    k
}

fn is_upper_ulid(s: &str) -> bool {
    s.len() == 26
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b.is_ascii_uppercase() && !b"ILOU".contains(&b)))
}

#[test]
fn spawn_without_role_writes_the_record_in_field_order_and_returns_the_documented_shape() {
    let repo = Repo::initialized();
    let (code, doc) = run_as(&repo, None, &["agent", "spawn", "--grant", "rw"]);
    assert_eq!(code, 0, "{doc}");
    let data = &doc["data"];
    assert_eq!(
        keys(data),
        ["agent", "env", "granted", "notices", "requested", "token"]
    );
    let id = data["agent"]["id"].as_str().unwrap();
    let ulid = id.strip_prefix("a-").unwrap();
    assert!(is_upper_ulid(ulid), "{id}");
    assert_eq!(
        data["agent"],
        json!({"id": id, "role": null, "grant": "rw", "status": "live", "parent": "a-root"})
    );
    assert_eq!(data["requested"], "rw");
    assert_eq!(data["granted"], "rw");
    assert_eq!(data["env"], "DACLI_AGENT");
    assert_eq!(data["notices"], json!([]));
    let token = data["token"].as_str().unwrap();
    let secret = token
        .strip_prefix(&format!("dacli_{id}_"))
        .expect("dacli_<id>_<secret>");
    assert_eq!(secret.len(), 64);
    assert!(
        secret
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );

    let expected = format!(
        "+++\nid = \"{id}\"\nkind = \"agent\"\ncreated = {CLOCK}\ncreated_by = \"a-root\"\n\
         owner = \"a-root\"\nrev = \"{ulid}\"\nparent = \"a-root\"\ngrant = \"rw\"\n\
         token_hash = \"sha256:{}\"\nstatus = \"live\"\n+++\n\n# {id}\n",
        sha256_hex(token.as_bytes())
    );
    assert_eq!(record(&repo, id), expected);
}

#[test]
fn spawn_with_a_role_names_the_agent_after_it_and_the_role_caps_the_grant() {
    let repo = Repo::initialized();
    write_role(&repo, "builder", "rw");
    write_role(&repo, "reviewer", "ro");

    let (code, doc) = run_as(
        &repo,
        None,
        &["agent", "spawn", "--grant", "rw", "--role", "builder"],
    );
    assert_eq!(code, 0, "{doc}");
    let id = doc["data"]["agent"]["id"].as_str().unwrap();
    assert!(
        is_upper_ulid(id.strip_prefix("a-builder-").unwrap()),
        "{id}"
    );
    assert_eq!(doc["data"]["agent"]["role"], "builder");
    assert_eq!(doc["data"]["granted"], "rw");
    assert_eq!(doc["data"]["notices"], json!([]));
    let text = record(&repo, id);
    assert!(
        text.contains("grant = \"rw\"\nrole = \"builder\"\ntoken_hash = "),
        "{text}"
    );
    assert!(text.ends_with("+++\n\n# builder\n"), "{text}");

    // The role's ceiling lowers an rw request and says which ceiling applied.
    let (code, doc) = run_as(
        &repo,
        None,
        &["agent", "spawn", "--grant", "rw", "--role", "reviewer"],
    );
    assert_eq!(code, 0, "{doc}");
    let data = &doc["data"];
    assert_eq!(data["requested"], "rw");
    assert_eq!(data["granted"], "ro");
    assert_eq!(data["agent"]["grant"], "ro");
    let notices = data["notices"].as_array().unwrap();
    assert_eq!(notices.len(), 1, "{data}");
    assert_eq!(notices[0]["code"], "grant_lowered");
    let message = notices[0]["message"].as_str().unwrap();
    assert!(message.contains("role reviewer"), "{message}");
    let id = data["agent"]["id"].as_str().unwrap();
    assert!(record(&repo, id).contains("grant = \"ro\"\nrole = \"reviewer\"\n"));

    // An ro request under an ro role is not "lowered".
    let (code, doc) = run_as(
        &repo,
        None,
        &["agent", "spawn", "--grant", "ro", "--role", "reviewer"],
    );
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["notices"], json!([]));
}

#[test]
fn an_ro_agent_cannot_spawn_and_a_child_never_exceeds_its_parent() {
    let repo = Repo::initialized();
    let (ro, ro_token) = spawn(&repo, None, &["--grant", "ro"]);
    let before = agents_dir(&repo);

    let (code, doc) = run_as(&repo, Some(&ro_token), &["agent", "spawn", "--grant", "ro"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["refused"]["policy"], "grant.read_only");
    assert!(
        doc["refused"]["next"].as_str().unwrap().contains("a-root"),
        "{doc}"
    );
    assert_eq!(agents_dir(&repo), before, "a refusal writes nothing");

    // Root may spawn under the ro agent, but the child inherits the ceiling.
    let (code, doc) = run_as(
        &repo,
        None,
        &["agent", "spawn", "--grant", "rw", "--parent", &ro],
    );
    assert_eq!(code, 0, "{doc}");
    let data = &doc["data"];
    assert_eq!(data["granted"], "ro");
    assert_eq!(data["agent"]["parent"], ro.as_str());
    assert_eq!(data["notices"][0]["code"], "grant_lowered");
    let message = data["notices"][0]["message"].as_str().unwrap();
    assert!(message.contains(&format!("parent {ro} is ro")), "{message}");
    let child = data["agent"]["id"].as_str().unwrap();
    let text = record(&repo, child);
    for line in [
        "created_by = \"a-root\"".to_string(),
        format!("owner = \"{ro}\""),
        format!("parent = \"{ro}\""),
        "grant = \"ro\"".to_string(),
    ] {
        assert!(text.contains(&line), "missing {line} in\n{text}");
    }
}

#[test]
fn parent_must_be_the_caller_or_a_live_descendant() {
    let repo = Repo::initialized();
    let (a, a_token) = spawn(&repo, None, &["--grant", "rw"]);
    let (b, _) = spawn(&repo, None, &["--grant", "rw"]);
    let (a1, a1_token) = spawn(&repo, Some(&a_token), &["--grant", "rw"]);
    let before = agents_dir(&repo);

    // A sibling's lineage and one's own ancestor are both outside.
    for (token, parent) in [
        (&a_token, &b),
        (&a1_token, &a),
        (&a_token, &"a-root".to_string()),
    ] {
        let (code, doc) = run_as(
            &repo,
            Some(token),
            &["agent", "spawn", "--grant", "rw", "--parent", parent],
        );
        assert_eq!(code, 3, "{doc}");
        assert_eq!(doc["refused"]["policy"], "agent.not_descendant");
        assert_eq!(
            doc["refused"]["next"],
            "Spawn under yourself or one of your descendants (`dacli agent tree`)."
        );
    }
    assert_eq!(agents_dir(&repo), before);

    // A descendant is fine: its parent and owner is the descendant, its creator the caller.
    let (code, doc) = run_as(
        &repo,
        Some(&a_token),
        &["agent", "spawn", "--grant", "rw", "--parent", &a1],
    );
    assert_eq!(code, 0, "{doc}");
    let grandchild = doc["data"]["agent"]["id"].as_str().unwrap();
    let text = record(&repo, grandchild);
    assert!(
        text.contains(&format!("created_by = \"{a}\"\nowner = \"{a1}\"\n")),
        "{text}"
    );

    // Root may name any live agent, but not a retired one.
    let (code, _) = run_as(
        &repo,
        None,
        &["agent", "spawn", "--grant", "rw", "--parent", &b],
    );
    assert_eq!(code, 0);
    let (code, doc) = run_as(&repo, None, &["agent", "retire", &b, "--cascade"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = run_as(
        &repo,
        None,
        &["agent", "spawn", "--grant", "rw", "--parent", &b],
    );
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["refused"]["policy"], "agent.not_descendant");

    // An agent that does not exist is not found.
    let (code, doc) = run_as(
        &repo,
        None,
        &[
            "agent",
            "spawn",
            "--grant",
            "rw",
            "--parent",
            "a-01KJPX6ZT81TTNRTABC9KBJYTV",
        ],
    );
    assert_eq!(code, 4, "{doc}");
    assert_eq!(doc["error"]["code"], "E_NOT_FOUND");
}

#[test]
fn spawn_rejects_bad_input_before_writing_anything() {
    let repo = Repo::initialized();
    let before = agents_dir(&repo);
    let cases: [(&[&str], i32, &str); 5] = [
        (&["--grant", "rw", "--role", "ghost"], 4, "E_NOT_FOUND"),
        (&["--grant", "rw", "--role", "root"], 2, "E_USAGE"),
        (&["--grant", "rw", "--role", "Not_A_Slug"], 2, "E_BAD_SLUG"),
        (&["--grant", "admin"], 2, "E_USAGE"),
        (&["--role", "builder"], 2, "E_USAGE"),
    ];
    for (args, exit, code) in cases {
        let mut all = vec!["agent", "spawn"];
        all.extend_from_slice(args);
        let (got, doc) = run_as(&repo, None, &all);
        assert_eq!(got, exit, "{args:?}: {doc}");
        assert_eq!(doc["error"]["code"], code, "{args:?}: {doc}");
    }
    assert_eq!(agents_dir(&repo), before);
}

#[test]
fn the_token_prints_alone_once_and_never_reaches_the_disk_or_other_output() {
    let repo = Repo::initialized();
    write_role(&repo, "builder", "rw");
    let out = repo
        .dacli(&["agent", "spawn", "--grant", "rw", "--role", "builder"])
        .env("DACLI_TEST_SEED", "99")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let token = stdout.strip_suffix('\n').expect("one line");
    assert!(
        !token.contains('\n') && token.starts_with("dacli_a-builder-"),
        "{stdout}"
    );
    let id = &token["dacli_".len()..token.rfind('_').unwrap()];
    assert!(
        stderr.contains(&format!("spawned {id} (builder, rw)")),
        "{stderr}"
    );
    assert!(!stderr.contains(token), "{stderr}");
    let secret = &token[token.rfind('_').unwrap() + 1..];

    // Use the workspace a little, with the token, then look everywhere.
    let mut printed = String::new();
    for args in [
        &["whoami"][..],
        &["agent", "list", "--status", "all"],
        &["agent", "show", id],
        &["agent", "tree", "--all"],
        &["status"],
    ] {
        let (code, doc) = run_as(&repo, Some(token), args);
        assert_eq!(code, 0, "{args:?}: {doc}");
        printed.push_str(&doc.to_string());
    }
    let out = repo
        .dacli(&["agent", "tree"])
        .env("DACLI_AGENT", token)
        .output()
        .unwrap();
    printed.push_str(&String::from_utf8_lossy(&out.stdout));
    printed.push_str(&String::from_utf8_lossy(&out.stderr));
    assert!(
        !printed.contains(secret),
        "the token is shown only at spawn"
    );
    assert!(!printed.contains("sha256:"), "nor its hash: {printed}");

    let files = all_files(&repo.ws(""));
    assert!(
        files.iter().any(|(p, _)| p.contains(id)),
        "the record exists"
    );
    for (path, bytes) in &files {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains(secret), "{path} holds the token's secret");
    }
}

#[test]
fn quiet_spawn_still_prints_the_token_and_nothing_else() {
    let repo = Repo::initialized();
    let out = repo
        .dacli(&["agent", "spawn", "--grant", "ro", "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.starts_with("dacli_a-") && stdout.lines().count() == 1,
        "{stdout}"
    );
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "");
}

#[test]
fn a_spawned_token_authenticates_and_a_bad_or_empty_one_never_means_root() {
    let repo = Repo::initialized();
    let (id, token) = spawn(&repo, None, &["--grant", "ro"]);
    let (code, doc) = run_as(&repo, Some(&token), &["whoami"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["agent"]["id"], id.as_str());
    assert_eq!(doc["data"]["agent"]["grant"], "ro");
    assert_eq!(doc["data"]["source"], "token");

    let mut tampered = token.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == '0' { '1' } else { '0' });
    let unknown_agent = token.replace(&id, "a-01KJPX6ZT81TTNRTABC9KBJYTV");
    let before = agents_dir(&repo);
    for (bad, policy) in [
        (tampered.as_str(), "identity.unknown_token"),
        (unknown_agent.as_str(), "identity.unknown_token"),
        ("dacli_a-root_x", "identity.unknown_token"),
        ("", "identity.empty_token"),
    ] {
        for args in [&["whoami"][..], &["agent", "spawn", "--grant", "rw"]] {
            let (code, doc) = run_as(&repo, Some(bad), args);
            assert_eq!(code, 3, "{bad:?} {args:?}: {doc}");
            assert_eq!(doc["refused"]["policy"], policy, "{bad:?}: {doc}");
        }
    }
    assert_eq!(
        agents_dir(&repo),
        before,
        "no refused token spawned anything"
    );
}

#[test]
fn list_filters_by_status_role_and_parent_sorted_by_id() {
    let repo = Repo::initialized();
    write_role(&repo, "builder", "rw");
    let (a, a_token) = spawn(&repo, None, &["--grant", "rw", "--role", "builder"]);
    let (b, _) = spawn(&repo, None, &["--grant", "ro"]);
    let (c, _) = spawn(&repo, Some(&a_token), &["--grant", "rw"]);
    let (code, _) = run_as(&repo, None, &["agent", "retire", &b]);
    assert_eq!(code, 0);

    let ids = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["agent", "list"];
        all.extend_from_slice(args);
        let (code, doc) = run_as(&repo, None, &all);
        assert_eq!(code, 0, "{doc}");
        doc["data"]["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["id"].as_str().unwrap().to_string())
            .collect()
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(
        ids(&[]),
        sorted(vec![a.clone(), c.clone(), "a-root".into()])
    );
    assert_eq!(ids(&["--status", "retired"]), vec![b.clone()]);
    assert_eq!(
        ids(&["--status", "all"]),
        sorted(vec![a.clone(), b.clone(), c.clone(), "a-root".into()])
    );
    assert_eq!(ids(&["--role", "builder"]), vec![a.clone()]);
    assert_eq!(ids(&["--parent", &a]), vec![c.clone()]);
    assert_eq!(
        ids(&["--parent", "a-root", "--status", "all"]),
        sorted(vec![a.clone(), b.clone()])
    );

    let (_, doc) = run_as(&repo, None, &["agent", "list", "--role", "builder"]);
    assert_eq!(
        doc["data"],
        json!({"agents": [{"id": a, "role": "builder", "grant": "rw", "status": "live", "parent": "a-root"}]})
    );
    let (code, doc) = run_as(&repo, None, &["agent", "list", "--status", "gone"]);
    assert_eq!(code, 2, "{doc}");
}

/// A project with one open task owned by `owner`, and a pending claim of it by `claimer`.
fn task_claimed_by_event(repo: &Repo, owner: &str, claimer: &str) -> &'static str {
    repo.write(
        ".dacli/projects/demo/project.md",
        "+++\nid = \"p-demo\"\nkind = \"project\"\ncreated = 2026-03-02T09:00:00Z\n\
         created_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJPWD70W6KQ9D0K5GFWVSMMT\"\n\
         status = \"active\"\nstage = \"build\"\n+++\n\n# Demo\n",
    );
    let task = "t-01KJPXJ57RGDMEE50E5T1E877Q";
    repo.write(
        ".dacli/projects/demo/tasks/open/001-first-task.md",
        format!(
            "+++\nid = \"{task}\"\nkind = \"task\"\ncreated = 2026-03-02T09:20:11Z\n\
             created_by = \"a-root\"\nowner = \"{owner}\"\nrev = \"01KJPXJ57RGDMEE50E5T1E877Q\"\n\
             +++\n\n# First task\n\n## Acceptance\n- [ ] it works\n\n## Log\n"
        ),
    );
    let event = "01KJPX6ZT80000000000000001";
    let unsigned = format!(
        "+++\nid = \"{event}\"\nkind = \"event\"\nevent_kind = \"claim\"\n\
         created = 2026-03-02T09:14:05Z\ncreated_by = \"{claimer}\"\nabout = \"{task}\"\n+++\n"
    );
    let sum = sha256_hex(unsigned.as_bytes());
    let signed = unsigned.replacen(
        &format!("about = \"{task}\"\n"),
        &format!("about = \"{task}\"\nchecksum = \"sha256:{sum}\"\n"),
        1,
    );
    repo.write(
        &format!(".dacli/events/2026/03/02/{event}-{claimer}-claim.md"),
        signed,
    );
    task
}

#[test]
fn show_has_the_documented_shape_with_folded_assignments_and_ownership() {
    let repo = Repo::initialized();
    let (a, a_token) = spawn(&repo, None, &["--grant", "rw"]);
    let (child, _) = spawn(&repo, Some(&a_token), &["--grant", "ro"]);
    let task = task_claimed_by_event(&repo, &a, &a);
    repo.write(
        ".dacli/queues/nightly.md",
        format!(
            "+++\nid = \"q-nightly\"\nkind = \"queue\"\ncreated = 2026-03-02T09:30:00Z\n\
             created_by = \"a-root\"\nowner = \"{a}\"\nrev = \"01KJZ8XQJ0YAG8BGHHV4YFA08F\"\n\
             cursor = 1\n+++\n\n# Nightly\n\n## Steps\n1. `true`\n"
        ),
    );

    let (code, doc) = run_as(&repo, None, &["agent", "show", &a]);
    assert_eq!(code, 0, "{doc}");
    assert!(doc.get("warnings").is_none(), "{doc}");
    assert_eq!(
        doc["data"],
        json!({
            "agent": {"id": a, "role": null, "grant": "rw", "status": "live", "parent": "a-root"},
            "owner": "a-root",
            "created": CLOCK,
            "created_by": "a-root",
            "retired_at": null,
            "retired_by": null,
            "children": [child],
            "assigned": [{
                "id": task,
                "ref": "demo/001-first-task",
                "project": "p-demo",
                "number": 1,
                "title": "First task"
            }],
            "owns": {"tasks": 1, "queues": 1}
        })
    );

    // Root owns nothing here and has one child.
    let (_, doc) = run_as(&repo, None, &["agent", "show", "a-root"]);
    assert_eq!(doc["data"]["agent"]["parent"], Value::Null);
    assert_eq!(doc["data"]["children"], json!([a]));
    assert_eq!(doc["data"]["owns"], json!({"tasks": 0, "queues": 0}));

    let (code, doc) = run_as(
        &repo,
        None,
        &["agent", "show", "a-01KJPX6ZT81TTNRTABC9KBJYTV"],
    );
    assert_eq!(code, 4, "{doc}");
    let (code, _) = run_as(&repo, None, &["agent", "show", "../config"]);
    assert_eq!(code, 4);
}

#[test]
fn tree_nests_children_by_id_and_shows_retired_agents_only_with_all() {
    let repo = Repo::initialized();
    let (a, a_token) = spawn(&repo, None, &["--grant", "rw"]);
    let (b, _) = spawn(&repo, None, &["--grant", "ro"]);
    let (a1, _) = spawn(&repo, Some(&a_token), &["--grant", "rw"]);
    let (a2, _) = spawn(&repo, Some(&a_token), &["--grant", "rw"]);
    let (code, _) = run_as(&repo, Some(&a_token), &["agent", "retire", &a2]);
    assert_eq!(code, 0);

    let view = |id: &str, grant: &str, status: &str, parent: &str| json!({"id": id, "role": null, "grant": grant, "status": status, "parent": parent});
    let mut top = [
        (
            a.clone(),
            json!({"agent": view(&a, "rw", "live", "a-root"), "children": [
                {"agent": view(&a1, "rw", "live", &a), "children": []}
            ]}),
        ),
        (
            b.clone(),
            json!({"agent": view(&b, "ro", "live", "a-root"), "children": []}),
        ),
    ];
    top.sort_by(|x, y| x.0.cmp(&y.0));
    let (code, doc) = run_as(&repo, None, &["agent", "tree"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        doc["data"],
        json!({"root": {
            "agent": {"id": "a-root", "role": "root", "grant": "rw", "status": "live", "parent": null},
            "children": top.iter().map(|(_, n)| n.clone()).collect::<Vec<_>>()
        }})
    );

    let (_, doc) = run_as(&repo, None, &["agent", "tree", &a, "--all"]);
    let mut kids = vec![
        json!({"agent": view(&a1, "rw", "live", &a), "children": []}),
        json!({"agent": view(&a2, "rw", "retired", &a), "children": []}),
    ];
    kids.sort_by(|x, y| x["agent"]["id"].as_str().cmp(&y["agent"]["id"].as_str()));
    assert_eq!(
        doc["data"],
        json!({"root": {"agent": view(&a, "rw", "live", "a-root"), "children": kids}})
    );

    let out = pinned(&repo, &["agent", "tree", &a]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text,
        format!("{a} (no role, rw)\n└── {a1} (no role, rw)\n"),
        "the retired child is hidden"
    );
    let (code, _) = run_as(
        &repo,
        None,
        &["agent", "tree", "a-01KJPX6ZT81TTNRTABC9KBJYTV"],
    );
    assert_eq!(code, 4);
}

#[test]
fn retire_changes_only_the_retirement_fields_and_the_token_is_refused_from_then_on() {
    let repo = Repo::initialized();
    let (a, a_token) = spawn(&repo, None, &["--grant", "rw"]);
    // Hand edits survive a rewrite: a comment, an unknown key and the [ext] table.
    let path = repo.ws(&format!("agents/{a}.md"));
    let original = std::fs::read_to_string(&path).unwrap();
    let edited = original
        .replacen(
            "grant = \"rw\"\n",
            "grant = \"rw\" # fixed at spawn\nnickname = \"ada\"\n",
            1,
        )
        .replacen(
            "status = \"live\"\n",
            "status = \"live\"  # since spawn\n\n[ext]\ntool = \"x\"\n",
            1,
        );
    std::fs::write(&path, &edited).unwrap();

    let (code, doc) = run_as(&repo, None, &["agent", "retire", &a]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"], json!({"retired": [a], "effect": "applied"}));
    let after = std::fs::read_to_string(&path).unwrap();
    let old_rev = format!("rev = \"{}\"", a.strip_prefix("a-").unwrap());
    let expected = edited
        .replacen("status = \"live\"  #", "status = \"retired\"  #", 1)
        .replacen(
            "# since spawn\n",
            &format!("# since spawn\nretired_at = {CLOCK}\nretired_by = \"a-root\"\n"),
            1,
        );
    let new_rev_line = after
        .lines()
        .find(|l| l.starts_with("rev = "))
        .unwrap()
        .to_string();
    assert_ne!(new_rev_line, old_rev, "a rewrite takes a new rev");
    assert_eq!(after, expected.replacen(&old_rev, &new_rev_line, 1));

    // The token stops working everywhere, with who, when and whom to report to.
    for args in [
        &["whoami"][..],
        &["agent", "list"],
        &["agent", "spawn", "--grant", "ro"],
    ] {
        let (code, doc) = run_as(&repo, Some(&a_token), args);
        assert_eq!(code, 3, "{args:?}: {doc}");
        assert_eq!(doc["refused"]["policy"], "identity.retired");
        assert_eq!(
            doc["refused"]["next"],
            format!("{a} was retired by a-root at {CLOCK}: stop and report to a-root.")
        );
    }

    // Retiring again changes nothing.
    let (code, doc) = run_as(&repo, None, &["agent", "retire", &a]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"], json!({"retired": [], "effect": "unchanged"}));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), after);
}

#[test]
fn the_owner_retires_its_child_and_the_record_names_it() {
    let repo = Repo::initialized();
    let (a, a_token) = spawn(&repo, None, &["--grant", "rw"]);
    let (child, child_token) = spawn(&repo, Some(&a_token), &["--grant", "rw"]);
    let (code, doc) = run_as(&repo, Some(&a_token), &["agent", "retire", &child]);
    assert_eq!(code, 0, "{doc}");
    assert!(record(&repo, &child).contains(&format!("retired_by = \"{a}\"\n")));
    let (code, doc) = run_as(&repo, Some(&child_token), &["whoami"]);
    assert_eq!(code, 3);
    assert_eq!(
        doc["refused"]["next"],
        format!("{child} was retired by {a} at {CLOCK}: stop and report to {a}.")
    );
}

#[test]
fn retire_refusals_name_the_policy_and_write_nothing() {
    let repo = Repo::initialized();
    let (a, a_token) = spawn(&repo, None, &["--grant", "rw"]);
    let (b, _) = spawn(&repo, None, &["--grant", "rw"]);
    let (a1, _) = spawn(&repo, Some(&a_token), &["--grant", "rw"]);
    let (_, ro_token) = spawn(&repo, None, &["--grant", "ro"]);
    let before = agents_dir(&repo);

    let cases: Vec<(Option<&str>, Vec<&str>, &str, String)> = vec![
        (
            Some(&a_token),
            vec![&b],
            "agent.not_owner",
            format!("{b} belongs to a-root; ask it or a-root."),
        ),
        (
            Some(&a_token),
            vec![&a],
            "agent.not_owner",
            format!("{a} belongs to a-root; ask it or a-root."),
        ),
        (
            None,
            vec!["a-root"],
            "agent.is_root",
            "a-root cannot be retired; retire the agents below it.".into(),
        ),
        (
            Some(&a_token),
            vec!["a-root"],
            "agent.is_root",
            "a-root cannot be retired; retire the agents below it.".into(),
        ),
        (
            None,
            vec![&a],
            "agent.has_live_children",
            format!(
                "Retire {a1} first, or ask a-root to use `--cascade` (`dacli agent retire {a} --cascade`)."
            ),
        ),
        (
            Some(&a_token),
            vec![&a1, "--cascade"],
            "grant.root_required",
            format!("Ask a-root or the human to run `dacli agent retire {a1} --cascade`."),
        ),
    ];
    for (token, args, policy, next) in cases {
        let mut all = vec!["agent", "retire"];
        all.extend(args.iter().copied());
        let (code, doc) = run_as(&repo, token, &all);
        assert_eq!(code, 3, "{args:?}: {doc}");
        assert_eq!(doc["refused"]["policy"], policy, "{args:?}: {doc}");
        assert_eq!(doc["refused"]["next"], next.as_str(), "{args:?}");
    }
    let (code, doc) = run_as(&repo, Some(&ro_token), &["agent", "retire", &a1]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["refused"]["policy"], "grant.read_only");
    assert_eq!(agents_dir(&repo), before, "refusals wrote nothing");

    let (code, doc) = run_as(
        &repo,
        None,
        &["agent", "retire", "a-01KJPX6ZT81TTNRTABC9KBJYTV"],
    );
    assert_eq!(code, 4, "{doc}");
    assert_eq!(doc["error"]["code"], "E_NOT_FOUND");
}

#[test]
fn root_cascade_retires_live_descendants_deepest_first() {
    let repo = Repo::initialized();
    // a → a1 → a2 → a3, and a → b1. The seeds are picked so that id order disagrees with
    // depth (a1 < a2 < a < a3 < b1): only a deepest-first walk retires them in one pass.
    let (a, a_token) = spawn_seeded(&repo, None, "rw", "1");
    let (a1, a1_token) = spawn_seeded(&repo, Some(&a_token), "rw", "11");
    let (b1, _) = spawn_seeded(&repo, Some(&a_token), "ro", "3");
    let (a2, a2_token) = spawn_seeded(&repo, Some(&a1_token), "rw", "6");
    let (a3, _) = spawn_seeded(&repo, Some(&a2_token), "rw", "5");
    assert!(
        a1 < a2 && a2 < a && a < a3 && a3 < b1,
        "seeds no longer give that order"
    );
    let (b, b_token) = spawn(&repo, None, &["--grant", "rw"]);

    let (code, doc) = run_as(&repo, None, &["agent", "retire", &a, "--cascade"]);
    assert_eq!(code, 0, "{doc}");
    let mut depth_one = vec![a1.clone(), b1.clone()];
    depth_one.sort();
    let expected: Vec<String> = [vec![a3.clone(), a2.clone()], depth_one, vec![a.clone()]].concat();
    assert_eq!(
        doc["data"],
        json!({"retired": expected, "effect": "applied"})
    );
    for id in [&a, &a1, &a2, &a3, &b1] {
        assert!(record(&repo, id).contains("status = \"retired\"\n"), "{id}");
    }
    // The sibling lineage is untouched and still works.
    assert!(record(&repo, &b).contains("status = \"live\"\n"));
    let (code, _) = run_as(&repo, Some(&b_token), &["whoami"]);
    assert_eq!(code, 0);
    let (code, doc) = run_as(&repo, Some(&a1_token), &["whoami"]);
    assert_eq!(code, 3);
    assert_eq!(doc["refused"]["policy"], "identity.retired");
}

#[test]
fn the_example_workspace_reads_as_documented() {
    let example = repo_root().join(".dacli-example");
    let before = all_files(&example);
    let run = |args: &[&str]| {
        let out = crate::support::dacli()
            .current_dir(repo_root())
            .args(["-C", ".dacli-example"])
            .args(args)
            .arg("--json")
            .env(
                "DACLI_AGENT",
                "dacli_a-planner-01KJPXBASP11G0W484T2TGEMDX_e077b784fd1cbfedb9ecfbc5634cdf513e3a8b237fca8e910c1623bf36a2ffac",
            )
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        one_json(&out.stdout)
    };
    let list = run(&["agent", "list"]);
    assert_eq!(
        list["data"]["agents"][0],
        json!({"id": "a-builder-01KJPX6ZT81TTNRTABC9KBJYTV", "role": "builder", "grant": "rw", "status": "live", "parent": "a-root"})
    );
    assert_eq!(list["data"]["agents"].as_array().unwrap().len(), 4);
    let tree = run(&["agent", "tree"]);
    let children: Vec<&str> = tree["data"]["root"]["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["agent"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        children,
        [
            "a-builder-01KJPX6ZT81TTNRTABC9KBJYTV",
            "a-planner-01KJPXBASP11G0W484T2TGEMDX",
            "a-reviewer-01KJPX9WK0VH0D88BH59TARTNH"
        ]
    );
    let show = run(&["agent", "show", "a-builder-01KJPX6ZT81TTNRTABC9KBJYTV"]);
    let assigned: Vec<&str> = show["data"]["assigned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["ref"].as_str().unwrap())
        .collect();
    assert!(
        assigned.contains(&"checkout/004-add-rounding-shim"),
        "{show}"
    );
    assert_eq!(show["data"]["created"], "2026-03-02T09:14:05Z");
    assert_eq!(all_files(&example), before, "reads never write");
}

/// These tests pin the clock for every run (their ids are ordered by chosen seeds).
fn pinned(repo: &Repo, args: &[&str]) -> assert_cmd::Command {
    let mut cmd = repo.dacli(args);
    cmd.env("DACLI_TEST_CLOCK", crate::support::CLOCK);
    cmd
}
