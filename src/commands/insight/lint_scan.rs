//! The scan behind `dacli lint`: a walk of the whole workspace directory that parses every
//! object file once, the per-document rules of `policy::lint` applied by location, and the
//! rules that need several files (duplicate ids and numbers, references, receipts).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, Item};

use crate::dispatch::{Ctx, Error};
use crate::journal;
use crate::model::agent::Agent;
use crate::model::id::ROOT_AGENT;
use crate::model::note::kind_of_dir;
use crate::model::role::Role;
use crate::model::runtime::{Runtime, role_runtime};
use crate::model::task::parse_log;
use crate::model::taskdoc::strip_wikilink;
use crate::objects::{field_problem, tasks};
use crate::ops::lint_fix::Fix;
use crate::policy::lint::{self as rules, Finding, Receipt, Severity};
use crate::policy::shortcut::{Template, TemplateError};
use crate::store::{self, DirEntryKind, Document, Problem, Reason, TEMP_PREFIX, TomlRecord};
use crate::workspace::Workspace;

/// Temp files older than this are leftovers of a crashed writer (FORMAT §4.2).
const STALE_AFTER_S: i64 = 600;

/// One finding before filtering and fixing.
pub(super) struct Found {
    pub code: &'static str,
    pub severity: Severity,
    pub path: String,
    pub object: Option<String>,
    pub message: String,
    pub fix: Option<Fix>,
}

/// A parsed file of the walk.
enum Parsed {
    Md(Document),
    Toml(DocumentMut),
}

impl Parsed {
    fn front(&self) -> &DocumentMut {
        match self {
            Parsed::Md(d) => &d.front,
            Parsed::Toml(t) => t,
        }
    }

    fn body(&self) -> &str {
        match self {
            Parsed::Md(d) => &d.body,
            Parsed::Toml(_) => "",
        }
    }
}

/// One file of the workspace directory.
struct Entry {
    file: PathBuf,
    shown: String,
    /// Path segments below the workspace directory, the file name last.
    segs: Vec<String>,
    bytes: Vec<u8>,
    parsed: Parsed,
}

impl Entry {
    fn seg(&self, i: usize) -> &str {
        self.segs.get(i).map_or("", String::as_str)
    }

    fn stem(&self) -> &str {
        let name = self.segs.last().map_or("", String::as_str);
        name.rsplit_once('.').map_or(name, |(s, _)| s)
    }

    fn str_key(&self, key: &str) -> Option<&str> {
        self.parsed.front().get(key).and_then(Item::as_str)
    }

    /// The object's id, or a role's or shortcut's name.
    fn object(&self) -> Option<String> {
        self.str_key("id")
            .or_else(|| self.str_key("name"))
            .map(str::to_string)
    }

    fn loc(&self) -> Loc {
        let s: Vec<&str> = self.segs.iter().map(String::as_str).collect();
        match s.as_slice() {
            ["config.toml"] => Loc::Config,
            ["agents", _] => Loc::Agent,
            ["roles", _] => Loc::Role,
            ["shortcuts", _] => Loc::Shortcut,
            ["runtimes", _] => Loc::Runtime,
            ["queues", _] => Loc::Queue,
            ["projects", _, "project.md"] => Loc::Project,
            ["projects", _, "glossary.md"] => Loc::Glossary,
            ["projects", _, "tasks", _, _] => Loc::Task,
            ["projects", _, "notes", dir, _] | ["notes", dir, _] => match kind_of_dir(dir) {
                Some(kind) => Loc::Note(kind),
                None => Loc::Other,
            },
            ["projects", _, "risks", _] => Loc::Risk,
            ["events", _, _, _, _] => Loc::Event,
            ["evidence", _, _] => Loc::Record("evidence"),
            ["txn", _, _] => Loc::Record("txn-step"),
            ["trains", _] => Loc::Record("train"),
            ["github", "consent", _] => Loc::Record("consent"),
            ["archive", ..] => Loc::Archive,
            _ => Loc::Other,
        }
    }
}

/// What a file is, by where it is (FORMAT §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loc {
    Config,
    Agent,
    Role,
    Shortcut,
    Runtime,
    Queue,
    Project,
    Glossary,
    Task,
    Note(&'static str),
    Risk,
    Event,
    Record(&'static str),
    Archive,
    Other,
}

/// Everything a scan found, deduplicated: file problems by (path, reason), rule findings by
/// (path, code, message).
#[derive(Default)]
struct Collector {
    found: Vec<Found>,
    problems: BTreeSet<(String, &'static str)>,
    seen: BTreeSet<(String, &'static str, String)>,
    objects: BTreeMap<String, String>,
}

impl Collector {
    fn problem(&mut self, p: Problem, fix: Option<Fix>) {
        let code = p.reason.as_str();
        if !self.problems.insert((p.path.clone(), code)) {
            return;
        }
        let message = if p.detail.is_empty() {
            code.to_string()
        } else {
            p.detail
        };
        self.found.push(Found {
            code,
            severity: Severity::Error,
            object: self.objects.get(&p.path).cloned(),
            path: p.path,
            message,
            fix,
        });
    }

    fn rules(&mut self, e: &Entry, findings: Vec<Finding>) {
        for f in findings {
            self.push(&e.shown, e.object(), f, None);
        }
    }

    fn push(&mut self, path: &str, object: Option<String>, f: Finding, fix: Option<Fix>) {
        if self
            .seen
            .insert((path.to_string(), f.code, f.message.clone()))
        {
            self.found.push(Found {
                code: f.code,
                severity: f.severity,
                path: path.to_string(),
                object,
                message: f.message,
                fix,
            });
        }
    }
}

/// Scans the whole workspace (filters apply afterwards: duplicates and references need every
/// file).
pub(super) fn scan(ctx: &Ctx, ws: &Workspace) -> Result<Vec<Found>, Error> {
    let mut c = Collector::default();
    let mut entries = Vec::new();
    walk(ctx, ws, ws.dir(), &mut Vec::new(), &mut c, &mut entries)?;
    for e in &entries {
        if let Some(o) = e.object() {
            c.objects.insert(e.shown.clone(), o);
        }
    }
    let roles: BTreeSet<String> = entries
        .iter()
        .filter(|e| e.loc() == Loc::Role)
        .map(|e| e.stem().to_string())
        .collect();
    let known: BTreeSet<String> = entries
        .iter()
        .filter_map(|e| e.str_key("id").map(str::to_string))
        .chain(["workspace".to_string()])
        .collect();

    for e in &entries {
        per_file(ws, e, &roles, &known, &mut c);
    }
    runtime_rules(ws, &entries, &mut c);
    duplicate_ids(&entries, &mut c);

    // The typed readers report what the envelope cannot: schema, ids, folders, checksums.
    let listing = tasks::list_all(ws)?;
    for w in listing.warnings {
        c.problem(w, None);
    }
    duplicate_seq(&listing.items, &mut c);
    let journal = journal::read(ws)?;
    for w in journal.warnings.iter().cloned() {
        c.problem(w, None);
    }
    receipts(&journal, &entries, &mut c);
    let notes = crate::objects::notes::list(ws)?;
    for w in notes.warnings {
        c.problem(w, None);
    }
    Ok(c.found)
}

/// Walks the workspace directory (runtime and derived directories excluded), reporting
/// unreadable, stray, stale and non-canonical files and parsing every object file.
fn walk(
    ctx: &Ctx,
    ws: &Workspace,
    dir: &Path,
    segs: &mut Vec<String>,
    c: &mut Collector,
    entries: &mut Vec<Entry>,
) -> Result<(), Error> {
    for (name, path) in ws.fs.list_dir(dir)? {
        if segs.is_empty() && matches!(name.as_str(), "runs" | ".locks" | "cache") {
            continue;
        }
        let shown = ws.display(&path);
        if name.starts_with(TEMP_PREFIX) {
            stale_temp(ctx, &path, shown, c);
            continue;
        }
        if name.starts_with('.') {
            continue;
        }
        match ws.fs.entry_kind(&path)? {
            DirEntryKind::Dir => {
                segs.push(name);
                walk(ctx, ws, &path, segs, c, entries)?;
                segs.pop();
                continue;
            }
            DirEntryKind::SymlinkEscape => {
                c.problem(
                    Problem {
                        path: shown,
                        reason: Reason::SymlinkEscape,
                        detail: "symlink resolves outside .dacli/; not followed".into(),
                    },
                    None,
                );
                continue;
            }
            DirEntryKind::Special => {
                c.problem(
                    Problem {
                        path: shown,
                        reason: Reason::NotRegular,
                        detail: "not a regular file; not opened".into(),
                    },
                    None,
                );
                continue;
            }
            DirEntryKind::File | DirEntryKind::SymlinkInside => {}
        }
        if let Some(expected) = expected_extension(segs)
            && !expected.is_some_and(|ext| name.ends_with(ext))
        {
            let why = match expected {
                Some(ext) => format!("files here are `*{ext}`; this one is ignored"),
                None => "no file belongs directly in this directory; it is ignored".into(),
            };
            c.push(&shown, None, Finding::warning("stray_file", why), None);
            continue;
        }
        let is_md = name.ends_with(".md");
        if !(is_md || name.ends_with(".toml")) || segs.first().is_some_and(|s| s == "templates") {
            continue;
        }
        let bytes = match ws.fs.read(&path) {
            Ok(b) => b,
            Err(store::Error::Malformed(p)) => {
                c.problem(p, None);
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let parsed = if is_md {
            Document::parse(&shown, &bytes).map(Parsed::Md)
        } else {
            TomlRecord::parse(&shown, &bytes).map(|r| Parsed::Toml(r.doc))
        };
        let parsed = match parsed {
            Ok(p) => p,
            Err(mut p) => {
                if p.reason == Reason::MergeConflict {
                    p.detail = conflict_detail(&bytes, &p.detail);
                }
                c.problem(p, None);
                continue;
            }
        };
        let mut all = segs.clone();
        all.push(name);
        entries.push(Entry {
            file: path,
            shown,
            segs: all,
            bytes,
            parsed,
        });
    }
    Ok(())
}

/// The extension files in an object directory must have (`Some(None)`: no file belongs
/// there); `None` outside object directories.
fn expected_extension(segs: &[String]) -> Option<Option<&'static str>> {
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    Some(match s.as_slice() {
        ["agents"] | ["roles"] | ["shortcuts"] | ["queues"] => Some(".md"),
        ["runtimes"] => Some(".md"),
        ["projects", _, "tasks", _] | ["projects", _, "risks"] => Some(".md"),
        ["projects", _, "notes", _] | ["notes", _] => Some(".md"),
        ["events", _, _, _] => Some(".md"),
        ["evidence", _] | ["txn", _] | ["trains"] | ["github", "consent"] => Some(".toml"),
        ["projects", _, "tasks"] | ["projects", _, "notes"] | ["notes"] => None,
        ["events"] | ["events", _] | ["events", _, _] => None,
        _ => return None,
    })
}

fn stale_temp(ctx: &Ctx, path: &Path, shown: String, c: &mut Collector) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    let age = meta
        .modified()
        .ok()
        .and_then(|t| jiff::Timestamp::try_from(t).ok())
        .map_or(0, |t| ctx.now().as_second() - t.as_second());
    if age > STALE_AFTER_S {
        let fix = meta.is_file().then(|| Fix::RemoveTemp(path.to_path_buf()));
        c.push(
            &shown,
            None,
            Finding::warning(
                "stale_temp",
                format!(
                    "a temp file left by an interrupted write, {} min old",
                    age / 60
                ),
            ),
            fix,
        );
    }
}

/// A merge-conflict detail that names both `rev` values (FORMAT §22).
fn conflict_detail(bytes: &[u8], detail: &str) -> String {
    let text = String::from_utf8_lossy(bytes);
    let revs: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("rev"))
        .filter_map(|l| l.trim_start().strip_prefix('='))
        .map(|v| v.trim().trim_matches('"'))
        .collect();
    if revs.len() >= 2 {
        format!("{detail}; the two sides have rev {}", revs.join(" and "))
    } else {
        detail.to_string()
    }
}

/// The per-document rules, by location.
fn per_file(
    ws: &Workspace,
    e: &Entry,
    roles: &BTreeSet<String>,
    known: &BTreeSet<String>,
    c: &mut Collector,
) {
    let front = e.parsed.front();
    let body = e.parsed.body();
    let loc = e.loc();
    noncanonical(e, loc, c);
    match loc {
        Loc::Agent => match Agent::from_front(front, e.stem()) {
            Ok(a) => c.rules(
                e,
                rules::agent_role_findings(&a.id, a.role.as_deref(), roles),
            ),
            Err(err) => c.problem(field_problem(ws, &e.file, err), None),
        },
        Loc::Role => match Role::from_front(front, e.stem()) {
            Ok(r) => c.rules(
                e,
                rules::role_findings(&r.scope, &r.out_of_scope, &r.escalate_to, roles),
            ),
            Err(err) => c.problem(field_problem(ws, &e.file, err), None),
        },
        Loc::Shortcut => {
            c.rules(e, rules::shortcut_findings(front, e.stem(), roles));
            c.rules(e, template_findings(front, e.stem()));
        }
        Loc::Queue => c.rules(e, rules::queue_findings(front, body, e.stem())),
        Loc::Project => c.rules(e, rules::project_findings(body)),
        Loc::Glossary => c.rules(e, rules::glossary_findings(front, body, e.seg(1))),
        Loc::Risk => {
            c.rules(e, rules::risk_findings(front, body));
            broken_refs(e, &["about"], known, c);
        }
        Loc::Note(kind) => {
            c.rules(e, rules::note_findings(kind, front, body));
            broken_refs(e, &["about", "supersedes"], known, c);
        }
        Loc::Task => {
            if let Some(folder) = crate::model::task::Status::parse(e.seg(3)) {
                let doc = crate::model::taskdoc::TaskDoc {
                    front: front.clone(),
                    body: body.to_string(),
                    status: folder,
                };
                c.rules(e, rules::task_findings(&doc));
                broken_refs(e, &["parent"], known, c);
                for d in doc.depends_on() {
                    if !known.contains(&d.on) {
                        c.rules(e, vec![broken(&format!("depends_on.on = \"{}\"", d.on))]);
                    }
                }
            }
        }
        Loc::Event => {
            c.rules(e, rules::event_findings(front));
            let about = e.str_key("about").map(strip_wikilink);
            if let Some(a) = about
                && !known.contains(a)
            {
                c.rules(e, vec![broken(&format!("about = \"{a}\""))]);
            }
            broken_refs(e, &["question"], known, c);
        }
        Loc::Record(kind) => {
            c.rules(e, rules::record_findings(front, kind));
            if kind == "consent" {
                c.rules(e, rules::consent_findings(front));
            }
        }
        // Runtime adapters and the roles' `runtime` keys: see `runtime_rules`.
        Loc::Runtime => {}
        Loc::Config | Loc::Archive | Loc::Other => {}
    }
}

/// The rules of runtime adapters (FORMAT §25): each adapter's own findings, and
/// `unknown_runtime` for a role whose `runtime` names no adapter.
fn runtime_rules(ws: &Workspace, entries: &[Entry], c: &mut Collector) {
    let runtimes: BTreeSet<String> = entries
        .iter()
        .filter(|e| e.loc() == Loc::Runtime)
        .map(|e| e.stem().to_string())
        .collect();
    for e in entries {
        let front = e.parsed.front();
        match e.loc() {
            Loc::Runtime => match Runtime::from_front(front, e.stem()) {
                Ok(rt) => c.rules(e, rules::runtime_findings(&rt)),
                Err(err) => c.problem(field_problem(ws, &e.file, err), None),
            },
            Loc::Role => match role_runtime(front) {
                Ok(r) => c.rules(e, rules::role_runtime_findings(r, &runtimes)),
                Err(err) => c.problem(field_problem(ws, &e.file, err), None),
            },
            _ => {}
        }
    }
}

fn broken(what: &str) -> Finding {
    Finding::warning(
        "broken_reference",
        format!("{what} names no object in this workspace"),
    )
}

fn broken_refs(e: &Entry, keys: &[&str], known: &BTreeSet<String>, c: &mut Collector) {
    for key in keys {
        if let Some(v) = e.str_key(key).map(strip_wikilink)
            && !known.contains(v)
        {
            c.rules(e, vec![broken(&format!("`{key}` = \"{v}\""))]);
        }
    }
}

/// `noncanonical`: fixable for canonical objects (by their owner), only reported for
/// append-only records.
fn noncanonical(e: &Entry, loc: Loc, c: &mut Collector) {
    let reasons = store::noncanonical_reasons(&e.bytes);
    if reasons.is_empty() {
        return;
    }
    let lock = match loc {
        Loc::Config => Some("config".to_string()),
        Loc::Agent => Some(format!("agent-{}", e.stem())),
        Loc::Role => Some(format!("role-{}", e.stem())),
        Loc::Shortcut => Some(format!("shortcut-{}", e.stem())),
        Loc::Runtime => Some(format!("runtime-{}", e.stem())),
        Loc::Queue => Some(format!("queue-{}", e.stem())),
        Loc::Project => Some(format!("project-{}", e.seg(1))),
        Loc::Glossary => Some(format!("glossary-{}", e.seg(1))),
        Loc::Task => ulid_of(e, "t-").map(|u| format!("task-{u}")),
        Loc::Risk => ulid_of(e, "r-").map(|u| format!("risk-{u}")),
        Loc::Record("train") => ulid_of(e, "tr-").map(|u| format!("train-{u}")),
        _ => None,
    };
    let append_only = matches!(
        loc,
        Loc::Note(_) | Loc::Event | Loc::Record(_) | Loc::Archive
    );
    let fix = lock.map(|lock| Fix::Canonicalize {
        file: e.file.clone(),
        shown: e.shown.clone(),
        lock,
        toml: !e.shown.ends_with(".md"),
        has_rev: loc != Loc::Config,
    });
    let mut message = format!("not canonical: {}", reasons.join(", "));
    if append_only {
        message.push_str(" (append-only: reported, never rewritten)");
    }
    c.push(
        &e.shown,
        e.object(),
        Finding::warning("noncanonical", message),
        fix,
    );
}

fn ulid_of(e: &Entry, prefix: &str) -> Option<String> {
    e.str_key("id")
        .and_then(|id| id.strip_prefix(prefix))
        .filter(|u| crate::model::id::parse_ulid(u).is_some())
        .map(str::to_string)
}

/// `duplicate_id` across the workspace; byte-identical copies of one note (materialised twice
/// under two slugs) keep the first path in byte order and the others are removable.
fn duplicate_ids(entries: &[Entry], c: &mut Collector) {
    let mut by_id: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    for e in entries.iter().filter(|e| e.loc() != Loc::Archive) {
        if let Some(id) = e.str_key("id") {
            by_id.entry(id).or_default().push(e);
        }
    }
    for (id, copies) in by_id.into_iter().filter(|(_, v)| v.len() > 1) {
        let identical_notes = copies.iter().all(|e| matches!(e.loc(), Loc::Note(_)))
            && copies.iter().all(|e| e.bytes == copies[0].bytes);
        for (n, e) in copies.iter().enumerate() {
            let others: Vec<&str> = copies
                .iter()
                .filter(|o| o.shown != e.shown)
                .map(|o| o.shown.as_str())
                .collect();
            let fix = (identical_notes && n > 0).then(|| Fix::RemoveCopy(e.file.clone()));
            c.problem(
                Problem {
                    path: e.shown.clone(),
                    reason: Reason::DuplicateId,
                    detail: format!("{id} is also at {}", others.join(", ")),
                },
                fix,
            );
        }
    }
}

/// `duplicate_seq`: tasks of one project sharing a number. Every copy but the one with the
/// smallest ULID is renumbered by `--fix`, run by that task's owner.
fn duplicate_seq(items: &[tasks::Located], c: &mut Collector) {
    let mut by_number: BTreeMap<(&str, u32), Vec<&tasks::Located>> = BTreeMap::new();
    for t in items {
        by_number
            .entry((t.project.as_str(), t.task.number))
            .or_default()
            .push(t);
    }
    for ((project, number), mut same) in by_number.into_iter().filter(|(_, v)| v.len() > 1) {
        same.sort_by(|a, b| a.task.id.cmp(&b.task.id));
        for (n, t) in same.iter().enumerate() {
            let others: Vec<String> = same
                .iter()
                .filter(|o| o.task.id != t.task.id)
                .map(|o| o.path.clone())
                .collect();
            let (message, fix) = if n == 0 {
                (
                    format!(
                        "{project} number {number:03} is also used by {}; this task (smallest id) keeps it",
                        others.join(", ")
                    ),
                    None,
                )
            } else {
                (
                    format!(
                        "{project} number {number:03} is also used by {}; its owner's `lint --fix` moves this task to the next free number",
                        others.join(", ")
                    ),
                    Some(Fix::Renumber {
                        project: project.to_string(),
                        id: t.task.id.clone(),
                    }),
                )
            };
            c.push(
                &t.path,
                Some(t.task.id.clone()),
                Finding::warning("duplicate_seq", message),
                fix,
            );
        }
    }
}

/// `receipt_foreign` (the author is neither the object's owner nor a former owner named in its
/// Log) and `receipt_disagreement`.
fn receipts(journal: &journal::Journal, entries: &[Entry], c: &mut Collector) {
    let mut owners: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    owners
        .entry("workspace".into())
        .or_default()
        .insert(ROOT_AGENT.into());
    for e in entries {
        let (Some(id), Some(owner)) = (e.str_key("id"), e.str_key("owner")) else {
            continue;
        };
        let set = owners.entry(id.to_string()).or_default();
        set.insert(owner.to_string());
        if let Some(creator) = e.str_key("created_by") {
            set.insert(creator.to_string());
        }
        for line in parse_log(e.parsed.body()) {
            if let Some(to) = line.text.strip_prefix("handed over to ") {
                set.insert(line.agent.clone());
                set.insert(to.trim().to_string());
            } else if line.text == "adopted by a-root" {
                set.insert(ROOT_AGENT.to_string());
            }
        }
    }
    let list: Vec<_> = journal
        .events
        .iter()
        .filter(|e| e.kind == "applied")
        .collect();
    for ev in &list {
        let Some(about) = ev.about.as_deref() else {
            continue;
        };
        if let Some(set) = owners.get(about)
            && !set.contains(&ev.created_by)
        {
            c.push(
                &ev.path,
                Some(ev.id.clone()),
                Finding::warning(
                    "receipt_foreign",
                    format!(
                        "receipt by {} for {about}, which it neither owns nor owned",
                        ev.created_by
                    ),
                ),
                None,
            );
        }
    }
    let receipts: Vec<Receipt<'_>> = list
        .iter()
        .map(|e| Receipt {
            id: &e.id,
            applied: &e.applied,
            rejected: &e.rejected,
        })
        .collect();
    for (i, message) in rules::receipt_disagreements(&receipts) {
        c.push(
            &list[i].path,
            Some(list[i].id.clone()),
            Finding::warning("receipt_disagreement", format!("this receipt {message}")),
            None,
        );
    }
}

/// A stored shortcut whose template `shortcut add` would refuse: `unsafe_template` (error)
/// when a placeholder stands where its value could run as code, `schema` for a template that
/// does not parse. Such a shortcut never runs; this says so before anyone tries.
fn template_findings(front: &DocumentMut, stem: &str) -> Vec<Finding> {
    let Ok(s) = crate::model::shortcut::Shortcut::from_front(front, stem) else {
        return Vec::new();
    };
    let declared: Vec<&str> = s.params.iter().map(|p| p.name.as_str()).collect();
    match Template::parse(&s.command, &declared) {
        Ok(_) => Vec::new(),
        Err(e @ TemplateError::Unsafe { .. }) => vec![Finding::error(
            "unsafe_template",
            format!("`command`: {e}; it is refused at every run until its owner changes it"),
        )],
        Err(e) => vec![Finding::error("schema", format!("`command`: {e}"))],
    }
}
