//! The insight commands as a user runs them: `next`, `wbs`, `burndown`, `velocity` and `lint`,
//! on workspaces written file by file in the on-disk format (FORMAT §12), and on the bundled
//! example, which they must never write.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use crate::support::{Repo, dacli, one_json, repo_root};

/// A ULID minted at `time` (so that `created` agrees with the id), made unique by `salt`.
fn ulid_at(time: &str, salt: u128) -> String {
    let ts: jiff::Timestamp = time.parse().unwrap();
    ulid::Ulid::from_parts(ts.as_millisecond() as u64, salt).to_string()
}

/// A task file, hand-written per FORMAT §12.
struct Task<'a> {
    project: &'a str,
    folder: &'a str,
    number: u32,
    created: &'a str,
    owner: &'a str,
    /// Extra frontmatter lines (priority, estimate, parent, depends_on, traces, ...).
    front: String,
    /// Log lines after `created`, as `<time> <agent> <text>`.
    log: Vec<String>,
    /// Acceptance criteria lines (`- [ ] …`).
    criteria: &'a str,
}

impl<'a> Task<'a> {
    fn new(project: &'a str, folder: &'a str, number: u32) -> Task<'a> {
        Task {
            project,
            folder,
            number,
            created: "2026-03-01T09:00:00Z",
            owner: "a-root",
            front: String::new(),
            log: Vec::new(),
            criteria: "- [ ] it works\n",
        }
    }

    fn front(mut self, line: impl Into<String>) -> Self {
        self.front.push_str(&line.into());
        self.front.push('\n');
        self
    }

    fn log(mut self, line: &str) -> Self {
        self.log.push(line.to_string());
        self
    }

    fn at(mut self, created: &'a str) -> Self {
        self.created = created;
        self
    }

    fn id(&self) -> String {
        format!("t-{}", ulid_at(self.created, u128::from(self.number)))
    }

    fn path(&self) -> String {
        format!(
            ".dacli/projects/{}/tasks/{}/{:03}-task-{}.md",
            self.project, self.folder, self.number, self.number
        )
    }

    fn text(&self) -> String {
        let id = self.id();
        let mut log = format!("- {} a-root created\n", self.created);
        for l in &self.log {
            log.push_str(&format!("- {l}\n"));
        }
        format!(
            "+++\nid = \"{id}\"\nkind = \"task\"\ncreated = {}\ncreated_by = \"a-root\"\nowner = \"{}\"\nrev = \"{}\"\n{}+++\n\n# Task {}\n\n## Acceptance\n{}\n## Log\n{log}",
            self.created,
            self.owner,
            ulid_at(self.created, u128::from(self.number)),
            self.front,
            self.number,
            self.criteria,
        )
    }

    /// Writes the file and returns the task id.
    fn write(self, repo: &Repo) -> String {
        repo.write(&self.path(), self.text());
        self.id()
    }
}

fn project(repo: &Repo, slug: &str) {
    repo.write(
        &format!(".dacli/projects/{slug}/project.md"),
        format!(
            "+++\nid = \"p-{slug}\"\nkind = \"project\"\ncreated = 2026-03-01T08:00:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"{}\"\nstatus = \"active\"\nstage = \"build\"\n+++\n\n# Project {slug}\n\n## Vision\nV.\n\n## Goal\nG.\n\n## Constraints\n\n## Out of scope\n\n## Success criteria\n",
            ulid_at("2026-03-01T08:00:00Z", 0)
        ),
    );
}

/// An agent record with a known token; returns (id, token).
fn agent(repo: &Repo, role: &str, grant: &str, salt: u128) -> (String, String) {
    use sha2::{Digest, Sha256};
    let id = format!("a-{role}-{}", ulid_at("2026-03-01T08:30:00Z", salt));
    let token = format!("dacli_{id}_{}", "ab".repeat(32));
    let hash: String = Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    repo.write(
        &format!(".dacli/agents/{id}.md"),
        format!(
            "+++\nid = \"{id}\"\nkind = \"agent\"\ncreated = 2026-03-01T08:30:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"{}\"\nparent = \"a-root\"\ngrant = \"{grant}\"\nrole = \"{role}\"\ntoken_hash = \"sha256:{hash}\"\nstatus = \"live\"\n+++\n\n# {role}\n",
            ulid_at("2026-03-01T08:30:00Z", salt)
        ),
    );
    (id, token)
}

fn role(repo: &Repo, name: &str, extra: &str) {
    repo.write(
        &format!(".dacli/roles/{name}.md"),
        format!(
            "+++\nkind = \"role\"\nname = \"{name}\"\ncreated = 2026-03-01T08:20:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"{}\"\nsummary = \"Does {name} work\"\ngrant = \"rw\"\n{extra}+++\n\n# {name}\n",
            ulid_at("2026-03-01T08:20:00Z", 9)
        ),
    );
}

/// An event file in its date directory, with no checksum (accepted; lint warns).
fn event(repo: &Repo, at: &str, salt: u128, by: &str, kind: &str, fields: &str) -> String {
    let id = ulid_at(at, salt);
    let day = &at[..10].replace('-', "/");
    repo.write(
        &format!(".dacli/events/{day}/{id}-{by}-{kind}.md"),
        format!(
            "+++\nid = \"{id}\"\nkind = \"event\"\nevent_kind = \"{kind}\"\ncreated = {at}\ncreated_by = \"{by}\"\n{fields}+++\n"
        ),
    );
    id
}

fn refs(items: &Value) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["task"]["ref"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn next_lists_ready_tasks_by_priority_then_what_they_unblock() {
    let repo = Repo::initialized();
    project(&repo, "shop");
    let active = Task::new("shop", "active", 1)
        .front("priority = \"must\"")
        .front("assignee = \"a-root\"")
        .write(&repo);
    let blocker = Task::new("shop", "open", 2)
        .front("priority = \"should\"")
        .front("estimate = { optimistic = 1, probable = 2, pessimistic = 3 }")
        .write(&repo);
    // 3 and 4 wait for 2; 5 waits for 4 (so 2 unblocks three tasks).
    let t3 = Task::new("shop", "open", 3)
        .front(format!(
            "depends_on = [{{ on = \"{blocker}\", type = \"FS\" }}]"
        ))
        .write(&repo);
    let t4 = Task::new("shop", "open", 4)
        .front(format!("depends_on = [{{ on = \"{blocker}\" }}]"))
        .write(&repo);
    Task::new("shop", "open", 5)
        .front(format!("depends_on = [{{ on = \"{t4}\", type = \"FS\" }}]"))
        .write(&repo);
    // SS on an active task: ready. FS on it: not ready.
    Task::new("shop", "open", 6)
        .front("priority = \"must\"")
        .front(format!(
            "depends_on = [{{ on = \"{active}\", type = \"SS\" }}]"
        ))
        .write(&repo);
    Task::new("shop", "open", 7)
        .front("priority = \"must\"")
        .front(format!(
            "depends_on = [{{ on = \"{active}\", type = \"FS\" }}]"
        ))
        .write(&repo);
    // A parent with an open child is not ready; its child is.
    let parent = Task::new("shop", "open", 8)
        .front("priority = \"must\"")
        .write(&repo);
    Task::new("shop", "open", 9)
        .front("priority = \"could\"")
        .front(format!("parent = \"{parent}\""))
        .write(&repo);
    // wont, done and a task someone claimed by event (folded in at once) are not ready.
    Task::new("shop", "open", 10)
        .front("priority = \"wont\"")
        .write(&repo);
    Task::new("shop", "done", 11)
        .front("resolution = \"completed\"")
        .write(&repo);
    let claimed = Task::new("shop", "open", 12)
        .front("priority = \"must\"")
        .write(&repo);
    event(
        &repo,
        "2026-03-01T12:00:00Z",
        1,
        "a-root",
        "claim",
        &format!("about = \"{claimed}\"\n"),
    );
    let _ = t3;

    let (code, doc) = repo.json(&["next", "--limit", "0"]);
    assert_eq!(code, 0, "{doc}");
    let data = &doc["data"];
    assert_eq!(
        refs(&data["items"]),
        vec!["shop/006-task-6", "shop/002-task-2", "shop/009-task-9",]
    );
    assert_eq!(data["items"][0]["rank"], 1);
    assert_eq!(data["items"][0]["why"], serde_json::json!(["must"]));
    assert_eq!(
        data["items"][1]["why"],
        serde_json::json!(["should", "unblocks 3"])
    );
    let summary = &data["items"][1]["task"];
    assert_eq!(summary["status"], "open");
    assert_eq!(summary["estimate"]["optimistic"], 1);
    assert_eq!(summary["estimate"]["expected"], 2.0);
    assert_eq!(
        summary["acceptance"],
        serde_json::json!({"checked": 0, "total": 1})
    );
    assert_eq!(data["omitted"], 0);
    // Two of three ready tasks have no estimate: announced, in data and on stderr.
    assert_eq!(data["notices"][0]["code"], "unestimated");
    assert!(
        data["notices"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("2 of 3 ready tasks have no estimate"),
        "{}",
        data["notices"][0]
    );

    // --limit keeps the order and counts the rest as omitted.
    let (_, doc) = repo.json(&["next", "--limit", "1"]);
    assert_eq!(refs(&doc["data"]["items"]), vec!["shop/006-task-6"]);
    assert_eq!(doc["data"]["omitted"], 2);
    let out = repo.dacli(&["next"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("note: 2 of 3 ready tasks"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("shop/002-task-2"));
}

#[test]
fn next_keeps_only_what_the_agent_could_claim() {
    let repo = Repo::initialized();
    project(&repo, "shop");
    role(
        &repo,
        "builder",
        "scope = [\"src/**\"]\nout_of_scope = [\"src/secret/**\"]\nwip = 1\n",
    );
    let (builder, token) = agent(&repo, "builder", "rw", 1);
    let (other, _) = agent(&repo, "builder", "rw", 2);
    Task::new("shop", "open", 1)
        .front("priority = \"must\"")
        .front("traces = [\"src/a.rs\", \"src/lib\"]")
        .write(&repo);
    Task::new("shop", "open", 2)
        .front("priority = \"must\"")
        .front("traces = [\"docs/guide.md\"]")
        .write(&repo);
    Task::new("shop", "open", 3)
        .front("priority = \"must\"")
        .front("traces = [\"src/a.rs\", \"src/secret/key.rs\"]")
        .write(&repo);
    Task::new("shop", "open", 4).write(&repo);

    let (code, doc) = repo.json(&["next", "--for", &builder]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        refs(&doc["data"]["items"]),
        vec!["shop/001-task-1", "shop/004-task-4"]
    );
    assert_eq!(doc["data"]["omitted"], 2);
    // The caller by default: the same answer with the builder's own token.
    let out = repo
        .dacli(&["next", "--json"])
        .env("DACLI_AGENT", &token)
        .output()
        .unwrap();
    assert_eq!(
        refs(&one_json(&out.stdout)["data"]["items"]),
        refs(&doc["data"]["items"])
    );
    // Root is exempt from role checks.
    let (_, doc) = repo.json(&["next"]);
    assert_eq!(doc["data"]["items"].as_array().unwrap().len(), 4);

    // Another builder holds an active task: the role is at its cap of 1.
    Task::new("shop", "active", 5)
        .front(format!("assignee = \"{other}\""))
        .write(&repo);
    let (_, doc) = repo.json(&["next", "--for", &builder]);
    assert_eq!(doc["data"]["items"], serde_json::json!([]));
    assert_eq!(doc["data"]["omitted"], 4);
    assert_eq!(doc["data"]["notices"][0]["code"], "wip_cap");
    let message = doc["data"]["notices"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("1/1") && message.contains("shop/005-task-5"),
        "{message}"
    );

    let (code, doc) = repo.json(&["next", "--for", "a-nobody-01KJPX6ZT81TTNRTABC9KBJYTV"]);
    assert_eq!(code, 4, "{doc}");
    assert_eq!(doc["error"]["code"], "E_NOT_FOUND");
}

#[test]
fn wbs_rolls_up_expected_effort_and_sigma() {
    let repo = Repo::initialized();
    project(&repo, "shop");
    let parent = Task::new("shop", "open", 1)
        .front("estimate = { optimistic = 1, probable = 2, pessimistic = 3 }")
        .write(&repo);
    Task::new("shop", "open", 2)
        .front(format!("parent = \"{parent}\""))
        .front("estimate = { optimistic = 2, probable = 4, pessimistic = 9 }")
        .write(&repo);
    Task::new("shop", "done", 3)
        .front(format!("parent = \"{parent}\""))
        .front("resolution = \"completed\"")
        .front("estimate = { optimistic = 1, probable = 2, pessimistic = 4 }")
        .write(&repo);
    Task::new("shop", "open", 4)
        .front(format!("parent = \"{parent}\""))
        .write(&repo);
    Task::new("shop", "open", 5)
        .front("estimate = { optimistic = 1, probable = 1.5, pessimistic = 2 }")
        .write(&repo);

    let (code, doc) = repo.json(&["wbs"]);
    assert_eq!(code, 0, "{doc}");
    let p = &doc["data"]["projects"][0];
    assert_eq!(p["id"], "p-shop");
    let root = &p["nodes"][0];
    assert_eq!(root["task"]["ref"], "shop/001-task-1");
    assert_eq!(root["expected"], 2.0);
    assert_eq!(root["sigma"], 0.33);
    // 2 + 4.5 + 13/6 = 8.67; sqrt((1/3)² + (7/6)² + (1/2)²) = 1.31
    assert_eq!(
        root["rollup"],
        serde_json::json!({"expected": 8.67, "sigma": 1.31, "done": 2.17, "tasks": 4, "unestimated": 1})
    );
    let children = root["children"].as_array().unwrap();
    assert_eq!(children.len(), 3);
    assert_eq!(children[0]["expected"], 4.5);
    assert_eq!(children[0]["sigma"], 1.17);
    assert_eq!(children[2]["expected"], Value::Null);
    assert_eq!(p["nodes"][1]["task"]["ref"], "shop/005-task-5");
    assert_eq!(p["rollup"]["expected"], 10.17);
    assert_eq!(p["rollup"]["tasks"], 5);

    let (_, shallow) = repo.json(&["wbs", "--depth", "1", "--project", "p-shop"]);
    let root = &shallow["data"]["projects"][0]["nodes"][0];
    assert_eq!(root["children"], serde_json::json!([]));
    assert_eq!(
        root["rollup"]["expected"], 8.67,
        "rollups cover hidden levels"
    );
    let (code, _) = repo.json(&["wbs", "--depth", "0"]);
    assert_eq!(code, 2);
    let (code, doc) = repo.json(&["wbs", "--project", "nope"]);
    assert_eq!(
        (code, doc["error"]["code"].as_str()),
        (4, Some("E_NOT_FOUND"))
    );
}

/// A task finished, reopened and finished again, and one added later; the series follows the
/// Log day by day.
fn burndown_repo() -> Repo {
    let repo = Repo::initialized();
    project(&repo, "shop");
    Task::new("shop", "done", 1)
        .at("2026-02-27T10:00:00Z")
        .front("resolution = \"completed\"")
        .front("estimate = { optimistic = 2, probable = 4, pessimistic = 9 }")
        .log("2026-02-28T10:00:00Z a-root finished")
        .log("2026-03-01T09:00:00Z a-root reopened: the totals regressed")
        .log("2026-03-01T15:00:00Z a-root finished")
        .write(&repo);
    Task::new("shop", "open", 2)
        .at("2026-02-28T12:00:00Z")
        .front("estimate = { optimistic = 1, probable = 2, pessimistic = 3 }")
        .write(&repo);
    Task::new("shop", "open", 3)
        .at("2026-02-28T12:00:00Z")
        .write(&repo);
    repo
}

#[test]
fn burndown_follows_the_log_and_returns_reopened_work() {
    let repo = burndown_repo();
    let (code, doc) = repo.json(&[
        "burndown",
        "--project",
        "shop",
        "--since",
        "2026-02-27T00:00:00Z",
        "--until",
        "2026-03-01T12:00:00Z",
    ]);
    assert_eq!(code, 0, "{doc}");
    let data = &doc["data"];
    assert_eq!(data["project"], "p-shop");
    assert_eq!(data["unestimated"], 1);
    assert_eq!(data["svg"], Value::Null);
    assert_eq!(
        data["series"],
        serde_json::json!([
            {"date": "2026-02-27", "scope": 4.5, "done": 0.0, "remaining": 4.5},
            {"date": "2026-02-28", "scope": 6.5, "done": 4.5, "remaining": 2.0},
            // reopened at 09:00, finished again at 15:00, after --until
            {"date": "2026-03-01", "scope": 6.5, "done": 0.0, "remaining": 6.5},
        ])
    );
    // Durations count back from the pinned clock (2026-03-02T09:00:00Z); the default
    // start is the first task's creation day.
    let (_, doc) = repo.json(&["burndown", "--project", "shop", "--since", "2d"]);
    let series = doc["data"]["series"].as_array().unwrap();
    assert_eq!(series[0]["date"], "2026-02-28");
    assert_eq!(series.last().unwrap()["date"], "2026-03-02");
    assert_eq!(series.last().unwrap()["remaining"], 2.0);
    let (_, doc) = repo.json(&["burndown", "--project", "shop"]);
    assert_eq!(doc["data"]["series"][0]["date"], "2026-02-27");
    for bad in [
        ["--since", "yesterday"],
        ["--until", "2026-02-01T00:00:00Z"],
    ] {
        let (code, doc) = repo.json(&["burndown", "--project", "shop", bad[0], bad[1]]);
        assert_eq!(code, 2, "{bad:?}: {doc}");
    }
}

/// Every tag is closed or self-closing, and nothing active or external is embedded.
fn assert_wellformed_svg(svg: &str) {
    assert!(
        svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"360\"")
    );
    assert!(svg.ends_with("</svg>\n"));
    for banned in ["<script", "font-face", "href", "@import", "2026-03-02T"] {
        assert!(!svg.contains(banned), "{banned} in the chart");
    }
    let mut open: Vec<String> = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find('<') {
        let end = rest[start..].find('>').expect("tag closes") + start;
        let tag = &rest[start + 1..end];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop().as_deref(), Some(name), "mismatched </{name}>");
        } else if !tag.ends_with('/') {
            open.push(tag.split_whitespace().next().unwrap().to_string());
        }
        rest = &rest[end + 1..];
    }
    assert!(open.is_empty(), "unclosed {open:?}");
}

#[test]
fn burndown_svg_is_well_formed_and_byte_identical_across_runs() {
    let repo = burndown_repo();
    let args = ["burndown", "--project", "shop", "--format", "svg"];
    let first = repo.dacli(&args).output().unwrap();
    let second = repo.dacli(&args).output().unwrap();
    assert_eq!(first.status.code(), Some(0));
    assert_eq!(first.stdout, second.stdout, "the chart is deterministic");
    let svg = String::from_utf8(first.stdout).unwrap();
    assert_wellformed_svg(&svg);
    assert!(svg.contains("<path") && svg.contains(">scope</text>"));
    assert!(svg.contains(">remaining</text>") && svg.contains(">Feb 27</text>"));

    // --json carries the same chart in data.svg.
    let (_, doc) = repo.json(&args);
    assert_eq!(doc["data"]["svg"].as_str().unwrap(), svg);

    // --out writes it inside the work tree, relative to the current directory.
    std::fs::create_dir_all(repo.path().join("docs")).unwrap();
    let out = repo
        .dacli(&[
            "burndown",
            "--project",
            "shop",
            "--format",
            "svg",
            "--out",
            "chart.svg",
        ])
        .current_dir(repo.path().join("docs"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "wrote the burndown of p-shop to docs/chart.svg\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("docs/chart.svg")).unwrap(),
        svg
    );
    for bad in ["../outside.svg", ".dacli/chart.svg", "/tmp/dacli-chart.svg"] {
        let mut argv = args.to_vec();
        argv.extend(["--out", bad]);
        let (code, doc) = repo.json(&argv);
        assert_eq!(code, 2, "{bad}: {doc}");
        assert_eq!(doc["error"]["code"], "E_PATH_ESCAPE");
    }
    assert!(!repo.at(".dacli/chart.svg").exists());
}

#[test]
fn velocity_sums_completed_effort_per_iso_week() {
    let repo = Repo::initialized();
    project(&repo, "shop");
    let (builder, _) = agent(&repo, "builder", "rw", 1);
    // The pinned clock is Monday 2026-03-02, in 2026-W10.
    Task::new("shop", "done", 1)
        .front("resolution = \"completed\"")
        .front(format!("assignee = \"{builder}\""))
        .front("estimate = { optimistic = 2, probable = 4, pessimistic = 9 }")
        .log("2026-02-25T10:00:00Z a-root finished")
        .write(&repo);
    Task::new("shop", "done", 2)
        .front("resolution = \"completed\"")
        .front("estimate = { optimistic = 1, probable = 2, pessimistic = 4 }")
        .log("2026-03-02T08:00:00Z a-root finished")
        .write(&repo);
    Task::new("shop", "done", 3)
        .front("resolution = \"abandoned\"")
        .front("estimate = { optimistic = 5, probable = 5, pessimistic = 5 }")
        .log("2026-03-02T08:10:00Z a-root closed abandoned: not needed")
        .write(&repo);
    Task::new("shop", "done", 4)
        .front("resolution = \"completed\"")
        .log("2026-03-02T08:20:00Z a-root finished")
        .write(&repo);

    let (code, doc) = repo.json(&["velocity", "--weeks", "2", "--project", "shop"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        doc["data"],
        serde_json::json!({
            "project": "p-shop",
            "weeks": [
                {"week": "2026-W09", "points": 4.5, "tasks": 1},
                {"week": "2026-W10", "points": 2.17, "tasks": 2},
            ],
            "mean_points": 3.33,
            "by": null,
        })
    );
    let (_, doc) = repo.json(&["velocity", "--weeks", "2", "--by", "agent"]);
    let by = doc["data"]["by"].as_array().unwrap();
    let keys: Vec<&str> = by.iter().map(|g| g["key"].as_str().unwrap()).collect();
    assert_eq!(keys, vec![builder.as_str(), "a-root"]);
    assert_eq!(by[0]["weeks"][0]["points"], 4.5);
    let (_, doc) = repo.json(&["velocity", "--by", "role"]);
    let by = doc["data"]["by"].as_array().unwrap();
    let keys: Vec<&str> = by.iter().map(|g| g["key"].as_str().unwrap()).collect();
    assert_eq!(keys, vec!["builder", "root"]);
    assert_eq!(doc["data"]["weeks"].as_array().unwrap().len(), 6);
    let (code, _) = repo.json(&["velocity", "--by", "team"]);
    assert_eq!(code, 2);
}

/// The finding codes lint reports for each path.
fn codes_by_path(doc: &Value) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in doc["data"]["findings"].as_array().unwrap() {
        out.entry(f["path"].as_str().unwrap().to_string())
            .or_default()
            .push(f["code"].as_str().unwrap().to_string());
    }
    out
}

fn note(repo: &Repo, dir: &str, slug: &str, salt: u128, front: &str, body: &str) -> String {
    let id = format!("n-{}", ulid_at("2026-03-01T10:00:00Z", salt));
    let kind = &dir[..dir.len() - 1];
    let path = format!(".dacli/projects/shop/notes/{dir}/{slug}.md");
    repo.write(
        &path,
        format!(
            "+++\nid = \"{id}\"\nkind = \"note\"\nnote_kind = \"{kind}\"\ncreated = 2026-03-01T10:00:00Z\ncreated_by = \"a-root\"\nscope = \"project\"\n{front}+++\n\n{body}"
        ),
    );
    path
}

/// A workspace with exactly one problem per file.
fn lint_repo() -> Repo {
    let repo = Repo::initialized();
    project(&repo, "shop");
    project(&repo, "empty");
    // empty_goal
    let p = repo.at(".dacli/projects/empty/project.md");
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("## Goal\nG.\n", "## Goal\n");
    std::fs::write(&p, text).unwrap();
    let good = Task::new("shop", "open", 1).write(&repo);
    // no_acceptance
    let mut t = Task::new("shop", "open", 2);
    t.criteria = "";
    t.write(&repo);
    // duplicate_section
    repo.write(
        ".dacli/projects/shop/tasks/open/003-task-3.md",
        Task::new("shop", "open", 3).text().replace(
            "## Acceptance",
            "## Context\nA.\n\n## Context\nB.\n\n## Acceptance",
        ),
    );
    // noncanonical (CRLF)
    repo.write(
        ".dacli/projects/shop/tasks/open/004-task-4.md",
        Task::new("shop", "open", 4).text().replace('\n', "\r\n"),
    );
    // broken_reference
    Task::new("shop", "open", 5)
        .front("parent = \"t-01KJPXD8700K5AXT5MT87ZPZX4\"")
        .write(&repo);
    // duplicate_seq: a second task numbered 006
    Task::new("shop", "open", 6).write(&repo);
    let twin = Task::new("shop", "open", 6).at("2026-03-01T11:00:00Z");
    let twin_path = ".dacli/projects/shop/tasks/open/006-twin.md";
    repo.write(twin_path, twin.text());
    // schema: an active task without assignee
    Task::new("shop", "active", 7).write(&repo);
    // merge_conflict
    repo.write(
        ".dacli/projects/shop/tasks/open/008-task-8.md",
        Task::new("shop", "open", 8)
            .text()
            .replace(
                "rev = ",
                "<<<<<<< ours\nrev = \"01KJPXD8700K5AXT5MT87ZPZX4\"\n=======\nrev = ",
            )
            .replace("+++\n\n# Task", ">>>>>>> theirs\n+++\n\n# Task"),
    );
    // stale_temp, 42 minutes old against the pinned clock
    let tmp = repo.write(".dacli/projects/shop/tasks/open/.dacli-tmp-0001", "half");
    std::fs::File::options()
        .write(true)
        .open(&tmp)
        .unwrap()
        .set_modified(std::time::SystemTime::from(
            "2026-03-02T08:18:00Z".parse::<jiff::Timestamp>().unwrap(),
        ))
        .unwrap();
    // stray_file
    repo.write(".dacli/roles/notes.txt", "scratch\n");
    // unknown_role
    role(
        &repo,
        "builder",
        "escalate_to = [\"architect\", \"human\"]\n",
    );
    // notes: decision_incomplete, metric_incomplete, severity_ignored
    note(
        &repo,
        "decisions",
        "no-rejected",
        1,
        "",
        "# D\n\n## Chose\nA.\n\n## Because\nB.\n",
    );
    note(
        &repo,
        "metrics",
        "out-of-order",
        2,
        "",
        "# M\n\n## Question\nQ?\n\n## Goal\nG.\n\n## Metric\nM.\n",
    );
    note(
        &repo,
        "refs",
        "with-severity",
        3,
        "severity = \"minor\"\n",
        "# R\n\nSee the spec.\n",
    );
    // risks: risk_without_action, derived_field_stored
    let risk = |slug: &str, salt: u128, extra: &str, body: &str| {
        repo.write(
            &format!(".dacli/projects/shop/risks/{slug}.md"),
            format!(
                "+++\nid = \"r-{u}\"\nkind = \"risk\"\ncreated = 2026-03-01T10:00:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"{u}\"\nstatus = \"open\"\n{extra}+++\n\n{body}",
                u = ulid_at("2026-03-01T10:00:00Z", salt)
            ),
        );
    };
    risk(
        "no-action",
        4,
        "impact = \"high\"\nlikelihood = \"high\"\n",
        "# R\n\n## Indicators\n- x\n",
    );
    risk(
        "stored-rank",
        5,
        "impact = \"low\"\nlikelihood = \"low\"\nrank = 3\n",
        "# R\n",
    );
    // duplicate_term
    repo.write(
        ".dacli/projects/shop/glossary.md",
        format!(
            "+++\nkind = \"glossary\"\nproject = \"p-shop\"\ncreated = 2026-03-01T10:00:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"{}\"\n+++\n\n# Glossary\n\n- **Cent** \u{2014} a hundredth.\n- **cent** \u{2014} again.\n",
            ulid_at("2026-03-01T10:00:00Z", 6)
        ),
    );
    // queue_step_numbers
    repo.write(
        ".dacli/queues/release.md",
        format!(
            "+++\nid = \"q-release\"\nkind = \"queue\"\ncreated = 2026-03-01T10:00:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"{}\"\ncursor = 0\n+++\n\n# Release\n\n## Steps\n1. test\n3. tag\n",
            ulid_at("2026-03-01T10:00:00Z", 7)
        ),
    );
    // events: event_no_checksum (every event here lacks one), receipt_foreign,
    // receipt_disagreement
    let (builder, _) = agent(&repo, "builder", "rw", 1);
    let claim = event(
        &repo,
        "2026-03-01T12:00:00Z",
        1,
        &builder,
        "claim",
        &format!("about = \"{good}\"\n"),
    );
    event(
        &repo,
        "2026-03-01T12:05:00Z",
        2,
        "a-root",
        "applied",
        &format!("about = \"{good}\"\napplied = [\"{claim}\"]\nrejected = []\n"),
    );
    event(
        &repo,
        "2026-03-01T12:10:00Z",
        3,
        &builder,
        "applied",
        &format!(
            "about = \"{good}\"\napplied = []\nrejected = [{{ id = \"{claim}\", reason = \"claimed\" }}]\n"
        ),
    );
    // consent_foreign
    repo.write(
        ".dacli/github/consent/01KJWEY3401D8YEST223MSSH1Q.toml",
        format!(
            "id = \"01KJWEY3401D8YEST223MSSH1Q\"\nkind = \"consent\"\ncreated = 2026-03-04T13:00:00Z\ncreated_by = \"{builder}\"\ngranted_by = \"human:x\"\naction = \"grant\"\nproject = \"p-shop\"\nrepo = \"a/b\"\nvisibility = \"public\"\nclasses = [\"tasks\"]\n"
        ),
    );
    repo
}

#[test]
fn lint_reports_each_problem_with_its_code_and_severity() {
    let repo = lint_repo();
    let (code, doc) = repo.json(&["lint"]);
    assert_eq!(code, 0, "{doc}");
    let by_path = codes_by_path(&doc);
    let ev = |suffix: &str| {
        by_path
            .keys()
            .find(|p| p.starts_with(".dacli/events/") && p.ends_with(suffix))
            .unwrap_or_else(|| panic!("no event {suffix}"))
            .clone()
    };
    let claim_path = ev("-claim.md");
    let receipts: Vec<String> = by_path
        .keys()
        .filter(|p| p.ends_with("-applied.md"))
        .cloned()
        .collect();
    assert_eq!(receipts.len(), 2);
    let mut expected: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let t = ".dacli/projects/shop/tasks";
    for (path, codes) in [
        (".dacli/projects/empty/project.md", vec!["empty_goal"]),
        (&format!("{t}/open/002-task-2.md"), vec!["no_acceptance"]),
        (
            &format!("{t}/open/003-task-3.md"),
            vec!["duplicate_section"],
        ),
        (&format!("{t}/open/004-task-4.md"), vec!["noncanonical"]),
        (&format!("{t}/open/005-task-5.md"), vec!["broken_reference"]),
        (&format!("{t}/open/006-task-6.md"), vec!["duplicate_seq"]),
        (&format!("{t}/open/006-twin.md"), vec!["duplicate_seq"]),
        (&format!("{t}/active/007-task-7.md"), vec!["schema"]),
        (&format!("{t}/open/008-task-8.md"), vec!["merge_conflict"]),
        (&format!("{t}/open/.dacli-tmp-0001"), vec!["stale_temp"]),
        (".dacli/roles/notes.txt", vec!["stray_file"]),
        (".dacli/roles/builder.md", vec!["unknown_role"]),
        (
            ".dacli/projects/shop/notes/decisions/no-rejected.md",
            vec!["decision_incomplete"],
        ),
        (
            ".dacli/projects/shop/notes/metrics/out-of-order.md",
            vec!["metric_incomplete"],
        ),
        (
            ".dacli/projects/shop/notes/refs/with-severity.md",
            vec!["severity_ignored"],
        ),
        (
            ".dacli/projects/shop/risks/no-action.md",
            vec!["risk_without_action"],
        ),
        (
            ".dacli/projects/shop/risks/stored-rank.md",
            vec!["derived_field_stored"],
        ),
        (".dacli/projects/shop/glossary.md", vec!["duplicate_term"]),
        (".dacli/queues/release.md", vec!["queue_step_numbers"]),
        (
            ".dacli/github/consent/01KJWEY3401D8YEST223MSSH1Q.toml",
            vec!["consent_foreign"],
        ),
        (&claim_path, vec!["event_no_checksum"]),
        (&receipts[0], vec!["event_no_checksum"]),
        (
            &receipts[1],
            vec![
                "event_no_checksum",
                "receipt_disagreement",
                "receipt_foreign",
            ],
        ),
    ] {
        expected.insert(path.to_string(), codes);
    }
    let actual: BTreeMap<String, Vec<&str>> = by_path
        .iter()
        .map(|(p, c)| (p.clone(), c.iter().map(String::as_str).collect()))
        .collect();
    assert_eq!(actual, expected);

    // Severities: exactly the §9 errors are errors.
    let errors: BTreeSet<&str> = doc["data"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        errors,
        BTreeSet::from([
            "decision_incomplete",
            "merge_conflict",
            "metric_incomplete",
            "risk_without_action",
            "schema",
        ])
    );
    // Sorted by path, then code; the merge conflict names both revs; the summary adds up.
    let findings = doc["data"]["findings"].as_array().unwrap();
    let keys: Vec<(String, String)> = findings
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().into(),
                f["code"].as_str().unwrap().into(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    let conflict = findings
        .iter()
        .find(|f| f["code"] == "merge_conflict")
        .unwrap();
    assert!(
        conflict["message"].as_str().unwrap().contains(" and "),
        "{conflict}"
    );
    assert_eq!(doc["data"]["summary"]["errors"], 5);
    assert_eq!(doc["data"]["summary"]["warnings"], findings.len() - 5);
    let twin = findings
        .iter()
        .find(|f| f["path"] == ".dacli/projects/shop/tasks/open/006-twin.md")
        .unwrap();
    assert_eq!(twin["fixable"], true, "the twin has the greater ULID");

    // PATH and --project narrow the report.
    let (_, doc) = repo.json(&["lint", ".dacli/queues"]);
    assert_eq!(
        codes_by_path(&doc).into_keys().collect::<Vec<_>>(),
        vec![".dacli/queues/release.md"]
    );
    let (_, doc) = repo.json(&["lint", "--project", "empty"]);
    assert_eq!(doc["data"]["findings"].as_array().unwrap().len(), 1);
    let (code, _) = repo.json(&["lint", "../etc"]);
    assert_eq!(code, 2);
    let (code, _) = repo.json(&["lint", ".dacli/nothing-here"]);
    assert_eq!(code, 4);
}

#[test]
fn lint_check_exits_1_while_an_error_remains() {
    let repo = Repo::initialized();
    project(&repo, "shop");
    Task::new("shop", "open", 1).write(&repo);
    let (code, doc) = repo.json(&["lint", "--check"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["summary"]["errors"], 0);
    let path = note(&repo, "decisions", "half", 1, "", "# D\n\n## Chose\nA.\n");
    let (code, doc) = repo.json(&["lint", "--check"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["error"]["code"], "E_LINT");
    assert!(
        doc["error"]["hints"][0]
            .as_str()
            .unwrap()
            .starts_with(&format!("{path}: decision_incomplete"))
    );
    // Warnings alone pass the check.
    std::fs::remove_file(repo.path().join(&path)).unwrap();
    let mut bare = Task::new("shop", "open", 2);
    bare.criteria = "";
    bare.write(&repo);
    let (code, doc) = repo.json(&["lint", "--check"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["data"]["summary"]["warnings"], 1);
}

#[test]
fn lint_fix_repairs_what_the_caller_owns_and_names_what_it_may_not_touch() {
    let repo = Repo::initialized();
    project(&repo, "shop");
    role(&repo, "builder", "");
    role(&repo, "reviewer", "");
    let (builder, _) = agent(&repo, "builder", "rw", 1);
    let (_, ro_token) = agent(&repo, "reviewer", "ro", 2);
    let mine = Task::new("shop", "open", 1);
    let mine_path = mine.path();
    let original = mine.text();
    repo.write(&mine_path, original.replace('\n', "\r\n"));
    let mut theirs = Task::new("shop", "open", 2);
    theirs.owner = &builder;
    let theirs_path = theirs.path();
    repo.write(&theirs_path, theirs.text().replace('\n', "\r\n"));
    // Two tasks numbered 003; root owns the later one.
    Task::new("shop", "open", 3).write(&repo);
    let twin = Task::new("shop", "open", 3).at("2026-03-01T11:00:00Z");
    let twin_id = twin.id();
    repo.write(".dacli/projects/shop/tasks/open/003-twin.md", twin.text());
    let tmp = repo.write(".dacli/projects/shop/tasks/open/.dacli-tmp-0001", "half");
    std::fs::File::options()
        .write(true)
        .open(&tmp)
        .unwrap()
        .set_modified(std::time::SystemTime::from(
            "2026-03-02T08:18:00Z".parse::<jiff::Timestamp>().unwrap(),
        ))
        .unwrap();

    // One finding materialised twice under two slugs: byte-identical copies of one id.
    let body = "# Same finding\n\nSeen twice.\n";
    let kept = note(
        &repo,
        "findings",
        "a-copy",
        4,
        "severity = \"minor\"\n",
        body,
    );
    let copy = note(
        &repo,
        "findings",
        "b-copy",
        4,
        "severity = \"minor\"\n",
        body,
    );

    // An ro agent may not fix.
    let out = repo
        .dacli(&["lint", "--fix", "--json"])
        .env("DACLI_AGENT", &ro_token)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        one_json(&out.stdout)["refused"]["policy"],
        "grant.read_only"
    );

    let (code, doc) = repo.json(&["lint", "--fix"]);
    assert_eq!(code, 0, "{doc}");
    let findings = doc["data"]["findings"].as_array().unwrap();
    let get = |path: &str, code: &str| {
        findings
            .iter()
            .find(|f| f["path"] == path && f["code"] == code)
            .unwrap_or_else(|| panic!("no {code} for {path} in {doc}"))
            .clone()
    };
    assert_eq!(get(&mine_path, "noncanonical")["fixed"], true);
    let skipped = get(&theirs_path, "noncanonical");
    assert_eq!(skipped["skipped"], "not_owner");
    assert!(skipped.get("fixed").is_none());
    assert_eq!(
        get(
            ".dacli/projects/shop/tasks/open/003-twin.md",
            "duplicate_seq"
        )["fixed"],
        true
    );
    assert_eq!(
        get(
            ".dacli/projects/shop/tasks/open/.dacli-tmp-0001",
            "stale_temp"
        )["fixed"],
        true
    );
    assert_eq!(get(&copy, "duplicate_id")["fixed"], true);
    assert!(
        !findings.iter().any(|f| f["path"] == kept.as_str()),
        "removing the copy settles the path that stays"
    );
    assert_eq!(doc["data"]["summary"]["fixed"], 4);
    assert_eq!(doc["data"]["summary"]["errors"], 0);

    // The rewrite is canonical and differs from the original in the `rev` line only.
    let fixed = std::fs::read_to_string(repo.path().join(&mine_path)).unwrap();
    assert!(!fixed.contains('\r'));
    let diff: Vec<(&str, &str)> = original
        .lines()
        .zip(fixed.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(original.lines().count(), fixed.lines().count());
    assert_eq!(diff.len(), 1, "{diff:?}");
    assert!(diff[0].0.starts_with("rev = ") && diff[0].1.starts_with("rev = "));
    // Not the caller's: left as it was.
    assert!(
        std::fs::read(repo.path().join(&theirs_path))
            .unwrap()
            .contains(&b'\r')
    );
    assert!(!tmp.exists());
    assert!(repo.path().join(&kept).exists() && !repo.path().join(&copy).exists());
    // The twin moved to the next free number and logged it.
    assert!(
        !repo
            .path()
            .join(".dacli/projects/shop/tasks/open/003-twin.md")
            .exists()
    );
    let moved =
        std::fs::read_to_string(repo.at(".dacli/projects/shop/tasks/open/004-twin.md")).unwrap();
    assert!(moved.contains(&twin_id));
    assert!(
        moved.trim_end().ends_with("a-root renumbered 003 -> 004"),
        "{moved}"
    );

    // What remains is only what root may not touch.
    let (_, doc) = repo.json(&["lint"]);
    let left: Vec<(&str, &str)> = doc["data"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f["code"].as_str().unwrap()))
        .collect();
    assert_eq!(left, vec![(theirs_path.as_str(), "noncanonical")]);
}

#[test]
fn the_definition_of_done_counts_lint_errors_of_the_task_file() {
    let repo = Repo::initialized();
    let config = repo.at(".dacli/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[definition_of_done]\nlint = true\n");
    std::fs::write(&config, text).unwrap();
    project(&repo, "shop");
    let mut clean = Task::new("shop", "active", 1).front("assignee = \"a-root\"");
    clean.criteria = "- [x] it works\n";
    let clean = clean.write(&repo);
    let mut dirty = Task::new("shop", "active", 2)
        .front("assignee = \"a-root\"")
        .front("tags = [\"Not A Slug\"]");
    dirty.criteria = "- [x] it works\n";
    let dirty = dirty.write(&repo);
    for (salt, id) in [(1, &clean), (2, &dirty)] {
        event(
            &repo,
            "2026-03-01T12:00:00Z",
            salt,
            "a-root",
            "finish",
            &format!("about = \"{id}\"\n"),
        );
    }
    let (code, doc) = repo.json(&["wbs"]);
    assert_eq!(code, 0, "{doc}");
    let nodes = doc["data"]["projects"][0]["nodes"].as_array().unwrap();
    assert_eq!(
        nodes[0]["task"]["status"], "done",
        "the clean finish applies in the fold"
    );
    assert_eq!(nodes[1]["task"]["status"], "active");
    assert_eq!(
        nodes[1]["task"]["finish_requested"], true,
        "lint errors hold it"
    );
    let (_, doc) = repo.json(&["lint", "--check"]);
    assert_eq!(doc["error"]["code"], "E_LINT");
}

fn snapshot(dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            snapshot(&path, out);
        } else {
            out.insert(path.display().to_string(), std::fs::read(&path).unwrap());
        }
    }
}

#[test]
fn the_example_lints_clean_and_every_insight_command_reads_it_without_writing() {
    let example = repo_root().join(".dacli-example");
    let mut before = BTreeMap::new();
    snapshot(&example, &mut before);
    let run = |args: &[&str]| {
        let out = dacli()
            .current_dir(repo_root())
            .args(["-C", ".dacli-example"])
            .args(args)
            .arg("--json")
            .env("DACLI_TEST_CLOCK", "2026-03-05T18:00:00Z")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        one_json(&out.stdout)
    };
    let lint = run(&["lint", "--check"]);
    assert_eq!(lint["data"]["summary"]["errors"], 0, "{lint}");
    assert!(lint.get("warnings").is_none(), "{lint}");

    let wbs = run(&["wbs", "--project", "checkout"]);
    let p = &wbs["data"]["projects"][0];
    assert_eq!(p["rollup"]["tasks"], 14);
    assert_eq!(p["rollup"]["unestimated"], 2);
    // The epic holds every task but the `wont` one, which has no parent.
    assert_eq!(
        p["nodes"][0]["task"]["ref"],
        "checkout/001-move-checkout-money-to-integer-cents"
    );
    assert_eq!(p["nodes"][0]["rollup"]["tasks"], 13);

    // Nothing in the example is ready: every open task waits for a dependency or a child, is
    // `wont`, or was claimed by an event the fold shows.
    let next = run(&["next", "--for", "a-builder-01KJPX6ZT81TTNRTABC9KBJYTV"]);
    assert_eq!(next["data"]["items"], serde_json::json!([]));
    assert_eq!(next["data"]["omitted"], 0);

    let burndown = run(&["burndown", "--project", "checkout", "--format", "svg"]);
    let series = burndown["data"]["series"].as_array().unwrap();
    assert_eq!(series[0]["date"], "2026-03-02");
    assert_eq!(series.last().unwrap()["date"], "2026-03-05");
    assert_wellformed_svg(burndown["data"]["svg"].as_str().unwrap());

    let velocity = run(&["velocity", "--weeks", "1"]);
    assert_eq!(velocity["data"]["weeks"][0]["week"], "2026-W10");
    assert_eq!(
        velocity["data"]["weeks"][0]["tasks"], 3,
        "002, 005 and 011; 008 was abandoned"
    );

    let mut after = BTreeMap::new();
    snapshot(&example, &mut after);
    assert_eq!(before, after, "insight commands must not write the example");
}
