//! Human output on a terminal (issue 26): dacli runs on a pseudo-terminal of 80 and 120
//! columns, with and without colour, and under `NO_COLOR`; the text is snapshotted (escape
//! sequences shown as `<ESC>`). Pipes keep full values and no colour (the other suites'
//! text snapshots), and `--wide` gives full values on a terminal.

use crate::support::{dacli, repo_root};

/// What dacli prints on a `cols`-column terminal (stdout and stderr both on it), with `env`.
pub fn on_tty(args: &[&str], cols: u16, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("dacli"));
    for var in [
        "DACLI_AGENT",
        "NO_COLOR",
        "COLUMNS",
        "GH_TOKEN",
        "GITHUB_TOKEN",
    ] {
        cmd.env_remove(var);
    }
    // A week after the example's last change, so charts span it.
    cmd.env("DACLI_TEST_CLOCK", "2026-03-09T00:00:00Z")
        .env("DACLI_TEST_SEED", crate::support::SEED)
        .current_dir(repo_root())
        .args(args)
        .env("TERM", "xterm-256color");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (code, text) = crate::pty::run(cmd, Some(cols), false);
    (code, text.replace('\x1b', "<ESC>"))
}

const EXAMPLE: [&str; 2] = ["-C", ".dacli-example"];

/// The commands whose human output is snapshotted, by name.
fn commands() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        ("status", vec!["status"]),
        ("task_list", vec!["task", "list"]),
        ("task_show", vec!["task", "show", "checkout/4"]),
        ("next", vec!["next"]),
        ("context", vec!["context", "checkout/4", "--budget", "400"]),
        ("wbs", vec!["wbs"]),
        ("burndown", vec!["burndown", "--project", "checkout"]),
    ]
}

#[test]
fn human_output_on_a_terminal_fits_its_width_with_and_without_colour() {
    for (name, args) in commands() {
        let all: Vec<&str> = EXAMPLE
            .iter()
            .copied()
            .chain(args.iter().copied())
            .collect();
        for cols in [80u16, 120] {
            let (code, colour) = on_tty(&all, cols, &[]);
            assert_eq!(code, Some(0), "{name} at {cols}:\n{colour}");
            // The palette reaches the terminal as escape sequences, not as `\u{1b}` text.
            assert!(
                !colour.contains("\\u{1b}"),
                "{name}: colour printed as text:\n{colour}"
            );
            insta::assert_snapshot!(format!("tty_{name}_{cols}_colour"), colour);
            let mut plain_args = all.clone();
            plain_args.push("--no-color");
            let (_, plain) = on_tty(&plain_args, cols, &[]);
            assert!(!plain.contains("<ESC>"), "{name} --no-color:\n{plain}");
            insta::assert_snapshot!(format!("tty_{name}_{cols}_plain"), plain);
            let (_, no_color) = on_tty(&all, cols, &[("NO_COLOR", "1")]);
            assert_eq!(no_color, plain, "{name}: NO_COLOR is --no-color");
            let (_, dumb) = on_tty(&all, cols, &[("TERM", "dumb")]);
            assert_eq!(dumb, plain, "{name}: TERM=dumb is --no-color");
            // Every line of all seven fits: tables are cut, prose is wrapped.
            for line in plain.lines() {
                assert!(
                    line.chars().count() <= usize::from(cols),
                    "{name} runs past {cols} columns:\n{line}"
                );
            }
        }
    }
}

#[test]
fn wide_and_pipes_keep_full_values_and_no_colour() {
    let all = ["-C", ".dacli-example", "task", "list"];
    let (_, short) = on_tty(&all, 80, &[]);
    assert!(short.contains("checkout/4 "), "{short}");
    assert!(short.contains('…'), "{short}");
    let mut wide = all.to_vec();
    wide.push("--wide");
    let (_, full) = on_tty(&wide, 80, &[]);
    assert!(full.contains("checkout/004-add-rounding-shim"), "{full}");
    assert!(!full.contains('…'), "{full}");
    let piped = dacli().current_dir(repo_root()).args(all).output().unwrap();
    let piped = String::from_utf8(piped.stdout).unwrap();
    assert!(piped.contains("checkout/004-add-rounding-shim"), "{piped}");
    assert!(!piped.contains('\x1b'), "{piped}");
}

#[test]
fn diagnostics_are_coloured_on_a_terminal_only() {
    let args = ["-C", ".dacli-example", "task", "show", "checkout/999"];
    let (code, text) = on_tty(&args, 80, &[]);
    assert_eq!(code, Some(4), "{text}");
    assert!(text.starts_with("<ESC>[31merror["), "{text}");
    let (_, plain) = on_tty(&args, 80, &[("NO_COLOR", "1")]);
    assert!(plain.starts_with("error["), "{plain}");
    let piped = dacli()
        .current_dir(repo_root())
        .args(args)
        .output()
        .unwrap();
    assert!(
        String::from_utf8(piped.stderr)
            .unwrap()
            .starts_with("error[")
    );
}
