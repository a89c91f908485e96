//! Lint findings, and the rules for one task file (docs/FORMAT.md §12).
//!
//! The task rules live here rather than with the other lint rules in `policy::lint` because the
//! definition of done (§13.3 condition 3) needs them while the journal layer gathers its facts,
//! and the journal may name only the layers below it. Everything here is pure.

use serde::Serialize;
use toml_edit::{Item, Value};

use super::body::section_heading_count;
use super::id::{is_agent_id, parse_ulid};
use super::task::{DEP_TYPES, PRIORITIES, RESOLUTIONS, Status};
use super::taskdoc::{TaskDoc, strip_wikilink, title_of};

/// How bad a finding is. Errors fail `lint --check` and the definition of done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One problem with one document: a stable code (COMMANDS.md §9 `lint`), its severity and a
/// message naming the key, section or value concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
}

impl Finding {
    /// An error-level finding.
    pub fn error(code: &'static str, message: impl Into<String>) -> Finding {
        Finding {
            code,
            severity: Severity::Error,
            message: message.into(),
        }
    }

    /// A warning-level finding.
    pub fn warning(code: &'static str, message: impl Into<String>) -> Finding {
        Finding {
            code,
            severity: Severity::Warning,
            message: message.into(),
        }
    }
}

/// The structural sections of a task body.
pub const TASK_SECTIONS: [&str; 5] = ["So that", "Context", "Acceptance", "Out of scope", "Log"];

/// Every finding for one task file in the folder `doc.status`: schema errors the listing does
/// not already reject (folder invariants, reference shapes, repo paths, tags), and the warnings
/// `no_acceptance`, `duplicate_section` and `derived_field_stored`.
pub fn task_findings(doc: &TaskDoc) -> Vec<Finding> {
    let mut out = Vec::new();
    let front = doc.front.as_table();
    let schema =
        |out: &mut Vec<Finding>, message: String| out.push(Finding::error("schema", message));
    match front.get("kind").and_then(Item::as_str) {
        Some("task") => {}
        Some(other) => out.push(Finding::error(
            "wrong_kind",
            format!("`kind` is \"{other}\" but this location holds \"task\""),
        )),
        None => schema(&mut out, "required field `kind` is missing".into()),
    }
    let id = front.get("id").and_then(Item::as_str).unwrap_or("");
    if !is_task_id(id) {
        schema(&mut out, format!("`id` \"{id}\" is not `t-<ULID>`"));
    }
    if !is_datetime(front.get("created")) {
        schema(&mut out, "`created` must be an offset date-time".into());
    }
    for key in ["created_by", "owner"] {
        match front.get(key).and_then(Item::as_str) {
            Some(a) if is_agent_id(a) => {}
            Some(a) => schema(&mut out, format!("`{key}` \"{a}\" is not an agent id")),
            None => schema(&mut out, format!("required field `{key}` is missing")),
        }
    }
    match front.get("rev").and_then(Item::as_str) {
        Some(r) if parse_ulid(r).is_some() => {}
        _ => schema(&mut out, "`rev` must be a ULID".into()),
    }
    check_enum(&mut out, front.get("priority"), "priority", &PRIORITIES);
    check_enum(
        &mut out,
        front.get("resolution"),
        "resolution",
        &RESOLUTIONS,
    );
    check_folder_invariants(&mut out, doc);
    if let Err(e) = doc.estimate() {
        schema(&mut out, e.detail);
    }
    if let Some(item) = front.get("parent") {
        match item.as_str().map(strip_wikilink) {
            Some(p) if p == id => schema(&mut out, "`parent` names the task itself".into()),
            Some(p) if is_task_id(p) => {}
            _ => schema(&mut out, "`parent` must be a task id (`t-<ULID>`)".into()),
        }
    }
    check_depends_on(&mut out, front.get("depends_on"), id);
    check_strings(
        &mut out,
        front.get("traces"),
        "traces",
        is_repo_path,
        "a repository path",
    );
    check_strings(&mut out, front.get("tags"), "tags", is_slug, "a tag (slug)");
    if let Some(g) = front.get("generation")
        && g.as_integer().is_none_or(|n| n < 0)
    {
        schema(&mut out, "`generation` must be an integer ≥ 0".into());
    }
    if title_of(&doc.body).is_none() {
        schema(&mut out, "the body has no level-1 heading (title)".into());
    }
    if front.contains_key("status") {
        out.push(Finding::warning(
            "derived_field_stored",
            "`status` is stored, but the folder is the status; the key is ignored",
        ));
    }
    if doc.criteria().is_empty() {
        out.push(Finding::warning(
            "no_acceptance",
            "`## Acceptance` has no criterion (`- [ ] …`); the task cannot be done",
        ));
    }
    out.extend(duplicate_sections(&doc.body, &TASK_SECTIONS));
    out
}

/// The distinct error codes of one task file, sorted: what the definition of done checks when
/// `definition_of_done.lint` is true.
pub fn task_errors(doc: &TaskDoc) -> Vec<String> {
    let mut codes: Vec<String> = task_findings(doc)
        .into_iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.code.to_string())
        .collect();
    codes.sort();
    codes.dedup();
    codes
}

/// `duplicate_section` for every structural section of `sections` whose heading repeats.
pub fn duplicate_sections(body: &str, sections: &[&str]) -> Vec<Finding> {
    sections
        .iter()
        .filter_map(|name| {
            let n = section_heading_count(body, name);
            (n > 1).then(|| {
                Finding::warning(
                    "duplicate_section",
                    format!("`## {name}` appears {n} times; readers use the first"),
                )
            })
        })
        .collect()
}

fn check_folder_invariants(out: &mut Vec<Finding>, doc: &TaskDoc) {
    let front = doc.front.as_table();
    let assignee = front.get("assignee");
    if let Some(a) = assignee
        && !a.as_str().is_some_and(is_agent_id)
    {
        out.push(Finding::error("schema", "`assignee` must be an agent id"));
    }
    match (doc.status, assignee.is_some()) {
        (Status::Open, true) => out.push(Finding::error(
            "schema",
            "a task in open/ has no `assignee`; claimed work belongs in active/",
        )),
        (Status::Active, false) => out.push(Finding::error(
            "schema",
            "a task in active/ needs an `assignee`",
        )),
        _ => {}
    }
    match (doc.status, front.contains_key("resolution")) {
        (Status::Done, false) => out.push(Finding::error(
            "schema",
            "a task in done/ needs `resolution` (completed, unverified or abandoned)",
        )),
        (s, true) if s != Status::Done => out.push(Finding::error(
            "schema",
            format!("`resolution` is present but the task is in {s}/; only done tasks have one"),
        )),
        _ => {}
    }
}

fn check_enum(out: &mut Vec<Finding>, item: Option<&Item>, key: &str, allowed: &[&str]) {
    if let Some(item) = item
        && !item.as_str().is_some_and(|v| allowed.contains(&v))
    {
        out.push(Finding::error(
            "schema",
            format!("`{key}` must be one of {}", allowed.join(", ")),
        ));
    }
}

fn check_depends_on(out: &mut Vec<Finding>, item: Option<&Item>, id: &str) {
    let Some(item) = item else {
        return;
    };
    let Some(array) = item.as_array() else {
        out.push(Finding::error(
            "schema",
            "`depends_on` must be an array of {on, type}",
        ));
        return;
    };
    for v in array {
        let Some(t) = v.as_inline_table() else {
            out.push(Finding::error(
                "schema",
                "`depends_on` entries must be inline tables {on, type}",
            ));
            continue;
        };
        match t.get("on").and_then(Value::as_str).map(strip_wikilink) {
            Some(on) if on == id => out.push(Finding::error(
                "schema",
                "`depends_on` names the task itself",
            )),
            Some(on) if is_task_id(on) => {}
            _ => out.push(Finding::error(
                "schema",
                "`depends_on.on` must be a task id (`t-<ULID>`)",
            )),
        }
        if let Some(kind) = t.get("type")
            && !kind.as_str().is_some_and(|k| DEP_TYPES.contains(&k))
        {
            out.push(Finding::error(
                "schema",
                format!("`depends_on.type` must be one of {}", DEP_TYPES.join(", ")),
            ));
        }
    }
}

fn check_strings(
    out: &mut Vec<Finding>,
    item: Option<&Item>,
    key: &str,
    valid: fn(&str) -> bool,
    what: &str,
) {
    let Some(item) = item else {
        return;
    };
    let Some(array) = item.as_array() else {
        out.push(Finding::error(
            "schema",
            format!("`{key}` must be an array of strings"),
        ));
        return;
    };
    for v in array {
        match v.as_str() {
            Some(s) if valid(s) => {}
            Some(s) => out.push(Finding::error(
                "schema",
                format!("`{key}` entry \"{}\" is not {what}", s.escape_debug()),
            )),
            None => out.push(Finding::error(
                "schema",
                format!("`{key}` must be an array of strings"),
            )),
        }
    }
}

fn is_datetime(item: Option<&Item>) -> bool {
    item.and_then(Item::as_datetime)
        .is_some_and(|dt| dt.date.is_some() && dt.time.is_some() && dt.offset.is_some())
}

/// True for `t-<ULID>`.
pub fn is_task_id(s: &str) -> bool {
    s.strip_prefix("t-").and_then(parse_ulid).is_some()
}

/// True for a slug (FORMAT §2): `[a-z0-9][a-z0-9-]{0,63}`.
pub fn is_slug(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// True for a repository path (FORMAT §2): relative, `/`-separated, no empty, `.` or `..`
/// segment.
pub fn is_repo_path(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('/')
        && !s.contains(['\\', '\0'])
        && s.split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(status: Status, extra: &str, body: &str) -> TaskDoc {
        let front = format!(
            "id = \"t-01KJPXJ57RGDMEE50E5T1E877Q\"\nkind = \"task\"\ncreated = 2026-03-02T09:20:11Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJPXJ57RGDMEE50E5T1E877Q\"\npriority = \"must\"\n{extra}"
        );
        TaskDoc {
            front: front.parse().expect("toml"),
            body: body.to_string(),
            status,
        }
    }

    const BODY: &str =
        "# T\n\n## Acceptance\n- [ ] one\n\n## Log\n- 2026-03-02T09:20:11Z a-root created\n";

    fn codes(d: &TaskDoc) -> Vec<&'static str> {
        task_findings(d).into_iter().map(|f| f.code).collect()
    }

    #[test]
    fn a_clean_task_has_no_findings() {
        assert!(task_findings(&doc(Status::Open, "", BODY)).is_empty());
        let active = doc(Status::Active, "assignee = \"a-root\"\n", BODY);
        assert!(task_findings(&active).is_empty());
    }

    #[test]
    fn folder_invariants_are_schema_errors() {
        let d = doc(Status::Open, "assignee = \"a-root\"\n", BODY);
        assert_eq!(task_errors(&d), vec!["schema"]);
        let d = doc(Status::Active, "", BODY);
        assert_eq!(task_errors(&d), vec!["schema"]);
        let d = doc(Status::Open, "resolution = \"completed\"\n", BODY);
        assert_eq!(task_errors(&d), vec!["schema"]);
        let d = doc(Status::Done, "", BODY);
        assert_eq!(task_errors(&d), vec!["schema"]);
    }

    #[test]
    fn references_and_lists_are_checked() {
        let self_dep = "depends_on = [{ on = \"t-01KJPXJ57RGDMEE50E5T1E877Q\", type = \"FS\" }]\n";
        assert_eq!(codes(&doc(Status::Open, self_dep, BODY)), vec!["schema"]);
        let bad_type = "depends_on = [{ on = \"t-01KJPXMJCG2RPJX1CFJW2XNQKR\", type = \"XX\" }]\n";
        assert_eq!(codes(&doc(Status::Open, bad_type, BODY)), vec!["schema"]);
        let bad_trace = "traces = [\"../etc/passwd\"]\ntags = [\"Bad Tag\"]\n";
        assert_eq!(
            codes(&doc(Status::Open, bad_trace, BODY)),
            vec!["schema", "schema"]
        );
    }

    #[test]
    fn warnings_do_not_count_as_errors() {
        let body = "# T\n\n## Acceptance\n\n## Log\n- x\n\n## Log\n";
        let d = doc(Status::Open, "status = \"open\"\n", body);
        assert_eq!(
            codes(&d),
            vec!["derived_field_stored", "no_acceptance", "duplicate_section"]
        );
        assert!(task_errors(&d).is_empty());
    }
}
