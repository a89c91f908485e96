//! `pr diagnose --watch` within GitHub's limits (issue 27): it backs off after a 403 or 429
//! (until `x-ratelimit-reset`, or for `retry-after`) and after a 5xx, sends nothing more in
//! a look once a rate limit answered, never more requests a look than `--max-api-calls`, and
//! stops at the run's deadline or at a reset that lies beyond it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

use crate::github_support::{Fake, HEAD, R, TOKEN, fixture, green_pr, linked, patched, run_with};

/// One answer of the check runs at the head.
#[derive(Clone)]
enum Answer {
    Pending,
    Green,
    /// 403, primary limit exhausted, resetting this many seconds from now.
    RateLimited(i64),
    /// 429 with `retry-after` in seconds.
    RetryAfter(u64),
    Status(u16),
}

/// The check runs at the head answer `script` in turn (its last answer ever after), and
/// record when each request came.
struct Scripted {
    script: Vec<Answer>,
    calls: Arc<AtomicUsize>,
    at: Arc<Mutex<Vec<Instant>>>,
}

impl wiremock::Respond for Scripted {
    fn respond(&self, _: &wiremock::Request) -> ResponseTemplate {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        self.at.lock().expect("lock").push(Instant::now());
        let answer = self.script[n.min(self.script.len() - 1)].clone();
        let mut green = fixture("check_runs_green");
        match answer {
            Answer::Green => ResponseTemplate::new(200).set_body_json(green),
            Answer::Pending => {
                green["check_runs"][0]["status"] = json!("in_progress");
                green["check_runs"][0]["conclusion"] = Value::Null;
                ResponseTemplate::new(200).set_body_json(green)
            }
            Answer::RateLimited(secs) => {
                let reset = jiff::Timestamp::now().as_second() + secs;
                ResponseTemplate::new(403)
                    .insert_header("x-ratelimit-remaining", "0")
                    .insert_header("x-ratelimit-limit", "5000")
                    .insert_header("x-ratelimit-reset", reset.to_string().as_str())
                    .set_body_json(json!({"message": "API rate limit exceeded"}))
            }
            Answer::RetryAfter(secs) => ResponseTemplate::new(429)
                .insert_header("retry-after", secs.to_string().as_str())
                .set_body_json(json!({"message": "You have exceeded a secondary rate limit"})),
            Answer::Status(s) => {
                ResponseTemplate::new(s).set_body_json(json!({"message": "Server Error"}))
            }
        }
    }
}

struct Watched {
    fake: Fake,
    calls: Arc<AtomicUsize>,
    at: Arc<Mutex<Vec<Instant>>>,
}

fn watched(script: Vec<Answer>) -> Watched {
    let fake = Fake::start();
    let calls = Arc::new(AtomicUsize::new(0));
    let at = Arc::new(Mutex::new(Vec::new()));
    fake.mount(
        Mock::given(method("GET"))
            .and(path(format!("{R}/commits/{HEAD}/check-runs")))
            .respond_with(Scripted {
                script,
                calls: calls.clone(),
                at: at.clone(),
            }),
    );
    green_pr(
        &fake,
        patched("pull", &[("/mergeable_state", json!("clean"))]),
    );
    Watched { fake, calls, at }
}

fn watch(
    repo: &crate::support::Repo,
    w: &Watched,
    extra: &[(&str, &str)],
) -> crate::github_support::Ran {
    let mut env = vec![("GH_TOKEN", TOKEN), ("DACLI_TEST_WATCH_POLL_MS", "50")];
    env.extend_from_slice(extra);
    run_with(
        repo,
        &w.fake.url(),
        &[
            "pr",
            "diagnose",
            "--pr",
            "7",
            "--watch",
            "--max-api-calls",
            "7",
        ],
        &env,
        None,
    )
}

/// The requests of each look: a look begins with the read of the pull request.
fn looks(fake: &Fake) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for r in fake.requests() {
        let p = r.url.path().to_string();
        if p == format!("{R}/pulls/7") || out.is_empty() {
            out.push(Vec::new());
        }
        out.last_mut().expect("a look").push(p);
    }
    out
}

#[test]
fn watch_backs_off_after_rate_limits_and_5xx_and_keeps_to_its_budget() {
    let repo = linked();
    let w = watched(vec![
        Answer::Pending,
        Answer::RateLimited(2),
        Answer::RetryAfter(1),
        Answer::Status(502),
        Answer::Green,
    ]);
    let r = watch(&repo, &w, &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let d = &r.doc["data"];
    assert_eq!(d["watch"]["finished"], true, "{}", r.stderr);
    assert_eq!(d["watch"]["polls"], 4, "{d}");
    assert_eq!(d["verdict"]["class"], "mergeable_now", "{}", d["verdict"]);
    assert_eq!(w.calls.load(Ordering::SeqCst), 5);
    let at = w.at.lock().expect("lock").clone();
    // Until the reset (at least one second away, the header counts whole seconds), then
    // retry-after's one second; after the 502 the ordinary, growing pause.
    assert!(
        at[2] - at[1] >= Duration::from_millis(1000),
        "{:?}",
        at[2] - at[1]
    );
    assert!(
        at[3] - at[2] >= Duration::from_millis(1000),
        "{:?}",
        at[3] - at[2]
    );
    assert!(
        at[4] - at[3] >= Duration::from_millis(50),
        "{:?}",
        at[4] - at[3]
    );
    assert!(
        r.stderr.contains("(rate_limited); looking again in"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("(server_error); looking again in"),
        "{}",
        r.stderr
    );
    let looks = looks(&w.fake);
    assert_eq!(looks.len(), 5, "{looks:#?}");
    for l in &looks {
        assert!(
            l.len() <= 7,
            "a look sent more than --max-api-calls: {l:#?}"
        );
    }
    // A rate limit ends its look at once: the check runs are the look's last request.
    for l in &looks[1..3] {
        assert!(
            l.last().is_some_and(|p| p.ends_with("/check-runs")),
            "a request after the rate limit: {l:#?}"
        );
    }
    w.fake.verify();
}

#[test]
fn watch_stops_at_the_run_deadline_and_at_a_reset_beyond_it() {
    let repo = linked();
    let w = watched(vec![Answer::Pending]);
    let started = Instant::now();
    let r = watch(&repo, &w, &[("DACLI_GITHUB_DEADLINE_MS", "1500")]);
    let took = started.elapsed();
    assert_eq!(r.code, 0, "{}\n{}", r.doc, r.stderr);
    let d = &r.doc["data"];
    assert_eq!(d["watch"]["finished"], false, "{d}");
    assert_eq!(d["watch"]["stopped_by"], "deadline_passed", "{d}");
    assert_eq!(d["verdict"]["class"], "waiting_on_checks");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(
        w.calls.load(Ordering::SeqCst) >= 2,
        "it looked more than once"
    );
    w.fake.verify();

    // A reset an hour away lies beyond the deadline: the watch stops at once and says why.
    let w = watched(vec![Answer::Pending, Answer::RateLimited(3600)]);
    let started = Instant::now();
    let r = watch(&repo, &w, &[]);
    assert!(started.elapsed() < Duration::from_secs(10));
    let d = &r.doc["data"];
    assert_eq!(
        d["watch"]["stopped_by"], "rate_limited",
        "{}\n{}",
        r.doc, r.stderr
    );
    assert_eq!(d["verdict"]["class"], "access_problem");
    assert!(
        d["access"]["problem"]["reset_at"].is_string(),
        "{}",
        d["access"]
    );
    assert_eq!(w.calls.load(Ordering::SeqCst), 2);
    w.fake.verify();
}

#[test]
fn watch_shows_its_progress_on_a_terminal_only() {
    let repo = linked();
    let w = watched(vec![Answer::Pending, Answer::Green]);
    let root = repo.path().display().to_string();
    let url = w.fake.url();
    let path = crate::github_support::stub_path(repo.path(), "exit 1");
    let (code, text) = crate::human_tty::on_tty(
        &["-C", &root, "pr", "diagnose", "--pr", "7", "--watch"],
        120,
        &[
            ("GH_TOKEN", TOKEN),
            ("DACLI_GITHUB_API_URL", &url),
            ("PATH", &path),
            ("DACLI_TEST_WATCH_POLL_MS", "1600"),
        ],
    );
    assert_eq!(code, Some(0), "{text}");
    // The spinner redraws its line: a carriage return, a line clear, a frame, the label.
    let spinner = ["|", "/", "-", "\\"]
        .iter()
        .any(|f| text.contains(&format!("\r<ESC>[2K{f} watching #7: 1 check(s) pending")));
    assert!(spinner, "{text:?}");
    assert!(!text.contains(TOKEN));
    w.fake.verify();

    // Piped, and with --json, nothing but the notices reaches stderr: no carriage return.
    let w = watched(vec![Answer::Pending, Answer::Green]);
    let r = run_with(
        &repo,
        &w.fake.url(),
        &["pr", "diagnose", "--pr", "7", "--watch"],
        &[("GH_TOKEN", TOKEN), ("DACLI_TEST_WATCH_POLL_MS", "1600")],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains('\r'), "{:?}", r.stderr);
    assert!(r.doc["data"]["watch"]["finished"] == true, "{}", r.doc);
}
