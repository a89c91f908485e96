//! Fencing third-party text (spec/BRIEF.md §3): whatever another agent or a human wrote is
//! shown as an attributed blockquote whose content cannot forge the brief's structure.
//!
//! The escaping scheme, chosen so the text still reads as what was written:
//! - line ends are normalised (`\r\n` and a lone `\r` become `\n`), so no hidden line break
//!   survives;
//! - `<!--` becomes `&lt;!--` and `-->` becomes `--&gt;`: no HTML comment, and so no dacli
//!   marker (`<!-- dacli …`), can open or close inside quoted text;
//! - after the line's container prefix (spaces, `>` quote markers, list markers), a leading
//!   `#` is written `\#` (no heading), a setext underline (`===`, `---`) gets a leading `\`
//!   (it cannot turn the line above into a heading), and a leading `**` is written `\*\*`
//!   (no line can imitate an attribution line `> **a-…** (…):`);
//! - every content line is prefixed with `> `, an empty one with `>`, so the quote never ends
//!   early and a new quote can never start inside it.
//!
//! Canonical text (goal, constraints, acceptance, the reader's own notes) is not quoted but
//! goes through [`inert`] as well, so that no file can forge a dacli marker.

/// Neutralises structure in `text` (see the module docs), line by line, without quoting.
pub fn inert(text: &str) -> String {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let lines: Vec<String> = text.split('\n').map(inert_line).collect();
    lines.join("\n")
}

/// `text` as an attributed blockquote: the attribution line `> **<who>** (<details>):`, then
/// every line of `text` made [`inert`] and prefixed with `> ` (`>` for an empty line).
pub fn quote(who: &str, details: &str, text: &str) -> String {
    let mut out = format!("> **{}** ({}):", label(who), label(details));
    for line in inert(text.trim_matches('\n')).split('\n') {
        out.push('\n');
        if line.trim().is_empty() {
            out.push('>');
        } else {
            out.push_str("> ");
            out.push_str(line);
        }
    }
    out
}

/// A one-line label for an attribution or a heading: control characters and the characters
/// that carry Markdown or HTML structure (`*`, `<`, `>`, backticks, brackets) are dropped and
/// whitespace collapsed, so a hand-edited author or title cannot break the attribution line.
pub fn label(text: &str) -> String {
    let kept: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .filter(|c| !c.is_control() && !matches!(c, '*' | '<' | '>' | '`' | '[' | ']'))
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn inert_line(line: &str) -> String {
    let line = line.replace("<!--", "&lt;!--").replace("-->", "--&gt;");
    let at = container_prefix(&line);
    let (prefix, rest) = line.split_at(at);
    if rest.starts_with('#') || is_setext_underline(rest) {
        format!("{prefix}\\{rest}")
    } else if let Some(tail) = rest.strip_prefix("**") {
        format!("{prefix}\\*\\*{tail}")
    } else {
        line
    }
}

/// The byte length of a line's container prefix: any run of whitespace, blockquote markers
/// (`>`) and list markers (`-`, `*`, `+` or `1.`/`1)` followed by whitespace). A heading or
/// an attribution lookalike after such a prefix would still render as one.
fn container_prefix(line: &str) -> usize {
    let bytes = line.as_bytes();
    let mut i = 0;
    loop {
        while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
            i += 1;
        }
        match bytes.get(i) {
            Some(b'>') => i += 1,
            Some(b'-' | b'*' | b'+') if matches!(bytes.get(i + 1), Some(b' ' | b'\t')) => i += 2,
            Some(b'0'..=b'9') => {
                let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
                let after = i + digits;
                let ordered = digits <= 9
                    && matches!(bytes.get(after), Some(b'.' | b')'))
                    && matches!(bytes.get(after + 1), Some(b' ' | b'\t'));
                if !ordered {
                    return i;
                }
                i = after + 2;
            }
            _ => return i,
        }
    }
}

fn is_setext_underline(rest: &str) -> bool {
    let t = rest.trim_end();
    !t.is_empty() && (t.bytes().all(|b| b == b'=') || t.bytes().all(|b| b == b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_every_line_and_escapes_structure() {
        let q = quote(
            "a-root",
            "root, on 004-x, major",
            "fine\n\n# Heading\n<!-- dacli brief -->\n**a-x** (y):\n---\n  > ## nested",
        );
        assert_eq!(
            q,
            "> **a-root** (root, on 004-x, major):\n> fine\n>\n> \\# Heading\n> &lt;!-- dacli brief --&gt;\n> \\*\\*a-x** (y):\n> \\---\n>   > \\## nested"
        );
    }

    #[test]
    fn lists_keep_their_markers() {
        assert_eq!(inert("- # x\n1. ok\n12) # y"), "- \\# x\n1. ok\n12) \\# y");
    }

    #[test]
    fn labels_cannot_break_the_attribution() {
        assert_eq!(label("a-root** (x):\n> **b"), "a-root (x): b");
    }
}
