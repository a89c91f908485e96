//! Risks (docs/FORMAT.md §16): the parsed head of a risk file, its computed rank and the
//! body sections dacli writes. The rank is derived from impact and likelihood and never stored.

use toml_edit::DocumentMut;

use super::body::{section_items, section_range, section_text};
use super::fields::{FieldError, Fields};
use super::id::parse_ulid;
use super::taskdoc::{strip_wikilink, title_of};

/// Impact and likelihood levels, most severe first.
pub const LEVELS: [&str; 3] = ["high", "medium", "low"];

/// Risk status values.
pub const RISK_STATUSES: [&str; 2] = ["open", "closed"];

/// The structural sections of a risk body, in the order dacli writes them.
pub const INDICATORS: &str = "Indicators";
pub const ACTION: &str = "Action";

/// The rank of a risk (FORMAT §16): high impact with high likelihood is 1, any `low` is 3,
/// everything else 2. Unknown levels are treated as `medium`, so a hand-edited value never
/// lowers a risk below what its other level says.
pub fn rank(impact: &str, likelihood: &str) -> u8 {
    match (impact, likelihood) {
        ("high", "high") => 1,
        ("low", _) | (_, "low") => 3,
        _ => 2,
    }
}

/// Whether a risk of this rank must carry non-empty `## Indicators` and `## Action`.
pub fn needs_action(rank: u8) -> bool {
    rank <= 2
}

/// The parts of a risk that listings and edits need.
///
/// Invariant: `id` is `r-<ULID>`, `impact` and `likelihood` are in [`LEVELS`], `status` is in
/// [`RISK_STATUSES`] (checked by [`RiskHead::parse`]).
#[derive(Debug, Clone)]
pub struct RiskHead {
    pub id: String,
    pub title: String,
    pub created: jiff::Timestamp,
    pub created_by: String,
    pub owner: String,
    pub rev: String,
    pub impact: String,
    pub likelihood: String,
    pub status: String,
    pub about: Option<String>,
    pub tags: Vec<String>,
    /// The trimmed text of `## Indicators`; `None` when the section is absent.
    pub indicators: Option<String>,
    /// The trimmed text of `## Action`; `None` when the section is absent.
    pub action: Option<String>,
}

impl RiskHead {
    /// Parses a risk file's frontmatter and body.
    pub fn parse(front: &DocumentMut, body: &str) -> Result<RiskHead, FieldError> {
        let f = Fields(front.as_table());
        f.expect_kind("risk")?;
        let id = f.str("id")?;
        if id.strip_prefix("r-").and_then(parse_ulid).is_none() {
            return Err(FieldError::schema(format!(
                "`id` \"{id}\" is not `r-<ULID>`"
            )));
        }
        let title = title_of(body)
            .ok_or_else(|| FieldError::schema("the body has no level-1 heading (title)"))?;
        Ok(RiskHead {
            id: id.to_string(),
            title: title.to_string(),
            created: f.time("created")?,
            created_by: f.str("created_by")?.to_string(),
            owner: f.str("owner")?.to_string(),
            rev: f.str("rev")?.to_string(),
            impact: f.enum_str("impact", &LEVELS)?.to_string(),
            likelihood: f.enum_str("likelihood", &LEVELS)?.to_string(),
            status: f.enum_str("status", &RISK_STATUSES)?.to_string(),
            about: f.opt_str("about")?.map(|s| strip_wikilink(s).to_string()),
            tags: f.str_list("tags")?.into_iter().map(String::from).collect(),
            indicators: section_text(body, INDICATORS).map(str::to_string),
            action: section_text(body, ACTION).map(str::to_string),
        })
    }

    /// The computed rank.
    pub fn rank(&self) -> u8 {
        rank(&self.impact, &self.likelihood)
    }

    /// `## Indicators` is present and not empty.
    pub fn has_indicators(&self) -> bool {
        self.indicators.as_deref().is_some_and(|t| !t.is_empty())
    }

    /// `## Action` is present and not empty.
    pub fn has_action(&self) -> bool {
        self.action.as_deref().is_some_and(|t| !t.is_empty())
    }
}

/// The indicator bullets of a risk body.
pub fn indicator_items(body: &str) -> Vec<String> {
    section_items(body, INDICATORS)
}

/// The text of the `## Indicators` section for a list of one-line indicators.
pub fn indicators_text(indicators: &[String]) -> String {
    indicators
        .iter()
        .map(|i| format!("- {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The body of a new risk: the title, then `## Indicators` and `## Action` when given.
pub fn new_body(title: &str, indicators: &[String], action: Option<&str>) -> String {
    let mut out = format!("# {title}\n");
    if !indicators.is_empty() {
        out.push_str(&format!(
            "\n## {INDICATORS}\n{}\n",
            indicators_text(indicators)
        ));
    }
    if let Some(a) = action {
        out.push_str(&format!("\n## {ACTION}\n{}\n", a.trim_end()));
    }
    out
}

/// Replaces the content of section `name` with `content`, leaving every other byte of the body
/// alone. A missing section is inserted before the section `before` when that exists, else at
/// the end of the body.
pub fn set_section(body: &str, name: &str, content: &str, before: Option<&str>) -> String {
    let content = content.trim_end_matches('\n');
    if let Some(range) = section_range(body, name) {
        let rest = &body[range.end..];
        let mut out = String::with_capacity(body.len() + content.len());
        out.push_str(&body[..range.start]);
        out.push_str(content);
        out.push('\n');
        if !rest.is_empty() {
            out.push('\n');
        }
        out.push_str(rest);
        return out;
    }
    let block = format!("## {name}\n{content}\n");
    match before.and_then(|b| heading_start(body, b)) {
        Some(at) => format!("{}{block}\n{}", &body[..at], &body[at..]),
        None => {
            let mut out = body.trim_end_matches('\n').to_string();
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&block);
            out
        }
    }
}

/// The byte offset of the heading line of section `name`.
fn heading_start(body: &str, name: &str) -> Option<usize> {
    let content = section_range(body, name)?.start;
    let heading = format!("## {name}");
    body[..content].rfind(&heading)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_follows_the_format_table() {
        assert_eq!(rank("high", "high"), 1);
        assert_eq!(rank("high", "medium"), 2);
        assert_eq!(rank("medium", "high"), 2);
        assert_eq!(rank("medium", "medium"), 2);
        assert_eq!(rank("high", "low"), 3);
        assert_eq!(rank("low", "high"), 3);
        assert!(needs_action(1) && needs_action(2) && !needs_action(3));
    }

    #[test]
    fn new_body_writes_indicators_then_action() {
        let b = new_body("T", &["one".into(), "two".into()], Some("Do it."));
        assert_eq!(
            b,
            "# T\n\n## Indicators\n- one\n- two\n\n## Action\nDo it.\n"
        );
        assert_eq!(indicator_items(&b), vec!["one", "two"]);
        assert_eq!(new_body("T", &[], None), "# T\n");
    }

    #[test]
    fn set_section_is_local() {
        let b = "# T\n\n## Indicators\n- one\n\n## Action\nOld.\n\nfree text\n";
        let after = set_section(b, ACTION, "New.", None);
        assert_eq!(after, "# T\n\n## Indicators\n- one\n\n## Action\nNew.\n");
        let after = set_section(b, INDICATORS, "- two", Some(ACTION));
        assert_eq!(
            after,
            "# T\n\n## Indicators\n- two\n\n## Action\nOld.\n\nfree text\n"
        );
        let inserted = set_section("# T\n\n## Action\nA.\n", INDICATORS, "- x", Some(ACTION));
        assert_eq!(inserted, "# T\n\n## Indicators\n- x\n\n## Action\nA.\n");
        let appended = set_section("# T\n", ACTION, "A.", None);
        assert_eq!(appended, "# T\n\n## Action\nA.\n");
    }
}
