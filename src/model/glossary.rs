//! The glossary of a project (docs/FORMAT.md §17): a canonical file whose entries are the
//! lines `- **<term>** — <definition>` (an em dash, U+2014, with one space on each side)
//! outside fenced code. Terms are unique case-insensitively.

use toml_edit::DocumentMut;

use super::fields::{FieldError, Fields};

/// The separator between a term and its definition.
pub const DASH: &str = "\u{2014}";

/// The title dacli writes when it creates a glossary.
pub const TITLE: &str = "Glossary";

/// One entry, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub term: String,
    pub definition: String,
    /// Byte range of the entry's line in the body, newline excluded.
    line: std::ops::Range<usize>,
}

/// The frontmatter of a glossary.
///
/// Invariant: `project` is `p-<slug>` of the directory the file is in.
#[derive(Debug, Clone)]
pub struct GlossaryHead {
    pub project: String,
    pub owner: String,
    pub rev: String,
}

impl GlossaryHead {
    /// Parses the frontmatter of `projects/<slug>/glossary.md`.
    pub fn parse(front: &DocumentMut, slug: &str) -> Result<GlossaryHead, FieldError> {
        let f = Fields(front.as_table());
        f.expect_kind("glossary")?;
        let project = f.str("project")?;
        if project != format!("p-{slug}") {
            return Err(FieldError::id_mismatch(format!(
                "`project` \"{project}\" does not match the directory \"{slug}\" (expected \"p-{slug}\")"
            )));
        }
        f.time("created")?;
        f.str("created_by")?;
        Ok(GlossaryHead {
            project: project.to_string(),
            owner: f.str("owner")?.to_string(),
            rev: f.str("rev")?.to_string(),
        })
    }
}

/// The line of an entry.
pub fn entry_line(term: &str, definition: &str) -> String {
    format!("- **{term}** {DASH} {definition}")
}

/// Parses one line as an entry: `(term, definition)`.
fn parse_line(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("- **")?;
    let (term, definition) = rest.split_once(&format!("** {DASH} "))?;
    let term = term.trim();
    (!term.is_empty() && !term.contains("**")).then_some((term, definition.trim()))
}

/// Every entry of a glossary body, in file order; lines in fenced code are not entries.
pub fn entries(body: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    let mut at = 0;
    for raw in body.split_inclusive('\n') {
        let line = raw.trim_end_matches('\n');
        let start = at;
        at += raw.len();
        if let Some(open) = fence {
            if line.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if line.starts_with("```") || line.starts_with("~~~") {
            fence = Some(&line[..3]);
            continue;
        }
        if let Some((term, definition)) = parse_line(line.trim_end()) {
            out.push(Entry {
                term: term.to_string(),
                definition: definition.to_string(),
                line: start..start + line.len(),
            });
        }
    }
    out
}

/// What adding a term did to the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Added {
    /// A new entry, appended after the last entry (or at the end of the body).
    Appended(String),
    /// The existing entry's line was replaced (`--replace`).
    Replaced(String),
    /// The term already had exactly this definition; nothing to write.
    Unchanged,
}

/// The term is already defined (case-insensitively) and replacing was not asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    pub term: String,
    pub definition: String,
}

/// Adds `term` with `definition` to `body`. An existing term (compared case-insensitively)
/// is a [`Duplicate`] unless `replace`, which rewrites that one line and nothing else.
pub fn add(body: &str, term: &str, definition: &str, replace: bool) -> Result<Added, Duplicate> {
    let all = entries(body);
    let wanted = term.to_lowercase();
    if let Some(existing) = all.iter().find(|e| e.term.to_lowercase() == wanted) {
        if !replace {
            return Err(Duplicate {
                term: existing.term.clone(),
                definition: existing.definition.clone(),
            });
        }
        let line = entry_line(term, definition);
        if body[existing.line.clone()] == line {
            return Ok(Added::Unchanged);
        }
        let mut out = body.to_string();
        out.replace_range(existing.line.clone(), &line);
        return Ok(Added::Replaced(out));
    }
    let line = entry_line(term, definition);
    let out = match all.last() {
        Some(last) => {
            let mut out = body.to_string();
            out.insert_str(last.line.end, &format!("\n{line}"));
            out
        }
        None => {
            let mut out = body.trim_end_matches('\n').to_string();
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&line);
            out.push('\n');
            out
        }
    };
    Ok(Added::Appended(out))
}

/// The body of a new glossary holding one entry.
pub fn new_body(term: &str, definition: &str) -> String {
    format!("# {TITLE}\n\n{}\n", entry_line(term, definition))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = "# Glossary\n\nSome prose.\n\n- **minor unit** — the smallest unit.\n- **capture** — taking money.\n\n```\n- **in code** — not an entry\n```\n\nClosing prose.\n";

    #[test]
    fn entries_skip_prose_and_code() {
        let e = entries(BODY);
        let terms: Vec<_> = e.iter().map(|e| e.term.as_str()).collect();
        assert_eq!(terms, vec!["minor unit", "capture"]);
        assert_eq!(e[1].definition, "taking money.");
        assert!(entries("- **a** - hyphen, not an em dash\n").is_empty());
    }

    #[test]
    fn add_appends_after_the_last_entry() {
        let Ok(Added::Appended(b)) = add(BODY, "settlement", "the PSP file.", false) else {
            panic!("appended");
        };
        assert!(
            b.contains("- **capture** — taking money.\n- **settlement** — the PSP file.\n\n```")
        );
        assert!(b.ends_with("Closing prose.\n"));
        let Ok(Added::Appended(first)) = add("# Glossary\n", "a", "b", false) else {
            panic!("appended");
        };
        assert_eq!(first, "# Glossary\n\n- **a** — b\n");
    }

    #[test]
    fn duplicates_are_case_insensitive_and_replace_is_local() {
        let err = add(BODY, "Minor Unit", "x", false).expect_err("duplicate");
        assert_eq!(err.term, "minor unit");
        assert_eq!(err.definition, "the smallest unit.");
        let Ok(Added::Replaced(b)) = add(BODY, "minor unit", "cents.", true) else {
            panic!("replaced");
        };
        assert_eq!(b, BODY.replace("the smallest unit.", "cents."));
        assert_eq!(
            add(BODY, "capture", "taking money.", true),
            Ok(Added::Unchanged)
        );
    }
}
