//! A listing over a tree with one bad file per FORMAT §4.4 reason returns every good object
//! plus one warning per bad file, with relative paths; an escaping symlink and a FIFO are
//! never opened (FORMAT §24 invariant 4).

use std::collections::BTreeMap;

use crate::support::Repo;

const GOOD_PROJECT: &str = "+++\nid = \"p-{slug}\"\nkind = \"project\"\ncreated = 2026-03-02T09:10:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJWEY52G6HAMVAWC8FMVE477\"\nstatus = \"active\"\nstage = \"build\"\n+++\n\n# Project {slug}\n";

fn project(slug: &str) -> String {
    GOOD_PROJECT.replace("{slug}", slug)
}

fn task(id: &str, rev: &str, extra: &str) -> String {
    format!(
        "+++\nid = \"t-{id}\"\nkind = \"task\"\ncreated = 2026-03-02T09:20:11Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"{rev}\"\npriority = \"must\"\n{extra}+++\n\n# A task\n\n## Acceptance\n- [ ] it works\n\n## Log\n- 2026-03-02T09:20:11Z a-root created\n"
    )
}

#[test]
fn status_lists_every_good_object_and_warns_once_per_bad_file() {
    let repo = Repo::initialized();
    repo.write(".dacli/projects/good/project.md", project("good"));
    let t = ".dacli/projects/good/tasks";
    repo.write(
        &format!("{t}/open/001-fine.md"),
        task(
            "01KJPXJ57RGDMEE50E5T1E877Q",
            "01KJPXJ57RGDMEE50E5T1E877Q",
            "",
        ),
    );
    // Envelope and encoding problems, each in its own project directory.
    let bad: [(&str, Vec<u8>); 9] = [
        ("nofront", b"# just markdown\n".to_vec()),
        ("unterminated", b"+++\nid = \"p-unterminated\"\n".to_vec()),
        ("toml", b"+++\nid = = 1\n+++\n".to_vec()),
        (
            "deep",
            format!("+++\na = {}1{}\n+++\n", "[".repeat(3000), "]".repeat(3000)).into_bytes(),
        ),
        (
            "conflict",
            b"+++\n<<<<<<< HEAD\nrev = \"A\"\n=======\nrev = \"B\"\n>>>>>>> theirs\n+++\n".to_vec(),
        ),
        ("nul", b"+++\nid = \"p-nul\"\x00\n+++\n".to_vec()),
        ("big", vec![b'x'; 1024 * 1024 + 1]),
        (
            "wrongkind",
            project("wrongkind")
                .replace("kind = \"project\"", "kind = \"task\"")
                .into_bytes(),
        ),
        (
            "schema",
            project("schema")
                .replace("status = \"active\"\n", "status = \"sleeping\"\n")
                .into_bytes(),
        ),
    ];
    for (slug, bytes) in &bad {
        repo.write(&format!(".dacli/projects/{slug}/project.md"), bytes);
    }
    repo.write(".dacli/projects/mismatch/project.md", project("other"));
    // A symlink leading out of the workspace and a FIFO: never opened.
    let outside = repo.write("secret.txt", "+++\nid = \"p-leak\"\n+++\n");
    std::fs::create_dir_all(repo.ws("projects/escape")).unwrap();
    std::os::unix::fs::symlink(&outside, repo.ws("projects/escape/project.md")).unwrap();
    std::fs::create_dir_all(repo.ws("projects/fifo")).unwrap();
    let fifo = repo.ws("projects/fifo/project.md");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // Task-level: two copies of one id, and a task outside the four status folders.
    let dup = "01KJPXMJCG2RPJX1CFJW2XNQKR";
    repo.write(
        &format!("{t}/open/002-dup.md"),
        task(dup, "01KJPXMJCG2RPJX1CFJW2XNQKR", ""),
    );
    repo.write(
        &format!("{t}/active/002-dup.md"),
        task(dup, "01KJSSCMFRW7NBCHZKGE19JXD9", "assignee = \"a-root\"\n"),
    );
    repo.write(
        &format!("{t}/archive/003-lost.md"),
        task(
            "01KJPXG1VG7319MATYQK8VQT34",
            "01KJPXG1VG7319MATYQK8VQT34",
            "",
        ),
    );

    let (code, doc) = repo.json(&["status"]);
    assert_eq!(code, 0, "{doc}");
    let projects: Vec<&str> = doc["data"]["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(projects, vec!["p-good"]);
    let counts = &doc["data"]["projects"][0]["counts"];
    assert_eq!(
        counts["open"], 1,
        "the duplicate's newer copy is active: {counts}"
    );
    assert_eq!(counts["active"], 1);

    let mut reasons: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for w in doc["warnings"].as_array().unwrap() {
        let path = w["path"].as_str().unwrap();
        assert!(path.starts_with(".dacli/"), "relative path: {path}");
        reasons
            .entry(w["reason"].as_str().unwrap().to_string())
            .or_default()
            .push(path.to_string());
    }
    let expect = [
        ("no_frontmatter", vec![".dacli/projects/nofront/project.md"]),
        (
            "unterminated_frontmatter",
            vec![".dacli/projects/unterminated/project.md"],
        ),
        ("toml", vec![".dacli/projects/toml/project.md"]),
        ("toml_depth", vec![".dacli/projects/deep/project.md"]),
        (
            "merge_conflict",
            vec![".dacli/projects/conflict/project.md"],
        ),
        ("encoding", vec![".dacli/projects/nul/project.md"]),
        ("too_large", vec![".dacli/projects/big/project.md"]),
        ("wrong_kind", vec![".dacli/projects/wrongkind/project.md"]),
        ("schema", vec![".dacli/projects/schema/project.md"]),
        ("id_mismatch", vec![".dacli/projects/mismatch/project.md"]),
        ("symlink_escape", vec![".dacli/projects/escape/project.md"]),
        ("not_regular", vec![".dacli/projects/fifo/project.md"]),
        (
            "duplicate_id",
            vec![
                ".dacli/projects/good/tasks/active/002-dup.md",
                ".dacli/projects/good/tasks/open/002-dup.md",
            ],
        ),
        (
            "unknown_folder",
            vec![".dacli/projects/good/tasks/archive/003-lost.md"],
        ),
    ];
    for (reason, paths) in expect {
        let mut got = reasons.remove(reason).unwrap_or_default();
        got.sort();
        assert_eq!(got, paths, "reason {reason}");
    }
    assert!(reasons.is_empty(), "unexpected warnings: {reasons:?}");
    let text = doc.to_string();
    assert!(
        !text.contains(repo.path().to_str().unwrap()),
        "no absolute path in output"
    );
}

#[test]
fn a_command_that_needs_a_malformed_object_fails_with_e_malformed_naming_file_and_line() {
    let repo = Repo::initialized();
    repo.write(
        ".dacli/agents/a-root.md",
        "+++\nid = \"a-root\"\nkind = \"agent\"\ngrant = rw\n+++\n",
    );
    let (code, doc) = repo.json(&["whoami"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["error"]["code"], "E_MALFORMED");
    let msg = doc["error"]["message"].as_str().unwrap();
    assert!(msg.contains(".dacli/agents/a-root.md"), "{msg}");
    assert!(msg.contains("line 4"), "{msg}");
}

#[test]
fn an_event_with_a_bad_checksum_is_reported_not_counted() {
    let repo = Repo::initialized();
    let body = "+++\nid = \"01KJSJCSD0D9PPNTSVE6C6J8MS\"\nkind = \"event\"\nevent_kind = \"comment\"\ncreated = 2026-03-03T10:02:44Z\ncreated_by = \"a-root\"\nabout = \"workspace\"\nchecksum = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"\n+++\n\nhello\n";
    repo.write(
        ".dacli/events/2026/03/03/01KJSJCSD0D9PPNTSVE6C6J8MS-a-root-comment.md",
        body,
    );
    let (code, doc) = repo.json(&["status"]);
    assert_eq!(code, 0);
    assert_eq!(doc["data"]["pending"]["events"], 0);
    assert_eq!(doc["warnings"][0]["reason"], "checksum");
    // With the right checksum it counts as a pending comment.
    let fixed = body.replace(
        "sha256:0000000000000000000000000000000000000000000000000000000000000000",
        &dacli::journal::checksum(body.as_bytes()),
    );
    repo.write(
        ".dacli/events/2026/03/03/01KJSJCSD0D9PPNTSVE6C6J8MS-a-root-comment.md",
        fixed,
    );
    let (_, doc) = repo.json(&["status"]);
    assert_eq!(doc["data"]["pending"]["events"], 1, "{doc}");
    assert_eq!(doc["data"]["pending"]["by_owner"]["a-root"], 1);
    assert!(doc.get("warnings").is_none());
}
