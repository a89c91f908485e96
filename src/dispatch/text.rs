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
            .map(|(c, cell)| {
                let w = widths[c];
                if right.contains(&c) {
                    format!("{cell:>w$}")
                } else {
                    format!("{cell:<w$}")
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_align() {
        let rows = vec![
            vec!["NAME".to_string(), "N".to_string()],
            vec!["ab".to_string(), "10".to_string()],
        ];
        assert_eq!(super::table(&rows, &[1]), "NAME   N\nab    10\n");
    }
}
