//! Questions, answers, sync and the event log through the CLI.

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

fn setup() -> Repo {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "P", "--slug", "checkout"]);
    ok(&repo, &["task", "add", "Shim", "--accept", "works"]);
    repo
}

#[test]
fn ask_routes_by_flag_by_needed_path_and_by_escalation() {
    let repo = setup();
    repo.write(
        ".dacli/roles/dba.md",
        "+++\nkind = \"role\"\nname = \"dba\"\ncreated = 2026-03-02T09:05:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJPWPBK0J5MSNHG3G461XDWA\"\nsummary = \"Owns migrations\"\ngrant = \"rw\"\nscope = [\"db/migrations/**\"]\n+++\n\n# dba\n",
    );
    repo.write(
        ".dacli/roles/builder.md",
        "+++\nkind = \"role\"\nname = \"builder\"\ncreated = 2026-03-02T09:05:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJPWPBK0J5MSNHG3G461XDWB\"\nsummary = \"Builds\"\ngrant = \"rw\"\nscope = [\"db/**\", \"src/**\"]\nescalate_to = [\"dba\", \"human\"]\n+++\n\n# builder\n",
    );
    let (_, token) = agent(&repo, "builder", 5, "rw");
    let q = ok(
        &repo,
        &["ask", "1", "Which index?", "--to", "human", "--no-block"],
    );
    assert_eq!(q["data"]["to"], "human");
    assert_eq!(q["data"]["blocks"], false);
    let q = ok(
        &repo,
        &[
            "ask",
            "1",
            "Lock time?",
            "--need",
            "db/migrations/0042.sql",
            "--no-block",
        ],
    );
    assert_eq!(q["data"]["to"], "dba", "the most specific scope wins");
    let (code, q) = as_agent(&repo, &token, &["ask", "1", "Who decides?", "--no-block"]);
    assert_eq!(code, 0);
    assert_eq!(
        q["data"]["to"], "dba",
        "the caller's first escalation target"
    );
    let (code, doc) = repo.json(&["ask", "1", "x", "--to", "nosuchrole"]);
    assert_eq!(code, 4, "{doc}");
}

#[test]
fn answers_resolve_prefixes_refuse_repeats_and_unblock() {
    let repo = setup();
    let (_, token) = agent(&repo, "builder", 6, "rw");
    let (_, _) = as_agent(&repo, &token, &["task", "claim", "1"]);
    let (code, asked) = as_agent(&repo, &token, &["ask", "1", "Half-even?"]);
    assert_eq!(code, 0);
    let q = asked["data"]["question"].as_str().unwrap().to_string();
    assert_eq!(
        ok(&repo, &["task", "show", "1"])["data"]["status"],
        "blocked"
    );
    let (code, doc) = repo.json(&["answer", &q[..5], "yes"]);
    assert_eq!(
        code, 2,
        "a prefix under 8 characters is never a guess: {doc}"
    );
    assert_eq!(doc["error"]["code"], "E_AMBIGUOUS");
    let a = ok(&repo, &["answer", &q[..8], "Yes, half-even."]);
    assert_eq!(a["data"]["unblocked"], true);
    assert_eq!(a["data"]["effect"], "applied");
    assert_eq!(
        ok(&repo, &["task", "show", "1"])["data"]["status"],
        "active"
    );
    let (code, doc) = repo.json(&["answer", &q, "again"]);
    assert_eq!(code, 3);
    assert_eq!(doc["refused"]["policy"], "question.answered");
    let threads = ok(&repo, &["threads"]);
    assert_eq!(threads["data"]["open"], 0);
    assert_eq!(threads["data"]["threads"][0]["state"], "answered");
    assert_eq!(threads["data"]["threads"][0]["answers"][0]["as"], "finding");
    let note = format!("n-{}", a["data"]["answer"].as_str().unwrap());
    let notes = ok(&repo, &["note", "list"]);
    assert!(
        notes.to_string().contains(&note),
        "the answer became a note: {notes}"
    );
}

#[test]
fn sync_is_idempotent_declines_on_request_and_reports_what_waits() {
    let repo = setup();
    let (_, a) = agent(&repo, "builder", 7, "rw");
    let (_, b) = agent(&repo, "builder", 8, "rw");
    as_agent(&repo, &a, &["task", "comment", "1", "looks fine"]);
    let (_, first) = as_agent(&repo, &a, &["task", "claim", "1"]);
    assert_eq!(first["data"]["effect"], "proposed");
    let (code, second) = as_agent(&repo, &b, &["task", "claim", "1"]);
    assert_eq!(
        code, 3,
        "the folded pending claim already holds it: {second}"
    );
    let dry = ok(&repo, &["sync", "--dry-run"]);
    assert_eq!(dry["data"]["summary"]["applied"], 2);
    assert!(dry["data"]["objects"][0]["receipt"].is_null());
    let files = || {
        let mut v: Vec<_> = walk(&repo.ws(""))
            .into_iter()
            .filter(|p| !p.contains(".locks"))
            .collect();
        v.sort();
        v
    };
    let before = files();
    let _ = ok(&repo, &["sync", "--dry-run"]);
    assert_eq!(files(), before, "--dry-run writes nothing");
    let synced = ok(&repo, &["sync"]);
    assert_eq!(synced["data"]["summary"]["applied"], 2);
    let again = ok(&repo, &["sync"]);
    assert_eq!(
        again["data"]["objects"],
        Value::Array(vec![]),
        "nothing left to apply"
    );
    // A reopen request waits for the owner; --decline rejects it.
    ok(&repo, &["task", "check", "1", "--all"]);
    ok(&repo, &["task", "done", "1"]);
    let (_, req) = as_agent(&repo, &b, &["task", "reopen", "1", "--reason", "regressed"]);
    assert_eq!(req["data"]["effect"], "proposed");
    let waiting = ok(&repo, &["sync"]);
    assert_eq!(
        waiting["data"]["objects"][0]["pending"][0]["why"],
        "reopen_request"
    );
    let ev = req["data"]["event"].as_str().unwrap();
    let declined = ok(&repo, &["sync", "--decline", ev]);
    assert_eq!(
        declined["data"]["objects"][0]["rejected"][0]["reason"],
        "declined"
    );
    let events = ok(&repo, &["events", "list", "--state", "rejected"]);
    assert_eq!(
        events["data"]["events"][0]["id"],
        Value::String(ev.to_string())
    );
}

#[test]
fn events_list_filters_and_show_gives_fields_and_receipt() {
    let repo = setup();
    let (_, a) = agent(&repo, "builder", 9, "rw");
    let (_, claim) = as_agent(&repo, &a, &["task", "claim", "1"]);
    let id = claim["data"]["event"].as_str().unwrap().to_string();
    let pending = ok(
        &repo,
        &["events", "list", "--state", "pending", "--about", "1"],
    );
    assert_eq!(pending["data"]["events"].as_array().unwrap().len(), 1);
    ok(&repo, &["sync"]);
    let shown = ok(&repo, &["events", "show", &id]);
    assert_eq!(shown["data"]["state"], "settled");
    assert!(shown["data"]["receipt"].is_string());
    let tail = ok(&repo, &["events", "tail", "-n", "1"]);
    assert_eq!(tail["data"]["events"][0]["kind"], "applied");
    let (code, _) = repo.json(&["events", "show", "01KJPWD6M058108K1WTZT3RSGW"]);
    assert_eq!(code, 4);
    let (code, _) = repo.json(&["events", "list", "--since", "yesterday"]);
    assert_eq!(code, 2);
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p.display().to_string());
            }
        }
    }
    out
}

/// `threads` lists open questions first (oldest first), then answered ones (newest first),
/// counts the open ones before `--limit` cuts, and filters by `--open` and `--about`; an
/// answered thread carries its answers' texts.
#[test]
fn threads_order_count_cut_and_filter() {
    let repo = setup();
    ok(&repo, &["task", "add", "Other", "--accept", "works"]);
    let ask = |about: &str, text: &str| {
        ok(&repo, &["ask", about, text, "--no-block"])["data"]["question"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let q1 = ask("1", "first?");
    let q2 = ask("2", "second?");
    let q3 = ask("1", "third?");
    let q4 = ask("workspace", "fourth?");
    ok(&repo, &["answer", &q2, "yes to two"]);
    ok(&repo, &["answer", &q4, "yes to four", "--as", "none"]);
    let ids = |doc: &Value| -> Vec<String> {
        doc["data"]["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["question"].as_str().unwrap().to_string())
            .collect()
    };
    let all = ok(&repo, &["threads"]);
    assert_eq!(
        ids(&all),
        [q1.clone(), q3.clone(), q4.clone(), q2.clone()],
        "{all}"
    );
    assert_eq!(all["data"]["open"], 2);
    assert_eq!(all["data"]["truncated"], false);
    assert_eq!(all["data"]["threads"][0]["text"], "first?");
    assert_eq!(
        all["data"]["threads"][0]["about"]["ref"],
        "checkout/001-shim"
    );
    assert_eq!(
        all["data"]["threads"][2]["answers"][0]["text"],
        "# Answer: fourth?\n\nyes to four"
    );
    assert_eq!(all["data"]["threads"][2]["answers"][0]["note"], Value::Null);
    assert_eq!(
        all["data"]["threads"][3]["answers"][0]["text"],
        "# Answer: second?\n\nyes to two"
    );
    let cut = ok(&repo, &["threads", "--limit", "1"]);
    assert_eq!(ids(&cut), std::slice::from_ref(&q1));
    assert_eq!(cut["data"]["open"], 2);
    assert_eq!(cut["data"]["truncated"], true);
    assert_eq!(
        ids(&ok(&repo, &["threads", "--open"])),
        [q1.clone(), q3.clone()]
    );
    assert_eq!(
        ids(&ok(&repo, &["threads", "--about", "checkout/1"])),
        [q1.clone(), q3.clone()]
    );
    assert_eq!(
        ids(&ok(&repo, &["threads", "--about", "workspace"])),
        std::slice::from_ref(&q4)
    );
}
