//! The documentation stays true: the command reference is generated from the command table,
//! and the getting-started guide's commands run as written.

use std::path::Path;

use crate::support::{Repo, repo_root};

#[test]
fn the_command_reference_matches_the_command_table() {
    let table = dacli::commands::table();
    let generated = dacli::cli::reference(&table);
    let path = repo_root().join("docs/COMMANDS.md");
    if std::env::var_os("DACLI_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/COMMANDS.md is stale: regenerate it with `DACLI_BLESS=1 cargo test --test it docs`"
    );
    for cmd in table.commands() {
        let heading = format!("## `dacli {}`", cmd.name.replace('.', " "));
        assert!(committed.contains(&heading), "{heading} missing");
    }
}

#[test]
fn the_man_page_names_every_top_level_command() {
    let out = crate::support::dacli().args(["man"]).output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(
        page.starts_with(".ie") || page.contains(".TH dacli"),
        "{}",
        &page[..200.min(page.len())]
    );
    for word in ["init", "status", "task", "sync"] {
        assert!(page.contains(word), "{word} missing from the man page");
    }
}

/// Runs every command line of the getting-started guide's ```sh blocks, in order, in a fresh
/// repository, as a user would (with `dacli` meaning this build).
#[test]
fn getting_started_runs_as_written() {
    let guide = std::fs::read_to_string(repo_root().join("docs/GETTING_STARTED.md")).unwrap();
    let repo = Repo::new();
    let mut in_sh = false;
    let mut ran = 0;
    for line in guide.lines() {
        if line.trim_start().starts_with("```") {
            in_sh = line.trim() == "```sh";
            continue;
        }
        if !in_sh || line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let cmd = line.trim();
        let words = shell_words(cmd);
        match words.first().map(String::as_str) {
            Some("dacli") => {
                let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
                let out = repo.dacli(&args).output().unwrap();
                assert!(
                    out.status.success(),
                    "`{cmd}` failed ({:?}):\n{}{}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            Some("git") => {
                let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
                crate::support::git(repo.path(), &args);
            }
            other => panic!("the guide runs an unexpected program {other:?} in `{cmd}`"),
        }
        ran += 1;
    }
    assert!(
        ran >= 8,
        "the guide should walk through the whole flow (ran {ran} commands)"
    );
    assert!(Path::new(&repo.ws("config.toml")).exists());
}

/// Splits a command line on spaces, honouring double and single quotes (enough for the guide).
fn shell_words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut has = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                has = true;
            }
            (None, ' ') => {
                if has || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if has || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Parses a whole XML document, failing on any syntax error or unbalanced tag.
fn parse_xml(text: &str) -> usize {
    let mut reader = quick_xml::Reader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut elements = 0;
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(quick_xml::events::Event::Start(_) | quick_xml::events::Event::Empty(_)) => {
                elements += 1
            }
            Ok(_) => {}
            Err(e) => panic!("invalid XML at {}: {e}", reader.buffer_position()),
        }
    }
    elements
}

#[test]
fn the_example_charts_are_valid_svg_and_render() {
    for args in [
        vec![
            "burndown",
            "--project",
            "checkout",
            "--since",
            "2026-03-02T00:00:00Z",
            "--until",
            "2026-03-09T00:00:00Z",
            "--format",
            "svg",
        ],
        vec!["wbs", "--format", "svg"],
    ] {
        let out = crate::support::dacli()
            .current_dir(repo_root())
            .args(["-C", ".dacli-example"])
            .args(&args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        let svg = String::from_utf8(out.stdout).unwrap();
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(
            parse_xml(&svg) > 10,
            "{args:?}: a real chart has many elements"
        );
        assert!(!svg.contains("<script") && !svg.contains("href"));
        // Rendered by a real renderer (resvg, as the chart snapshots are): something is drawn.
        let pixmap = crate::charts::render(&crate::charts::parse(&svg), 720);
        let png = pixmap.encode_png().unwrap();
        assert!(png.starts_with(b"\x89PNG"), "a PNG came out");
        assert!(
            pixmap.pixels().iter().any(|p| p.alpha() > 0),
            "the {args:?} chart draws something"
        );
    }
    let dot = crate::support::dacli()
        .current_dir(repo_root())
        .args(["-C", ".dacli-example", "wbs", "--format", "dot"])
        .output()
        .unwrap();
    let dot = String::from_utf8(dot.stdout).unwrap();
    assert!(dot.starts_with("digraph wbs {") && dot.trim_end().ends_with('}'));
    assert_eq!(dot.matches('{').count(), dot.matches('}').count());
}

#[test]
fn no_escape_codes_when_piped_or_with_no_color() {
    for env in [None, Some("1")] {
        for args in [
            vec!["status"],
            vec!["task", "list", "--all"],
            vec!["wbs"],
            vec!["doctor"],
        ] {
            let mut cmd = crate::support::dacli();
            cmd.current_dir(repo_root())
                .args(["-C", ".dacli-example"])
                .args(&args);
            if let Some(v) = env {
                cmd.env("NO_COLOR", v);
            }
            let out = cmd.output().unwrap();
            assert!(
                !out.stdout.contains(&0x1b),
                "{args:?} printed an escape code"
            );
            assert!(
                !out.stderr.contains(&0x1b),
                "{args:?} printed an escape code on stderr"
            );
        }
    }
}
