//! Markdown body structure (docs/FORMAT.md §2 "Body structure"): structural sections,
//! acceptance criteria and Log lines, read and edited locally so that a change touches only
//! the bytes it must (a checkbox toggle changes one character; a Log append adds lines at the
//! end of `## Log`).

use std::ops::Range;

/// Byte ranges of each line of `body` that is outside fenced code, with its text.
fn lines_outside_code(body: &str) -> Vec<(Range<usize>, &str, bool)> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    let mut at = 0;
    for raw in body.split_inclusive('\n') {
        let line = raw.trim_end_matches('\n');
        let range = at..at + raw.len();
        at += raw.len();
        let in_code = if let Some(open) = fence {
            if line.starts_with(open) {
                fence = None;
            }
            true
        } else if line.starts_with("```") {
            fence = Some("```");
            true
        } else if line.starts_with("~~~") {
            fence = Some("~~~");
            true
        } else {
            false
        };
        out.push((range, line, in_code));
    }
    out
}

fn heading_level(line: &str) -> usize {
    let level = line.bytes().take_while(|b| *b == b'#').count();
    if level > 0 && line.as_bytes().get(level) == Some(&b' ') {
        level
    } else {
        0
    }
}

/// Why `text`, placed inside a section of a body, would change the body's structure: a line
/// outside code that reads as a level-1 or level-2 heading (which opens a section or ends the
/// one it is in), or a code fence it leaves open (which hides every section after it). `None`
/// when the text reads back as itself. Read with the same rules as every reader here.
pub fn forged_structure(text: &str) -> Option<String> {
    let lines = lines_outside_code(text);
    for (n, (_, line, in_code)) in lines.iter().enumerate() {
        if !*in_code && matches!(heading_level(line), 1 | 2) {
            return Some(format!(
                "line {} reads as a section heading (`{}`); inside a field use `###` or deeper",
                n + 1,
                line.chars().take(40).collect::<String>()
            ));
        }
    }
    // A fence still open at the end swallows the rest of the body.
    let mut fence: Option<(&str, &str)> = None;
    for line in text.split('\n') {
        match fence {
            Some((open, _)) if line.starts_with(open) => fence = None,
            Some(_) => {}
            None if line.starts_with("```") => fence = Some(("```", line)),
            None if line.starts_with("~~~") => fence = Some(("~~~", line)),
            None => {}
        }
    }
    fence.map(|(_, line)| {
        format!(
            "opens a code fence (`{}`) it does not close",
            line.chars().take(40).collect::<String>()
        )
    })
}

/// The byte range of the content of the first structural section `name` (after its heading
/// line, up to the next level-1 or level-2 heading), if the section exists.
pub fn section_range(body: &str, name: &str) -> Option<Range<usize>> {
    let lines = lines_outside_code(body);
    let mut start = None;
    for (range, line, in_code) in &lines {
        if *in_code {
            continue;
        }
        let level = heading_level(line);
        if let Some(s) = start {
            if level == 1 || level == 2 {
                return Some(s..range.start);
            }
        } else if level == 2 && line[3..].trim_end() == name {
            start = Some(range.end);
        }
    }
    start.map(|s| s..body.len())
}

/// How many level-2 headings named `name` (a structural section) the body has outside fenced
/// code. Readers use the first; more than one is what `lint` reports as `duplicate_section`.
pub fn section_heading_count(body: &str, name: &str) -> usize {
    lines_outside_code(body)
        .iter()
        .filter(|(_, line, in_code)| {
            !*in_code && heading_level(line) == 2 && line[3..].trim_end() == name
        })
        .count()
}

/// The lines of section `name` that lie outside fenced code, in order (none when the section
/// is absent).
pub fn section_lines_outside_code<'a>(body: &'a str, name: &str) -> Vec<&'a str> {
    let Some(range) = section_range(body, name) else {
        return Vec::new();
    };
    lines_outside_code(body)
        .into_iter()
        .filter(|(lr, _, in_code)| !*in_code && lr.start >= range.start && lr.start < range.end)
        .map(|(_, line, _)| line)
        .collect()
}

/// Every line of the body outside fenced code (fence lines excluded), in order.
pub fn lines_outside_fences(body: &str) -> Vec<&str> {
    lines_outside_code(body)
        .into_iter()
        .filter(|(_, _, in_code)| !*in_code)
        .map(|(_, line, _)| line)
        .collect()
}

/// The trimmed text of section `name`; `None` when absent, `Some("")` when empty.
pub fn section_text<'a>(body: &'a str, name: &str) -> Option<&'a str> {
    section_range(body, name).map(|r| body[r].trim())
}

/// The `- item` bullet lines of section `name`, without the marker.
pub fn section_items(body: &str, name: &str) -> Vec<String> {
    section_text(body, name)
        .map(|t| {
            t.lines()
                .filter_map(|l| l.strip_prefix("- "))
                .map(|l| l.trim().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Appends `line` at the end of section `name` (after its last non-blank line), creating the
/// section at the end of the body when it is missing. Nothing else changes.
pub fn append_to_section(body: &str, name: &str, line: &str) -> String {
    match section_range(body, name) {
        Some(range) => {
            let content = &body[range.clone()];
            let kept = content.trim_end_matches(['\n', ' ', '\t']).len();
            let insert_at = range.start + kept;
            let (before, after) = body.split_at(insert_at);
            let mut out = String::with_capacity(body.len() + line.len() + 2);
            out.push_str(before);
            if kept > 0 {
                out.push('\n');
                out.push_str(line);
            } else {
                out.push_str(line);
                out.push('\n');
            }
            out.push_str(after);
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out
        }
        None => {
            let mut out = body.trim_end_matches('\n').to_string();
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&format!("## {name}\n{line}\n"));
            out
        }
    }
}

/// One acceptance criterion (`- [ ] text` / `- [x] text` at column 0 in `## Acceptance`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Criterion {
    /// 1-based position.
    pub n: u32,
    pub text: String,
    pub checked: bool,
    /// The first code span of the text: the command that verifies it, if any.
    pub command: Option<String>,
    /// Byte offset of the box character (` ` or `x`) in the body.
    offset: usize,
}

/// The acceptance criteria, numbered 1..n.
pub fn criteria(body: &str) -> Vec<Criterion> {
    let Some(range) = section_range(body, "Acceptance") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (lr, line, in_code) in lines_outside_code(body) {
        if in_code || lr.start < range.start || lr.start >= range.end {
            continue;
        }
        let (checked, text) = if let Some(t) = line.strip_prefix("- [ ] ") {
            (false, t)
        } else if let Some(t) = line
            .strip_prefix("- [x] ")
            .or_else(|| line.strip_prefix("- [X] "))
        {
            (true, t)
        } else {
            continue;
        };
        out.push(Criterion {
            n: out.len() as u32 + 1,
            text: text.to_string(),
            checked,
            command: first_code_span(text),
            offset: lr.start + 3,
        });
    }
    out
}

/// Sets criterion `n`'s box; changes exactly one byte. `None` if there is no criterion `n`.
pub fn set_checked(body: &str, n: u32, checked: bool) -> Option<String> {
    let c = criteria(body).into_iter().find(|c| c.n == n)?;
    let mut out = body.to_string();
    out.replace_range(c.offset..c.offset + 1, if checked { "x" } else { " " });
    Some(out)
}

/// The first inline code span of `text` (single or multiple backticks), trimmed.
pub fn first_code_span(text: &str) -> Option<String> {
    let start = text.find('`')?;
    let ticks = text[start..].bytes().take_while(|b| *b == b'`').count();
    let fence = &text[start..start + ticks];
    let rest = &text[start + ticks..];
    let end = rest.find(fence)?;
    let span = rest[..end].trim();
    (!span.is_empty()).then(|| span.to_string())
}

/// Replaces the content of section `name` with `text` (one blank line before the next
/// heading), creating the section at the end when it is missing.
pub fn replace_section(body: &str, name: &str, text: &str) -> String {
    let text = text.trim_end_matches('\n');
    match section_range(body, name) {
        Some(range) => {
            let tail = &body[range.end..];
            let sep = if tail.is_empty() { "\n" } else { "\n\n" };
            format!("{}{text}{sep}{tail}", &body[..range.start])
        }
        None => {
            let mut out = body.trim_end_matches('\n').to_string();
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&format!("## {name}\n{text}\n"));
            out
        }
    }
}

/// Replaces the first level-1 heading's text (the title), keeping everything else.
pub fn replace_title(body: &str, title: &str) -> String {
    for (range, line, in_code) in lines_outside_code(body) {
        if !in_code && heading_level(line) == 1 {
            let newline = if body[range.clone()].ends_with('\n') {
                "\n"
            } else {
                ""
            };
            return format!(
                "{}# {title}{newline}{}",
                &body[..range.start],
                &body[range.end..]
            );
        }
    }
    format!("# {title}\n\n{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = "# T\n\n## So that\nCents agree.\n\n## Acceptance\n- [x] Every caller goes through the shim\n- [ ] `./scripts/test.sh checkout` passes\n\n```\n- [ ] not a criterion\n```\n\n## Log\n- 2026-03-02T09:20:11Z a-root created\n";

    #[test]
    fn sections_and_criteria() {
        assert_eq!(section_text(BODY, "So that"), Some("Cents agree."));
        assert_eq!(section_text(BODY, "Context"), None);
        let c = criteria(BODY);
        assert_eq!(c.len(), 2);
        assert!(c[0].checked && !c[1].checked);
        assert_eq!(c[1].command.as_deref(), Some("./scripts/test.sh checkout"));
    }

    #[test]
    fn toggling_a_box_changes_one_byte() {
        let after = set_checked(BODY, 2, true).expect("criterion 2");
        let diff: Vec<_> = BODY
            .bytes()
            .zip(after.bytes())
            .filter(|(a, b)| a != b)
            .collect();
        assert_eq!(diff, vec![(b' ', b'x')]);
        assert!(set_checked(BODY, 3, true).is_none());
    }

    #[test]
    fn log_lines_append_at_the_end_of_the_log() {
        let after = append_to_section(BODY, "Log", "- 2026-03-03T10:00:00Z a-root claimed");
        assert!(after.starts_with(BODY));
        assert!(after.ends_with("created\n- 2026-03-03T10:00:00Z a-root claimed\n"));
        let mid = append_to_section(BODY, "So that", "More.");
        assert!(
            mid.contains("Cents agree.\nMore.\n\n## Acceptance"),
            "{mid}"
        );
        let new = append_to_section("# T\n", "Log", "- x");
        assert_eq!(new, "# T\n\n## Log\n- x\n");
    }
}
