//! `bench mkws N DIR`: a realistic workspace of N tasks (spec QUALITY.md §1).
//!
//! The few objects that have a command of their own (agents, roles, shortcuts, the project,
//! risks, glossary terms) are made through the CLI; the bulk (tasks, notes, events) is written
//! directly in the on-disk format of FORMAT.md, then every count is checked through the CLI.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// The project every generated task lives in.
pub const PROJECT: &str = "bench";

/// The agents of a generated workspace, with their tokens.
#[derive(Debug, Clone)]
pub struct Agents {
    pub planner: (String, String),
    pub builders: Vec<(String, String)>,
    pub reviewer: (String, String),
}

/// What a generated workspace holds, as the CLI must report it (after folding).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub open: usize,
    pub active: usize,
    pub blocked: usize,
    pub done: usize,
    /// Note files plus pending `finding` events (note listings include both).
    pub notes: usize,
    pub risks: usize,
    pub terms: usize,
    pub shortcuts: usize,
    pub events: usize,
    pub pending: usize,
}

/// A built workspace.
#[derive(Debug, Clone)]
pub struct Built {
    pub dir: PathBuf,
    pub agents: Agents,
    pub counts: Counts,
    /// A task reference for `context`: an active task with a parent, notes and events.
    pub context_task: String,
}

/// Runs dacli in `dir` as `token` (root when `None`) with `--json`; returns `data`.
pub fn cli(dacli: &Path, dir: &Path, token: Option<&str>, args: &[&str]) -> Result<Value, String> {
    let mut cmd = Command::new(dacli);
    cmd.current_dir(dir).arg("--json").args(args);
    cmd.env_remove("DACLI_AGENT");
    if let Some(t) = token {
        cmd.env("DACLI_AGENT", t);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("running {}: {e}", dacli.display()))?;
    let doc: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "dacli {args:?}: not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    if doc["ok"] != true {
        return Err(format!("dacli {args:?} failed: {doc}"));
    }
    Ok(doc["data"].clone())
}

/// A small deterministic generator (splitmix64), so every build of one N is the same.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// True with probability `pct` percent.
    pub fn pct(&mut self, pct: u64) -> bool {
        self.next() % 100 < pct
    }
    pub fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Milliseconds of 2026-03-01T00:00:00Z, where generated history starts.
const EPOCH_MS: u64 = 1_772_323_200_000;

fn ulid(rng: &mut Rng, ms: u64) -> String {
    ulid::Ulid::from_parts(
        ms,
        u128::from(rng.next()) << 16 | u128::from(rng.next() as u16),
    )
    .to_string()
}

fn time(ms: u64) -> String {
    jiff::Timestamp::from_second((ms / 1000) as i64)
        .expect("a generated time is in range")
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn day_dir(ms: u64) -> String {
    jiff::Timestamp::from_second((ms / 1000) as i64)
        .expect("a generated time is in range")
        .strftime("%Y/%m/%d")
        .to_string()
}

fn slugify(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-')
        .chars()
        .take(64)
        .collect::<String>()
}

const VERBS: &[&str] = &[
    "Implement",
    "Refactor",
    "Test",
    "Document",
    "Harden",
    "Measure",
    "Split",
    "Migrate",
    "Review",
    "Simplify",
];
const THINGS: &[&str] = &[
    "the ledger writer",
    "refund rounding",
    "the price feed importer",
    "invoice rendering",
    "the settlement parser",
    "cart totals",
    "the tax table loader",
    "currency conversion",
    "the audit trail",
    "batch reconciliation",
    "the payment retry loop",
    "order export",
];
const WORDS: &[&str] = &[
    "cents",
    "ledger",
    "rounding",
    "batch",
    "invoice",
    "refund",
    "settlement",
    "schema",
    "backfill",
    "retry",
    "timeout",
    "cache",
    "index",
    "report",
    "parser",
    "boundary",
];

#[derive(Debug, Clone)]
struct Task {
    id: String,
    number: usize,
    title: String,
    slug: String,
    created_ms: u64,
    owner: String,
    folder: &'static str,
    assignee: Option<String>,
    parent: Option<String>,
    depends_on: Option<String>,
    criteria: usize,
    estimate: (u32, u32, u32),
    log: Vec<String>,
}

/// Builds the workspace and verifies it. `dir` must not exist or be empty.
///
/// `events` is the number of event files (receipts included); `None` means N/10. Beyond N/10,
/// the extra events are history, as a long-lived workspace accumulates it: runs and comments
/// their owner's receipt already settled, spread among the rest, so that the pending events
/// stay about as many as at N/10.
pub fn build(dacli: &Path, dir: &Path, n: usize, events: Option<usize>) -> Result<Built, String> {
    if dir.exists() && dir.read_dir().map_err(|e| e.to_string())?.next().is_some() {
        return Err(format!("{} exists and is not empty", dir.display()));
    }
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let dir = dir.canonicalize().map_err(|e| e.to_string())?;
    let git = Command::new("git")
        .current_dir(&dir)
        .args(["init", "-q", "-b", "main"])
        .status()
        .map_err(|e| format!("git: {e}"))?;
    if !git.success() {
        return Err("git init failed".into());
    }
    let run = |token: Option<&str>, args: &[&str]| cli(dacli, &dir, token, args);
    run(None, &["init", "--name", "bench"])?;
    for (name, summary) in [
        ("test", "Run the test suite"),
        ("lint", "Run the linters"),
        ("fmt", "Format the code"),
        ("build", "Build the release binary"),
    ] {
        run(
            None,
            &[
                "shortcut",
                "add",
                name,
                "--command",
                "true",
                "--effect",
                "read",
                "--summary",
                summary,
            ],
        )?;
    }
    run(
        None,
        &[
            "role",
            "add",
            "builder",
            "--summary",
            "Implements tasks",
            "--grant",
            "rw",
            "--shortcut",
            "test",
            "--shortcut",
            "lint",
            "--wip",
            "3",
        ],
    )?;
    run(
        None,
        &[
            "role",
            "add",
            "reviewer",
            "--summary",
            "Reviews work",
            "--grant",
            "ro",
        ],
    )?;
    let spawn = |args: &[&str]| -> Result<(String, String), String> {
        let mut full = vec!["agent", "spawn"];
        full.extend_from_slice(args);
        let d = run(None, &full)?;
        Ok((
            d["agent"]["id"].as_str().unwrap_or_default().to_string(),
            d["token"].as_str().unwrap_or_default().to_string(),
        ))
    };
    let agents = Agents {
        planner: spawn(&["--grant", "rw"])?,
        builders: vec![
            spawn(&["--grant", "rw", "--role", "builder"])?,
            spawn(&["--grant", "rw", "--role", "builder"])?,
            spawn(&["--grant", "rw", "--role", "builder"])?,
        ],
        reviewer: spawn(&["--grant", "ro", "--role", "reviewer"])?,
    };
    run(
        Some(&agents.planner.1),
        &[
            "project",
            "add",
            "Ledger in integer cents",
            "--slug",
            PROJECT,
            "--goal",
            "Every amount the shop stores is an integer number of cents.",
            "--vision",
            "One money representation from cart to settlement.",
            "--constraint",
            "No change to the public price API before the spring release.",
            "--constraint",
            "Writes stay synchronous.",
            "--out-of-scope",
            "Multi-currency display.",
            "--success",
            "The reconciliation report shows no one-cent difference for a week.",
        ],
    )?;
    for i in 0..10 {
        let term = format!("{} {i}", WORDS[i % WORDS.len()]);
        let def =
            format!("What the team means by {term}: the unit the ledger counts in, case {i}.");
        run(
            Some(&agents.planner.1),
            &["glossary", "add", &term, &def, "--project", PROJECT],
        )?;
    }
    for i in 0..5 {
        let title = format!(
            "Risk {i}: the {} may drift under load",
            WORDS[(i * 3) % WORDS.len()]
        );
        let (impact, likelihood) = [("high", "medium"), ("medium", "low"), ("low", "low")][i % 3];
        run(
            Some(&agents.planner.1),
            &[
                "risk",
                "add",
                &title,
                "--project",
                PROJECT,
                "--impact",
                impact,
                "--likelihood",
                likelihood,
                "--indicator",
                "the nightly report shows a difference",
                "--action",
                "compare totals nightly and page the owner",
            ],
        )?;
    }
    let mut counts = Counts {
        risks: 5,
        terms: 10,
        shortcuts: 4,
        ..Counts::default()
    };
    let ws = dir.join(".dacli");
    let mut rng = Rng::new(n as u64 ^ 0x5eed);
    let tasks = plan_tasks(&mut rng, n, &agents);
    let base = n / 10;
    let (tasks, events, claims) = plan_events(
        &mut rng,
        tasks,
        (base, events.unwrap_or(base).max(base)),
        &agents,
        &mut counts,
    );
    for t in &tasks {
        write(&ws, &task_path(t), &render_task(t))?;
        match t.folder {
            "open" => counts.open += 1,
            "active" => counts.active += 1,
            "blocked" => counts.blocked += 1,
            _ => counts.done += 1,
        }
    }
    // Pending claims fold open tasks into active for every reader.
    counts.open -= claims;
    counts.active += claims;
    for (path, text) in &events {
        write(&ws, path, text)?;
    }
    counts.events += events.len();
    counts.notes += write_notes(&ws, &mut rng, n / 5, &tasks, &agents)?;
    let context_task = tasks
        .iter()
        .filter(|t| t.folder == "active" && t.parent.is_some())
        .map(|t| format!("{PROJECT}/{:03}-{}", t.number, t.slug))
        .next()
        .or_else(|| {
            tasks
                .first()
                .map(|t| format!("{PROJECT}/{:03}-{}", t.number, t.slug))
        })
        .unwrap_or_default();
    // Extracts are trusted only when a file is older than the cache by the racy window; wait it
    // out so the first measured read finds a settled workspace.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    verify(dacli, &dir, &counts)?;
    Ok(Built {
        dir,
        agents,
        counts,
        context_task,
    })
}

fn plan_tasks(rng: &mut Rng, n: usize, agents: &Agents) -> Vec<Task> {
    let mut tasks: Vec<Task> = Vec::with_capacity(n);
    // Creation spreads over 60 days; events come later.
    let step = (60 * 86_400_000 / n.max(1)) as u64;
    for i in 0..n {
        let number = i + 1;
        let created_ms = EPOCH_MS + step * i as u64 + rng.below(1000) as u64;
        let title = format!("{} {} in part {number}", rng.pick(VERBS), rng.pick(THINGS));
        let slug = slugify(&title);
        let owner = if rng.pct(80) {
            agents.planner.0.clone()
        } else {
            "a-root".to_string()
        };
        let roll = rng.below(100);
        let folder = match roll {
            0..30 => "done",
            30..35 => "blocked",
            35..50 => "active",
            _ => "open",
        };
        let builder = &agents.builders[rng.below(agents.builders.len())].0;
        let assignee = matches!(folder, "active" | "done").then(|| builder.clone());
        let parent = (i > 10 && rng.pct(5)).then(|| tasks[rng.below(i)].id.clone());
        let depends_on = (i > 0 && rng.pct(25)).then(|| tasks[rng.below(i)].id.clone());
        let o = 1 + rng.below(3) as u32;
        let p = o + rng.below(4) as u32;
        let q = p + 1 + rng.below(8) as u32;
        let id = format!("t-{}", ulid(rng, created_ms));
        let mut log = vec![format!("- {} {owner} created", time(created_ms))];
        let later = |h: u64| time(created_ms + h * 3_600_000);
        let criteria = 2 + rng.below(3);
        match folder {
            "active" => log.push(format!("- {} {builder} claimed", later(2))),
            "blocked" => log.push(format!(
                "- {} {owner} blocked: waiting for the vendor's file",
                later(3)
            )),
            "done" => {
                log.push(format!("- {} {builder} claimed", later(1)));
                for c in 1..=criteria {
                    log.push(format!("- {} {builder} checked {c}", later(2 + c as u64)));
                }
                log.push(format!("- {} {owner} finished", later(8)));
            }
            _ => {}
        }
        tasks.push(Task {
            id,
            number,
            title,
            slug,
            created_ms,
            owner,
            folder,
            assignee,
            parent,
            depends_on,
            criteria,
            estimate: (o, p, q),
            log,
        });
    }
    tasks
}

/// Events: runs (journal), comments settled by their owner's receipt, and pending claims,
/// comments and findings from several agents. `(base, count)`: `count` files in all, of which
/// about `base` are drawn from the whole mix and the rest from the settled kinds only.
fn plan_events(
    rng: &mut Rng,
    mut tasks: Vec<Task>,
    (base, count): (usize, usize),
    agents: &Agents,
    counts: &mut Counts,
) -> (Vec<Task>, Vec<(String, String)>, usize) {
    let mut out = Vec::new();
    let start = EPOCH_MS + 61 * 86_400_000;
    let step = (20 * 86_400_000 / count.max(1)) as u64;
    let mut claimed = std::collections::BTreeSet::new();
    let mut ms = start;
    while out.len() < count && !tasks.is_empty() {
        ms += step;
        let t = rng.below(tasks.len());
        let builder = agents.builders[rng.below(agents.builders.len())].0.clone();
        // Drawn only when there is history to make, so that the default workspace stays the
        // one earlier results were measured on.
        let history = count > base && rng.below(count) >= base;
        let roll = if history {
            rng.below(75)
        } else {
            rng.below(100)
        };
        let about = tasks[t].id.clone();
        let id = ulid(rng, ms);
        let (kind, author, fields, body) = match roll {
            0..40 => (
                "run",
                builder,
                format!(
                    "shortcut = \"test\"\nexit_code = {}\nduration_ms = {}\ntask = \"{about}\"\n",
                    i32::from(rng.pct(15)),
                    500 + rng.below(9000)
                ),
                "true\n".to_string(),
            ),
            40..75 => {
                // A comment its owner's sync already applied: the Log line and a receipt.
                let text = format!("Looked at the {} path; numbers match.", rng.pick(WORDS));
                tasks[t].log.push(format!(
                    "- {} {builder} comment: {text} (event {id})",
                    time(ms)
                ));
                let owner = tasks[t].owner.clone();
                let rid = ulid(rng, ms + 1000);
                let receipt_front = format!(
                    "id = \"{rid}\"\nkind = \"event\"\nevent_kind = \"applied\"\ncreated = {}\ncreated_by = \"{owner}\"\nabout = \"{about}\"\napplied = [\"{id}\"]\nrejected = []\n",
                    time(ms + 1000)
                );
                out.push(event_file(
                    &rid,
                    &owner,
                    "applied",
                    ms + 1000,
                    &receipt_front,
                    "",
                ));
                ("comment", builder, String::new(), format!("{text}\n"))
            }
            75..85 if tasks[t].folder == "open" && !claimed.contains(&about) => {
                claimed.insert(about.clone());
                counts.pending += 1;
                ("claim", builder, String::new(), String::new())
            }
            75..92 => {
                counts.pending += 1;
                (
                    "comment",
                    agents.reviewer.0.clone(),
                    String::new(),
                    "Is this still needed?\n".into(),
                )
            }
            _ => {
                counts.pending += 1;
                counts.notes += 1;
                let title = format!("The {} check misses a case ({id})", rng.pick(WORDS));
                (
                    "finding",
                    agents.reviewer.0.clone(),
                    format!("title = \"{title}\"\nseverity = \"moderate\"\nscope = \"project\"\n"),
                    format!("# {title}\n\nSeen while reviewing; see the task's acceptance.\n"),
                )
            }
        };
        let about_line = if kind == "run" {
            String::new()
        } else {
            format!("about = \"{about}\"\n")
        };
        let front = format!(
            "id = \"{id}\"\nkind = \"event\"\nevent_kind = \"{kind}\"\ncreated = {}\ncreated_by = \"{author}\"\n{about_line}{fields}",
            time(ms)
        );
        out.push(event_file(&id, &author, kind, ms, &front, &body));
    }
    (tasks, out, claimed.len())
}

/// An event file with its checksum as the last frontmatter key (FORMAT §14.1).
fn event_file(
    id: &str,
    author: &str,
    kind: &str,
    ms: u64,
    front: &str,
    body: &str,
) -> (String, String) {
    let render = |front: &str| {
        if body.is_empty() {
            format!("+++\n{front}+++\n")
        } else {
            format!("+++\n{front}+++\n\n{body}")
        }
    };
    let sum = dacli::journal::checksum(render(front).as_bytes());
    let text = render(&format!("{front}checksum = \"{sum}\"\n"));
    (
        format!("events/{}/{id}-{author}-{kind}.md", day_dir(ms)),
        text,
    )
}

fn task_path(t: &Task) -> String {
    format!(
        "projects/{PROJECT}/tasks/{}/{:03}-{}.md",
        t.folder, t.number, t.slug
    )
}

fn render_task(t: &Task) -> String {
    let mut s = String::from("+++\n");
    let _ = writeln!(s, "id = \"{}\"", t.id);
    s.push_str("kind = \"task\"\n");
    let _ = writeln!(s, "created = {}", time(t.created_ms));
    let _ = writeln!(s, "created_by = \"{}\"", t.owner);
    let _ = writeln!(s, "owner = \"{}\"", t.owner);
    let _ = writeln!(s, "rev = \"{}\"", t.id.trim_start_matches("t-"));
    if let Some(a) = &t.assignee {
        let _ = writeln!(s, "assignee = \"{a}\"");
    }
    if let Some(p) = &t.parent {
        let _ = writeln!(s, "parent = \"{p}\"");
    }
    let priority = ["must", "should", "should", "could"][t.number % 4];
    let _ = writeln!(s, "priority = \"{priority}\"");
    let (o, p, q) = t.estimate;
    let _ = writeln!(
        s,
        "estimate = {{ optimistic = {o}, probable = {p}, pessimistic = {q} }}"
    );
    if let Some(d) = &t.depends_on {
        let _ = writeln!(s, "depends_on = [{{ on = \"{d}\", type = \"FS\" }}]");
    }
    let _ = writeln!(
        s,
        "traces = [\"services/ledger/src/part{}.rs\"]",
        t.number % 50
    );
    let _ = writeln!(s, "tags = [\"{}\"]", WORDS[t.number % WORDS.len()]);
    if t.folder == "done" {
        s.push_str("resolution = \"completed\"\n");
    }
    s.push_str("+++\n\n");
    let _ = writeln!(s, "# {}\n", t.title);
    let _ = writeln!(
        s,
        "## So that\nThe ledger agrees with the settlement file for part {}.\n",
        t.number
    );
    s.push_str("## Acceptance\n");
    let mark = if t.folder == "done" { "x" } else { " " };
    for c in 1..=t.criteria {
        let _ = writeln!(s, "- [{mark}] Criterion {c} of part {} holds", t.number);
    }
    s.push_str("\n## Log\n");
    for line in &t.log {
        s.push_str(line);
        s.push('\n');
    }
    s
}

fn write_notes(
    ws: &Path,
    rng: &mut Rng,
    count: usize,
    tasks: &[Task],
    agents: &Agents,
) -> Result<usize, String> {
    for i in 0..count {
        let ms = EPOCH_MS + 62 * 86_400_000 + i as u64 * 60_000;
        let id = format!("n-{}", ulid(rng, ms));
        let t = &tasks[rng.below(tasks.len())];
        let decision = i % 2 == 0;
        let title = if decision {
            format!("Keep the {} path synchronous, case {i}", rng.pick(WORDS))
        } else {
            format!("The {} step loses a cent, case {i}", rng.pick(WORDS))
        };
        let author = if decision {
            agents.planner.0.clone()
        } else {
            agents.builders[i % agents.builders.len()].0.clone()
        };
        let mut s = String::from("+++\n");
        let _ = writeln!(s, "id = \"{id}\"\nkind = \"note\"");
        let _ = writeln!(
            s,
            "note_kind = \"{}\"",
            if decision { "decision" } else { "finding" }
        );
        let _ = writeln!(
            s,
            "created = {}\ncreated_by = \"{author}\"\nscope = \"project\"",
            time(ms)
        );
        let _ = writeln!(s, "about = \"{}\"", t.id);
        if !decision {
            let _ = writeln!(
                s,
                "severity = \"{}\"",
                ["major", "moderate", "minor"][i % 3]
            );
        }
        s.push_str("+++\n\n");
        let _ = writeln!(s, "# {title}\n");
        if decision {
            s.push_str("## Chose\nSynchronous writes through one shim.\n\n## Rejected\nAn async queue with eventual reconciliation.\n\n## Because\nReconciliation cost exceeds the 40 ms gained.\n");
        } else {
            let _ = writeln!(
                s,
                "The {} step rounds twice when a refund follows a discount.",
                rng.pick(WORDS)
            );
        }
        let dir = if decision { "decisions" } else { "findings" };
        write(
            ws,
            &format!("projects/{PROJECT}/notes/{dir}/{}.md", slugify(&title)),
            &s,
        )?;
    }
    Ok(count)
}

fn write(ws: &Path, rel: &str, text: &str) -> Result<(), String> {
    let path = ws.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Checks through the CLI that the workspace holds what was generated.
fn verify(dacli: &Path, dir: &Path, want: &Counts) -> Result<(), String> {
    let run = |args: &[&str]| cli(dacli, dir, None, args);
    let status = run(&["status"])?;
    let c = &status["projects"][0]["counts"];
    let n = |v: &Value| v.as_u64().unwrap_or(u64::MAX) as usize;
    let notes = run(&["note", "list", "--limit", "1"])?;
    let limit = (want.events + 1).to_string();
    let events = run(&["events", "list", "--limit", &limit])?;
    let got = Counts {
        open: n(&c["open"]),
        active: n(&c["active"]),
        blocked: n(&c["blocked"]),
        done: n(&c["done"]),
        notes: n(&notes["total"]),
        risks: run(&["risk", "list", "--status", "all"])?["risks"]
            .as_array()
            .map_or(0, Vec::len),
        terms: run(&["glossary", "show", "--project", PROJECT])?["terms"]
            .as_array()
            .map_or(0, Vec::len),
        shortcuts: run(&["shortcut", "list"])?["shortcuts"]
            .as_array()
            .map_or(0, Vec::len),
        events: events["events"].as_array().map_or(0, Vec::len),
        pending: n(&status["pending"]["events"]),
    };
    if status["warnings"] != json!(0) {
        return Err(format!(
            "status reports {} skipped files",
            status["warnings"]
        ));
    }
    if &got != want {
        return Err(format!("the CLI sees {got:?}, generated {want:?}"));
    }
    Ok(())
}
