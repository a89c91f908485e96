//! Helpers for human text renderers, shared by every slice so that all listings look alike
//! (COMMANDS.md §1.5: two-space columns aligned by display width, numbers right-aligned).

/// Aligned columns separated by two spaces; `right` lists the right-aligned (numeric)
/// columns. The first row is the header. Trailing spaces are trimmed.
pub fn table(rows: &[Vec<String>], right: &[usize]) -> String {
    let cols = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
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
    let fill = " ".repeat(width.saturating_sub(cell.chars().count()));
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

#[cfg(test)]
mod tests {
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
