//! `dacli search`: ranked full-text search on a derived FTS5 index that never lies.

use serde_json::Value;

use crate::review_support::{decision, glossary, ok, risk};
use crate::support::Repo;

fn refs(v: &Value) -> Vec<String> {
    v["data"]["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|h| h["ref"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Two projects with tasks, a decision, a risk, a glossary term and a question.
fn workspace() -> Repo {
    let repo = Repo::initialized();
    ok(&repo, &["project", "add", "Shop"]);
    ok(&repo, &["project", "add", "Billing"]);
    ok(
        &repo,
        &[
            "task",
            "add",
            "Add the rounding shim",
            "--project",
            "shop",
            "--accept",
            "Every caller goes through the shim",
        ],
    );
    ok(
        &repo,
        &[
            "task",
            "add",
            "Write docs",
            "--project",
            "shop",
            "--context",
            "Explain how rounding works, with a worked example.",
            "--accept",
            "A page exists",
        ],
    );
    ok(
        &repo,
        &[
            "task",
            "add",
            "Invoice totals",
            "--project",
            "billing",
            "--accept",
            "Totals use the rounding shim",
        ],
    );
    decision(
        &repo,
        "shop",
        "Round once at the boundary",
        "Round half-even once",
        "An async queue of jobs",
    );
    risk(&repo, "shop", "Refunds may be rounded twice", "low", "low");
    glossary(
        &repo,
        "shop",
        "minor unit",
        "the smallest unit of a currency",
    );
    ok(
        &repo,
        &[
            "ask",
            "shop/2",
            "Which currency table holds the minor unit?",
        ],
    );
    repo
}

#[test]
fn search_ranks_title_matches_first_with_ref_kind_and_excerpt() {
    let repo = workspace();
    let v = ok(&repo, &["search", "rounding"]);
    let r = refs(&v);
    // Title matches first (task 1, the risk's "rounded" does not match the word), then bodies.
    assert_eq!(r[0], "shop/001-add-the-rounding-shim", "{v}");
    assert!(v["data"]["hits"][0]["in_title"].as_bool().unwrap_or(false));
    assert!(r.contains(&"shop/002-write-docs".to_string()), "{r:?}");
    assert!(
        r.contains(&"billing/001-invoice-totals".to_string()),
        "{r:?}"
    );
    let title_hits = v["data"]["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .take_while(|h| h["in_title"] == true)
        .count();
    assert_eq!(title_hits, 1, "{v}");
    for h in v["data"]["hits"].as_array().expect("hits") {
        let excerpt = h["excerpt"].as_str().unwrap_or("");
        assert!(excerpt.contains("[rounding]"), "{h}");
        assert!(!excerpt.contains('\n'), "{h}");
        assert!(h["kind"].is_string());
    }
    let text = repo.dacli(&["search", "rounding"]).output().expect("runs");
    let text = String::from_utf8(text.stdout).expect("utf-8");
    assert!(
        text.starts_with("shop/001-add-the-rounding-shim  task  Add the rounding shim\n"),
        "{text}"
    );
}

#[test]
fn search_takes_phrases_and_prefixes() {
    let repo = workspace();
    let v = ok(&repo, &["search", "\"async queue\""]);
    assert_eq!(refs(&v).len(), 1, "{v}");
    assert_eq!(v["data"]["hits"][0]["kind"], "note");
    // The words apart, in another order, are no phrase.
    let v = ok(&repo, &["search", "\"queue async\""]);
    assert!(refs(&v).is_empty(), "{v}");
    // A prefix reaches "rounded" and "rounding" and "round".
    let v = ok(&repo, &["search", "round*"]);
    let kinds: Vec<&str> = v["data"]["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|h| h["kind"].as_str().unwrap_or(""))
        .collect();
    assert!(
        kinds.contains(&"risk") && kinds.contains(&"note") && kinds.contains(&"task"),
        "{kinds:?}"
    );
    // Without the star, "round" is a word of its own.
    let v = ok(&repo, &["search", "round"]);
    assert!(!refs(&v).iter().any(|r| r.starts_with("shop/001")), "{v}");
    // Punctuation is no syntax error; a word-joined term is a phrase.
    let v = ok(&repo, &["search", "half-even"]);
    assert_eq!(refs(&v).len(), 1, "{v}");
    let (code, _) = repo.json(&["search", "-- ::"]);
    assert_eq!(code, 2);
}

#[test]
fn search_filters_by_kind_project_status_and_limit() {
    let repo = workspace();
    let v = ok(
        &repo,
        &[
            "search",
            "rounding",
            "--kind",
            "task",
            "--project",
            "billing",
        ],
    );
    assert_eq!(refs(&v), ["billing/001-invoice-totals"], "{v}");
    let v = ok(&repo, &["search", "minor", "--kind", "question"]);
    assert_eq!(refs(&v).len(), 1, "{v}");
    assert_eq!(v["data"]["hits"][0]["kind"], "question");
    let v = ok(&repo, &["search", "minor", "--kind", "glossary"]);
    assert_eq!(refs(&v), ["shop/glossary#minor unit"], "{v}");
    let v = ok(
        &repo,
        &["search", "refunds", "--kind", "risk", "--status", "open"],
    );
    assert_eq!(refs(&v).len(), 1, "{v}");
    let v = ok(
        &repo,
        &["search", "refunds", "--kind", "risk", "--status", "closed"],
    );
    assert!(refs(&v).is_empty(), "{v}");
    ok(&repo, &["task", "claim", "shop/1"]);
    let v = ok(
        &repo,
        &["search", "shim", "--kind", "task", "--status", "active"],
    );
    assert_eq!(refs(&v), ["shop/001-add-the-rounding-shim"], "{v}");
    let v = ok(&repo, &["search", "rounding", "--limit", "1"]);
    assert_eq!(refs(&v).len(), 1);
    assert_eq!(v["data"]["truncated"], true);
    let (code, _) = repo.json(&["search", "rounding", "--limit", "0"]);
    assert_eq!(code, 2);
    let (code, _) = repo.json(&["search", "x", "--project", "Bad Slug"]);
    assert_eq!(code, 2);
}

/// Every search answer, for comparing before and after the cache is deleted.
fn answers(repo: &Repo) -> Vec<Value> {
    [
        "rounding",
        "shim",
        "round*",
        "\"minor unit\"",
        "totals",
        "currency",
        "exactly",
    ]
    .iter()
    .map(|q| ok(repo, &["search", q])["data"].clone())
    .collect()
}

#[test]
fn deleting_the_cache_changes_no_answer_even_after_an_in_place_edit() {
    let repo = workspace();
    let warm = answers(&repo);
    assert!(repo.ws("cache/search.sqlite").exists());
    std::fs::remove_dir_all(repo.ws("cache")).expect("rm cache");
    assert_eq!(answers(&repo), warm);

    // An edit in place that keeps the size and restores the modification time: only the
    // change time tells, and the index must read the file again.
    let file = repo.ws("projects/billing/tasks/open/001-invoice-totals.md");
    let before = std::fs::metadata(&file)
        .expect("meta")
        .modified()
        .expect("mtime");
    let text = std::fs::read_to_string(&file).expect("read");
    let edited = text.replace(
        "Totals use the rounding shim",
        "Totals use the exactly shim",
    );
    assert_eq!(
        edited.len(),
        text.len() - "rounding".len() + "exactly".len()
    );
    std::fs::write(&file, &edited).expect("write");
    std::fs::File::options()
        .write(true)
        .open(&file)
        .expect("open")
        .set_modified(before)
        .expect("set mtime");
    let after_edit = answers(&repo);
    assert_ne!(after_edit, warm);
    let exactly = ok(&repo, &["search", "exactly"]);
    assert_eq!(refs(&exactly), ["billing/001-invoice-totals"], "{exactly}");
    let rounding = ok(&repo, &["search", "rounding", "--project", "billing"]);
    assert!(refs(&rounding).is_empty(), "{rounding}");
    std::fs::remove_dir_all(repo.ws("cache")).expect("rm cache");
    assert_eq!(answers(&repo), after_edit);

    // A removed file leaves the index.
    std::fs::remove_file(&file).expect("rm");
    let gone = ok(&repo, &["search", "exactly"]);
    assert!(refs(&gone).is_empty(), "{gone}");
}

#[test]
fn a_damaged_search_database_is_rebuilt() {
    let repo = workspace();
    let warm = answers(&repo);
    std::fs::write(repo.ws("cache/search.sqlite"), b"not a database at all").expect("write");
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(repo.ws(&format!("cache/search.sqlite{suffix}")));
    }
    assert_eq!(answers(&repo), warm);
}

/// Comments on task shop/2 (an event).
fn comment(repo: &Repo, text: &str) {
    ok(repo, &["task", "comment", "shop/2", text]);
}

fn kinds(v: &Value) -> Vec<String> {
    v["data"]["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|h| h["kind"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn search_kind_note_event_and_repeated_kinds_each_narrow_the_hits() {
    let repo = workspace();
    comment(&repo, "The rounding example needs a second currency");
    // Unfiltered, a prefix reaches tasks, the risk, the note and the comment.
    let all = kinds(&ok(&repo, &["search", "round*", "--limit", "100"]));
    for k in ["task", "risk", "note", "event"] {
        assert!(all.iter().any(|x| x == k), "{k} in {all:?}");
    }
    let notes = kinds(&ok(&repo, &["search", "round*", "--kind", "note"]));
    assert!(
        !notes.is_empty() && notes.iter().all(|k| k == "note"),
        "{notes:?}"
    );
    let events = kinds(&ok(&repo, &["search", "round*", "--kind", "event"]));
    assert_eq!(events, ["event"], "{events:?}");
    let both = kinds(&ok(
        &repo,
        &["search", "round*", "--kind", "note", "--kind", "event"],
    ));
    assert_eq!(both.len(), notes.len() + 1, "{both:?}");
    assert!(both.iter().all(|k| k == "note" || k == "event"), "{both:?}");
    // An event's status is its kind.
    let v = ok(
        &repo,
        &[
            "search", "currency", "--kind", "event", "--status", "comment",
        ],
    );
    assert_eq!(kinds(&v), ["event"], "{v}");
    let v = ok(
        &repo,
        &["search", "currency", "--kind", "event", "--status", "claim"],
    );
    assert!(kinds(&v).is_empty(), "{v}");
}

#[test]
fn search_project_alone_keeps_only_that_projects_hits() {
    let repo = workspace();
    let all = refs(&ok(&repo, &["search", "rounding"]));
    assert!(all.iter().any(|r| r.starts_with("billing/")), "{all:?}");
    assert!(all.iter().any(|r| r.starts_with("shop/")), "{all:?}");
    for p in ["shop", "p-shop"] {
        let v = ok(&repo, &["search", "rounding", "--project", p]);
        let hits = refs(&v);
        assert!(!hits.is_empty(), "{v}");
        for h in v["data"]["hits"].as_array().expect("hits") {
            assert_eq!(h["project"], "shop", "{h}");
        }
    }
}

/// `search --json -- Q`: the query taken as it is, even when it starts with `-`.
fn query(repo: &Repo, q: &str) -> (i32, Value) {
    let out = repo
        .dacli(&["search", "--json", "--", q])
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        crate::support::one_json(&out.stdout),
    )
}

#[test]
fn hostile_queries_are_literal_words_or_a_usage_error_never_an_internal_one() {
    let repo = workspace();
    let plain = refs(&ok(&repo, &["search", "rounding"]));
    // FTS5's syntax in the input is punctuation around words: the words are searched.
    for q in [
        "-rounding",
        "rounding:",
        "title:rounding*",
        "\"rounding",
        "rounding\"",
        "^rounding",
        "(rounding)",
        "{rounding}",
        "rounding*",
        "'rounding'",
        "rounding;--",
        "rounding\\",
    ] {
        let (code, v) = query(&repo, q);
        assert_eq!(code, 0, "{q}: {v}");
        if q.starts_with("title:") {
            // `title:` is a word, not a column filter: nothing has both.
            assert!(refs(&v).is_empty(), "{q}: {v}");
        } else {
            assert_eq!(refs(&v), plain, "{q}: {v}");
        }
    }
    // Operators are words too: nothing holds "AND", "NOT" or "NEAR", so nothing matches
    // (as operators they would match).
    for q in [
        "rounding AND shim",
        "rounding OR shim",
        "NOT shim",
        "NEAR(rounding shim)",
    ] {
        let (code, v) = query(&repo, q);
        assert_eq!(code, 0, "{q}: {v}");
        assert!(refs(&v).is_empty(), "{q}: {v}");
    }
    // Input without a word is a usage error naming QUERY.
    for q in ["\"", "*", ":", "-", "NEAR(", "\"\"", "( )", "^", ""] {
        let (code, v) = query(&repo, q);
        if q == "NEAR(" {
            // NEAR is a word.
            assert_eq!(code, 0, "{q}: {v}");
            continue;
        }
        assert_eq!(code, 2, "{q}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("QUERY"),
            "{q}: {v}"
        );
    }
}

/// Waits past the file system clock's tick, then searches twice: the first search records
/// every row settled, the second is served from them, so what follows meets proven rows.
fn settle(repo: &Repo) {
    std::thread::sleep(std::time::Duration::from_millis(30));
    ok(repo, &["search", "anything"]);
    ok(repo, &["search", "anything"]);
}

/// The one file under `dir` (recursively) that holds `word`.
fn find_file(dir: &std::path::Path, word: &str) -> std::path::PathBuf {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("list").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read_to_string(&p).is_ok_and(|t| t.contains(word)) {
                found.push(p);
            }
        }
    }
    assert_eq!(found.len(), 1, "{found:?}");
    found.remove(0)
}

#[test]
fn proven_rows_still_see_an_in_place_edit_and_events_added_or_removed_by_hand() {
    let repo = workspace();
    comment(&repo, "The ledger needs a zebra column");
    settle(&repo);
    assert_eq!(refs(&ok(&repo, &["search", "zebra"])).len(), 1);

    // A task edited in place: same size, its modification time put back with `touch -r`.
    let file = repo.ws("projects/billing/tasks/open/001-invoice-totals.md");
    let stamp = repo.path().join("stamp");
    std::fs::write(&stamp, b"").expect("stamp file");
    let touch = |args: &[&std::path::Path]| {
        let st = std::process::Command::new("touch")
            .arg("-r")
            .args(args)
            .status()
            .expect("touch runs");
        assert!(st.success());
    };
    touch(&[&file, &stamp]);
    let text = std::fs::read_to_string(&file).expect("read");
    let edited = text.replace("the rounding shim", "the flamingo shim");
    assert_eq!(edited.len(), text.len());
    std::fs::write(&file, &edited).expect("write in place");
    touch(&[&stamp, &file]);
    let v = ok(&repo, &["search", "flamingo"]);
    assert_eq!(refs(&v), ["billing/001-invoice-totals"], "{v}");
    let v = ok(&repo, &["search", "rounding", "--project", "billing"]);
    assert!(refs(&v).is_empty(), "{v}");

    // An event removed by hand leaves the hits; put back by hand, it is found again.
    settle(&repo);
    let event = find_file(&repo.ws("events"), "zebra");
    let aside = repo.path().join("comment.md");
    std::fs::rename(&event, &aside).expect("move out");
    let v = ok(&repo, &["search", "zebra"]);
    assert!(refs(&v).is_empty(), "{v}");
    settle(&repo);
    std::fs::rename(&aside, &event).expect("move back");
    let v = ok(&repo, &["search", "zebra"]);
    assert_eq!(kinds(&v), ["event"], "{v}");

    // An event added by hand that a search meets half-written (it does not parse yet) is
    // found once its writer finishes, although its directory does not change again.
    comment(&repo, "A yak shaves the ledger");
    let event = find_file(&repo.ws("events"), "yak");
    let bytes = std::fs::read(&event).expect("read event");
    std::fs::remove_file(&event).expect("remove");
    settle(&repo);
    let (half, rest) = bytes.split_at(bytes.len() / 3);
    std::fs::write(&event, half).expect("half written");
    assert!(refs(&ok(&repo, &["search", "yak"])).is_empty());
    std::thread::sleep(std::time::Duration::from_millis(30));
    assert!(refs(&ok(&repo, &["search", "yak"])).is_empty());
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&event)
        .expect("open");
    std::io::Write::write_all(&mut f, rest).expect("the rest");
    drop(f);
    let v = ok(&repo, &["search", "yak"]);
    assert_eq!(kinds(&v), ["event"], "{v}");
}

#[test]
fn search_is_reachable_over_mcp_through_the_cli_tool() {
    use crate::mcp::{Server, assert_done};
    let repo = workspace();
    let mut s = Server::start_with(repo.path(), None, &[]);
    s.initialize("2025-11-25");
    let r = s.call(
        "cli",
        serde_json::json!({"argv": ["search", "rounding", "--kind", "task"]}),
    );
    let doc = assert_done(&r);
    // Exactly what `dacli search rounding --kind task --json` prints.
    let cli_doc = ok(&repo, &["search", "rounding", "--kind", "task"]);
    assert_eq!(doc, cli_doc);
    assert_eq!(refs(&doc)[0], "shop/001-add-the-rounding-shim", "{doc}");
    assert_eq!(s.finish().0, 0);
}

#[cfg(unix)]
#[test]
fn a_folder_that_is_a_symlink_inside_the_workspace_is_searched_with_what_moves_in_behind_it() {
    let repo = workspace();
    let open = repo.ws("projects/billing/tasks/open");
    let real = repo.ws("projects/billing/open-real");
    std::fs::rename(&open, &real).expect("move");
    std::os::unix::fs::symlink("../open-real", &open).expect("symlink");
    settle(&repo);
    let v = ok(&repo, &["search", "invoice"]);
    assert_eq!(refs(&v), ["billing/001-invoice-totals"], "{v}");
    // A task moved in behind the symlink changes the directory it leads to, not the link.
    let file = find_file(&repo.ws("projects/shop/tasks"), "Write docs");
    let name = file.file_name().expect("name").to_owned();
    std::fs::rename(&file, real.join(name)).expect("move in");
    let v = ok(&repo, &["search", "docs", "--project", "billing"]);
    assert_eq!(v["data"]["hits"].as_array().map(Vec::len), Some(1), "{v}");
}
