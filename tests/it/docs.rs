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
