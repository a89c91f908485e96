//! Text at the boundary: what a text field may hold before anything is written, and how
//! workspace text is shown to a terminal (docs/FORMAT.md §2 "Text fields").
//!
//! Every text value a caller hands dacli, from argv, a Tier-1 tool or the `cli` tool, is
//! checked here once, before the command runs. NUL and the other C0 and C1 controls (and DEL)
//! are refused everywhere but newline and tab; a one-line field refuses newline too; a
//! multi-line field that lands in a markdown body refuses the lines that would open, close or
//! add a body section (a level-1 or level-2 heading, an unclosed code fence), so that what is
//! read back is exactly what was written. Nothing longer than [`MAX_TEXT`] passes.

use std::borrow::Cow;

/// The longest text a field may carry, in bytes (COMMANDS.md §1.2 `<TEXT>`). Renderers rely on
/// nothing about it: they also handle stored text longer than this (hand-edited files).
pub const MAX_TEXT: usize = 64 * 1024;

/// What a field may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One line: no newline (titles, criteria, names, slugs, reasons logged on one line).
    OneLine,
    /// Lines of prose that become part of a markdown body: no section headings (`# `, `## `)
    /// and no code fence left open.
    Prose,
    /// Lines kept verbatim outside any markdown body (a shell command template).
    Lines,
}

/// Why a value is refused, naming nothing: the caller names the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextError(pub String);

impl std::fmt::Display for TextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `c` is refused in every text field: C0 controls but newline and tab, DEL, C1.
pub fn is_forbidden_control(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// Checks `value` against `shape`.
pub fn check(value: &str, shape: Shape) -> Result<(), TextError> {
    if value.len() > MAX_TEXT {
        return Err(TextError(format!(
            "is {} bytes; the limit is {MAX_TEXT}",
            value.len()
        )));
    }
    if let Some((at, c)) = value.char_indices().find(|(_, c)| is_forbidden_control(*c)) {
        return Err(TextError(format!(
            "holds the control character U+{:04X} at byte {at}; text fields may hold newline and tab only",
            u32::from(c)
        )));
    }
    match shape {
        Shape::OneLine => {
            if let Some(at) = value.find('\n') {
                return Err(TextError(format!(
                    "must be one line; it holds a newline at byte {at}"
                )));
            }
        }
        Shape::Prose => {
            if let Some(why) = super::body::forged_structure(value.trim()) {
                return Err(TextError(why));
            }
        }
        Shape::Lines => {}
    }
    Ok(())
}

/// `text` with every control character but newline and tab written visibly as `\u{..}`, for
/// human output: workspace text reaches a terminal as text, never as an escape sequence.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_forbidden_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_forbidden_control(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`visible`] for a colour terminal: also lets through the SGR sequences dacli paints with
/// (`ESC [` codes `m`, the codes among reset, bold, dim and the red, green, yellow, blue and
/// cyan foregrounds). Any other control, and any other sequence, is shown as text; at worst a
/// hand-edited file can colour its own text with that palette.
pub fn visible_styled(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_forbidden_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '\x1b'
            && let Some(len) = palette_sgr(rest)
        {
            out.push_str(&rest[..len]);
            rest = &rest[len..];
            continue;
        }
        if is_forbidden_control(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// The length of the palette SGR sequence `text` starts with, if it starts with one.
fn palette_sgr(text: &str) -> Option<usize> {
    let params = text.strip_prefix("\x1b[")?;
    let end = params.find('m').filter(|&e| e <= 8)?;
    params[..end]
        .split(';')
        .all(|code| matches!(code, "0" | "1" | "2" | "31" | "32" | "33" | "34" | "36"))
        .then_some(2 + end + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_colour_terminal_gets_the_palette_and_nothing_else() {
        let painted = "\x1b[1;31mmust\x1b[0m \x1b[36mactive\x1b[0m";
        assert_eq!(visible_styled(painted), painted);
        assert_eq!(
            visible_styled("\x1b]0;title\x07 \x1b[2J \x1b[8mhid\x1b[0m"),
            "\\u{1b}]0;title\\u{7} \\u{1b}[2J \\u{1b}[8mhid\x1b[0m"
        );
        assert_eq!(visible_styled("a\x1b"), "a\\u{1b}");
    }

    #[test]
    fn controls_are_refused_but_newline_and_tab() {
        assert!(check("a\tb", Shape::OneLine).is_ok());
        assert!(check("a\nb", Shape::Prose).is_ok());
        for bad in [
            "n\0ul",
            "a\rb",
            "e\u{1b}[2J",
            "c1\u{85}",
            "del\u{7f}",
            "bel\u{7}",
        ] {
            for shape in [Shape::OneLine, Shape::Prose, Shape::Lines] {
                assert!(check(bad, shape).is_err(), "{bad:?} {shape:?}");
            }
        }
        assert!(check("a\nb", Shape::OneLine).is_err());
        assert!(check(&"x".repeat(MAX_TEXT), Shape::OneLine).is_ok());
        assert!(check(&"x".repeat(MAX_TEXT + 1), Shape::OneLine).is_err());
    }

    #[test]
    fn prose_cannot_open_or_hide_a_section() {
        assert!(check("hi\n\n## Acceptance\n- [x] forged", Shape::Prose).is_err());
        assert!(check("# Other title", Shape::Prose).is_err());
        assert!(check("hi\n```\nall the rest", Shape::Prose).is_err());
        assert!(check("hi\n```\n## inside code\n```\n### fine", Shape::Prose).is_ok());
        assert!(check("#hashtag\n- [x] a list item", Shape::Prose).is_ok());
        assert!(check("## shell comment\n", Shape::Lines).is_ok());
    }

    #[test]
    fn controls_render_visibly() {
        assert_eq!(visible("plain\n\ttext"), "plain\n\ttext");
        assert_eq!(
            visible("Evil \u{1b}]2;PWNED\u{7}\u{1b}[2J"),
            "Evil \\u{1b}]2;PWNED\\u{7}\\u{1b}[2J"
        );
        assert_eq!(visible("a\rb\u{9b}"), "a\\u{d}b\\u{9b}");
    }
}
