//! The knowledge slice (COMMANDS.md §6): notes, risks and the glossary, run as a user would
//! through the real binary, checking exit codes, refusal policies, JSON shapes and the files
//! on disk.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::support::{Repo, one_json, repo_root};

const REVIEWER: &str = "dacli_a-reviewer-01KJPX9WK0VH0D88BH59TARTNH_e5070587f1296ef5a208601616e9c80fc038714786f9c48c2eb333822dcfb45a";
const PLANNER: &str = "dacli_a-planner-01KJPXBASP11G0W484T2TGEMDX_e077b784fd1cbfedb9ecfbc5634cdf513e3a8b237fca8e910c1623bf36a2ffac";
const REVIEWER_ID: &str = "a-reviewer-01KJPX9WK0VH0D88BH59TARTNH";
const PLANNER_ID: &str = "a-planner-01KJPXBASP11G0W484T2TGEMDX";
const TASK_ID: &str = "t-01KJPXJ57RGDMEE50E5T1E877Q";
const TASK_FILE: &str = ".dacli/projects/checkout/tasks/open/004-add-rounding-shim.md";

const REJECTED_NEXT: &str = "Add `--rejected`: what you considered and did not choose, and why; it is what makes the decision safe to revisit.";

fn project_md(slug: &str, owner: &str, status: &str) -> String {
    format!(
        "+++\nid = \"p-{slug}\"\nkind = \"project\"\ncreated = 2026-03-02T08:00:00Z\ncreated_by = \"a-root\"\nowner = \"{owner}\"\nrev = \"01KJPWD6M0NXPMMVRRH914WRBV\"\nstatus = \"{status}\"\nstage = \"build\"\n+++\n\n# Project {slug}\n\n## Vision\nV.\n\n## Goal\nG.\n\n## Constraints\n\n## Out of scope\n\n## Success criteria\n"
    )
}

const TASK: &str = "+++\nid = \"t-01KJPXJ57RGDMEE50E5T1E877Q\"\nkind = \"task\"\ncreated = 2026-03-02T09:20:11Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJPXJ57RGDMEE50E5T1E877Q\"\npriority = \"must\"\n+++\n\n# Add the rounding shim\n\n## Acceptance\n- [ ] Every caller goes through the shim\n\n## Log\n- 2026-03-02T09:20:11Z a-root created\n";

/// An initialised workspace with the active project `checkout` (owned by root), one task in
/// it (number 4), and the example's ro reviewer and rw planner.
fn workspace() -> Repo {
    let repo = Repo::initialized();
    repo.write(
        ".dacli/projects/checkout/project.md",
        project_md("checkout", "a-root", "active"),
    );
    repo.write(TASK_FILE, TASK);
    for agent in [REVIEWER_ID, PLANNER_ID] {
        let rel = format!("agents/{agent}.md");
        let bytes = std::fs::read(repo_root().join(".dacli-example").join(&rel)).unwrap();
        repo.write(&format!(".dacli/{rel}"), bytes);
    }
    repo
}

/// Runs dacli with `--json` as `token` (root when `None`) at the pinned clock `clock`; every
/// creating call in a test gets its own clock so that ids and `created` differ.
fn run(repo: &Repo, token: Option<&str>, clock: &str, args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.push("--json");
    let mut cmd = repo.dacli(&all);
    cmd.env("DACLI_TEST_CLOCK", clock);
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    let out = cmd.output().unwrap();
    (out.status.code().unwrap_or(-1), one_json(&out.stdout))
}

fn root(repo: &Repo, args: &[&str]) -> (i32, Value) {
    run(repo, None, crate::support::CLOCK, args)
}

/// Every file under `.dacli/` except the runtime lock files, with its bytes.
fn snapshot(repo: &Repo) -> BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            // Runtime locks and the derived index (FORMAT §21) are not objects.
            if rel == ".locks" || rel == "cache" {
                continue;
            }
            if path.is_dir() {
                walk(&path, base, out);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let base = repo.path().join(".dacli");
    let mut out = BTreeMap::new();
    walk(&base, &base, &mut out);
    out
}

/// Asserts a refusal: exit 3, the policy, and that nothing under `.dacli/` changed.
fn assert_refused(
    repo: &Repo,
    result: (i32, Value),
    policy: &str,
    before: &BTreeMap<String, Vec<u8>>,
) -> Value {
    let (code, doc) = result;
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["ok"], false, "{doc}");
    assert_eq!(doc["refused"]["policy"], policy, "{doc}");
    assert_eq!(&snapshot(repo), before, "a refusal must write nothing");
    doc["refused"].clone()
}

fn read(repo: &Repo, rel: &str) -> String {
    std::fs::read_to_string(repo.at(rel)).unwrap()
}

/// The frontmatter keys of a file, in order.
fn keys(text: &str) -> Vec<String> {
    let front = text
        .strip_prefix("+++\n")
        .unwrap()
        .split("\n+++\n")
        .next()
        .unwrap();
    front
        .lines()
        .filter_map(|l| l.split_once(" = ").map(|(k, _)| k.to_string()))
        .collect()
}

fn body(text: &str) -> &str {
    text.split_once("\n+++\n\n").unwrap().1
}

fn doctor_check(repo: &Repo, name: &str) -> Value {
    let (code, doc) = root(repo, &["doctor"]);
    assert_eq!(code, 0, "{doc}");
    doc["data"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap()
        .clone()
}

// ---------------------------------------------------------------------------------- notes

#[test]
fn a_decision_without_rejected_is_refused_and_says_why_rejected_alternatives_matter() {
    let repo = workspace();
    let before = snapshot(&repo);
    let r = assert_refused(
        &repo,
        root(
            &repo,
            &[
                "note",
                "add",
                "decision",
                "Round once",
                "--chose",
                "Round at the boundary",
                "--because",
                "One place to test",
            ],
        ),
        "note.decision_incomplete",
        &before,
    );
    assert_eq!(r["next"], REJECTED_NEXT);
    let reason = r["reason"].as_str().unwrap();
    assert!(reason.contains("`--rejected`"), "{reason}");
    assert!(
        reason.contains("overlooked"),
        "the reason says why: {reason}"
    );
    assert!(
        !reason.contains("`--chose`"),
        "only what is missing: {reason}"
    );

    // An empty --rejected is no rejected alternative either.
    let r = assert_refused(
        &repo,
        root(
            &repo,
            &[
                "note",
                "add",
                "decision",
                "Round once",
                "--chose",
                "x",
                "--rejected",
                "  ",
                "--because",
                "y",
            ],
        ),
        "note.decision_incomplete",
        &before,
    );
    assert_eq!(r["next"], REJECTED_NEXT);

    // Missing --chose and --because only: the next names them.
    let r = assert_refused(
        &repo,
        root(
            &repo,
            &[
                "note",
                "add",
                "decision",
                "Round once",
                "--rejected",
                "Per line",
            ],
        ),
        "note.decision_incomplete",
        &before,
    );
    let next = r["next"].as_str().unwrap();
    assert!(
        next.contains("`--chose`") && next.contains("`--because`"),
        "{next}"
    );
}

#[test]
fn a_decision_is_written_with_its_sections_in_format_order() {
    let repo = workspace();
    // Flags in a scrambled order; the file has Chose, Rejected, Because, then the body.
    let (code, doc) = root(
        &repo,
        &[
            "note",
            "add",
            "decision",
            "Round once, at the boundary",
            "--because",
            "One rounding point means one place to test.",
            "--body",
            "See the call-site list.",
            "--rejected",
            "Rounding each line item: the sum drifts.",
            "--chose",
            "Round half-even once.",
            "--about",
            "4",
            "--tag",
            "money",
            "--tag",
            "money",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    let note = &doc["data"]["note"];
    assert_eq!(doc["data"]["effect"], "created");
    assert_eq!(doc["data"]["event"], Value::Null);
    assert_eq!(note["kind"], "decision");
    assert_eq!(note["scope"], "project");
    assert_eq!(
        note["about"], TASK_ID,
        "--about is stored as the resolved full id"
    );
    assert_eq!(note["pending"], false);
    assert_eq!(note["severity"], Value::Null);
    let path = note["path"].as_str().unwrap();
    assert_eq!(
        path,
        ".dacli/projects/checkout/notes/decisions/01KJPWD6M0FR0SSA51CH3QTY01-round-once-at-the-boundary.md"
    );
    let text = read(&repo, path);
    assert_eq!(
        keys(&text),
        [
            "id",
            "kind",
            "note_kind",
            "created",
            "created_by",
            "scope",
            "about",
            "tags"
        ]
    );
    let id = note["id"].as_str().unwrap();
    assert!(text.contains(&format!("id = \"{id}\"\n")));
    assert!(
        text.contains("created = 2026-03-02T09:00:00Z\n"),
        "created is the ULID's second"
    );
    assert!(text.contains(&format!("about = \"{TASK_ID}\"\n")));
    assert!(
        text.contains("tags = [\"money\"]\n"),
        "tags are de-duplicated"
    );
    assert_eq!(
        body(&text),
        "# Round once, at the boundary\n\n## Chose\nRound half-even once.\n\n## Rejected\nRounding each line item: the sum drifts.\n\n## Because\nOne rounding point means one place to test.\n\nSee the call-site list.\n"
    );
}

#[test]
fn an_rw_finding_about_a_task_is_a_note_file_and_leaves_the_task_alone() {
    let repo = workspace();
    let (code, doc) = root(
        &repo,
        &[
            "note",
            "add",
            "finding",
            "Refund path rounds twice",
            "--severity",
            "major",
            "--about",
            "add-rounding-shim",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["effect"], "created");
    let note = &doc["data"]["note"];
    assert_eq!(note["about"], TASK_ID);
    assert_eq!(note["severity"], "major");
    let text = read(&repo, note["path"].as_str().unwrap());
    assert_eq!(
        keys(&text),
        [
            "id",
            "kind",
            "note_kind",
            "created",
            "created_by",
            "scope",
            "about",
            "severity"
        ]
    );
    assert_eq!(body(&text), "# Refund path rounds twice\n");
    // Format 1 writes `finding` Log lines from events only: the task file keeps its bytes.
    assert_eq!(read(&repo, TASK_FILE), TASK);
    assert!(
        !repo.at(".dacli/events").exists(),
        "and no event is written"
    );
}

#[test]
fn a_metric_needs_goal_question_and_metric_and_is_written_in_that_order() {
    let repo = workspace();
    let before = snapshot(&repo);
    let r = assert_refused(
        &repo,
        root(
            &repo,
            &[
                "note",
                "add",
                "metric",
                "Cents per day",
                "--goal",
                "Totals agree",
                "--metric",
                "Orders off by a cent",
            ],
        ),
        "note.metric_incomplete",
        &before,
    );
    assert_eq!(
        r["next"],
        "Give `--goal`, then `--question`, then `--metric`."
    );
    assert!(
        r["reason"].as_str().unwrap().contains("`--question`"),
        "{r}"
    );

    let (code, doc) = root(
        &repo,
        &[
            "note",
            "add",
            "metric",
            "Cents per day",
            "--metric",
            "Orders off by a cent per day.",
            "--question",
            "Do totals drift?",
            "--goal",
            "Totals agree.",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    let text = read(&repo, doc["data"]["note"]["path"].as_str().unwrap());
    assert_eq!(
        body(&text),
        "# Cents per day\n\n## Goal\nTotals agree.\n\n## Question\nDo totals drift?\n\n## Metric\nOrders off by a cent per day.\n"
    );
    assert_eq!(
        keys(&text),
        ["id", "kind", "note_kind", "created", "created_by", "scope"]
    );
}

#[test]
fn a_finding_needs_a_severity_for_rw_and_ro_alike() {
    let repo = workspace();
    let before = snapshot(&repo);
    for token in [None, Some(REVIEWER)] {
        let r = assert_refused(
            &repo,
            run(
                &repo,
                token,
                "2026-03-02T09:00:00Z",
                &["note", "add", "finding", "Refund rounds twice"],
            ),
            "note.finding_incomplete",
            &before,
        );
        assert_eq!(
            r["next"],
            "Add `--severity major` (fix not obvious), `moderate` (clear, needs review) or `minor`."
        );
    }
}

#[test]
fn an_ro_agent_may_not_write_decisions_metrics_or_refs() {
    let repo = workspace();
    let before = snapshot(&repo);
    for args in [
        &[
            "note",
            "add",
            "decision",
            "D",
            "--chose",
            "a",
            "--rejected",
            "b",
            "--because",
            "c",
            "--about",
            "4",
        ][..],
        &[
            "note",
            "add",
            "metric",
            "M",
            "--goal",
            "a",
            "--question",
            "b",
            "--metric",
            "c",
            "--about",
            "4",
        ][..],
        &["note", "add", "ref", "R", "--about", "4"][..],
    ] {
        let r = assert_refused(
            &repo,
            run(&repo, Some(REVIEWER), crate::support::CLOCK, args),
            "grant.read_only",
            &before,
        );
        assert_eq!(
            r["next"],
            "Record it as a finding, or `dacli ask 4 \"…\"` so an rw agent answers with `--as decision`.",
        );
    }
}

#[test]
fn an_ro_finding_becomes_a_checksummed_event_listed_as_pending() {
    let repo = workspace();
    let task_before = read(&repo, TASK_FILE);
    let (code, doc) = run(
        &repo,
        Some(REVIEWER),
        crate::support::CLOCK,
        &[
            "note",
            "add",
            "finding",
            "Refund path rounds a second time",
            "--severity",
            "major",
            "--about",
            "checkout/004",
            "--private",
            "--body",
            "`refund.rs` calls `round_total` twice.",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    let data = &doc["data"];
    assert_eq!(data["effect"], "proposed");
    let event = data["event"].as_str().unwrap();
    assert_eq!(event.len(), 26);
    let note = &data["note"];
    assert_eq!(
        note["id"],
        format!("n-{event}"),
        "the note id derives from the event"
    );
    assert_eq!(note["pending"], true);
    assert_eq!(note["path"], Value::Null);
    assert_eq!(note["about"], TASK_ID);
    assert_eq!(note["severity"], "major");

    let rel = format!(".dacli/events/2026/03/02/{event}-{REVIEWER_ID}-finding.md");
    let text = read(&repo, &rel);
    assert_eq!(
        keys(&text),
        [
            "id",
            "kind",
            "event_kind",
            "created",
            "created_by",
            "about",
            "title",
            "severity",
            "scope",
            "private",
            "checksum"
        ]
    );
    assert!(text.contains(&format!("about = \"{TASK_ID}\"\n")));
    assert!(text.contains("title = \"Refund path rounds a second time\"\n"));
    assert!(text.contains("scope = \"project\"\n"));
    assert!(text.contains("private = true\n"));
    assert_eq!(
        body(&text),
        "# Refund path rounds a second time\n\n`refund.rs` calls `round_total` twice.\n",
        "the body carries the title"
    );
    // FORMAT §14.1: SHA-256 of the file without its checksum line.
    let stored = text
        .lines()
        .find_map(|l| l.strip_prefix("checksum = \""))
        .unwrap()
        .trim_end_matches('"')
        .to_string();
    let unsigned: String = text
        .split_inclusive('\n')
        .filter(|l| !l.starts_with("checksum = "))
        .collect();
    let digest: String = Sha256::digest(unsigned.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(stored, format!("sha256:{digest}"));
    // Readers verify it: status folds the event without a checksum warning.
    let (code, status) = root(&repo, &["status"]);
    assert_eq!(code, 0, "{status}");
    assert!(status.get("warnings").is_none(), "{status}");
    assert_eq!(status["data"]["warnings"], 0);

    // The task is untouched: its owner's sync applies the event.
    assert_eq!(read(&repo, TASK_FILE), task_before);

    let (code, list) = root(&repo, &["note", "list"]);
    assert_eq!(code, 0, "{list}");
    assert_eq!(list["data"]["total"], 1);
    let listed = &list["data"]["notes"][0];
    assert_eq!(
        listed, note,
        "note list shows the pending finding as its NoteRef"
    );

    let (code, show) = run(
        &repo,
        Some(REVIEWER),
        crate::support::CLOCK,
        &["note", "show", &format!("n-{event}")],
    );
    assert_eq!(code, 0, "{show}");
    assert_eq!(show["data"]["source_event"], event);
    assert_eq!(show["data"]["created_by"], REVIEWER_ID);
    assert_eq!(show["data"]["private"], true);
    assert_eq!(show["data"]["sections"], serde_json::json!({}));
}

#[test]
fn an_ro_finding_without_about_goes_to_the_project_then_the_workspace() {
    let repo = workspace();
    let (code, doc) = run(
        &repo,
        Some(REVIEWER),
        "2026-03-02T10:00:00Z",
        &["note", "add", "finding", "A", "--severity", "minor"],
    );
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        doc["data"]["note"]["about"], "p-checkout",
        "the only active project"
    );
    let ev = doc["data"]["event"].as_str().unwrap();
    let text = read(
        &repo,
        &format!(".dacli/events/2026/03/02/{ev}-{REVIEWER_ID}-finding.md"),
    );
    assert!(text.contains("about = \"p-checkout\"\n"), "{text}");

    let (code, doc) = run(
        &repo,
        Some(REVIEWER),
        "2026-03-02T11:00:00Z",
        &[
            "note",
            "add",
            "finding",
            "B",
            "--severity",
            "minor",
            "--scope",
            "workspace",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["note"]["scope"], "workspace");
    assert_eq!(doc["data"]["note"]["about"], Value::Null);
    let ev = doc["data"]["event"].as_str().unwrap();
    let text = read(
        &repo,
        &format!(".dacli/events/2026/03/02/{ev}-{REVIEWER_ID}-finding.md"),
    );
    assert!(text.contains("about = \"workspace\"\n"), "{text}");
    assert!(text.contains("scope = \"workspace\"\n"), "{text}");
}

#[test]
fn note_list_sorts_newest_first_filters_and_hides_superseded_notes() {
    let repo = workspace();
    let add = |clock: &str, args: &[&str]| {
        let (code, doc) = run(&repo, None, clock, args);
        assert_eq!(code, 0, "{doc}");
        doc["data"]["note"]["id"].as_str().unwrap().to_string()
    };
    let old = add(
        "2026-03-02T10:00:00Z",
        &[
            "note",
            "add",
            "decision",
            "Backfill in one migration",
            "--chose",
            "a",
            "--rejected",
            "b",
            "--because",
            "c",
        ],
    );
    let finding = add(
        "2026-03-02T11:00:00Z",
        &[
            "note",
            "add",
            "finding",
            "Sum returns numeric",
            "--severity",
            "moderate",
            "--about",
            "4",
        ],
    );
    let newer = add(
        "2026-03-02T12:00:00Z",
        &[
            "note",
            "add",
            "decision",
            "Backfill in batches",
            "--chose",
            "a",
            "--rejected",
            "b",
            "--because",
            "c",
            "--supersedes",
            "backfill-in-one-migration",
        ],
    );
    let lesson = add(
        "2026-03-02T13:00:00Z",
        &["note", "add", "ref", "PSP file v3", "--scope", "workspace"],
    );
    fn ids(doc: &Value) -> Vec<&str> {
        doc["data"]["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].as_str().unwrap())
            .collect()
    }

    let (code, list) = root(&repo, &["note", "list"]);
    assert_eq!(code, 0, "{list}");
    assert_eq!(
        ids(&list),
        [lesson.as_str(), newer.as_str(), finding.as_str()],
        "newest first, superseded left out"
    );
    assert_eq!(list["data"]["total"], 3);
    assert_eq!(list["data"]["truncated"], false);

    let (_, list) = root(&repo, &["note", "list", "--include-superseded"]);
    assert_eq!(
        ids(&list),
        [
            lesson.as_str(),
            newer.as_str(),
            finding.as_str(),
            old.as_str()
        ]
    );

    let (_, list) = root(
        &repo,
        &[
            "note",
            "list",
            "--kind",
            "decision",
            "--kind",
            "ref",
            "--include-superseded",
        ],
    );
    assert_eq!(ids(&list), [lesson.as_str(), newer.as_str(), old.as_str()]);
    let (_, list) = root(&repo, &["note", "list", "--about", "add-rounding-shim"]);
    assert_eq!(ids(&list), [finding.as_str()]);
    let (_, list) = root(&repo, &["note", "list", "--severity", "moderate"]);
    assert_eq!(ids(&list), [finding.as_str()]);
    let (_, list) = root(&repo, &["note", "list", "--scope", "workspace"]);
    assert_eq!(ids(&list), [lesson.as_str()]);
    let (_, list) = root(&repo, &["note", "list", "--project", "checkout"]);
    assert_eq!(
        ids(&list),
        [newer.as_str(), finding.as_str()],
        "--project: notes stored in the project"
    );
    let (_, list) = root(&repo, &["note", "list", "--limit", "1"]);
    assert_eq!(ids(&list), [lesson.as_str()]);
    assert_eq!(list["data"]["total"], 3);
    assert_eq!(list["data"]["truncated"], true);

    // show: by slug, by path and by id; supersedes both ways.
    let (code, show) = root(&repo, &["note", "show", "backfill-in-one-migration"]);
    assert_eq!(code, 0, "{show}");
    assert_eq!(show["data"]["id"], old.as_str());
    assert_eq!(show["data"]["superseded_by"], newer.as_str());
    assert_eq!(show["data"]["supersedes"], Value::Null);
    let (code, show) = root(
        &repo,
        &[
            "note",
            "show",
            &format!(
                ".dacli/projects/checkout/notes/decisions/{}-backfill-in-batches.md",
                newer.trim_start_matches("n-")
            ),
        ],
    );
    assert_eq!(code, 0, "{show}");
    assert_eq!(show["data"]["id"], newer.as_str());
    assert_eq!(show["data"]["supersedes"], old.as_str());
    assert_eq!(show["data"]["superseded_by"], Value::Null);
    let text = read(
        &repo,
        ".dacli/projects/checkout/notes/decisions/backfill-in-batches.md",
    );
    assert!(
        text.contains(&format!("supersedes = \"{old}\"\n")),
        "stored as the full id"
    );

    let (code, missing) = root(&repo, &["note", "show", "no-such-note"]);
    assert_eq!(code, 4, "{missing}");
    assert_eq!(missing["error"]["code"], "E_NOT_FOUND");
}

#[test]
fn note_show_has_the_documented_shape() {
    let repo = workspace();
    let (code, doc) = root(
        &repo,
        &[
            "note",
            "add",
            "decision",
            "Round once",
            "--chose",
            "Half-even, once.",
            "--rejected",
            "Per line.",
            "--because",
            "One place to test.",
            "--about",
            "p-checkout",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    let id = doc["data"]["note"]["id"].as_str().unwrap();
    let (code, show) = root(&repo, &["note", "show", id]);
    assert_eq!(code, 0, "{show}");
    insta::assert_json_snapshot!("note_show_decision", show);
}

#[test]
fn note_add_rejects_bad_values_and_foreign_flags_with_exit_2() {
    let repo = workspace();
    let before = snapshot(&repo);
    let out = repo
        .dacli(&["note", "add", "finding", "T", "--severity", "huge"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--severity") && err.contains("major") && err.contains("minor"),
        "{err}"
    );
    let out = repo
        .dacli(&["note", "add", "lesson", "T"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("decision") && err.contains("finding") && err.contains("metric"),
        "{err}"
    );

    for (args, needle) in [
        (&["note", "add", "ref", "T", "--chose", "x"][..], "--chose"),
        (
            &["note", "add", "decision", "T", "--severity", "major"][..],
            "--severity",
        ),
        (
            &["note", "add", "ref", "T", "--tag", "Not A Slug"][..],
            "--tag",
        ),
        (&["note", "add", "ref", "Two\nlines"][..], "one line"),
        (
            &[
                "note",
                "add",
                "decision",
                "T",
                "--chose",
                "a\n## Rejected\nb",
                "--rejected",
                "r",
                "--because",
                "c",
            ][..],
            "heading",
        ),
    ] {
        let (code, doc) = root(&repo, args);
        assert_eq!(code, 2, "{args:?}: {doc}");
        assert!(
            doc["error"]["message"].as_str().unwrap().contains(needle),
            "{doc}"
        );
    }
    // An ro finding is an event, which cannot carry tags or supersedes.
    let (code, doc) = run(
        &repo,
        Some(REVIEWER),
        crate::support::CLOCK,
        &[
            "note",
            "add",
            "finding",
            "T",
            "--severity",
            "minor",
            "--tag",
            "money",
        ],
    );
    assert_eq!(code, 2, "{doc}");
    assert!(
        doc["error"]["message"].as_str().unwrap().contains("--tag"),
        "{doc}"
    );
    let (code, doc) = root(&repo, &["note", "add", "ref", "T", "--about", "99"]);
    assert_eq!(code, 4, "{doc}");
    let (code, doc) = root(
        &repo,
        &[
            "note",
            "add",
            "ref",
            "T",
            "--project",
            "checkout",
            "--scope",
            "workspace",
        ],
    );
    assert_eq!(code, 2, "{doc}");
    assert_eq!(snapshot(&repo), before);
}

// ---------------------------------------------------------------------------------- risks

#[test]
fn risk_rank_decides_whether_indicators_and_action_are_required() {
    let repo = workspace();
    let before = snapshot(&repo);
    let r = assert_refused(
        &repo,
        root(
            &repo,
            &[
                "risk",
                "add",
                "Refunds rounded twice",
                "--project",
                "checkout",
                "--impact",
                "high",
                "--likelihood",
                "high",
            ],
        ),
        "risk.action_required",
        &before,
    );
    assert_eq!(
        r["next"],
        "Add `--indicator \"…\"` and `--action \"…\"`, or lower impact/likelihood if that is the truth."
    );
    assert!(r["reason"].as_str().unwrap().contains("rank 1"), "{r}");
    // Rank 2 with indicators but no action is refused too.
    let r = assert_refused(
        &repo,
        root(
            &repo,
            &[
                "risk",
                "add",
                "R",
                "--project",
                "checkout",
                "--impact",
                "medium",
                "--likelihood",
                "medium",
                "--indicator",
                "one",
            ],
        ),
        "risk.action_required",
        &before,
    );
    let reason = r["reason"].as_str().unwrap();
    assert!(
        reason.contains("rank 2") && reason.contains("--action") && !reason.contains("--indicator"),
        "{reason}"
    );

    let add = |clock: &str, args: &[&str]| {
        let (code, doc) = run(&repo, None, clock, args);
        assert_eq!(code, 0, "{doc}");
        assert_eq!(doc["data"]["effect"], "created");
        doc["data"]["risk"].clone()
    };
    let low = add(
        "2026-03-02T10:00:00Z",
        &[
            "risk",
            "add",
            "Float lint breaks crates",
            "--project",
            "checkout",
            "--impact",
            "low",
            "--likelihood",
            "high",
        ],
    );
    assert_eq!(low["rank"], 3, "any low is rank 3 and needs no action");
    let two = add(
        "2026-03-02T11:00:00Z",
        &[
            "risk",
            "add",
            "Invoice PDFs keep floats",
            "--project",
            "p-checkout",
            "--impact",
            "medium",
            "--likelihood",
            "high",
            "--indicator",
            "VEND-88 still open",
            "--action",
            "Ship an adapter.",
        ],
    );
    assert_eq!(two["rank"], 2);
    let one = add(
        "2026-03-02T12:00:00Z",
        &[
            "risk",
            "add",
            "Backfill changes charges",
            "--project",
            "checkout",
            "--impact",
            "high",
            "--likelihood",
            "high",
            "--indicator",
            "A backfilled order differs from its capture",
            "--indicator",
            "Fractional cents",
            "--action",
            "Compare every order before switching reads.",
            "--about",
            "4",
            "--tag",
            "migration",
        ],
    );
    assert_eq!(
        one,
        serde_json::json!({
            "id": one["id"], "title": "Backfill changes charges", "project": "p-checkout",
            "impact": "high", "likelihood": "high", "rank": 1, "status": "open", "about": TASK_ID,
        })
    );

    // The file: canonical location, field order, rev = the id's ULID, no stored rank.
    let id = one["id"].as_str().unwrap();
    let text = read(
        &repo,
        ".dacli/projects/checkout/risks/backfill-changes-charges.md",
    );
    assert_eq!(
        keys(&text),
        [
            "id",
            "kind",
            "created",
            "created_by",
            "owner",
            "rev",
            "impact",
            "likelihood",
            "status",
            "about",
            "tags"
        ]
    );
    assert!(text.contains(&format!("rev = \"{}\"\n", &id[2..])));
    assert!(text.contains("created = 2026-03-02T12:00:00Z\n"));
    assert!(!text.contains("rank"));
    assert_eq!(
        body(&text),
        "# Backfill changes charges\n\n## Indicators\n- A backfilled order differs from its capture\n- Fractional cents\n\n## Action\nCompare every order before switching reads.\n"
    );

    // risk list: rank, then created; open by default; --rank filters; has_action.
    let (code, list) = root(&repo, &["risk", "list"]);
    assert_eq!(code, 0, "{list}");
    let got: Vec<(Value, Value)> = list["data"]["risks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].clone(), r["has_action"].clone()))
        .collect();
    assert_eq!(
        got,
        [
            (one["id"].clone(), Value::Bool(true)),
            (two["id"].clone(), Value::Bool(true)),
            (low["id"].clone(), Value::Bool(false)),
        ]
    );
    let (_, list) = root(&repo, &["risk", "list", "--rank", "2"]);
    assert_eq!(list["data"]["risks"].as_array().unwrap().len(), 1);
    assert_eq!(list["data"]["risks"][0]["id"], two["id"]);
    let (code, _) = root(&repo, &["risk", "list", "--rank", "4"]);
    assert_eq!(code, 2);

    // Notes and risks dacli wrote are canonical and well-formed.
    assert_eq!(doctor_check(&repo, "noncanonical_files")["count"], 0);
    assert_eq!(doctor_check(&repo, "malformed_files")["count"], 0);
}

#[test]
fn an_ro_agent_is_refused_risk_add_with_the_finding_alternative() {
    let repo = workspace();
    let before = snapshot(&repo);
    let r = assert_refused(
        &repo,
        run(
            &repo,
            Some(REVIEWER),
            crate::support::CLOCK,
            &[
                "risk",
                "add",
                "R",
                "--project",
                "checkout",
                "--impact",
                "low",
                "--likelihood",
                "low",
            ],
        ),
        "grant.read_only",
        &before,
    );
    let next = r["next"].as_str().unwrap();
    assert!(
        next.contains("record it as a finding with severity major"),
        "{next}"
    );
    assert!(next.contains("dacli note add finding"), "{next}");
}

#[test]
fn risk_edit_is_for_the_owner_keeps_unknown_keys_and_enforces_the_action_rule() {
    let repo = workspace();
    let (code, doc) = root(
        &repo,
        &[
            "risk",
            "add",
            "Denying floats breaks crates",
            "--project",
            "checkout",
            "--impact",
            "low",
            "--likelihood",
            "medium",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    let id = doc["data"]["risk"]["id"].as_str().unwrap().to_string();
    let rel = ".dacli/projects/checkout/risks/denying-floats-breaks-crates.md";
    // Someone else's tool keeps a key and a table of its own.
    let text = read(&repo, rel).replace(
        "status = \"open\"\n",
        "status = \"open\"\ncustom = \"kept\" # a comment\n[ext]\ntool = 1\n",
    );
    repo.write(rel, &text);
    let before = snapshot(&repo);

    // ro: refused, naming the owner.
    let r = assert_refused(
        &repo,
        run(
            &repo,
            Some(REVIEWER),
            crate::support::CLOCK,
            &["risk", "edit", &id, "--status", "closed"],
        ),
        "grant.read_only",
        &before,
    );
    assert!(r["next"].as_str().unwrap().contains("a-root"), "{r}");
    // Another rw agent: not the owner.
    let r = assert_refused(
        &repo,
        run(
            &repo,
            Some(PLANNER),
            crate::support::CLOCK,
            &[
                "risk",
                "edit",
                "checkout/denying-floats-breaks-crates",
                "--status",
                "closed",
            ],
        ),
        "risk.not_owner",
        &before,
    );
    assert_eq!(
        r["next"],
        "Ask a-root: `dacli ask p-checkout \"…\"` (an ro agent may also record a finding)."
    );
    // Raising the rank without indicators and action is refused.
    assert_refused(
        &repo,
        root(&repo, &["risk", "edit", &id, "--impact", "high"]),
        "risk.action_required",
        &before,
    );

    let (code, doc) = run(
        &repo,
        None,
        "2026-03-02T10:00:00Z",
        &[
            "risk",
            "edit",
            &id,
            "--impact",
            "high",
            "--indicator",
            "CI fails outside checkout",
            "--action",
            "Deny the lint per crate.",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["effect"], "applied");
    assert_eq!(doc["data"]["risk"]["rank"], 2);
    let after = read(&repo, rel);
    assert!(
        after.contains("custom = \"kept\" # a comment\n[ext]\ntool = 1\n"),
        "{after}"
    );
    assert!(after.contains("impact = \"high\"\n"));
    assert!(
        !after.contains(&format!("rev = \"{}\"", &id[2..])),
        "a rewrite mints a new rev"
    );
    assert!(
        after.ends_with(
            "## Indicators\n- CI fails outside checkout\n\n## Action\nDeny the lint per crate.\n"
        ),
        "{after}"
    );

    // The same values again: nothing written.
    let before = snapshot(&repo);
    let (code, doc) = run(
        &repo,
        None,
        "2026-03-02T11:00:00Z",
        &["risk", "edit", &id, "--impact", "high"],
    );
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["effect"], "unchanged");
    assert_eq!(snapshot(&repo), before);

    // Closed risks leave the default listing.
    let (code, _) = run(
        &repo,
        None,
        "2026-03-02T12:00:00Z",
        &["risk", "edit", &id, "--status", "closed"],
    );
    assert_eq!(code, 0);
    let (_, list) = root(&repo, &["risk", "list"]);
    assert_eq!(list["data"]["risks"], serde_json::json!([]));
    let (_, list) = root(&repo, &["risk", "list", "--status", "closed"]);
    assert_eq!(list["data"]["risks"][0]["status"], "closed");
    let (code, doc) = root(
        &repo,
        &["risk", "edit", "checkout/no-such-risk", "--status", "open"],
    );
    assert_eq!(code, 4, "{doc}");
}

// ---------------------------------------------------------------------------------- glossary

#[test]
fn glossary_add_creates_appends_refuses_duplicates_and_replaces() {
    let repo = workspace();
    let (code, doc) = root(&repo, &["glossary", "show"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        doc["data"],
        serde_json::json!({"project": "p-checkout", "terms": []})
    );

    let (code, doc) = root(
        &repo,
        &[
            "glossary",
            "add",
            "minor unit",
            "the smallest unit of a currency.",
            "--project",
            "checkout",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        doc["data"],
        serde_json::json!({"project": "p-checkout", "term": "minor unit", "effect": "applied"})
    );
    let rel = ".dacli/projects/checkout/glossary.md";
    let text = read(&repo, rel);
    assert_eq!(
        keys(&text),
        ["kind", "project", "created", "created_by", "owner", "rev"]
    );
    assert!(text.contains("project = \"p-checkout\"\n") && text.contains("owner = \"a-root\"\n"));
    assert_eq!(
        body(&text),
        "# Glossary\n\n- **minor unit** \u{2014} the smallest unit of a currency.\n"
    );

    let (code, _) = run(
        &repo,
        None,
        "2026-03-02T10:00:00Z",
        &[
            "glossary",
            "add",
            "capture",
            "the PSP taking the money.",
            "--project",
            "p-checkout",
        ],
    );
    assert_eq!(code, 0);

    let before = snapshot(&repo);
    let r = assert_refused(
        &repo,
        root(
            &repo,
            &[
                "glossary",
                "add",
                "Minor Unit",
                "cents.",
                "--project",
                "checkout",
            ],
        ),
        "glossary.duplicate_term",
        &before,
    );
    assert_eq!(
        r["next"],
        "\"minor unit\" is defined as \"the smallest unit of a currency.\"; pass `--replace` to change it."
    );
    // Not the project owner; ro.
    assert_refused(
        &repo,
        run(
            &repo,
            Some(PLANNER),
            crate::support::CLOCK,
            &["glossary", "add", "cents", "x", "--project", "checkout"],
        ),
        "glossary.not_owner",
        &before,
    );
    let r = assert_refused(
        &repo,
        run(
            &repo,
            Some(REVIEWER),
            crate::support::CLOCK,
            &["glossary", "add", "cents", "x", "--project", "checkout"],
        ),
        "grant.read_only",
        &before,
    );
    assert!(r["next"].as_str().unwrap().contains("a-root"), "{r}");

    let (code, doc) = run(
        &repo,
        None,
        "2026-03-02T11:00:00Z",
        &[
            "glossary",
            "add",
            "minor unit",
            "cents for EUR.",
            "--project",
            "checkout",
            "--replace",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["effect"], "applied");
    assert_eq!(
        body(&read(&repo, rel)),
        "# Glossary\n\n- **minor unit** \u{2014} cents for EUR.\n- **capture** \u{2014} the PSP taking the money.\n"
    );
    let (_, doc) = run(
        &repo,
        Some(REVIEWER),
        crate::support::CLOCK,
        &["glossary", "show", "--project", "checkout"],
    );
    assert_eq!(
        doc["data"]["terms"],
        serde_json::json!([
            {"term": "minor unit", "definition": "cents for EUR."},
            {"term": "capture", "definition": "the PSP taking the money."},
        ])
    );
    assert_eq!(doctor_check(&repo, "noncanonical_files")["count"], 0);
    assert_eq!(doctor_check(&repo, "malformed_files")["count"], 0);
}

#[test]
fn the_example_workspace_reads_back() {
    let ex = repo_root().join(".dacli-example");
    let ex = ex.to_str().unwrap();
    let json = |args: &[&str]| {
        let mut all = vec!["-C", ex];
        all.extend_from_slice(args);
        all.push("--json");
        let out = crate::support::dacli().args(&all).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        one_json(&out.stdout)
    };
    let risks = json(&["risk", "list"]);
    let ranks: Vec<u64> = risks["data"]["risks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rank"].as_u64().unwrap())
        .collect();
    assert_eq!(ranks, [1, 2, 2], "the closed rank-3 risk is left out");
    let notes = json(&["note", "list"]);
    assert!(
        !notes["data"]["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["id"] == "n-01KJQ2TF9V9X7F1C73FP9202FD"),
        "the superseded backfill decision is left out"
    );
    let show = json(&["note", "show", "n-01KJQ2TF9V9X7F1C73FP9202FD"]);
    assert_eq!(
        show["data"]["superseded_by"],
        "n-01KJTAW5NHH7J1J224VQJFVSB7"
    );
    let glossary = json(&["glossary", "show", "--project", "checkout"]);
    assert_eq!(glossary["data"]["terms"][0]["term"], "minor unit");
}

#[test]
fn a_broken_risk_file_is_skipped_by_listings_and_named_by_edit() {
    let repo = workspace();
    let (code, _) = root(
        &repo,
        &[
            "risk",
            "add",
            "Good",
            "--project",
            "checkout",
            "--impact",
            "low",
            "--likelihood",
            "low",
        ],
    );
    assert_eq!(code, 0);
    let rel = ".dacli/projects/checkout/risks/broken.md";
    repo.write(
        rel,
        "+++\n<<<<<<< ours\nid = \"r-01KJQR0BBR62N6NBRD4PYF261D\"\n=======\nid = \"r-01KJQ30Q9ET6VQMGN0JYDQAV0H\"\n>>>>>>> theirs\n+++\n\n# Broken\n",
    );
    let before = snapshot(&repo);
    let (code, list) = root(&repo, &["risk", "list", "--status", "all"]);
    assert_eq!(code, 0, "{list}");
    assert_eq!(list["data"]["risks"].as_array().unwrap().len(), 1);
    assert_eq!(list["warnings"][0]["path"], rel);
    assert_eq!(list["warnings"][0]["reason"], "merge_conflict");

    let (code, doc) = root(
        &repo,
        &["risk", "edit", "checkout/broken", "--status", "closed"],
    );
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["error"]["code"], "E_MALFORMED");
    assert!(
        doc["error"]["message"].as_str().unwrap().contains(rel),
        "{doc}"
    );
    assert_eq!(snapshot(&repo), before);
}
