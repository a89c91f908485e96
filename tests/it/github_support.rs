//! The fake GitHub the `github*` suites share: a wiremock server with a catch-all that fails
//! any request a test did not expect, the validated fixtures of `fixtures/github/`, lists
//! served page by page along `Link`, and the workspaces and runs of dacli against it.

use std::path::Path;

use serde_json::{Value, json};
use wiremock::matchers::{any, method, path, query_param, query_param_is_missing};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Repo, repo_root};

/// The token every test hands dacli; it must never show up anywhere dacli writes.
pub(crate) const TOKEN: &str = "ghp_dacliCanaryToken0123456789abcdefXYZ";
pub(crate) const HEAD: &str = "8a1b2c3d4e5f60718293a4b5c6d7e8f901234567";
pub(crate) const BASE: &str = "0d464138a62332553fc1ea36f17fd374c6a53877";
pub(crate) const R: &str = "/repos/acme/widget";

/// A fixture of `fixtures/github/`.
pub(crate) fn fixture(name: &str) -> Value {
    let p = repo_root()
        .join("fixtures/github")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A fixture with some fields replaced (`/`-separated JSON pointers).
pub(crate) fn patched(name: &str, fields: &[(&str, Value)]) -> Value {
    let mut v = fixture(name);
    for (pointer, value) in fields {
        *v.pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{name} has no {pointer}")) = value.clone();
    }
    v
}

/// The fake GitHub: a wiremock server on its own runtime, with a catch-all that answers 500.
pub(crate) struct Fake {
    pub(crate) rt: tokio::runtime::Runtime,
    pub(crate) server: MockServer,
}

impl Fake {
    pub(crate) fn start() -> Fake {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let server = rt.block_on(MockServer::start());
        let fake = Fake { rt, server };
        fake.mount(
            Mock::given(any())
                .respond_with(
                    ResponseTemplate::new(500)
                        .set_body_string("unexpected request to the fake GitHub"),
                )
                .with_priority(u8::MAX)
                .named("catch-all: an unexpected request")
                .expect(0),
        );
        fake
    }

    pub(crate) fn url(&self) -> String {
        self.server.uri()
    }

    pub(crate) fn mount(&self, mock: Mock) {
        self.rt.block_on(mock.mount(&self.server));
    }

    /// GET `route` answers `status` with `body`.
    pub(crate) fn get(&self, route: &str, status: u16, body: Value) {
        self.mount(
            Mock::given(method("GET"))
                .and(path(route))
                .respond_with(ResponseTemplate::new(status).set_body_json(body)),
        );
    }

    pub(crate) fn requests(&self) -> Vec<wiremock::Request> {
        self.rt
            .block_on(self.server.received_requests())
            .unwrap_or_default()
    }

    /// Requests that could write (anything but GET).
    pub(crate) fn writes(&self) -> Vec<String> {
        self.requests()
            .iter()
            .filter(|r| r.method.as_str() != "GET")
            .map(|r| format!("{} {}", r.method, r.url.path()))
            .collect()
    }

    /// Panics if an expectation failed, the catch-all's `expect(0)` included.
    pub(crate) fn verify(&self) {
        self.rt.block_on(self.server.verify());
    }
}

/// A workspace linked to `acme/widget` by hand (the link command has its own tests).
pub(crate) fn linked() -> Repo {
    let repo = Repo::initialized();
    let config = repo.ws("config.toml");
    let mut text = std::fs::read_to_string(&config).expect("config");
    text.push_str("\n[github]\nrepo = \"acme/widget\"\napi_url = \"https://api.github.com\"\n");
    std::fs::write(&config, text).expect("write config");
    repo
}

/// What one run printed.
pub(crate) struct Ran {
    pub(crate) code: i32,
    pub(crate) doc: Value,
    pub(crate) stderr: String,
}

/// Runs dacli with `--json` against the fake, the canary token in GH_TOKEN, and `gh` shadowed
/// by a stub that fails (so no real credential is ever picked up).
pub(crate) fn run(repo: &Repo, fake: &Fake, args: &[&str]) -> Ran {
    run_with(repo, &fake.url(), args, &[("GH_TOKEN", TOKEN)], None)
}

pub(crate) fn run_with(
    repo: &Repo,
    api: &str,
    args: &[&str],
    env: &[(&str, &str)],
    agent_token: Option<&str>,
) -> Ran {
    let mut all = args.to_vec();
    all.push("--json");
    let mut cmd = repo.dacli(&all);
    cmd.env("DACLI_GITHUB_API_URL", api)
        .env("PATH", stub_path(repo.path(), "exit 1"))
        .env("DACLI_GITHUB_TIMEOUT_MS", "3000");
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(t) = agent_token {
        cmd.env("DACLI_AGENT", t);
    }
    let out = cmd.output().expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !stdout.contains(TOKEN) && !stderr.contains(TOKEN),
        "the token leaked"
    );
    Ran {
        code: out.status.code().unwrap_or(-1),
        doc: crate::support::one_json(&out.stdout),
        stderr,
    }
}

/// A PATH whose first entry holds a `gh` stub running `script`, then the system's.
pub(crate) fn stub_path(root: &Path, script: &str) -> String {
    let dir = root.join(".git").join("stub-bin");
    std::fs::create_dir_all(&dir).expect("stub dir");
    let gh = dir.join("gh");
    std::fs::write(&gh, format!("#!/bin/sh\n{script}\n")).expect("stub");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A linked workspace with project `checkout` (tasks and decisions may be projected), two
/// tasks (one with a token in its title), a decision and a private finding. Returns the id of
/// the plain task.
pub(crate) fn projection_workspace() -> (Repo, String) {
    let repo = linked();
    let ok = |args: &[&str]| {
        let (code, doc) = repo.json(args);
        assert_eq!(code, 0, "{args:?}: {doc}");
        doc
    };
    ok(&["project", "add", "Checkout", "--slug", "checkout"]);
    ok(&[
        "project",
        "edit",
        "checkout",
        "--projection-classes",
        "tasks,decisions",
    ]);
    let t = ok(&[
        "task",
        "add",
        "Round once at the boundary",
        "--project",
        "checkout",
        "--accept",
        "totals agree",
    ]);
    ok(&[
        "task",
        "add",
        "Rotate ghp_0123456789abcdefABCDEF0123 now",
        "--project",
        "checkout",
        "--accept",
        "rotated",
    ]);
    ok(&[
        "note",
        "add",
        "decision",
        "Round half-even",
        "--project",
        "checkout",
        "--chose",
        "half-even",
        "--rejected",
        "half-up: biased",
        "--because",
        "fair",
    ]);
    ok(&[
        "note",
        "add",
        "finding",
        "Refund rounds twice",
        "--project",
        "checkout",
        "--severity",
        "minor",
        "--private",
    ]);
    let id = t["data"]["task"]["id"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| panic!("task id in {t}"));
    (repo, id)
}

pub(crate) fn item<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["data"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["object"]["id"] == id)
        .unwrap_or_else(|| panic!("no item {id} in {doc}"))
}

pub(crate) fn reasons(item: &Value) -> Vec<String> {
    item["withheld"]
        .as_array()
        .expect("withheld")
        .iter()
        .map(|w| w["reason"].as_str().expect("reason").to_string())
        .collect()
}

/// The workspace id (markers carry it).
pub(crate) fn ws_id(repo: &Repo) -> String {
    std::fs::read_to_string(repo.ws("config.toml"))
        .expect("config")
        .lines()
        .find_map(|l| {
            l.strip_prefix("workspace_id = \"")
                .map(|s| s.trim_end_matches('"').to_string())
        })
        .expect("workspace id")
}

/// Serves `items` at `route` the way GitHub paginates: `per_page` items a page, each page but
/// the last naming the next in `Link`. `key` wraps each page (`{"total_count", key: [...]}`);
/// `times`, when given, is how often each page must be read.
pub(crate) fn paged(
    fake: &Fake,
    route: &str,
    key: Option<&str>,
    items: &[Value],
    per_page: usize,
    times: Option<u64>,
) {
    let pages: Vec<&[Value]> = items.chunks(per_page).collect();
    let total = items.len();
    for (i, page) in pages.iter().enumerate() {
        let n = i + 1;
        let body = match key {
            Some(k) => json!({"total_count": total, k: page}),
            None => Value::Array(page.to_vec()),
        };
        let mut answer = ResponseTemplate::new(200).set_body_json(body);
        if n < pages.len() {
            answer = answer.insert_header(
                "link",
                format!(
                    "<{}{route}?per_page={per_page}&page={}>; rel=\"next\", <{}{route}?per_page={per_page}&page={}>; rel=\"last\"",
                    fake.url(),
                    n + 1,
                    fake.url(),
                    pages.len()
                )
                .as_str(),
            );
        }
        let mock = Mock::given(method("GET")).and(path(route));
        let mock = if n == 1 {
            mock.and(query_param_is_missing("page"))
        } else {
            mock.and(query_param("page", n.to_string().as_str()))
        };
        let mock = mock.respond_with(answer);
        fake.mount(match times {
            Some(n) => mock.expect(n),
            None => mock,
        });
    }
}

/// The human text of one run against the fake.
pub(crate) fn text(repo: &Repo, fake: &Fake, args: &[&str]) -> String {
    let out = repo
        .dacli(args)
        .env("DACLI_GITHUB_API_URL", fake.url())
        .env("GH_TOKEN", TOKEN)
        .env("PATH", stub_path(repo.path(), "exit 1"))
        .env("DACLI_GITHUB_TIMEOUT_MS", "3000")
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!stdout.contains(TOKEN));
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `github consent grant` for `checkout`, granted by `human:mkoenig` (`--classes` to add).
pub(crate) const GRANT: [&str; 7] = [
    "github",
    "consent",
    "grant",
    "--project",
    "checkout",
    "--granted-by",
    "human:mkoenig",
];

/// Consent for `classes` (the default classes when `None`) of `checkout` on the public
/// `acme/widget`.
pub(crate) fn consent_to(repo: &crate::support::Repo, fake: &Fake, classes: Option<&str>) {
    let mut args = GRANT.to_vec();
    if let Some(c) = classes {
        args.extend(["--classes", c]);
    }
    let r = run(repo, fake, &args);
    assert_eq!(r.code, 0, "{}", r.doc);
}

/// Consent for the tasks of `checkout` on the public `acme/widget`.
pub(crate) fn consent(repo: &crate::support::Repo, fake: &Fake) {
    consent_to(repo, fake, Some("tasks"));
}

/// A `GET /search/issues` answer finding `issues` (the validated fixture `search_issues`
/// holding them, each with the `score` a search result carries).
pub(crate) fn search_result(issues: Vec<Value>) -> Value {
    let mut body = fixture("search_issues");
    body["total_count"] = json!(issues.len());
    body["items"] = issues
        .into_iter()
        .map(|mut i| {
            i["score"] = json!(1.0);
            i
        })
        .collect();
    body
}

/// Issue `number` as GitHub lists it (the validated fixture `issues_page`, renumbered).
pub(crate) fn issue(number: u64, body: String, state: &str) -> Value {
    let mut i = fixture("issues_page")[0].clone();
    i["number"] = json!(number);
    i["id"] = json!(10_000 + number);
    i["state"] = json!(state);
    i["title"] = json!(format!("issue {number}"));
    i["html_url"] = json!(format!("https://github.com/acme/widget/issues/{number}"));
    i["url"] = json!(format!(
        "https://api.github.com/repos/acme/widget/issues/{number}"
    ));
    i["body"] = json!(body);
    i
}

/// Mounts a whole PR scenario: PR 7 with the failing `test` check, its run, job and
/// annotation, an approval, the rulesets and branch protection of `main`. Tests mount
/// overrides first (mocks mounted earlier win among equal priorities).
pub(crate) fn failing_pr(fake: &Fake) {
    fake.get(&format!("{R}/pulls/7"), 200, fixture("pull"));
    fake.get(
        &format!("{R}/rules/branches/main"),
        200,
        fixture("rules_main"),
    );
    fake.get(
        &format!("{R}/branches/main/protection"),
        200,
        fixture("protection_main"),
    );
    fake.get(&format!("{R}/actions/runs"), 200, fixture("runs_failing"));
    fake.get(
        &format!("{R}/commits/{HEAD}/check-runs"),
        200,
        fixture("check_runs_failing"),
    );
    fake.get(
        &format!("{R}/commits/{HEAD}/status"),
        200,
        fixture("status_empty"),
    );
    fake.get(
        &format!("{R}/actions/runs/9001/jobs"),
        200,
        fixture("jobs_failing"),
    );
    fake.get(
        &format!("{R}/check-runs/4101/annotations"),
        200,
        fixture("annotations_test"),
    );
    fake.get(
        &format!("{R}/pulls/7/reviews"),
        200,
        fixture("reviews_approved"),
    );
}

/// The same PR, green: one passing required check and an approval.
pub(crate) fn green_pr(fake: &Fake, pull: Value) {
    fake.get(&format!("{R}/pulls/7"), 200, pull);
    fake.get(
        &format!("{R}/rules/branches/main"),
        200,
        fixture("rules_main"),
    );
    fake.get(
        &format!("{R}/branches/main/protection"),
        200,
        fixture("protection_main"),
    );
    fake.get(&format!("{R}/actions/runs"), 200, fixture("runs_green"));
    fake.get(
        &format!("{R}/commits/{HEAD}/check-runs"),
        200,
        fixture("check_runs_green"),
    );
    fake.get(
        &format!("{R}/commits/{HEAD}/status"),
        200,
        fixture("status_empty"),
    );
    fake.get(
        &format!("{R}/pulls/7/reviews"),
        200,
        fixture("reviews_approved"),
    );
}

/// `tests/<dir>` with its pinned npm packages installed (`npm ci` when `installed`, a file
/// under it, is missing); `None`, after saying the test skips, when npm is not there.
pub(crate) fn npm_dir(dir: &str, installed: &str) -> Option<std::path::PathBuf> {
    let dir = repo_root().join("tests").join(dir);
    if !dir.join(installed).exists() {
        if std::process::Command::new("npm")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!(
                "SKIPPED: npm not found; this test needs the packages of {}",
                dir.display()
            );
            return None;
        }
        let out = std::process::Command::new("npm")
            .current_dir(&dir)
            .args(["ci", "--no-audit", "--no-fund"])
            .output()
            .expect("npm runs");
        assert!(
            out.status.success(),
            "npm ci in {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Some(dir)
}
