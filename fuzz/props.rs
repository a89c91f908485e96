//! The properties of RELIABILITY §6.3, one function per fuzz target. The cargo-fuzz targets in
//! `fuzz_targets/` call them with libFuzzer's input; `tests/it/reliability_fuzz.rs` (the root
//! crate's `cargo test`) includes this same file and replays the seeds and every kept finding
//! under `fuzz/regressions/<target>/` through them. A property is an assertion: a violation
//! panics, which libFuzzer reports as a crash and `cargo test` as a failure.

use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

/// F1: frontmatter split, parse, render and typed decode. Never panics; a render is canonical
/// and a fixed point; canonical input renders back byte for byte.
pub fn frontmatter(data: &[u8]) {
    use dacli::store::{Document, is_canonical};
    let Ok(doc) = Document::parse("fuzz.md", data) else {
        return;
    };
    let rendered = doc.render();
    assert!(
        is_canonical(rendered.as_bytes()),
        "a render is canonical: {rendered:?}"
    );
    let again = Document::parse("fuzz.md", rendered.as_bytes()).expect("a render parses");
    assert_eq!(again.render(), rendered, "a render is a fixed point");
    if is_canonical(data) {
        assert_eq!(
            rendered.as_bytes(),
            data,
            "canonical input renders byte for byte"
        );
    }
    let _ = dacli::model::task::TaskHead::parse(
        &doc.front,
        &doc.body,
        "001-fuzz.md",
        "open",
        doc.title(),
    );
}

/// F3: path safety. An accepted slug or repository path cannot leave the directory it is
/// joined to; every slug made from a title is accepted.
pub fn path_safety(data: &[u8]) {
    use dacli::workspace::names::{check_repo_path, check_slug, is_safe_segment, slugify};
    let s = String::from_utf8_lossy(data);
    let root = Path::new("/jail/root");
    let stays = |joined: PathBuf| {
        let mut depth: i64 = 0;
        for c in joined
            .strip_prefix(root)
            .expect("joined under root")
            .components()
        {
            match c {
                Component::Normal(_) => depth += 1,
                Component::CurDir => {}
                Component::ParentDir => depth -= 1,
                Component::RootDir | Component::Prefix(_) => depth = i64::MIN / 2,
            }
            assert!(depth >= 0, "{joined:?} leaves {root:?}");
        }
    };
    if check_slug(&s).is_ok() {
        let p = Path::new(s.as_ref());
        assert!(
            matches!(
                p.components().collect::<Vec<_>>().as_slice(),
                [Component::Normal(_)]
            ),
            "a slug is one segment: {s:?}"
        );
        stays(root.join(p));
    }
    if check_repo_path(&s).is_ok() {
        assert!(!Path::new(s.as_ref()).is_absolute(), "{s:?}");
        stays(root.join(s.as_ref()));
    }
    if is_safe_segment(&s) {
        assert_eq!(Path::new(s.as_ref()).components().count(), 1, "{s:?}");
        stays(root.join(s.as_ref()));
    }
    let slug = slugify(&s);
    assert!(check_slug(&slug).is_ok(), "slugify({s:?}) = {slug:?}");
}

/// The task every fold starts from: three criteria, owned by root, open.
const TASK: &str = "+++\nid = \"t-01KJPXJ57RGDMEE50E5T1E877Q\"\nkind = \"task\"\ncreated = 2026-03-02T09:20:11Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJPXJ57RGDMEE50E5T1E877Q\"\npriority = \"must\"\n+++\n\n# A task\n\n## Acceptance\n- [ ] one\n- [ ] two\n- [ ] `true` passes\n\n## Log\n- 2026-03-02T09:20:11Z a-root created\n";

const KINDS: [&str; 12] = [
    "claim",
    "release",
    "check",
    "finish",
    "block",
    "unblock",
    "comment",
    "finding",
    "propose-status",
    "help",
    "answer",
    "mystery",
];
const AUTHORS: [&str; 3] = [
    "a-root",
    "a-builder-01KJPX6ZT81TTNRTABC9KBJYTV",
    "a-reviewer-01KJPX9WK0VH0D88BH59TARTNH",
];

/// The events four bytes each describe: kind, author, a criterion number, flags.
fn events(data: &[u8]) -> Vec<dacli::model::event::EventHead> {
    data.chunks(4)
        .take(64)
        .enumerate()
        .map(|(i, c)| {
            let byte = |k: usize| c.get(k).copied().unwrap_or(0);
            let kind = KINDS[usize::from(byte(0)) % KINDS.len()];
            let author = AUTHORS[usize::from(byte(1)) % AUTHORS.len()];
            let n = byte(2) % 5;
            let flags = byte(3);
            let id = format!("01KJSJCSD0{i:016}");
            let front = format!(
                "items = [{{ n = {n}, text = \"one\" }}]\nreason = \"r{flags}\"\nblocks = {}\nquestion = \"01KJSJCSD0{:016}\"\nstatus = \"{}\"\nas = \"{}\"\n",
                flags & 1 == 0,
                usize::from(flags) % (i + 1),
                ["open", "done", "active", "blocked"][usize::from(flags >> 1) % 4],
                ["finding", "none"][usize::from(flags >> 3) % 2],
            );
            dacli::model::event::EventHead {
                envelope: dacli::model::event::EventEnvelope {
                    id,
                    kind: kind.to_string(),
                    created: jiff::Timestamp::from_second(1_772_442_000 + i as i64)
                        .expect("in range"),
                    created_by: author.to_string(),
                    about: Some("t-01KJPXJ57RGDMEE50E5T1E877Q".to_string()),
                    applied: Vec::new(),
                    rejected: Vec::new(),
                    to: None,
                    question: None,
                },
                front: front.parse().expect("the generated frontmatter is TOML"),
                body: format!("text {i}\nsecond line"),
                path: String::new(),
            }
        })
        .collect()
}

fn fold_once(data: &[u8]) -> (String, Vec<String>, Vec<(String, String)>) {
    use dacli::model::task::Status;
    use dacli::model::taskdoc::TaskDoc;
    use dacli::store::Document;
    let parsed = Document::parse("001-a-task.md", TASK.as_bytes()).expect("the base task parses");
    let mut doc = TaskDoc {
        front: parsed.front,
        body: parsed.body,
        status: Status::Open,
    };
    let heads = events(data);
    let refs: Vec<&dacli::model::event::EventHead> = heads.iter().collect();
    let folded = dacli::journal::fold::fold_task(
        &mut doc,
        &refs,
        &dacli::journal::Journal::default(),
        &mut |d: &TaskDoc| d.criteria().iter().all(|c| c.checked),
    );
    let status = doc.status.as_str().to_string();
    let rendered = Document::new(doc.front, doc.body).render();
    (
        format!("{status}\n{rendered}"),
        folded.applied,
        folded.rejected,
    )
}

/// F4: the event fold. Never panics; deterministic; what it produces is still a task.
pub fn event_fold(data: &[u8]) {
    let first = fold_once(data);
    assert_eq!(first, fold_once(data), "the fold is deterministic");
    let (state, applied, rejected) = first;
    let (status, rendered) = state.split_once('\n').expect("status line");
    let doc = dacli::store::Document::parse("001-a-task.md", rendered.as_bytes())
        .expect("a folded task renders to a valid file");
    dacli::model::task::TaskHead::parse(
        &doc.front,
        &doc.body,
        "001-a-task.md",
        status,
        doc.title(),
    )
    .expect("a folded task is still a task");
    assert!(applied.len() + rejected.len() <= data.len().div_ceil(4).min(64));
}

/// F5: argv into the whole clap tree. Never panics, and neither does rendering its error.
pub fn argv(data: &[u8]) {
    static ROOT: OnceLock<clap::Command> = OnceLock::new();
    let root = ROOT.get_or_init(|| dacli::commands::table().clap_root());
    let mut args = vec!["dacli".to_string()];
    args.extend(
        data.split(|b| *b == 0)
            .take(32)
            .map(|a| String::from_utf8_lossy(a).into_owned()),
    );
    if let Err(e) = root.clone().try_get_matches_from(args) {
        let _ = e.render().to_string();
    }
}

/// Makes `dir` a git work tree with a fresh workspace and one project with one task.
pub fn mcp_workspace(dir: &Path) {
    std::fs::create_dir_all(dir.join(".git")).expect("a work tree");
    let table = dacli::commands::table();
    for args in [
        &["init", "-q"][..],
        &["project", "add", "P", "--slug", "checkout", "-q"],
        &["task", "add", "Shim", "--accept", "works", "-q"],
    ] {
        let mut argv: Vec<std::ffi::OsString> = vec!["dacli".into()];
        argv.extend(args.iter().map(|a| (*a).into()));
        let code = dacli::cli::run(&table, argv, env(dir), &[]);
        assert_eq!(code, 0, "{args:?}");
    }
}

fn env(dir: &Path) -> dacli::dispatch::Env {
    dacli::dispatch::Env::from_pairs(
        &[
            ("DACLI_TEST_CLOCK", "2026-03-02T09:00:00Z"),
            ("DACLI_TEST_SEED", "7"),
        ],
        dir.to_path_buf(),
    )
}

/// F2: the MCP loop over a byte stream, against the workspace in `dir`. Never panics; every
/// line written is one JSON-RPC 2.0 message; never more answers than lines; exit 0 or 1.
pub fn mcp_lines(dir: &Path, data: &[u8]) {
    static TABLE: OnceLock<dacli::dispatch::Table> = OnceLock::new();
    let table = TABLE.get_or_init(dacli::commands::table);
    let (lines, code) = dacli::mcp::replay(table, env(dir), None, data);
    assert!(code == 0 || code == 1, "exit {code}");
    let input_lines = data.split(|b| *b == b'\n').count();
    assert!(
        lines.len() <= input_lines,
        "{} answers to {input_lines} lines",
        lines.len()
    );
    for line in &lines {
        let v: Value = serde_json::from_str(line).expect("every line is JSON");
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        assert!(
            v.get("result").is_some() != v.get("error").is_some(),
            "exactly one of result and error: {line}"
        );
    }
}

/// Makes `dir` a git work tree with a workspace for the renderers: project `checkout` with
/// task 1 and a finding about it.
pub fn renderers_workspace(dir: &Path) {
    std::fs::create_dir_all(dir.join(".git")).expect("a work tree");
    let table = dacli::commands::table();
    for args in [
        &["init", "-q"][..],
        &["project", "add", "P", "--slug", "checkout", "-q"],
        &["task", "add", "Shim", "--accept", "works", "-q"],
        &[
            "note",
            "add",
            "finding",
            "Seen",
            "--severity",
            "minor",
            "--about",
            "1",
            "-q",
        ],
    ] {
        let mut argv: Vec<std::ffi::OsString> = vec!["dacli".into()];
        argv.extend(args.iter().map(|a| (*a).into()));
        let code = dacli::cli::run(&table, argv, env(dir), &[]);
        assert_eq!(code, 0, "{args:?}");
    }
}

/// The read commands whose human text F6 renders: every read command that needs no
/// argument, but those that reach the network, run git or spawn programs (their renderers
/// see no stored text the others do not), and the views of one task or note.
pub fn renderer_argvs(table: &dacli::dispatch::Table) -> Vec<Vec<String>> {
    const SKIP: [&str; 9] = [
        "github",
        "pr",
        "release-train",
        "repo",
        "delivery",
        "mcp",
        "runtime",
        "completions",
        "events",
    ];
    let root = table.clap_root();
    let mut out: Vec<Vec<String>> = table
        .commands()
        .iter()
        .filter(|c| c.class == dacli::dispatch::Class::Read)
        .filter(|c| !SKIP.contains(&c.words().next().unwrap_or("")))
        .map(|c| c.words().map(String::from).collect::<Vec<_>>())
        .filter(|w| {
            let mut all = vec!["dacli".to_string()];
            all.extend(w.iter().cloned());
            root.clone().try_get_matches_from(all).is_ok()
        })
        .collect();
    for extra in [
        &["task", "list", "--all"][..],
        &["task", "show", "2"],
        &["task", "show", "1"],
        &["context", "2"],
        &["context", "2", "--explain"],
        &["note", "show", "fuzz"],
        &["note", "show", "seen"],
        &["wbs", "--all"],
    ] {
        out.push(extra.iter().map(|s| s.to_string()).collect());
    }
    out
}

/// F6: every human renderer over stored data. `data` becomes a task file and a note file of
/// the workspace in `dir` (made by [`renderers_workspace`]), and every read command renders
/// its human text. None panics (a caught panic is `E_INTERNAL`, exit 70), and no text holds
/// a raw control character but newline and tab.
pub fn renderers(dir: &Path, data: &[u8]) {
    use dacli::dispatch::{Ctx, Input, Outcome, Output};
    static TABLE: OnceLock<dacli::dispatch::Table> = OnceLock::new();
    let table = TABLE.get_or_init(dacli::commands::table);
    let ws = dir.join(".dacli");
    let _ = std::fs::remove_dir_all(ws.join("cache"));
    let project = ws.join("projects/checkout");
    std::fs::write(project.join("tasks/open/002-fuzz.md"), data).expect("task file");
    std::fs::write(project.join("notes/findings/fuzz.md"), data).expect("note file");
    let root = table.clap_root();
    for argv in renderer_argvs(table) {
        let mut all = vec!["dacli".to_string()];
        all.extend(argv.iter().cloned());
        let Ok(m) = root.clone().try_get_matches_from(all) else {
            continue;
        };
        let mut leaf = &m;
        let mut words = Vec::new();
        while let Some((n, s)) = leaf.subcommand() {
            words.push(n.to_string());
            leaf = s;
        }
        let Some(cmd) = table.get(&words.join(".")) else {
            continue;
        };
        let output = Output {
            json: false,
            quiet: false,
            color: false,
            ..Default::default()
        };
        let ctx = Ctx::new(table, env(dir), None, output);
        let result = table.call(&ctx, cmd, Input::Cli(leaf));
        if let Err(e) = &result {
            assert_ne!(e.code, "E_INTERNAL", "{argv:?}: {}", e.message);
        }
        if let Ok(Outcome::Done(reply)) = &result {
            assert!(
                !reply
                    .text
                    .chars()
                    .any(|c| c.is_control() && c != '\n' && c != '\t'),
                "{argv:?} prints a raw control character"
            );
        }
    }
}
