//! Queues (docs/FORMAT.md §10): an ordered list of steps that agents work through, with a
//! cursor the owner advances. dacli never executes a step.

use serde::Serialize;
use toml_edit::DocumentMut;

use super::body::section_range;
use super::fields::{FieldError, Fields};

/// Why a queue stopped serving steps: a `dead` outcome at `step` (equal to `cursor`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Halted {
    pub step: u64,
    pub reason: String,
    pub event: String,
}

/// A parsed queue.
///
/// Invariants (checked by [`Queue::from_doc`]): `id` is `q-<stem>`; `cursor` is at most the
/// number of steps; when halted, `halted.step` equals `cursor`.
#[derive(Debug, Clone)]
pub struct Queue {
    pub id: String,
    pub slug: String,
    pub owner: String,
    pub cursor: u64,
    pub halted: Option<Halted>,
    pub title: String,
    /// The text of each step, in order (see [`steps`]).
    pub steps: Vec<String>,
}

impl Queue {
    /// Parses the queue file `<stem>.md` from its frontmatter and body.
    pub fn from_doc(front: &DocumentMut, body: &str, stem: &str) -> Result<Queue, FieldError> {
        let f = Fields(front.as_table());
        f.expect_kind("queue")?;
        let id = f.str("id")?;
        if id != format!("q-{stem}") {
            return Err(FieldError::id_mismatch(format!(
                "`id` \"{id}\" does not match the filename (expected \"q-{stem}\")"
            )));
        }
        let cursor = f
            .opt_int("cursor")?
            .ok_or_else(|| FieldError::schema("required field `cursor` is missing"))?;
        let cursor =
            u64::try_from(cursor).map_err(|_| FieldError::schema("`cursor` must be ≥ 0"))?;
        let steps = steps(body);
        if cursor > steps.len() as u64 {
            return Err(FieldError::schema(format!(
                "`cursor` is {cursor} but the queue has {} steps",
                steps.len()
            )));
        }
        let halted = match f.get("halted") {
            None => None,
            Some(item) => Some(halted(item)?),
        };
        if let Some(h) = &halted
            && h.step != cursor
        {
            return Err(FieldError::schema(format!(
                "`halted.step` is {} but `cursor` is {cursor}",
                h.step
            )));
        }
        Ok(Queue {
            id: id.to_string(),
            slug: stem.to_string(),
            owner: f.str("owner")?.to_string(),
            cursor,
            halted,
            title: title(body).unwrap_or(stem).to_string(),
            steps,
        })
    }

    /// True when every step is done.
    pub fn complete(&self) -> bool {
        self.cursor >= self.steps.len() as u64
    }

    /// The step at the cursor, 1-based number and text; `None` when complete.
    pub fn current(&self) -> Option<(u64, &str)> {
        self.steps
            .get(self.cursor as usize)
            .map(|s| (self.cursor + 1, s.as_str()))
    }
}

fn halted(item: &toml_edit::Item) -> Result<Halted, FieldError> {
    let bad = || FieldError::schema("`halted` must be {step, reason, event}");
    let t = item.as_table_like().ok_or_else(bad)?;
    let step = t.get("step").and_then(|v| v.as_integer()).ok_or_else(bad)?;
    Ok(Halted {
        step: u64::try_from(step).map_err(|_| bad())?,
        reason: t
            .get("reason")
            .and_then(|v| v.as_str())
            .ok_or_else(bad)?
            .to_string(),
        event: t
            .get("event")
            .and_then(|v| v.as_str())
            .ok_or_else(bad)?
            .to_string(),
    })
}

fn title(body: &str) -> Option<&str> {
    body.lines()
        .find_map(|l| l.strip_prefix("# "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// The steps of a queue body, in order. A step starts at each column-0 line `<digits>. ` in
/// `## Steps`; lines indented by three or more spaces (fenced blocks included) and blank lines
/// continue it, with three spaces of indentation removed; any other line ends it. A step's text
/// is its lines joined by `\n`, trailing blank lines dropped: `step_sha256` hashes exactly that.
pub fn steps(body: &str) -> Vec<String> {
    let Some(range) = section_range(body, "Steps") else {
        return Vec::new();
    };
    let mut out: Vec<Vec<&str>> = Vec::new();
    let mut open = false;
    let mut fence: Option<&str> = None;
    for line in body[range].lines() {
        // A fenced block at column 0 is not part of any step, and nothing in it starts one.
        if let Some(f) = fence {
            if line.starts_with(f) {
                fence = None;
            }
            continue;
        }
        if line.starts_with("```") || line.starts_with("~~~") {
            fence = Some(&line[..3]);
            open = false;
            continue;
        }
        if let Some(text) = step_start(line) {
            out.push(vec![text]);
            open = true;
        } else if open && (line.trim().is_empty() || line.starts_with("   ")) {
            if let Some(step) = out.last_mut() {
                step.push(line.strip_prefix("   ").unwrap_or(line.trim_start()));
            }
        } else {
            open = false;
        }
    }
    out.into_iter()
        .map(|lines| lines.join("\n").trim_end().to_string())
        .collect()
}

fn step_start(line: &str) -> Option<&str> {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0)
        .then(|| line[digits..].strip_prefix(". "))
        .flatten()
}

/// Renders step texts as the `## Steps` list `1.`…`n.`, continuation lines indented by three
/// spaces (blank ones left empty), so that [`steps`] reads back the same texts.
pub fn render_steps(steps: &[String]) -> String {
    let mut out = String::new();
    for (i, step) in steps.iter().enumerate() {
        for (j, line) in step.lines().enumerate() {
            if j == 0 {
                out.push_str(&format!("{}. {line}\n", i + 1));
            } else if line.trim().is_empty() {
                out.push('\n');
            } else {
                out.push_str(&format!("   {line}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = "# Release checks\n\n## Steps\n1. `./scripts/test.sh`\n2. Run lint:\n   ```sh\n   ./scripts/lint.sh\n   ```\n\n3. Tag the release commit and push the tag.\nnot a step\n   nor this\n\n## Notes\n4. elsewhere\n";

    #[test]
    fn steps_follow_the_format_rule() {
        assert_eq!(
            steps(BODY),
            vec![
                "`./scripts/test.sh`".to_string(),
                "Run lint:\n```sh\n./scripts/lint.sh\n```".to_string(),
                "Tag the release commit and push the tag.".to_string(),
            ]
        );
        assert!(steps("# Q\n").is_empty());
    }

    #[test]
    fn rendered_steps_read_back() {
        let texts = vec![
            "one".to_string(),
            "two\n\nmore of two".to_string(),
            "three".to_string(),
        ];
        let body = format!("# Q\n\n## Steps\n{}", render_steps(&texts));
        assert_eq!(steps(&body), texts);
    }

    #[test]
    fn a_queue_checks_its_cursor_and_halt() {
        let front = |extra: &str| -> DocumentMut {
            format!("id = \"q-r\"\nkind = \"queue\"\ncreated = 2026-03-02T09:30:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJZ8XQJ0YAG8BGHHV4YFA08F\"\n{extra}")
                .parse()
                .expect("toml")
        };
        let q = Queue::from_doc(&front("cursor = 1\n"), BODY, "r").expect("valid");
        assert_eq!(
            q.current(),
            Some((2, "Run lint:\n```sh\n./scripts/lint.sh\n```"))
        );
        assert_eq!(q.title, "Release checks");
        assert!(Queue::from_doc(&front("cursor = 4\n"), BODY, "r").is_err());
        assert!(Queue::from_doc(&front("cursor = 3\n"), BODY, "r").is_ok_and(|q| q.complete()));
        let halted = "cursor = 1\nhalted = { step = 0, reason = \"x\", event = \"01KJZ8XQJ0S3J5W8B1F6H9K2QM\" }\n";
        assert!(Queue::from_doc(&front(halted), BODY, "r").is_err());
        assert!(Queue::from_doc(&front("cursor = 0\n"), BODY, "s").is_err());
    }
}
