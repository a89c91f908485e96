//! The bundled example workspace reads cleanly through every command that exists, and no
//! command run here writes to it.

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::{dacli, one_json, repo_root};

/// The builder's token, documented in docs/FORMAT.md §6 (its hash is in the example).
const BUILDER_TOKEN: &str = "dacli_a-builder-01KJPX6ZT81TTNRTABC9KBJYTV_21da8978206f5c6671e0c07e9e115e4b9e30691c238642ea126a1e48cc11d357";

/// Every tracked file of `dir`: the derived index (`cache/`) and the lock files are
/// machine-local, written by readers, and never committed.
fn snapshot(dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        if ["cache", ".locks"].contains(&entry.file_name().to_string_lossy().as_ref()) {
            continue;
        }
        if path.is_dir() {
            snapshot(&path, out);
        } else {
            out.insert(path.display().to_string(), std::fs::read(&path).unwrap());
        }
    }
}

fn run(args: &[&str], token: Option<&str>) -> serde_json::Value {
    let mut cmd = dacli();
    cmd.current_dir(repo_root())
        .args(["-C", ".dacli-example"])
        .args(args)
        .arg("--json");
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    one_json(&out.stdout)
}

#[test]
fn the_example_reads_cleanly_and_is_never_written() {
    let example = repo_root().join(".dacli-example");
    let mut before = BTreeMap::new();
    snapshot(&example, &mut before);

    let status = run(&["status"], None);
    assert!(status.get("warnings").is_none(), "{status}");
    let data = &status["data"];
    assert_eq!(data["workspace"]["name"], "shop");
    let counts = &data["projects"][0]["counts"];
    for folder in ["open", "active", "blocked", "done"] {
        assert!(counts[folder].as_u64().unwrap() >= 1, "{folder}: {counts}");
    }
    assert!(data["pending"]["events"].as_u64().unwrap() >= 1);
    assert!(data["questions"]["open"].as_u64().unwrap() >= 1);

    let doctor = run(&["doctor"], None);
    for check in doctor["data"]["checks"].as_array().unwrap() {
        if [
            "malformed_files",
            "noncanonical_files",
            "duplicate_ids",
            "unknown_folders",
            "gitignore",
            "stale_temp_files",
        ]
        .contains(&check["name"].as_str().unwrap())
        {
            assert_eq!(check["status"], "ok", "{check}");
        }
    }

    let me = run(&["whoami"], Some(BUILDER_TOKEN));
    assert_eq!(
        me["data"]["agent"]["id"],
        "a-builder-01KJPX6ZT81TTNRTABC9KBJYTV"
    );
    assert_eq!(me["data"]["agent"]["role"], "builder");
    assert_eq!(me["data"]["source"], "token");
    assert!(!me["data"]["assigned"].as_array().unwrap().is_empty());
    assert_eq!(me["data"]["escalate_to"][0], "architect");

    let mut after = BTreeMap::new();
    snapshot(&example, &mut after);
    assert_eq!(before, after, "commands must not write the example");
}

/// The main human outputs, on the example with the clock pinned just after its last event.
#[test]
fn main_text_outputs_are_stable() {
    let cases: [(&str, &[&str]); 6] = [
        ("status_text", &["status"]),
        ("task_list_text", &["task", "list", "--all"]),
        ("task_show_text", &["task", "show", "checkout/004"]),
        ("wbs_text", &["wbs"]),
        ("threads_text", &["threads"]),
        ("next_text", &["next"]),
    ];
    for (name, args) in cases {
        let out = dacli()
            .current_dir(repo_root())
            .env("DACLI_TEST_CLOCK", "2026-03-06T12:00:00Z")
            .args(["-C", ".dacli-example"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        insta::assert_snapshot!(name, String::from_utf8(out.stdout).unwrap());
    }
}
