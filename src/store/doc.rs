//! Frontmatter documents: TOML between `+++` fences over a Markdown body, and plain TOML
//! records. Both are edited through `toml_edit`, so a rewrite changes only the bytes of the keys
//! that were set or removed; unknown keys, `[ext]` and comments survive (docs/FORMAT.md §2).

use toml_edit::DocumentMut;

use super::canon::canonicalize;
use super::error::{Problem, Reason};
use super::fs::Limits;

const FENCE: &str = "+++";

/// A Markdown object file: editable TOML frontmatter and the body after the closing fence.
///
/// Invariant: `body` never starts with the blank separator line (that belongs to the envelope)
/// and is either empty or ends with exactly one LF once rendered.
#[derive(Debug, Clone)]
pub struct Document {
    pub front: DocumentMut,
    pub body: String,
}

impl Document {
    /// A new document from frontmatter and body.
    pub fn new(front: DocumentMut, body: impl Into<String>) -> Self {
        Document {
            front,
            body: body.into(),
        }
    }

    /// Parses the bytes of an `.md` object file. `path` is used in problems only.
    ///
    /// Readers accept a BOM and CRLF line ends; everything else of §2 and §4.4 is checked here:
    /// encoding, merge-conflict markers, the fences, the frontmatter cap, TOML syntax and depth.
    pub fn parse(path: &str, bytes: &[u8]) -> Result<Document, Problem> {
        let text = canonical_text(path, bytes)?;
        let (front, body) = envelope(path, &text)?;
        Ok(Document {
            front: parse_toml(path, front, 1, |t| t.parse::<DocumentMut>())?,
            body: body.to_string(),
        })
    }

    /// The canonical bytes of this document (§2): fences, frontmatter, one blank line and the
    /// body when the body is not empty, exactly one final LF.
    pub fn render(&self) -> String {
        let mut out = String::from("+++\n");
        let front = self.front.to_string();
        out.push_str(&front);
        if !front.is_empty() && !front.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("+++\n");
        if !self.body.trim().is_empty() {
            out.push('\n');
            out.push_str(&self.body);
        }
        canonicalize(&out)
    }

    /// The title: the text of the first level-1 heading outside fenced code.
    pub fn title(&self) -> Option<&str> {
        headings(&self.body)
            .find(|(level, _)| *level == 1)
            .map(|(_, text)| text)
    }
}

/// A Markdown object file parsed to be read only, as the index reads every file it extracts:
/// the same checks and values as [`Document::parse`], but the frontmatter keeps spans into its
/// own text instead of an editable copy of every key, value and comment, which costs about a
/// third less to parse. Its items are for reading; one copied into an editable document
/// would lose its formatting.
#[derive(Debug)]
pub struct ReadDocument {
    pub front: toml_edit::Document<String>,
    pub body: String,
}

impl ReadDocument {
    /// Parses the bytes of an `.md` object file, exactly as [`Document::parse`] checks them.
    pub fn parse(path: &str, bytes: &[u8]) -> Result<ReadDocument, Problem> {
        let text = canonical_text(path, bytes)?;
        let (front, body) = envelope(path, &text)?;
        Ok(ReadDocument {
            front: parse_toml(path, front, 1, |t| {
                toml_edit::Document::parse(t.to_string())
            })?,
            body: body.to_string(),
        })
    }

    /// The title: the text of the first level-1 heading outside fenced code.
    pub fn title(&self) -> Option<&str> {
        headings(&self.body)
            .find(|(level, _)| *level == 1)
            .map(|(_, text)| text)
    }
}

/// The canonical text of an object file's bytes (§2), refused when it is no UTF-8, holds a
/// NUL or merge-conflict markers.
fn canonical_text(path: &str, bytes: &[u8]) -> Result<String, Problem> {
    let text = canonicalize(decode(path, bytes)?);
    check_merge_conflict(path, &text)?;
    Ok(text)
}

/// The frontmatter text between the fences and the body after them (without the blank
/// separator line), checked against the frontmatter cap.
fn envelope<'a>(path: &str, text: &'a str) -> Result<(&'a str, &'a str), Problem> {
    let problem = |reason, detail: String| Problem {
        path: path.to_string(),
        reason,
        detail,
    };
    let Some(rest) = text.strip_prefix("+++\n").or_else(|| {
        if text == FENCE || text == "+++\n" {
            Some("")
        } else {
            None
        }
    }) else {
        return Err(problem(
            Reason::NoFrontmatter,
            "the first line must be exactly `+++`".into(),
        ));
    };
    let mut offset = 0;
    let mut close = None;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches('\n') == FENCE {
            close = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((front_end, body_start)) = close else {
        return Err(problem(
            Reason::UnterminatedFrontmatter,
            "no closing `+++` line".into(),
        ));
    };
    let front_text = &rest[..front_end];
    if front_text.len() > Limits::MAX_FRONTMATTER {
        return Err(problem(
            Reason::FrontmatterTooLarge,
            format!(
                "frontmatter is {} bytes; the limit is {}",
                front_text.len(),
                Limits::MAX_FRONTMATTER
            ),
        ));
    }
    let body = &rest[body_start..];
    Ok((front_text, body.strip_prefix('\n').unwrap_or(body)))
}

/// A plain TOML record (`config.toml`, evidence, transaction steps).
#[derive(Debug, Clone)]
pub struct TomlRecord {
    pub doc: DocumentMut,
}

impl TomlRecord {
    /// Parses a `.toml` record with the same encoding and depth checks as a document.
    pub fn parse(path: &str, bytes: &[u8]) -> Result<TomlRecord, Problem> {
        let text = canonical_text(path, bytes)?;
        Ok(TomlRecord {
            doc: parse_toml(path, &text, 0, |t| t.parse::<DocumentMut>())?,
        })
    }

    /// The canonical bytes of this record.
    pub fn render(&self) -> String {
        canonicalize(&self.doc.to_string())
    }
}

/// Headings of a Markdown body as `(level, text)`, skipping fenced code (§2 "Body structure").
pub fn headings(body: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fence: Option<&str> = None;
    body.lines().filter_map(move |line| {
        if let Some(open) = fence {
            if line.starts_with(open) {
                fence = None;
            }
            return None;
        }
        if line.starts_with("```") {
            fence = Some("```");
            return None;
        }
        if line.starts_with("~~~") {
            fence = Some("~~~");
            return None;
        }
        let level = line.bytes().take_while(|b| *b == b'#').count();
        if level == 0 || line.as_bytes().get(level) != Some(&b' ') {
            return None;
        }
        Some((level, line[level + 1..].trim()))
    })
}

fn decode<'a>(path: &str, bytes: &'a [u8]) -> Result<&'a str, Problem> {
    if let Some(at) = bytes.iter().position(|b| *b == 0) {
        return Err(Problem {
            path: path.to_string(),
            reason: Reason::Encoding,
            detail: format!("NUL byte at offset {at}"),
        });
    }
    std::str::from_utf8(bytes).map_err(|e| Problem {
        path: path.to_string(),
        reason: Reason::Encoding,
        detail: format!("invalid UTF-8 at offset {}", e.valid_up_to()),
    })
}

fn check_merge_conflict(path: &str, text: &str) -> Result<(), Problem> {
    let mut start = None;
    for (n, line) in text.lines().enumerate() {
        if start.is_none() && line.starts_with("<<<<<<< ") {
            start = Some(n + 1);
        } else if let Some(first) = start
            && line.starts_with(">>>>>>> ")
        {
            return Err(Problem {
                path: path.to_string(),
                reason: Reason::MergeConflict,
                detail: format!("conflict markers at lines {first}-{}", n + 1),
            });
        }
    }
    Ok(())
}

/// Parses TOML; `line_offset` is the number of lines before `text` in the file, so positions
/// in problems are lines of the file, not of the frontmatter.
fn parse_toml<T>(
    path: &str,
    text: &str,
    line_offset: usize,
    parse: impl FnOnce(&str) -> Result<T, toml_edit::TomlError>,
) -> Result<T, Problem> {
    parse(text).map_err(|e| {
        let message = e.message().trim().to_string();
        // toml_edit reports its nesting cap only through the message; the position is useless
        // there, and the reason is what callers act on.
        let reason = if message.contains("recursion") {
            Reason::TomlDepth
        } else {
            Reason::Toml
        };
        let detail = match e.span() {
            Some(span) => {
                let (line, col) = line_col(text, span.start);
                format!("line {}, column {col}: {message}", line + line_offset)
            }
            None => message,
        };
        Problem {
            path: path.to_string(),
            reason,
            detail,
        }
    })
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_is_byte_identical_for_canonical_input() {
        let text = "+++\n# keep me\nid = \"x\"\nkind = \"task\"\n[ext]\nfoo = 1 # note\n+++\n\n# Title\n\nbody\n";
        let doc = Document::parse("t.md", text.as_bytes()).expect("parses");
        assert_eq!(doc.render(), text);
        assert_eq!(doc.title(), Some("Title"));
    }

    #[test]
    fn envelope_errors_are_named() {
        let cases: [(&[u8], Reason); 6] = [
            (b"no fence\n", Reason::NoFrontmatter),
            (b"+++\na = 1\n", Reason::UnterminatedFrontmatter),
            (b"+++\na = \n+++\n", Reason::Toml),
            (b"+++\na = 1\x00\n+++\n", Reason::Encoding),
            (b"+++\na = \"\xff\"\n+++\n", Reason::Encoding),
            (
                b"+++\n<<<<<<< ours\na = 1\n=======\na = 2\n>>>>>>> theirs\n+++\n",
                Reason::MergeConflict,
            ),
        ];
        for (bytes, reason) in cases {
            let err = Document::parse("x.md", bytes).expect_err("must fail");
            assert_eq!(err.reason, reason, "{err}");
        }
    }

    #[test]
    fn toml_errors_give_file_lines() {
        let err = Document::parse("x.md", b"+++\na = 1\nb = \n+++\n").expect_err("bad toml");
        assert!(err.detail.starts_with("line 3,"), "{}", err.detail);
    }

    #[test]
    fn deep_nesting_is_toml_depth() {
        let deep = format!("+++\na = {}1{}\n+++\n", "[".repeat(5000), "]".repeat(5000));
        let err = Document::parse("x.md", deep.as_bytes()).expect_err("too deep");
        assert_eq!(err.reason, Reason::TomlDepth, "{err}");
    }

    #[test]
    fn headings_skip_fenced_code() {
        let body = "```\n# not a heading\n```\n# Real\n## Sub\n#nospace\n";
        let found: Vec<_> = headings(body).collect();
        assert_eq!(found, vec![(1, "Real"), (2, "Sub")]);
    }
}
