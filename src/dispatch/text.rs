//! Helpers for human text renderers, shared by every slice so that all listings look alike
//! (COMMANDS.md §1.5: two-space columns aligned by display width, numbers right-aligned),
//! coloured the same way (status, priority) and fitted to the terminal the same way (short
//! refs, short agent ids, titles cut with an ellipsis).

/// An ANSI SGR style: the parameters between `ESC [` and `m`.
pub type Style = &'static str;
pub const RED: Style = "31";
pub const GREEN: Style = "32";
pub const YELLOW: Style = "33";
pub const BLUE: Style = "34";
pub const CYAN: Style = "36";
pub const BOLD_RED: Style = "1;31";
pub const DIM: Style = "2";
pub const BOLD: Style = "1";

/// `text` in `style` when `on`, else `text` itself.
pub fn paint(on: bool, style: Style, text: &str) -> String {
    if on && !text.is_empty() {
        format!("\x1b[{style}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// The colour of a task status (and of the `status` bar's cells for it).
pub fn status_style(status: &str) -> Style {
    match status.trim_end_matches('*') {
        "active" => CYAN,
        "blocked" => RED,
        "done" => GREEN,
        _ => "",
    }
}

/// The colour of a priority: a must stands out, a could or won't recedes.
pub fn priority_style(priority: &str) -> Style {
    match priority {
        "must" => BOLD_RED,
        "should" => YELLOW,
        "could" | "wont" => DIM,
        _ => "",
    }
}

/// `text` painted in `style` when `on` and `style` is not empty.
pub fn paint_if(on: bool, style: Style, text: &str) -> String {
    paint(on && !style.is_empty(), style, text)
}

/// The characters of `text` a terminal shows: ANSI escape sequences take no columns.
pub fn visible_width(text: &str) -> usize {
    let mut n = 0;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for e in chars.by_ref() {
                if e.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            n += 1;
        }
    }
    n
}

/// `text` cut to `width` characters, the last one an ellipsis when anything was cut.
pub fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out: String = text.chars().take(width - 1).collect();
    out.push('…');
    out
}

/// A task's short ref, `<project>/<number>` (`core/12`), which every command resolves as the
/// full `<project>/<NNN>-<slug>` ref.
pub fn short_ref(reference: &str) -> String {
    match reference.split_once('/') {
        Some((project, rest)) => {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            match digits.trim_start_matches('0') {
                "" if digits.is_empty() => reference.to_string(),
                "" => format!("{project}/0"),
                n => format!("{project}/{n}"),
            }
        }
        None => reference.to_string(),
    }
}

/// An agent's display name: `a-root` is `root`; `a-<role>-<ULID>` is `<role>~<last 4 of the
/// ULID>`; `a-<ULID>` is `a~<last 4>`. Anything else shows whole.
pub fn agent_short(id: &str) -> String {
    if id == "a-root" {
        return "root".into();
    }
    let Some(rest) = id.strip_prefix("a-") else {
        return id.to_string();
    };
    let (role, ulid) = match rest.rsplit_once('-') {
        Some((role, ulid)) => (role, ulid),
        None => ("a", rest),
    };
    if ulid.len() == 26 && ulid.bytes().all(|b| b.is_ascii_alphanumeric()) {
        format!("{role}~{}", &ulid[22..])
    } else {
        id.to_string()
    }
}

/// A risk's short id, `r~<last 4 of the ULID>` (`r~AV0H`), which `risk edit` resolves like
/// the whole `r-<ULID>`. Anything that is not a risk id shows whole.
pub fn risk_short(id: &str) -> String {
    match id.strip_prefix("r-") {
        Some(ulid) if ulid.len() == 26 && ulid.bytes().all(|b| b.is_ascii_alphanumeric()) => {
            format!("r~{}", &ulid[22..])
        }
        _ => id.to_string(),
    }
}

/// [`table`] fitted to `width` columns when there is one: the `flex` column (a title) gives
/// up its characters, down to 12, each cut cell ending in an ellipsis.
pub fn fit_table(
    rows: &[Vec<String>],
    right: &[usize],
    width: Option<usize>,
    flex: usize,
) -> String {
    let Some(width) = width else {
        return table(rows, right);
    };
    let cols = rows.first().map_or(0, Vec::len);
    let widths = column_widths(rows, cols);
    let others: usize = widths
        .iter()
        .enumerate()
        .filter(|(c, _)| *c != flex)
        .map(|(_, w)| *w)
        .sum::<usize>()
        + 2 * cols.saturating_sub(1);
    let room = width.saturating_sub(others).max(12);
    if widths.get(flex).is_none_or(|w| *w <= room) {
        return table(rows, right);
    }
    let cut: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .map(|(c, cell)| {
                    if c == flex && visible_width(cell) > room {
                        truncate(cell, room)
                    } else {
                        cell.clone()
                    }
                })
                .collect()
        })
        .collect();
    table(&cut, right)
}

fn column_widths(rows: &[Vec<String>], cols: usize) -> Vec<usize> {
    (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| visible_width(s)))
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// Aligned columns separated by two spaces; `right` lists the right-aligned (numeric)
/// columns. The first row is the header. Trailing spaces are trimmed. Cells may carry colour:
/// widths count what a terminal shows.
pub fn table(rows: &[Vec<String>], right: &[usize]) -> String {
    let cols = rows.first().map_or(0, Vec::len);
    let widths = column_widths(rows, cols);
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| pad(cell, widths[c], right.contains(&c)))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// `cell` padded with spaces to `width` characters, on the left when `right`-aligned. By hand,
/// not with a format width: `format!` panics on a width above 65,535, and a stored title may
/// be longer than any limit a writer keeps.
pub fn pad(cell: &str, width: usize, right: bool) -> String {
    let fill = " ".repeat(width.saturating_sub(visible_width(cell)));
    if right {
        format!("{fill}{cell}")
    } else {
        format!("{cell}{fill}")
    }
}

/// A time relative to `now` for human text: `just now`, `5m ago`, `3h ago`, `2d ago`, or
/// `in 4h` for a time ahead. JSON output keeps RFC 3339; only text is relative.
pub fn ago(now: jiff::Timestamp, then: jiff::Timestamp) -> String {
    let secs = now.as_second() - then.as_second();
    let (n, ahead) = (secs.abs(), secs < 0);
    let text = if n < 60 {
        return "just now".to_string();
    } else if n < 3_600 {
        format!("{}m", n / 60)
    } else if n < 86_400 {
        format!("{}h", n / 3_600)
    } else if n < 86_400 * 60 {
        format!("{}d", n / 86_400)
    } else {
        format!("{}mo", n / (86_400 * 30))
    };
    if ahead {
        format!("in {text}")
    } else {
        format!("{text} ago")
    }
}

/// [`ago`] for a stored RFC 3339 text; the text itself when it does not parse.
pub fn ago_text(now: jiff::Timestamp, then: &str) -> String {
    then.parse::<jiff::Timestamp>()
        .map(|t| ago(now, t))
        .unwrap_or_else(|_| then.to_string())
}

/// `text` with each line wider than `width` columns wrapped at spaces, continuation lines
/// aligned after a list marker (`- `, `* `, `1. `), else indented two columns past an indented
/// line's indent, else not at all (a word wider than the room is cut into pieces). For prose on a terminal: tables fit themselves with [`fit_table`].
pub fn wrap_lines(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if visible_width(body) <= width {
            out.push_str(line);
            continue;
        }
        let indent = body.len() - body.trim_start_matches(' ').len();
        let rest = &body[indent..];
        let number = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let marker = if rest.starts_with("- ") || rest.starts_with("* ") {
            2
        } else if number > 0 && rest[number..].starts_with(". ") {
            number + 2
        } else if indent > 0 {
            2
        } else {
            0
        };
        let hang = " ".repeat((indent + marker).min(width / 2));
        let mut cur = " ".repeat(indent);
        let mut cur_w = indent;
        let mut fresh = true;
        for word in body.trim_start_matches(' ').split(' ') {
            let mut word = word.to_string();
            loop {
                let w = visible_width(&word);
                let sep = usize::from(!fresh);
                if cur_w + sep + w <= width {
                    if !fresh {
                        cur.push(' ');
                    }
                    cur.push_str(&word);
                    cur_w += sep + w;
                    fresh = false;
                    break;
                }
                if !fresh {
                    out.push_str(&cur);
                    out.push('\n');
                    cur = hang.clone();
                    cur_w = hang.len();
                    fresh = true;
                    continue;
                }
                // A word wider than a whole line: cut it (escape sequences kept whole).
                let room = width.saturating_sub(cur_w).max(1);
                let (head, tail) = split_visible(&word, room);
                cur.push_str(&head);
                out.push_str(&cur);
                out.push('\n');
                cur = hang.clone();
                cur_w = hang.len();
                word = tail;
                if word.is_empty() {
                    break;
                }
            }
        }
        if fresh {
            // The line ended with a cut word, already followed by a newline.
            out.pop();
        } else {
            out.push_str(&cur);
        }
        out.push_str(nl);
    }
    out
}

/// `text` split after `n` visible characters.
fn split_visible(text: &str, n: usize) -> (String, String) {
    let mut head = String::new();
    let mut seen = 0;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            head.push(c);
            for e in chars.by_ref() {
                head.push(e);
                if e.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        if seen == n {
            let mut tail = c.to_string();
            tail.extend(chars);
            return (head, tail);
        }
        head.push(c);
        seen += 1;
    }
    (head, String::new())
}

#[cfg(test)]
mod tests {
    #[test]
    fn long_lines_wrap_with_a_hanging_indent_and_long_words_are_cut() {
        let text =
            "short\n  2026-03-05 a-reviewer comment: the refund tests fail on the shim branch\n";
        assert_eq!(
            super::wrap_lines(text, 30),
            "short\n  2026-03-05 a-reviewer\n    comment: the refund tests\n    fail on the shim branch\n"
        );
        assert_eq!(super::wrap_lines("abcdefghij", 4), "abcd\nefgh\nij");
        assert_eq!(
            super::wrap_lines("- one two three\n12. four five\nsix seven eight", 9),
            "- one two\n  three\n12. four\n    five\nsix seven\neight"
        );
        let red = "\x1b[31mnot met\x1b[0m";
        assert_eq!(super::wrap_lines(red, 7), red);
    }

    #[test]
    fn relative_times() {
        let now: jiff::Timestamp = "2026-03-05T12:00:00Z".parse().expect("time");
        let at = |s: &str| s.parse::<jiff::Timestamp>().expect("time");
        assert_eq!(super::ago(now, at("2026-03-05T11:59:30Z")), "just now");
        assert_eq!(super::ago(now, at("2026-03-05T11:15:00Z")), "45m ago");
        assert_eq!(super::ago(now, at("2026-03-05T09:00:00Z")), "3h ago");
        assert_eq!(super::ago(now, at("2026-03-02T12:00:00Z")), "3d ago");
        assert_eq!(super::ago(now, at("2026-03-05T16:00:00Z")), "in 4h");
    }

    #[test]
    fn short_forms() {
        assert_eq!(super::short_ref("core/012-add-the-thing"), "core/12");
        assert_eq!(super::short_ref("core/000-x"), "core/0");
        assert_eq!(super::short_ref("core/slug-only"), "core/slug-only");
        assert_eq!(super::agent_short("a-root"), "root");
        assert_eq!(
            super::agent_short("a-planner-01KJPXBASP11G0W484T2TGEMDX"),
            "planner~EMDX"
        );
        assert_eq!(super::agent_short("a-01KJPXBASP11G0W484T2TGEMDX"), "a~EMDX");
        assert_eq!(super::agent_short("someone"), "someone");
        assert_eq!(super::risk_short("r-01KJQ30Q9ET6VQMGN0JYDQAV0H"), "r~AV0H");
        assert_eq!(super::risk_short("r-short"), "r-short");
        assert_eq!(
            super::risk_short("r-01KJQ30Q9ET6VQMGN0JYDQ\u{1b}[2J"),
            "r-01KJQ30Q9ET6VQMGN0JYDQ\u{1b}[2J"
        );
        assert_eq!(super::truncate("abcdef", 4), "abc…");
        assert_eq!(super::truncate("abc", 4), "abc");
    }

    #[test]
    fn coloured_cells_align_and_titles_fit() {
        let rows = vec![
            vec!["A".to_string(), "TITLE".to_string()],
            vec![
                super::paint(true, super::RED, "xy"),
                "a long title indeed".into(),
            ],
        ];
        let out = super::fit_table(&rows, &[], Some(16), 1);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(super::visible_width(lines[1]), 16, "{out:?}");
        assert!(lines[1].ends_with("a long titl…"), "{out:?}");
        assert_eq!(lines[0], "A   TITLE");
    }

    #[test]
    fn columns_align() {
        let rows = vec![
            vec!["NAME".to_string(), "N".to_string()],
            vec!["ab".to_string(), "10".to_string()],
        ];
        assert_eq!(super::table(&rows, &[1]), "NAME   N\nab    10\n");
        let long = "x".repeat(70_000);
        let rows = vec![
            vec!["T".to_string(), "N".to_string()],
            vec![long.clone(), "1".into()],
        ];
        assert!(super::table(&rows, &[1]).starts_with(&format!("T{}  N\n", " ".repeat(69_999))));
    }
}
