//! `next` on a terminal with work to pick (issue 26): the bundled example has no ready task,
//! so its `next` snapshots show only "Nothing ready to claim". Here a workspace with ready
//! tasks of every priority, long titles and a dependency is shown at 80 and 120 columns, with
//! and without colour and under `NO_COLOR`, and every line fits.

use crate::human_tty::on_tty;
use crate::support::Repo;

fn ready_repo() -> Repo {
    let repo = Repo::new();
    repo.dacli(&["init", "--project", "Core"])
        .assert()
        .success();
    for (title, priority) in [
        (
            "Move every money amount in the checkout service to integer cents, end to end",
            "must",
        ),
        ("Short one", "should"),
        (
            "Replace every hand-rolled rounding helper in the pricing, invoicing and refund modules",
            "could",
        ),
    ] {
        repo.dacli(&[
            "task",
            "add",
            title,
            "--priority",
            priority,
            "--estimate",
            "1,2,4",
        ])
        .assert()
        .success();
    }
    repo.dacli(&[
        "task",
        "add",
        "Write the backfill migration once amounts are cents",
        "--depends-on",
        "1",
    ])
    .assert()
    .success();
    // "Short one" is assigned to root in its file (a hand edit: no command assigns an open task).
    let open = repo.ws("projects/core/tasks/open");
    let short = std::fs::read_dir(&open)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("short-one"))
        .unwrap();
    let text = std::fs::read_to_string(&short).unwrap();
    let text = text.replacen("priority = ", "assignee = \"a-root\"\npriority = ", 1);
    std::fs::write(&short, text).unwrap();
    repo
}

#[test]
fn next_with_ready_work_fits_the_terminal_with_and_without_colour() {
    let repo = ready_repo();
    let dir = repo.path().to_str().unwrap();
    let args = ["-C", dir, "next"];
    for cols in [80u16, 120] {
        let (code, colour) = on_tty(&args, cols, &[]);
        assert_eq!(code, Some(0), "{colour}");
        assert!(colour.contains("<ESC>["), "colour on a terminal: {colour}");
        insta::assert_snapshot!(format!("tty_next_ready_{cols}_colour"), colour);
        let mut plain_args = args.to_vec();
        plain_args.push("--no-color");
        let (_, plain) = on_tty(&plain_args, cols, &[]);
        assert!(!plain.contains("<ESC>"), "{plain}");
        assert!(plain.contains("Move every money"), "{plain}");
        // WHY says what makes each task next, not its priority again.
        // At 80 columns WHY moves to a line of its own under its row.
        let row = |needle: &str| {
            let lines: Vec<&str> = plain.lines().collect();
            let at = lines
                .iter()
                .position(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("{needle}: {plain}"));
            lines[at..(at + 2).min(lines.len())].join("\n")
        };
        assert!(row("core/2").contains("assigned to you"), "{plain}");
        assert!(row("core/1").contains("on the critical path"), "{plain}");
        assert!(row("core/3").contains("oldest ready could-have"), "{plain}");
        assert!(plain.lines().nth(1).unwrap().contains("core/2"), "{plain}");
        assert!(!plain.contains("must-have"), "{plain}");
        insta::assert_snapshot!(format!("tty_next_ready_{cols}_plain"), plain);
        let (_, no_color) = on_tty(&args, cols, &[("NO_COLOR", "1")]);
        assert_eq!(no_color, plain, "NO_COLOR is --no-color");
        for line in plain.lines() {
            assert!(
                line.chars().count() <= usize::from(cols),
                "next runs past {cols} columns:\n{line}"
            );
        }
    }
}

#[test]
fn the_other_lists_fit_the_terminal_and_keep_full_values_under_wide() {
    for (args, widths) in [
        (vec!["note", "list"], vec![80u16, 120]),
        (vec!["project", "list"], vec![80, 120]),
        (vec!["shortcut", "list"], vec![80, 120]),
        (vec!["risk", "list", "--status", "all"], vec![80, 120]),
    ] {
        let mut all = vec!["-C", ".dacli-example"];
        all.extend(&args);
        all.push("--no-color");
        for cols in widths {
            let (code, text) = on_tty(&all, cols, &[]);
            assert_eq!(code, Some(0), "{args:?}: {text}");
            for line in text.lines() {
                assert!(
                    line.chars().count() <= usize::from(cols),
                    "{args:?} runs past {cols} columns:\n{line}"
                );
            }
        }
    }
    let (_, wide) = on_tty(
        &[
            "-C",
            ".dacli-example",
            "note",
            "list",
            "--wide",
            "--no-color",
        ],
        80,
        &[],
    );
    assert!(
        wide.contains("A tolerance on money in a test hides one-cent bugs"),
        "{wide}"
    );
    assert!(wide.contains("2026-03-04T17:30:10Z"), "{wide}");
}

#[test]
fn risk_list_shows_short_ids_that_risk_edit_takes_and_full_ids_under_wide() {
    let args = ["-C", ".dacli-example", "risk", "list", "--no-color"];
    let (_, short) = on_tty(&args, 80, &[]);
    assert!(short.contains("r~AV0H  checkout"), "{short}");
    assert!(short.contains('…'), "{short}");
    assert!(!short.contains("r-01KJQ30Q9ET6VQMGN0JYDQAV0H"), "{short}");
    let mut wide = args.to_vec();
    wide.push("--wide");
    let (_, full) = on_tty(&wide, 80, &[]);
    assert!(
        full.contains("r-01KJQ30Q9ET6VQMGN0JYDQAV0H  p-checkout"),
        "{full}"
    );
    assert!(
        full.contains("Backfill may change what customers were charged"),
        "{full}"
    );
    // The short id is a reference: `risk edit` finds the risk by it (any case).
    let repo = Repo::new();
    repo.dacli(&["init", "--project", "Core"])
        .assert()
        .success();
    let (code, added) = repo.json(&[
        "risk",
        "add",
        "Rounding drifts",
        "--impact",
        "low",
        "--likelihood",
        "low",
    ]);
    assert_eq!(code, 0, "{added}");
    let id = added["data"]["risk"]["id"].as_str().unwrap().to_string();
    let end = id[id.len() - 4..].to_ascii_lowercase();
    repo.dacli(&["risk", "edit", &format!("r~{end}"), "--status", "closed"])
        .assert()
        .success();
    let (_, listed) = repo.json(&["risk", "list", "--status", "closed"]);
    assert!(listed.to_string().contains(&id), "{listed}");
}
