//! The working core as agents use it: a scripted lifecycle through the CLI, the definition
//! of done, concurrent task creation and racing claims.

use std::process::{Command as Std, Stdio};

use serde_json::Value;

use crate::support::{Repo, git};

/// Writes an agent record with a token derived from `name`, returns the token.
pub fn agent(repo: &Repo, role: &str, n: usize, grant: &str) -> (String, String) {
    let ulid = format!("01KJPX6ZT81TTNRTABC9KB{n:04}");
    let ulid: String = ulid
        .chars()
        .map(|c| {
            if c == 'I' || c == 'L' || c == 'O' || c == 'U' {
                '0'
            } else {
                c
            }
        })
        .collect();
    let id = format!("a-{role}-{ulid}");
    let token = format!("dacli_{id}_{n:064x}");
    let hash = dacli::model::agent::token_hash(&token);
    repo.write(
        &format!(".dacli/agents/{id}.md"),
        format!(
            "+++\nid = \"{id}\"\nkind = \"agent\"\ncreated = 2026-03-02T09:14:05Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"{ulid}\"\nparent = \"a-root\"\ngrant = \"{grant}\"\nrole = \"{role}\"\ntoken_hash = \"{hash}\"\nstatus = \"live\"\n+++\n\n# {role}\n"
        ),
    );
    (id, token)
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

fn ok(repo: &Repo, args: &[&str]) -> Value {
    let (code, doc) = repo.json(args);
    assert_eq!(code, 0, "{args:?}: {doc}");
    doc
}

fn task_files(repo: &Repo) -> Vec<String> {
    let mut out = Vec::new();
    for folder in ["open", "active", "blocked", "done"] {
        let dir = repo.ws(&format!("projects/checkout/tasks/{folder}"));
        if let Ok(rd) = std::fs::read_dir(&dir) {
            for e in rd {
                out.push(format!(
                    "{folder}/{}",
                    e.unwrap().file_name().to_string_lossy()
                ));
            }
        }
    }
    out.sort();
    out
}

/// The lines `git diff` shows as changed in the workspace since the last commit (then commits).
fn diff_and_commit(repo: &Repo, step: &str) -> Vec<String> {
    git(repo.path(), &["add", "-A", ".dacli"]);
    let out = Std::new("git")
        .current_dir(repo.path())
        .args([
            "diff",
            "--cached",
            "--unified=0",
            "--no-color",
            "--",
            ".dacli/projects",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    git(repo.path(), &["commit", "-q", "--allow-empty", "-m", step]);
    text.lines()
        .filter(|l| {
            (l.starts_with('+') || l.starts_with('-'))
                && !l.starts_with("+++")
                && !l.starts_with("---")
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn a_scripted_lifecycle_moves_files_as_the_format_says_with_minimal_diffs() {
    let repo = Repo::initialized();
    let (builder, token) = agent(&repo, "builder", 1, "rw");
    ok(
        &repo,
        &[
            "project",
            "add",
            "Checkout totals in integer cents",
            "--slug",
            "checkout",
            "--goal",
            "Totals agree to the cent",
        ],
    );
    let add = ok(
        &repo,
        &[
            "task",
            "add",
            "Add the rounding shim",
            "--accept",
            "Every caller goes through the shim",
            "--accept",
            "`true` passes",
            "--estimate",
            "2,4,9",
            "--priority",
            "must",
        ],
    );
    assert_eq!(
        add["data"]["task"]["ref"],
        "checkout/001-add-the-rounding-shim"
    );
    assert_eq!(
        add["data"]["path"],
        ".dacli/projects/checkout/tasks/open/01KJPWD8JGH6VC0BCABT3TZTK2-add-the-rounding-shim.md"
    );
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "start"]);

    // The builder claims: an event, visible to every reader at once; the file is untouched.
    let (code, claim) = as_agent(&repo, &token, &["task", "claim", "1"]);
    assert_eq!(code, 0, "{claim}");
    assert_eq!(claim["data"]["effect"], "proposed");
    assert_eq!(claim["data"]["status"], "active");
    let shown = ok(&repo, &["task", "show", "1"]);
    assert_eq!(shown["data"]["status"], "active");
    assert_eq!(shown["data"]["assignee"], Value::String(builder.clone()));
    assert_eq!(shown["data"]["pending"], 1);
    assert_eq!(
        task_files(&repo),
        vec!["open/01KJPWD8JGH6VC0BCABT3TZTK2-add-the-rounding-shim.md"]
    );
    assert!(
        diff_and_commit(&repo, "claim").is_empty(),
        "a non-owner's claim writes only an event"
    );

    // The owner syncs: the file moves to active/, one Log line, the assignee, a new rev.
    let sync = ok(&repo, &["sync"]);
    assert_eq!(sync["data"]["summary"]["applied"], 1);
    assert_eq!(
        task_files(&repo),
        vec!["active/01KJPWD8JGH6VC0BCABT3TZTK2-add-the-rounding-shim.md"]
    );
    let diff = diff_and_commit(&repo, "sync claim");
    let added: Vec<_> = diff.iter().filter(|l| l.starts_with('+')).collect();
    assert!(
        added.iter().any(|l| l.contains("claimed (event ")),
        "{diff:?}"
    );
    assert!(
        added.iter().any(|l| l.starts_with("+assignee = ")),
        "{diff:?}"
    );

    // Checking: the plain criterion; the command one needs --verify.
    let (code, refused) = as_agent(&repo, &token, &["task", "check", "1", "--n", "2"]);
    assert_eq!(code, 3);
    assert_eq!(refused["refused"]["policy"], "dod.verify_required");
    let (code, _) = as_agent(&repo, &token, &["task", "check", "1", "--n", "1"]);
    assert_eq!(code, 0);
    let (code, v) = as_agent(
        &repo,
        &token,
        &["task", "check", "1", "--n", "2", "--verify"],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["data"]["verified"][0]["exit_code"], 0);

    // Blocked by a question, then answered by the owner: unblocked, a decision note.
    let (code, asked) = as_agent(&repo, &token, &["ask", "1", "Round half-even or half-up?"]);
    assert_eq!(code, 0, "{asked}");
    let question = asked["data"]["question"].as_str().unwrap().to_string();
    assert_eq!(
        ok(&repo, &["task", "show", "1"])["data"]["status"],
        "blocked"
    );
    let answered = ok(
        &repo,
        &[
            "answer",
            &question[..10],
            "Half-even, once.",
            "--as",
            "decision",
            "--chose",
            "half-even at the boundary",
            "--rejected",
            "half-up per line: drifts",
            "--because",
            "one rounding point",
        ],
    );
    assert_eq!(answered["data"]["unblocked"], true);
    assert_eq!(
        task_files(&repo),
        vec!["active/01KJPWD8JGH6VC0BCABT3TZTK2-add-the-rounding-shim.md"]
    );
    let note = repo.ws("projects/checkout/notes/decisions/answer-round-half-even-or-half-up.md");
    let note = std::fs::read_to_string(note).unwrap();
    assert!(
        note.contains("## Rejected\nhalf-up per line: drifts"),
        "{note}"
    );
    let diff = diff_and_commit(&repo, "answer");
    assert!(
        diff.iter()
            .any(|l| l.contains("- [x] Every caller goes through the shim")),
        "{diff:?}"
    );
    assert!(
        diff.iter().any(|l| l.contains("verify=`true` exit=0")),
        "{diff:?}"
    );
    assert!(
        diff.iter()
            .any(|l| l.contains(&format!("question {question}"))),
        "{diff:?}"
    );
    assert!(
        diff.iter()
            .any(|l| l.contains(&format!("answered {question}"))),
        "{diff:?}"
    );

    // The builder finishes; the owner's sync completes it: done/ with resolution completed.
    let (code, fin) = as_agent(
        &repo,
        &token,
        &["task", "done", "1", "--summary", "shim in place"],
    );
    assert_eq!(code, 0, "{fin}");
    assert_eq!(fin["data"]["effect"], "proposed");
    ok(&repo, &["sync"]);
    assert_eq!(
        task_files(&repo),
        vec!["done/01KJPWD8JGH6VC0BCABT3TZTK2-add-the-rounding-shim.md"]
    );
    let done = std::fs::read_to_string(
        repo.ws("projects/checkout/tasks/done/01KJPWD8JGH6VC0BCABT3TZTK2-add-the-rounding-shim.md"),
    )
    .unwrap();
    assert!(done.contains("resolution = \"completed\""));
    assert!(done.contains(" finished (event "));
    let diff = diff_and_commit(&repo, "done");
    let changed_front: Vec<_> = diff.iter().filter(|l| l.contains(" = ")).collect();
    assert!(
        changed_front.len() <= 4,
        "rev and resolution only: {changed_front:?}"
    );
    // Every event is settled now and nothing is pending.
    let status = ok(&repo, &["status"]);
    assert_eq!(status["data"]["pending"]["events"], 0, "{status}");
}

#[test]
fn task_done_names_the_unchecked_box_then_succeeds_once_checked() {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    ok(
        &repo,
        &[
            "task",
            "add",
            "Shim",
            "--accept",
            "callers use the shim",
            "--accept",
            "docs updated",
        ],
    );
    ok(&repo, &["task", "check", "1", "--n", "1"]);
    let (code, doc) = repo.json(&["task", "done", "1"]);
    assert_eq!(code, 3);
    assert_eq!(doc["refused"]["policy"], "dod.unchecked_acceptance");
    let reason = doc["refused"]["reason"].as_str().unwrap();
    assert!(reason.contains("2 docs updated"), "{reason}");
    assert!(doc["refused"]["next"].as_str().unwrap().contains("--n 2"));
    assert_eq!(
        task_files(&repo),
        vec!["open/01KJPWD8JGH6VC0BCABT3TZTK2-shim.md"],
        "a refusal writes nothing"
    );
    ok(&repo, &["task", "check", "1", "--n", "2"]);
    let done = ok(&repo, &["task", "done", "1"]);
    assert_eq!(done["data"]["resolution"], "completed");
    assert_eq!(
        task_files(&repo),
        vec!["done/01KJPWD8JGH6VC0BCABT3TZTK2-shim.md"]
    );
    let again = ok(&repo, &["task", "done", "1"]);
    assert_eq!(again["data"]["effect"], "unchanged");
}

#[test]
fn every_unmet_condition_is_listed_and_each_alone_blocks() {
    let repo = Repo::initialized();
    repo.write(
        ".dacli/config.toml",
        format!(
            "{}[definition_of_done]\ntest_shortcut = \"test\"\nrequire_note = \"finding\"\n",
            std::fs::read_to_string(repo.ws("config.toml")).unwrap()
        ),
    );
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    ok(&repo, &["task", "add", "Shim", "--accept", "works"]);
    let (code, doc) = repo.json(&["task", "done", "1"]);
    assert_eq!(code, 3);
    let reason = doc["refused"]["reason"].as_str().unwrap();
    for policy in [
        "dod.unchecked_acceptance",
        "dod.test_not_run",
        "dod.note_required",
    ] {
        assert!(reason.contains(policy), "{policy} missing in {reason}");
    }
    ok(&repo, &["task", "check", "1", "--all"]);
    let (_, doc) = repo.json(&["task", "done", "1"]);
    assert_eq!(doc["refused"]["policy"], "dod.test_not_run");
    assert!(
        !doc["refused"]["reason"]
            .as_str()
            .unwrap()
            .contains("unchecked")
    );
}

#[test]
fn references_resolve_in_every_form_and_ambiguity_lists_candidates() {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "A", "--slug", "alpha"]);
    ok(&repo, &["project", "add", "B", "--slug", "beta"]);
    let a = ok(
        &repo,
        &["task", "add", "Shared title", "--project", "alpha"],
    );
    ok(&repo, &["task", "add", "Shared title", "--project", "beta"]);
    let id = a["data"]["task"]["id"].as_str().unwrap().to_string();
    for r in [
        id.as_str(),
        &id[2..],
        &id[2..].to_lowercase(),
        "alpha/1",
        "alpha/001",
        "alpha/shared-title",
        "alpha/001-shared-title",
        "p-alpha/1",
    ] {
        let doc = ok(&repo, &["task", "show", r]);
        assert_eq!(doc["data"]["id"], Value::String(id.clone()), "{r}");
    }
    let (code, doc) = repo.json(&["task", "show", "1"]);
    assert_eq!(code, 2, "{doc}");
    assert_eq!(doc["error"]["code"], "E_AMBIGUOUS");
    let msg = doc["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("alpha/001-shared-title") && msg.contains("beta/001-shared-title"),
        "{msg}"
    );
    let (code, doc) = repo.json(&["task", "show", "alpha/9"]);
    assert_eq!(code, 4);
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("project alpha")
    );
}

#[test]
fn bad_input_names_the_flag_and_exits_2() {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    for (args, needle) in [
        (vec!["task", "add", "x", "--estimate", "5"], "--estimate"),
        (
            vec!["task", "add", "x", "--estimate", "9,4,2"],
            "--estimate",
        ),
        (
            vec!["task", "add", "x", "--priority", "urgent"],
            "--priority",
        ),
        (vec!["task", "add", "x", "--trace", "../etc"], "--trace"),
        (vec!["task", "add", "x", "--tag", "Bad Tag"], "--tag"),
    ] {
        let (code, doc) = repo.json(&args);
        assert_eq!(code, 2, "{args:?}: {doc}");
        assert!(
            doc["error"]["message"].as_str().unwrap().contains(needle),
            "{args:?}: {doc}"
        );
    }
    assert!(task_files(&repo).is_empty(), "nothing written");
}

#[test]
fn ro_agents_append_but_never_mutate() {
    let repo = Repo::initialized();
    let (_, ro) = agent(&repo, "reviewer", 2, "ro");
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    ok(&repo, &["task", "add", "Shim", "--accept", "works"]);
    let (code, doc) = as_agent(&repo, &ro, &["task", "add", "More work"]);
    assert_eq!(code, 3);
    assert_eq!(doc["refused"]["policy"], "grant.read_only");
    assert!(
        doc["refused"]["next"]
            .as_str()
            .unwrap()
            .contains("note add finding")
    );
    let (code, doc) = as_agent(&repo, &ro, &["task", "claim", "1"]);
    assert_eq!(code, 0, "ro may claim (an event): {doc}");
    assert_eq!(doc["data"]["effect"], "proposed");
    let (code, doc) = as_agent(&repo, &ro, &["sync"]);
    assert_eq!(code, 3);
    assert_eq!(doc["refused"]["policy"], "grant.read_only");
    let (code, doc) = as_agent(&repo, &ro, &["task", "edit", "1", "--priority", "must"]);
    assert_eq!(code, 3);
    assert_eq!(doc["refused"]["policy"], "grant.read_only");
}

#[test]
fn parallel_task_add_gives_unique_ids_and_gap_free_numbers() {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    let bin = assert_cmd::cargo::cargo_bin("dacli");
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let bin = bin.clone();
            let dir = repo.path().to_path_buf();
            std::thread::spawn(move || {
                for i in 0..50 {
                    let out = Std::new(&bin)
                        .current_dir(&dir)
                        .args(["task", "add", &format!("task {w}-{i}"), "--json"])
                        .env_remove("DACLI_TEST_CLOCK")
                        .env_remove("DACLI_TEST_SEED")
                        .env_remove("DACLI_AGENT")
                        .stdout(Stdio::null())
                        .status()
                        .unwrap();
                    assert!(out.success(), "worker {w} add {i}");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let files = task_files(&repo);
    assert_eq!(files.len(), 400);
    let mut numbers: Vec<u32> = files
        .iter()
        .map(|f| {
            // The display number is the `seq` key (FORMAT §3.2).
            let text =
                std::fs::read_to_string(repo.ws(&format!("projects/checkout/tasks/{f}"))).unwrap();
            let line = text.lines().find(|l| l.starts_with("seq = ")).unwrap();
            line["seq = ".len()..].parse().unwrap()
        })
        .collect();
    numbers.sort();
    assert_eq!(numbers, (1..=400).collect::<Vec<_>>());
    let list = ok(&repo, &["task", "list"]);
    let mut ids: Vec<&str> = list["data"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 400);
}

#[test]
fn racing_claims_have_exactly_one_winner_per_round() {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    let agents: Vec<(String, String)> = (0..8)
        .map(|n| agent(&repo, "builder", 10 + n, "rw"))
        .collect();
    let bin = assert_cmd::cargo::cargo_bin("dacli");
    for round in 0..50 {
        let added = ok(
            &repo,
            &["task", "add", &format!("race {round}"), "--accept", "x"],
        );
        let id = added["data"]["task"]["id"].as_str().unwrap().to_string();
        let racers: Vec<_> = agents
            .iter()
            .map(|(_, token)| {
                Std::new(&bin)
                    .current_dir(repo.path())
                    .args(["task", "claim", &id, "--json"])
                    .env("DACLI_AGENT", token)
                    .env_remove("DACLI_TEST_CLOCK")
                    .env_remove("DACLI_TEST_SEED")
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut winners = 0;
        let mut refused = 0;
        for r in racers {
            let out = r.wait_with_output().unwrap();
            let doc = crate::support::one_json(&out.stdout);
            match out.status.code() {
                Some(0) => {
                    assert_eq!(doc["data"]["effect"], "proposed");
                    winners += 1;
                }
                Some(3) => {
                    assert_eq!(doc["refused"]["policy"], "task.already_claimed");
                    refused += 1;
                }
                other => panic!("round {round}: unexpected exit {other:?}: {doc}"),
            }
        }
        assert_eq!((winners, refused), (1, 7), "round {round}");
    }
}

#[test]
fn accept_verifies_what_the_assignee_could_not_and_closes_the_task() {
    let repo = Repo::initialized();
    let (_, ro) = agent(&repo, "reviewer", 3, "ro");
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    ok(
        &repo,
        &[
            "task",
            "add",
            "Shim",
            "--accept",
            "plain one",
            "--accept",
            "`true` passes",
        ],
    );
    let (code, _) = as_agent(&repo, &ro, &["task", "claim", "1"]);
    assert_eq!(code, 0);
    let (code, _) = as_agent(&repo, &ro, &["task", "check", "1", "--n", "1"]);
    assert_eq!(code, 0);
    // ro cannot verify: the finish request carries the owner-only condition.
    let (code, fin) = as_agent(&repo, &ro, &["task", "done", "1"]);
    assert_eq!(code, 0, "{fin}");
    assert_eq!(fin["data"]["effect"], "proposed");
    assert_eq!(fin["data"]["dod"]["unmet"][0]["owner_only"], true);
    assert_eq!(
        ok(&repo, &["task", "list"])["data"]["tasks"][0]["finish_requested"],
        true
    );
    let (code, doc) = as_agent(&repo, &ro, &["accept", "1"]);
    assert_eq!(code, 3);
    assert_eq!(doc["refused"]["policy"], "grant.read_only");
    let accepted = ok(&repo, &["accept", "1"]);
    assert_eq!(accepted["data"]["accepted"][0]["ref"], "checkout/001-shim");
    assert_eq!(accepted["data"]["ran"][0]["command"], "true");
    assert_eq!(
        task_files(&repo),
        vec!["done/01KJPWD8JGH6VC0BCABT3TZTK2-shim.md"]
    );
    let status = ok(&repo, &["status"]);
    assert_eq!(status["data"]["pending"]["events"], 0, "{status}");
}

#[test]
fn a_test_run_the_assignee_may_not_make_is_left_to_the_owner() {
    let repo = Repo::initialized();
    repo.write(
        ".dacli/config.toml",
        format!(
            "{}[definition_of_done]\ntest_shortcut = \"test\"\n",
            std::fs::read_to_string(repo.ws("config.toml")).unwrap()
        ),
    );
    repo.write(
        ".dacli/shortcuts/test.md",
        "+++\nkind = \"shortcut\"\nname = \"test\"\ncreated = 2026-03-02T09:06:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJPWR660YQF1Y2A1E4WME2TC\"\nsummary = \"Run the tests\"\ncommand = \"true\"\neffect = \"write\"\n+++\n\n# test\n",
    );
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    ok(&repo, &["task", "add", "Shim", "--accept", "works"]);
    // An ro reviewer may not run a write shortcut: the test run is the owner's to make.
    let (_, ro) = agent(&repo, "reviewer", 50, "ro");
    as_agent(&repo, &ro, &["task", "claim", "1"]);
    as_agent(&repo, &ro, &["task", "check", "1", "--all"]);
    let (code, fin) = as_agent(&repo, &ro, &["task", "done", "1"]);
    assert_eq!(code, 0, "{fin}");
    assert_eq!(fin["data"]["effect"], "proposed");
    let unmet = &fin["data"]["dod"]["unmet"][0];
    assert_eq!(unmet["policy"], "dod.test_not_run");
    assert_eq!(unmet["owner_only"], true);
    // An rw builder whose toolkit has `test` could run it, so it is refused and told to.
    let repo2 = Repo::initialized();
    repo2.write(
        ".dacli/roles/builder.md",
        "+++\nkind = \"role\"\nname = \"builder\"\ncreated = 2026-03-02T09:05:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJPWPBK0J5MSNHG3G461XDWA\"\nsummary = \"Builds\"\ngrant = \"rw\"\nshortcuts = [\"test\"]\n+++\n\n# builder\n",
    );
    repo2.write(
        ".dacli/config.toml",
        std::fs::read_to_string(repo.ws("config.toml")).unwrap(),
    );
    repo2.write(
        ".dacli/shortcuts/test.md",
        std::fs::read_to_string(repo.ws("shortcuts/test.md")).unwrap(),
    );
    ok(&repo2, &["project", "add", "P", "--slug", "checkout"]);
    ok(&repo2, &["task", "add", "Shim", "--accept", "works"]);
    let (_, rw) = agent(&repo2, "builder", 51, "rw");
    as_agent(&repo2, &rw, &["task", "claim", "1"]);
    as_agent(&repo2, &rw, &["task", "check", "1", "--all"]);
    let (code, doc) = as_agent(&repo2, &rw, &["task", "done", "1"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["refused"]["policy"], "dod.test_not_run");
}

/// A `propose-status` to `done` by another agent (a hand-made event, as another clone or tool
/// would write it) is a finish request: it waits while the definition of done is unmet and is
/// applied by the owner's sync once it passes (FORMAT §13.1).
#[test]
fn a_proposal_to_done_is_a_finish_request_not_a_bad_transition() {
    let repo = Repo::initialized();
    let (reviewer, _) = agent(&repo, "reviewer", 7, "ro");
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    let added = ok(&repo, &["task", "add", "Shim", "--accept", "works"]);
    let task = added["data"]["task"]["id"].as_str().unwrap().to_string();
    let event = "01KJPX6ZT80000000000000009";
    repo.write(
        &format!(".dacli/events/2026/03/02/{event}-{reviewer}-propose-status.md"),
        format!(
            "+++\nid = \"{event}\"\nkind = \"event\"\nevent_kind = \"propose-status\"\n\
             created = 2026-03-02T09:14:05Z\ncreated_by = \"{reviewer}\"\nabout = \"{task}\"\n\
             to = \"done\"\nreason = \"looks finished\"\n+++\n"
        ),
    );
    // Unmet definition of done: pending, shown as a finish request, never rejected.
    let shown = ok(&repo, &["task", "show", "1"]);
    assert_eq!(shown["data"]["status"], "open", "{shown}");
    ok(&repo, &["sync"]);
    let shown = ok(&repo, &["task", "show", "1"]);
    assert_eq!(shown["data"]["status"], "open", "{shown}");
    assert_eq!(
        task_files(&repo),
        vec!["open/01KJPWD8JGH6VC0BCABT3TZTK2-shim.md"]
    );
    let status = ok(&repo, &["status"]);
    assert_eq!(status["data"]["pending"]["events"], 1, "{status}");

    // Once the criterion is checked the owner's sync applies it as a finish.
    ok(&repo, &["task", "check", "1", "--n", "1"]);
    let shown = ok(&repo, &["task", "show", "1"]);
    assert_eq!(shown["data"]["status"], "done", "folded at once: {shown}");
    ok(&repo, &["sync"]);
    assert_eq!(
        task_files(&repo),
        vec!["done/01KJPWD8JGH6VC0BCABT3TZTK2-shim.md"]
    );
    let file = std::fs::read_to_string(
        repo.ws("projects/checkout/tasks/done/01KJPWD8JGH6VC0BCABT3TZTK2-shim.md"),
    )
    .unwrap();
    assert!(file.contains("resolution = \"completed\""), "{file}");
    assert!(
        file.contains(&format!("finished (event {event})")),
        "{file}"
    );
    let status = ok(&repo, &["status"]);
    assert_eq!(status["data"]["pending"]["events"], 0, "{status}");
}

/// Edges that would close a cycle are refused with the cycle spelled in references, for
/// dependencies and parents alike (the walk follows both kinds of edge), and nothing is
/// written.
#[test]
fn edges_closing_a_cycle_are_refused_with_the_cycle_named() {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "Checkout", "--slug", "checkout"]);
    for title in ["alpha", "beta", "gamma"] {
        ok(&repo, &["task", "add", title, "--accept", "holds"]);
    }
    ok(
        &repo,
        &["task", "depend", "checkout/2", "--on", "checkout/1"],
    );
    ok(
        &repo,
        &["task", "edit", "checkout/3", "--parent", "checkout/2"],
    );
    let refused = |args: &[&str]| {
        let (code, doc) = repo.json(args);
        assert_eq!(code, 3, "{args:?}: {doc}");
        assert_eq!(doc["refused"]["policy"], "task.cycle", "{doc}");
        doc["refused"]["reason"].as_str().unwrap().to_string()
    };
    assert_eq!(
        refused(&["task", "depend", "checkout/1", "--on", "checkout/3"]),
        "checkout/001-alpha → checkout/003-gamma → checkout/002-beta → checkout/001-alpha would be a cycle"
    );
    assert_eq!(
        refused(&["task", "edit", "checkout/1", "--parent", "checkout/3"]),
        "checkout/001-alpha → checkout/003-gamma → checkout/002-beta → checkout/001-alpha would be a cycle"
    );
    assert_eq!(
        refused(&["task", "depend", "checkout/2", "--on", "checkout/2"]),
        "checkout/002-beta → checkout/002-beta would be a cycle"
    );
    // Nothing was written by the refusals: 1 still depends on nothing and has no parent.
    let (_, show) = repo.json(&["task", "show", "checkout/1"]);
    assert_eq!(show["data"]["depends_on"], serde_json::json!([]), "{show}");
    assert_eq!(show["data"]["parent"], Value::Null, "{show}");
    let (_, show) = repo.json(&["task", "show", "checkout/3"]);
    assert_eq!(show["data"]["parent"]["ref"], "checkout/002-beta", "{show}");
}
