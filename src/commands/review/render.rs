//! The human text and Markdown forms of a review (docs/REVIEW.md).

use std::fmt::Write;

use crate::ops::review::{Change, NoteReview, Report, Segment, TermChange};

/// The marker a posted pull request comment starts with, so a later post updates it.
pub const MARKER: &str = "<!-- dacli-review -->";

/// How a word diff is shown.
#[derive(Clone, Copy)]
enum Style {
    Text,
    Markdown,
}

/// Equal runs longer than this are shortened around their middle.
const CONTEXT: usize = 40;

fn diff(segments: &[Segment], style: Style) -> String {
    let mut out = String::new();
    let n = segments.len();
    for (i, s) in segments.iter().enumerate() {
        let text = s.text.replace('\n', " ⏎ ");
        match s.op {
            "equal" => {
                let chars: Vec<char> = text.chars().collect();
                if chars.len() > 2 * CONTEXT {
                    let head: String = chars[..CONTEXT].iter().collect();
                    let tail: String = chars[chars.len() - CONTEXT..].iter().collect();
                    match (i, i + 1 == n) {
                        (0, _) => out.push_str(&format!("…{tail}")),
                        (_, true) => out.push_str(&format!("{head}…")),
                        _ => out.push_str(&format!("{head} … {tail}")),
                    }
                } else {
                    out.push_str(&text);
                }
            }
            "delete" => match style {
                Style::Text => out.push_str(&format!("[-{text}-]")),
                Style::Markdown => out.push_str(&format!("<del>{}</del>", html(&text))),
            },
            _ => match style {
                Style::Text => out.push_str(&format!("{{+{text}+}}")),
                Style::Markdown => out.push_str(&format!("<ins>{}</ins>", html(&text))),
            },
        }
    }
    out.trim().to_string()
}

fn colon(s: &str) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!(": {s}")
    }
}

fn html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn opt(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("(none)")
}

/// One change, as one line.
fn change(c: &Change, style: Style) -> String {
    match c {
        Change::Created { title, status } => match status {
            Some(s) => format!("created in {s}: {title}"),
            None => format!("created: {title}"),
        },
        Change::Removed { status } => match status {
            Some(s) => format!("removed (was {s})"),
            None => "removed".to_string(),
        },
        Change::Status { from, to } => format!("status {from} → {to}"),
        Change::Assignee { from, to } => format!("assignee {} → {}", opt(from), opt(to)),
        Change::Owner { from, to } => format!("owner {from} → {to}"),
        Change::CriterionChecked { n, text } => format!("criterion {n} checked: {text}"),
        Change::CriterionUnchecked { n, text } => format!("criterion {n} unchecked: {text}"),
        Change::CriterionAdded { n, text, checked } => {
            format!(
                "criterion {n} added{}: {text}",
                if *checked { " (checked)" } else { "" }
            )
        }
        Change::CriterionRemoved { n, text } => format!("criterion {n} removed: {text}"),
        Change::CriterionEdited { n, diff: d } => {
            format!("criterion {n} edited: {}", diff(d, style))
        }
        Change::Estimate { from, to } => format!("estimate {} → {}", opt(from), opt(to)),
        Change::Priority { from, to } => format!("priority {from} → {to}"),
        Change::Resolution { from, to } => format!("resolution {} → {}", opt(from), opt(to)),
        Change::Parent { from, to } => format!("parent {} → {}", opt(from), opt(to)),
        Change::Title { diff: d, .. } => format!("title: {}", diff(d, style)),
        Change::Body { diff: d } => format!("body: {}", diff(d, style)),
        Change::DependencyAdded { on, kind } => format!("depends on {on} ({kind}) added"),
        Change::DependencyRemoved { on, kind } => format!("depends on {on} ({kind}) removed"),
        Change::Field { field, from, to } => match from {
            None => format!("{field} {}", opt(to)),
            Some(_) => format!("{field} {} → {}", opt(from), opt(to)),
        },
        Change::Logged { lines } => format!("log: {}", lines.join("; ")),
    }
}

fn note(n: &NoteReview, style: Style) -> String {
    let mut line = format!("{} {} {}: {}", n.kind, n.id, n.change, n.title);
    if let Some(s) = &n.severity {
        line.push_str(&format!(" [{s}]"));
    }
    if let Some(c) = &n.chose {
        line.push_str(&format!("; chose: {c}"));
    }
    if let Some(r) = &n.rejected {
        line.push_str(&format!("; rejected: {r}"));
    }
    if let Some(d) = &n.diff {
        line.push_str(&format!("; {}", diff(d, style)));
    }
    line
}

fn term(t: &TermChange) -> String {
    match t.change {
        "added" => format!("glossary: \"{}\" added — {}", t.term, opt(&t.to)),
        "removed" => format!("glossary: \"{}\" removed", t.term),
        _ => format!(
            "glossary: \"{}\" changed — {} → {}",
            t.term,
            opt(&t.from),
            opt(&t.to)
        ),
    }
}

fn summary(r: &Report) -> String {
    let c = &r.counts;
    if c.files == 0 {
        return "no workspace changes".to_string();
    }
    let n = |count: usize, one: &str, many: &str| {
        format!("{count} {}", if count == 1 { one } else { many })
    };
    format!(
        "{}: {}, {}, {}, {} ({} pending), {}, {} unparseable, {} outside the format",
        n(c.files, "file", "files"),
        n(c.tasks, "task", "tasks"),
        n(c.notes, "note", "notes"),
        n(c.risks, "risk", "risks"),
        n(c.events, "event", "events"),
        c.pending,
        n(c.receipts, "receipt", "receipts"),
        c.unparseable,
        c.outside_format
    )
}

/// The human text.
pub fn text(title: &str, r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "review {title}");
    let _ = writeln!(out, "{}", summary(r));
    for p in &r.projects {
        let _ = writeln!(out);
        if p.project == "workspace" {
            let _ = writeln!(out, "workspace");
        } else {
            let _ = writeln!(out, "project {}", p.project);
        }
        for c in &p.changes {
            let _ = writeln!(out, "  {}", change(c, Style::Text));
        }
        for t in &p.tasks {
            let _ = writeln!(out, "  task {} — {}", t.reference, t.title);
            for c in &t.changes {
                let _ = writeln!(out, "    {}", change(c, Style::Text));
            }
        }
        for n in &p.notes {
            let _ = writeln!(out, "  {}", note(n, Style::Text));
        }
        for k in &p.risks {
            let _ = writeln!(out, "  risk {} — {}", k.id, k.title);
            for c in &k.changes {
                let _ = writeln!(out, "    {}", change(c, Style::Text));
            }
        }
        for t in &p.glossary {
            let _ = writeln!(out, "  {}", term(t));
        }
    }
    if !r.questions.is_empty() {
        let _ = writeln!(out, "\nquestions and answers");
        for q in &r.questions {
            let about = q.reference.as_deref().or(q.about.as_deref()).unwrap_or("-");
            match &q.question {
                Some(question) => {
                    let _ = writeln!(
                        out,
                        "  answer {} to {question} by {} ({}): {}",
                        q.id, q.by, q.state, q.text
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "  question {} about {about} by {} ({}): {}",
                        q.id, q.by, q.state, q.text
                    );
                }
            }
        }
    }
    if !r.events.is_empty() {
        let _ = writeln!(out, "\nevents");
        for g in &r.events {
            let about = g
                .reference
                .as_deref()
                .or(g.about.as_deref())
                .unwrap_or("(about nothing)");
            let _ = writeln!(out, "  {about}");
            for a in &g.agents {
                let _ = writeln!(out, "    {}", a.agent);
                for e in &a.events {
                    let _ = writeln!(
                        out,
                        "      {} {} ({}){}",
                        e.kind,
                        e.id,
                        e.state,
                        colon(&e.summary)
                    );
                }
            }
        }
    }
    if !r.unparseable.is_empty() {
        let _ = writeln!(out, "\nfiles that do not parse");
        for u in &r.unparseable {
            let _ = writeln!(out, "  {}: {}: {}", u.path, u.reason, u.detail);
        }
    }
    if !r.other.is_empty() {
        let _ = writeln!(out, "\nother workspace records");
        for o in &r.other {
            let _ = writeln!(out, "  {} {} {}", o.kind, o.change, o.path);
        }
    }
    if !r.outside_format.is_empty() {
        let _ = writeln!(out, "\nfiles outside the format");
        for o in &r.outside_format {
            let _ = writeln!(out, "  {} {}", o.change, o.path);
        }
    }
    out
}

/// Markdown for a pull request comment; starts with [`MARKER`].
pub fn markdown(title: &str, r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{MARKER}");
    let _ = writeln!(out, "## dacli review: {}", title.replace('|', "\\|"));
    let _ = writeln!(out);
    let _ = writeln!(out, "{}", summary(r));
    let code = |s: &str| format!("`{}`", s.replace('`', "'"));
    for p in &r.projects {
        let _ = writeln!(out);
        if p.project == "workspace" {
            let _ = writeln!(out, "### Workspace");
        } else {
            let _ = writeln!(out, "### Project {}", code(&p.project));
        }
        for c in &p.changes {
            let _ = writeln!(out, "- {}", change(c, Style::Markdown));
        }
        for t in &p.tasks {
            let _ = writeln!(out, "- **{}** {}", code(&t.reference), t.title);
            for c in &t.changes {
                let _ = writeln!(out, "  - {}", change(c, Style::Markdown));
            }
        }
        for n in &p.notes {
            let _ = writeln!(out, "- {}", note(n, Style::Markdown));
        }
        for k in &p.risks {
            let _ = writeln!(out, "- risk {} {}", code(&k.id), k.title);
            for c in &k.changes {
                let _ = writeln!(out, "  - {}", change(c, Style::Markdown));
            }
        }
        for t in &p.glossary {
            let _ = writeln!(out, "- {}", term(t));
        }
    }
    if !r.questions.is_empty() {
        let _ = writeln!(out, "\n### Questions and answers");
        for q in &r.questions {
            let _ = writeln!(
                out,
                "- {} {} about {} by {} ({}): {}",
                q.kind,
                code(&q.id),
                code(q.reference.as_deref().or(q.about.as_deref()).unwrap_or("-")),
                code(&q.by),
                q.state,
                q.text
            );
        }
    }
    if !r.events.is_empty() {
        let _ = writeln!(out, "\n### Events");
        for g in &r.events {
            let about = g
                .reference
                .as_deref()
                .or(g.about.as_deref())
                .unwrap_or("(about nothing)");
            let _ = writeln!(out, "- {}", code(about));
            for a in &g.agents {
                let kinds: Vec<String> = a
                    .events
                    .iter()
                    .map(|e| format!("{} ({})", e.kind, e.state))
                    .collect();
                let _ = writeln!(out, "  - {}: {}", code(&a.agent), kinds.join(", "));
            }
        }
    }
    if !r.unparseable.is_empty() {
        let _ = writeln!(out, "\n### Files that do not parse");
        for u in &r.unparseable {
            let _ = writeln!(out, "- {}: {}: {}", code(&u.path), u.reason, u.detail);
        }
    }
    if !r.other.is_empty() {
        let _ = writeln!(out, "\n### Other workspace records");
        for o in &r.other {
            let _ = writeln!(out, "- {} {} {}", o.kind, o.change, code(&o.path));
        }
    }
    if !r.outside_format.is_empty() {
        let _ = writeln!(out, "\n### Files outside the format");
        for o in &r.outside_format {
            let _ = writeln!(out, "- {} {}", o.change, code(&o.path));
        }
    }
    out
}

/// One change as the text form shows it (for `log`).
pub fn change_line(c: &Change) -> String {
    change(c, Style::Text)
}
