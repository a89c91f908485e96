//! Lint rules for one document at a time (COMMANDS.md §9 `lint`; docs/FORMAT.md). Each
//! function takes a parsed document and returns its findings; the command walks the workspace,
//! adds the rules that need several files (duplicates, references, receipts) and applies fixes.
//!
//! The task rules live in `model::lint` (the definition of done needs them below this layer)
//! and are re-exported here so that every rule is reachable from one place.

use std::collections::BTreeSet;

use toml_edit::{DocumentMut, Item};

use crate::model::body::{section_lines_outside_code, section_text};
use crate::model::id::{ROOT_AGENT, parse_ulid};
use crate::model::note::check_structure;
use crate::model::runtime::Runtime;
use crate::model::taskdoc::title_of;

pub use crate::model::lint::{
    Finding, Severity, TASK_SECTIONS, duplicate_sections, is_slug, is_task_id, task_errors,
    task_findings,
};

use super::runtime::{EnvEntry, dangerous_token, env_entry, extract_version};
use super::scope::check_glob;

/// The structural sections of a project body.
pub const PROJECT_SECTIONS: [&str; 5] = [
    "Vision",
    "Goal",
    "Constraints",
    "Out of scope",
    "Success criteria",
];

/// `project.md`: `empty_goal` and `duplicate_section`.
pub fn project_findings(body: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    if section_text(body, "Goal").is_none_or(str::is_empty) {
        out.push(Finding::warning(
            "empty_goal",
            "`## Goal` is missing or empty; every brief in the project starts from it",
        ));
    }
    out.extend(duplicate_sections(body, &PROJECT_SECTIONS));
    out
}

/// A note of kind `kind`: `decision_incomplete` and `metric_incomplete` (errors),
/// `severity_ignored` and `duplicate_section`.
pub fn note_findings(kind: &str, front: &DocumentMut, body: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let (code, sections): (&'static str, &[&str]) = match kind {
        "decision" => ("decision_incomplete", &["Chose", "Rejected", "Because"]),
        "metric" => ("metric_incomplete", &["Goal", "Question", "Metric"]),
        _ => ("", &[]),
    };
    if !code.is_empty() {
        if let Err(why) = check_structure(kind, body) {
            out.push(Finding::error(
                code,
                format!(
                    "a {kind} needs non-empty {} in that order: {why}",
                    sections
                        .iter()
                        .map(|s| format!("`## {s}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        out.extend(duplicate_sections(body, sections));
    }
    if kind != "finding" && front.contains_key("severity") {
        out.push(Finding::warning(
            "severity_ignored",
            format!("`severity` is set on a {kind}; only findings have one, so it is ignored"),
        ));
    }
    out
}

/// The rank of a risk: 1 for high impact with high likelihood, 3 when either is low, else 2.
pub fn risk_rank(impact: &str, likelihood: &str) -> u8 {
    match (impact, likelihood) {
        ("high", "high") => 1,
        ("low", _) | (_, "low") => 3,
        _ => 2,
    }
}

const LEVELS: [&str; 3] = ["high", "medium", "low"];

/// A risk file `<stem>.md`: schema, `derived_field_stored` (a stored `rank`),
/// `risk_without_action` (ranks 1 and 2 without non-empty `## Indicators` and `## Action`) and
/// `duplicate_section`.
pub fn risk_findings(front: &DocumentMut, body: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let t = front.as_table();
    expect_kind(&mut out, t.get("kind"), "risk");
    let id = t.get("id").and_then(Item::as_str).unwrap_or("");
    if id.strip_prefix("r-").and_then(parse_ulid).is_none() {
        out.push(Finding::error(
            "schema",
            format!("`id` \"{id}\" is not `r-<ULID>`"),
        ));
    }
    required_strings(&mut out, front, &["created_by", "owner", "rev"]);
    let impact = enum_value(&mut out, t.get("impact"), "impact", &LEVELS);
    let likelihood = enum_value(&mut out, t.get("likelihood"), "likelihood", &LEVELS);
    enum_value(&mut out, t.get("status"), "status", &["open", "closed"]);
    if title_of(body).is_none() {
        out.push(Finding::error(
            "schema",
            "the body has no level-1 heading (title)",
        ));
    }
    if t.contains_key("rank") {
        out.push(Finding::warning(
            "derived_field_stored",
            "`rank` is computed from impact and likelihood, never stored; the key is ignored",
        ));
    }
    if let (Some(i), Some(l)) = (impact, likelihood) {
        let rank = risk_rank(i, l);
        let missing: Vec<&str> = ["Indicators", "Action"]
            .into_iter()
            .filter(|s| section_text(body, s).is_none_or(str::is_empty))
            .collect();
        if rank <= 2 && !missing.is_empty() {
            out.push(Finding::error(
                "risk_without_action",
                format!(
                    "a rank-{rank} risk needs non-empty {}",
                    missing
                        .iter()
                        .map(|s| format!("`## {s}`"))
                        .collect::<Vec<_>>()
                        .join(" and ")
                ),
            ));
        }
    }
    out.extend(duplicate_sections(body, &["Indicators", "Action"]));
    out
}

/// The entries of a glossary body: lines outside code shaped `- **<term>** — <definition>`.
pub fn glossary_terms(body: &str) -> Vec<(String, String)> {
    crate::model::body::lines_outside_fences(body)
        .into_iter()
        .filter_map(|line| {
            let rest = line.strip_prefix("- **")?;
            let (term, def) = rest.split_once("** \u{2014} ")?;
            (!term.is_empty()).then(|| (term.to_string(), def.to_string()))
        })
        .collect()
}

/// A glossary of the project directory `slug`: schema and `duplicate_term` (terms are unique
/// case-insensitively).
pub fn glossary_findings(front: &DocumentMut, body: &str, slug: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let t = front.as_table();
    expect_kind(&mut out, t.get("kind"), "glossary");
    match t.get("project").and_then(Item::as_str) {
        Some(p) if p == format!("p-{slug}") => {}
        Some(p) => out.push(Finding::error(
            "id_mismatch",
            format!("`project` \"{p}\" does not match the directory (expected \"p-{slug}\")"),
        )),
        None => out.push(Finding::error(
            "schema",
            "required field `project` is missing",
        )),
    }
    required_strings(&mut out, front, &["created_by", "owner", "rev"]);
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut reported: BTreeSet<String> = BTreeSet::new();
    for (term, _) in glossary_terms(body) {
        let key = term.to_lowercase();
        if !seen.insert(key.clone()) && reported.insert(key) {
            out.push(Finding::warning(
                "duplicate_term",
                format!("\"{term}\" is defined more than once (terms are unique ignoring case)"),
            ));
        }
    }
    out
}

/// The numbers of the steps of a queue body: each column-0 line `<digits>. ` in `## Steps`.
pub fn queue_step_numbers(body: &str) -> Vec<u64> {
    section_lines_outside_code(body, "Steps")
        .into_iter()
        .filter_map(|line| {
            let digits = line.bytes().take_while(u8::is_ascii_digit).count();
            let rest = &line[digits..];
            (digits > 0 && rest.starts_with(". "))
                .then(|| line[..digits].parse().ok())
                .flatten()
        })
        .collect()
}

/// A queue file `<stem>.md`: schema, `queue_step_numbers` (numbers not 1..n) and
/// `duplicate_section`.
pub fn queue_findings(front: &DocumentMut, body: &str, stem: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let t = front.as_table();
    expect_kind(&mut out, t.get("kind"), "queue");
    match t.get("id").and_then(Item::as_str) {
        Some(id) if id == format!("q-{stem}") => {}
        Some(id) => out.push(Finding::error(
            "id_mismatch",
            format!("`id` \"{id}\" does not match the filename (expected \"q-{stem}\")"),
        )),
        None => out.push(Finding::error("schema", "required field `id` is missing")),
    }
    required_strings(&mut out, front, &["created_by", "owner", "rev"]);
    if t.get("cursor")
        .and_then(Item::as_integer)
        .is_none_or(|c| c < 0)
    {
        out.push(Finding::error("schema", "`cursor` must be an integer ≥ 0"));
    }
    if title_of(body).is_none() {
        out.push(Finding::error(
            "schema",
            "the body has no level-1 heading (title)",
        ));
    }
    let numbers = queue_step_numbers(body);
    let expected: Vec<u64> = (1..=numbers.len() as u64).collect();
    if numbers != expected {
        out.push(Finding::warning(
            "queue_step_numbers",
            format!(
                "steps are numbered {}; they are positional, so number them 1..{}",
                numbers
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                numbers.len()
            ),
        ));
    }
    out.extend(duplicate_sections(body, &["Steps"]));
    out
}

/// A role: every glob must compile (schema) and every `escalate_to` entry must name an
/// existing role or `human` (`unknown_role`).
pub fn role_findings(
    scope: &[String],
    out_of_scope: &[String],
    escalate_to: &[String],
    roles: &BTreeSet<String>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for (key, globs) in [("scope", scope), ("out_of_scope", out_of_scope)] {
        for g in globs {
            if let Err(why) = check_glob(g) {
                out.push(Finding::error("schema", format!("`{key}`: {why}")));
            }
        }
    }
    for r in escalate_to {
        if r != "human" && !roles.contains(r) {
            out.push(Finding::warning(
                "unknown_role",
                format!("`escalate_to` names \"{r}\", which is neither a role nor \"human\""),
            ));
        }
    }
    out
}

/// An agent whose `role` names no role (root's `root` excepted): `unknown_role`.
pub fn agent_role_findings(id: &str, role: Option<&str>, roles: &BTreeSet<String>) -> Vec<Finding> {
    match role {
        Some(r) if !(roles.contains(r) || id == ROOT_AGENT && r == "root") => {
            vec![Finding::warning(
                "unknown_role",
                format!("`role` is \"{r}\", which names no role in roles/"),
            )]
        }
        _ => Vec::new(),
    }
}

/// A shortcut file `<stem>.md`: schema (kind, name, summary, command, a valid `effect`),
/// `unknown_role` for `roles` entries, and `derived_field_stored` for a stored `uses`.
pub fn shortcut_findings(
    front: &DocumentMut,
    stem: &str,
    roles: &BTreeSet<String>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let t = front.as_table();
    expect_kind(&mut out, t.get("kind"), "shortcut");
    match t.get("name").and_then(Item::as_str) {
        Some(n) if n == stem => {}
        Some(n) => out.push(Finding::error(
            "id_mismatch",
            format!("`name` \"{n}\" does not match the filename \"{stem}.md\""),
        )),
        None => out.push(Finding::error("schema", "required field `name` is missing")),
    }
    required_strings(&mut out, front, &["summary", "command", "owner", "rev"]);
    enum_value(
        &mut out,
        t.get("effect"),
        "effect",
        &["read", "write", "destructive"],
    );
    for r in t
        .get("roles")
        .and_then(Item::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str())
    {
        if !roles.contains(r) {
            out.push(Finding::warning(
                "unknown_role",
                format!("`roles` names \"{r}\", which names no role in roles/"),
            ));
        }
    }
    if t.contains_key("uses") {
        out.push(Finding::warning(
            "derived_field_stored",
            "`uses` is derived from run events and never stored; the key is ignored",
        ));
    }
    out
}

/// An event file: `event_no_checksum` when the `checksum` key is missing.
pub fn event_findings(front: &DocumentMut) -> Vec<Finding> {
    if front.contains_key("checksum") {
        Vec::new()
    } else {
        vec![Finding::warning(
            "event_no_checksum",
            "the event has no `checksum`; it is accepted, but tampering would go unnoticed",
        )]
    }
}

/// A consent record: `consent_foreign` when its author is not root (such records are
/// ignored).
pub fn consent_findings(front: &DocumentMut) -> Vec<Finding> {
    match front.get("created_by").and_then(Item::as_str) {
        Some(ROOT_AGENT) => Vec::new(),
        other => vec![Finding::warning(
            "consent_foreign",
            format!(
                "consent recorded by {} is ignored: only a-root records consent",
                other.unwrap_or("nobody")
            ),
        )],
    }
}

/// A plain TOML record under `evidence/`, `txn/`, `trains/` or `github/consent/`: its `kind`
/// must match the location and it needs an `id`.
pub fn record_findings(front: &DocumentMut, kind: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    expect_kind(&mut out, front.get("kind"), kind);
    required_strings(&mut out, front, &["id", "created_by"]);
    out
}

/// A runtime adapter (FORMAT §25), once parsed: `secret_in_env` (error) for an
/// `env_passthrough` entry that looks like a secret value, `schema` for one that is not a
/// variable name or an invalid `detect.pattern`, and `dangerous_flag` (warning) for an
/// `invoke` fragment holding a dangerous-permission flag. Messages never repeat a value.
pub fn runtime_findings(rt: &Runtime) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, e) in rt.env_passthrough.iter().enumerate() {
        match env_entry(e) {
            EnvEntry::Name => {}
            EnvEntry::Secret(what) => out.push(Finding::error(
                "secret_in_env",
                format!(
                    "`env_passthrough` entry {} looks like {what}: store the variable's NAME, remove the value from git history and rotate it",
                    i + 1
                ),
            )),
            EnvEntry::NotAName => out.push(Finding::error(
                "schema",
                format!(
                    "`env_passthrough` entry {} is not a variable name ([A-Za-z_][A-Za-z0-9_]*)",
                    i + 1
                ),
            )),
        }
    }
    if let Err(e) = extract_version(&rt.detect.pattern, "") {
        out.push(Finding::error(
            "schema",
            format!("`detect.pattern` is not a valid regular expression: {e}"),
        ));
    }
    for (key, fragment) in &rt.invoke {
        if let Some(flag) = dangerous_token(fragment, &rt.dangerous) {
            out.push(Finding::warning(
                "dangerous_flag",
                format!(
                    "`invoke.{key}` holds the dangerous-permission flag `{flag}`; dacli never passes it, so `runtime doctor` reports the capability absent"
                ),
            ));
        }
    }
    out
}

/// A role whose `runtime` names no adapter in runtimes/: `unknown_runtime`.
pub fn role_runtime_findings(runtime: Option<&str>, runtimes: &BTreeSet<String>) -> Vec<Finding> {
    match runtime {
        Some(r) if !runtimes.contains(r) => vec![Finding::warning(
            "unknown_runtime",
            format!("`runtime` is \"{r}\", which names no adapter in runtimes/"),
        )],
        _ => Vec::new(),
    }
}

/// One receipt as the disagreement check sees it.
#[derive(Debug, Clone)]
pub struct Receipt<'a> {
    pub id: &'a str,
    pub applied: &'a [String],
    pub rejected: &'a [(String, String)],
}

/// For each receipt (by index) whose verdict on some event disagrees with an earlier receipt
/// (receipts in ULID order), or that lists one event both as applied and as rejected: the
/// events concerned and the earlier receipt. The earliest receipt is the one that counts.
pub fn receipt_disagreements(receipts: &[Receipt<'_>]) -> Vec<(usize, String)> {
    use std::collections::BTreeMap;
    let mut first: BTreeMap<&str, (&str, String)> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, r) in receipts.iter().enumerate() {
        let verdicts = r
            .applied
            .iter()
            .map(|id| (id.as_str(), "applied".to_string()))
            .chain(
                r.rejected
                    .iter()
                    .map(|(id, why)| (id.as_str(), format!("rejected ({why})"))),
            );
        let mut own: BTreeMap<&str, String> = BTreeMap::new();
        for (event, verdict) in verdicts {
            if let Some(previous) = own.get(event)
                && *previous != verdict
            {
                out.push((
                    i,
                    format!("lists event {event} both as {previous} and as {verdict}"),
                ));
                continue;
            }
            own.insert(event, verdict.clone());
            match first.get(event) {
                Some((receipt, earlier)) if *earlier != verdict => out.push((
                    i,
                    format!(
                        "says event {event} was {verdict}, but the earlier receipt {receipt} says {earlier}; the earlier one counts"
                    ),
                )),
                Some(_) => {}
                None => {
                    first.insert(event, (r.id, verdict));
                }
            }
        }
    }
    out
}

fn expect_kind(out: &mut Vec<Finding>, item: Option<&Item>, expected: &str) {
    match item.and_then(Item::as_str) {
        Some(k) if k == expected => {}
        Some(k) => out.push(Finding::error(
            "wrong_kind",
            format!("`kind` is \"{k}\" but this location holds \"{expected}\""),
        )),
        None => out.push(Finding::error("schema", "required field `kind` is missing")),
    }
}

fn required_strings(out: &mut Vec<Finding>, front: &DocumentMut, keys: &[&str]) {
    for key in keys {
        if front.get(key).and_then(Item::as_str).is_none() {
            out.push(Finding::error(
                "schema",
                format!("required field `{key}` is missing or not a string"),
            ));
        }
    }
}

fn enum_value<'a>(
    out: &mut Vec<Finding>,
    item: Option<&'a Item>,
    key: &str,
    allowed: &[&str],
) -> Option<&'a str> {
    match item.and_then(Item::as_str) {
        Some(v) if allowed.contains(&v) => Some(v),
        _ => {
            out.push(Finding::error(
                "schema",
                format!("`{key}` must be one of {}", allowed.join(", ")),
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn front(s: &str) -> DocumentMut {
        s.parse().expect("toml")
    }

    fn codes(f: &[Finding]) -> Vec<&'static str> {
        f.iter().map(|f| f.code).collect()
    }

    #[test]
    fn notes_need_their_sections() {
        let f = front("severity = \"major\"\n");
        let decision = "# D\n\n## Chose\nA.\n\n## Because\nB.\n";
        assert_eq!(
            codes(&note_findings("decision", &f, decision)),
            vec!["decision_incomplete", "severity_ignored"]
        );
        let metric = "# M\n\n## Question\nQ\n\n## Goal\nG\n\n## Metric\nM\n";
        assert_eq!(
            codes(&note_findings("metric", &front(""), metric)),
            vec!["metric_incomplete"]
        );
        assert!(note_findings("finding", &f, "# F\n").is_empty());
    }

    #[test]
    fn risks_of_rank_one_and_two_need_an_action() {
        let base = "id = \"r-01KJQR0BBR62N6NBRD4PYF261D\"\nkind = \"risk\"\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJQR0BBR62N6NBRD4PYF261D\"\nstatus = \"open\"\n";
        let body = "# R\n\n## Indicators\n- x\n";
        let high = front(&format!(
            "{base}impact = \"high\"\nlikelihood = \"medium\"\n"
        ));
        assert_eq!(
            codes(&risk_findings(&high, body)),
            vec!["risk_without_action"]
        );
        let low = front(&format!(
            "{base}impact = \"low\"\nlikelihood = \"high\"\nrank = 3\n"
        ));
        assert_eq!(
            codes(&risk_findings(&low, body)),
            vec!["derived_field_stored"]
        );
        assert_eq!(
            (risk_rank("high", "high"), risk_rank("medium", "high")),
            (1, 2)
        );
    }

    #[test]
    fn glossary_terms_are_unique_ignoring_case() {
        let f = front(
            "kind = \"glossary\"\nproject = \"p-x\"\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJQR0BBR62N6NBRD4PYF261D\"\n",
        );
        let body = "# Glossary\n\n- **Cent** \u{2014} one.\n- **cent** \u{2014} two.\n```\n- **x** \u{2014} in code\n- **x** \u{2014} in code\n```\n";
        assert_eq!(
            codes(&glossary_findings(&f, body, "x")),
            vec!["duplicate_term"]
        );
        assert_eq!(glossary_terms(body).len(), 2);
    }

    #[test]
    fn queue_steps_are_numbered_one_to_n() {
        assert_eq!(
            queue_step_numbers("# Q\n\n## Steps\n1. a\n   more\n2. b\n3. c\n"),
            vec![1, 2, 3]
        );
        let f = front(
            "id = \"q-r\"\nkind = \"queue\"\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJQR0BBR62N6NBRD4PYF261D\"\ncursor = 0\n",
        );
        assert_eq!(
            codes(&queue_findings(&f, "# Q\n\n## Steps\n1. a\n3. b\n", "r")),
            vec!["queue_step_numbers"]
        );
    }

    #[test]
    fn receipts_that_disagree_are_named() {
        let (a, b) = (
            vec!["E1".to_string()],
            vec![("E1".to_string(), "claimed".to_string())],
        );
        let none: Vec<(String, String)> = Vec::new();
        let receipts = [
            Receipt {
                id: "R1",
                applied: &a,
                rejected: &none,
            },
            Receipt {
                id: "R2",
                applied: &[],
                rejected: &b,
            },
            Receipt {
                id: "R3",
                applied: &a,
                rejected: &none,
            },
        ];
        let found = receipt_disagreements(&receipts);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, 1);
        assert!(found[0].1.contains("R1"), "{}", found[0].1);
    }

    #[test]
    fn roles_and_consent() {
        let roles: BTreeSet<String> = ["builder".to_string()].into();
        let found = role_findings(
            &["src/[a".into()],
            &[],
            &["architect".into(), "human".into()],
            &roles,
        );
        assert_eq!(codes(&found), vec!["schema", "unknown_role"]);
        assert_eq!(
            codes(&consent_findings(&front("created_by = \"a-x\"\n"))),
            vec!["consent_foreign"]
        );
        assert!(agent_role_findings("a-root", Some("root"), &roles).is_empty());
    }
}
