//! Templates (docs/FORMAT.md §9): the built-ins compiled into the binary and the hand-kept ones
//! under `.dacli/templates/<name>/`, which shadow a built-in of the same name.

use std::path::PathBuf;

use toml_edit::{DocumentMut, Item, Table, value};

use crate::model::fields::Fields;
use crate::model::id::ulid_time;
use crate::model::toml_time;
use crate::store::{Document, Problem, Reason};
use crate::workspace::Workspace;
use crate::workspace::names::check_slug;

use super::{Error, Listing, read_document};

/// One file of a built-in template: its path inside the template directory and its bytes.
type Embedded = (&'static str, &'static str);

const SOLO: &[Embedded] = &[("template.md", include_str!("builtin/solo/template.md"))];

const STANDARD: &[Embedded] = &[
    ("template.md", include_str!("builtin/standard/template.md")),
    (
        "roles/planner.md",
        include_str!("builtin/standard/roles/planner.md"),
    ),
    (
        "roles/builder.md",
        include_str!("builtin/standard/roles/builder.md"),
    ),
    (
        "roles/reviewer.md",
        include_str!("builtin/standard/roles/reviewer.md"),
    ),
    (
        "shortcuts/test.md",
        include_str!("builtin/standard/shortcuts/test.md"),
    ),
    (
        "shortcuts/lint.md",
        include_str!("builtin/standard/shortcuts/lint.md"),
    ),
    (
        "docs/README.md",
        include_str!("builtin/standard/docs/README.md"),
    ),
];

const BUILTINS: &[(&str, &[Embedded])] = &[("solo", SOLO), ("standard", STANDARD)];

/// A stage and its gates (kept verbatim; format 1 does not evaluate them).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Stage {
    pub name: String,
    pub gates: Vec<String>,
}

/// A template, from either source.
///
/// Invariant: `files` holds every file of the template (paths relative to its directory,
/// `template.md` first), so vendoring copies exactly what seeding would use.
#[derive(Debug, Clone)]
pub struct Template {
    pub name: String,
    /// `builtin` or `workspace`.
    pub source: &'static str,
    pub summary: String,
    pub stages: Vec<Stage>,
    pub definition_of_done: Option<Table>,
    pub files: Vec<(String, Vec<u8>)>,
    /// The directory of a workspace template.
    pub dir: Option<PathBuf>,
}

impl Template {
    /// Names of the files under `sub/` (`roles`, `shortcuts`, `docs`), sorted, without `.md`
    /// for object directories.
    pub fn names_in(&self, sub: &str) -> Vec<String> {
        let prefix = format!("{sub}/");
        let mut out: Vec<String> = self
            .files
            .iter()
            .filter_map(|(p, _)| p.strip_prefix(&prefix))
            .filter(|rest| !rest.contains('/'))
            .map(|rest| {
                if sub == "docs" {
                    rest.to_string()
                } else {
                    rest.trim_end_matches(".md").to_string()
                }
            })
            .collect();
        out.sort();
        out
    }

    /// The files under `sub/`, sorted by path.
    pub fn files_in(&self, sub: &str) -> Vec<(String, Vec<u8>)> {
        let prefix = format!("{sub}/");
        let mut out: Vec<(String, Vec<u8>)> = self
            .files
            .iter()
            .filter_map(|(p, b)| p.strip_prefix(&prefix).map(|r| (r.to_string(), b.clone())))
            .filter(|(r, _)| !r.contains('/'))
            .collect();
        out.sort();
        out
    }
}

/// The names of the built-in templates.
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|(n, _)| *n)
}

/// Parses a template's `template.md`; `shown` names it in problems.
fn parse(
    name: &str,
    source: &'static str,
    shown: &str,
    files: Vec<(String, Vec<u8>)>,
    dir: Option<PathBuf>,
) -> Result<Template, Problem> {
    let main = files
        .iter()
        .find(|(p, _)| p == "template.md")
        .map(|(_, b)| b.clone())
        .unwrap_or_default();
    let doc = Document::parse(shown, &main)?;
    let schema = |detail: String| Problem {
        path: shown.to_string(),
        reason: Reason::Schema,
        detail,
    };
    let f = Fields(doc.front.as_table());
    f.expect_kind("template").map_err(|e| schema(e.detail))?;
    let stored = f.str("name").map_err(|e| schema(e.detail))?;
    if stored != name {
        return Err(Problem {
            path: shown.to_string(),
            reason: Reason::IdMismatch,
            detail: format!("`name` \"{stored}\" does not match the directory \"{name}\""),
        });
    }
    let summary = f.str("summary").map_err(|e| schema(e.detail))?.to_string();
    let stages: Vec<Stage> = doc
        .front
        .get("stages")
        .and_then(Item::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| {
                    let t = s.as_inline_table()?;
                    Some(Stage {
                        name: t.get("name")?.as_str()?.to_string(),
                        gates: t
                            .get("gates")
                            .and_then(|g| g.as_array())
                            .map(|g| {
                                g.iter()
                                    .filter_map(|x| x.as_str().map(str::to_string))
                                    .collect()
                            })
                            .unwrap_or_default(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if stages.is_empty() {
        return Err(schema(
            "`stages` must list at least one {name, gates}".into(),
        ));
    }
    Ok(Template {
        name: name.to_string(),
        source,
        summary,
        stages,
        definition_of_done: doc
            .front
            .get("definition_of_done")
            .and_then(Item::as_table)
            .cloned(),
        files,
        dir,
    })
}

/// A built-in template.
pub fn builtin(name: &str) -> Option<Template> {
    let (_, files) = BUILTINS.iter().find(|(n, _)| *n == name)?;
    let files = files
        .iter()
        .map(|(p, t)| (p.to_string(), t.as_bytes().to_vec()))
        .collect();
    parse(
        name,
        "builtin",
        &format!("(built-in {name})/template.md"),
        files,
        None,
    )
    .ok()
}

/// The template `name`: the workspace's own (when `ws` is given and it has one), else the
/// built-in. `E_NOT_FOUND` names both places searched.
pub fn load(ws: Option<&Workspace>, name: &str) -> Result<Template, Error> {
    let not_found = || Error::NotFound {
        what: "template",
        id: name.to_string(),
    };
    check_slug(name).map_err(|_| not_found())?;
    if let Some(ws) = ws {
        let dir = ws.path(&["templates", name]);
        if dir.join("template.md").exists() {
            let files = read_tree(ws, &dir, "")?;
            return parse(
                name,
                "workspace",
                &ws.display(&dir.join("template.md")),
                files,
                Some(dir),
            )
            .map_err(Error::malformed);
        }
    }
    builtin(name).ok_or_else(not_found)
}

/// Every template: workspace ones and the built-ins they do not shadow, sorted by name.
pub fn list(ws: &Workspace) -> Result<Listing<Template>, Error> {
    let mut out = Listing::default();
    for (name, path) in ws.fs.list_dir(&ws.path(&["templates"]))? {
        if check_slug(&name).is_err() || !path.join("template.md").exists() {
            continue;
        }
        match load(Some(ws), &name) {
            Ok(t) => out.items.push(t),
            Err(Error::Store(crate::store::Error::Malformed(p))) => out.warnings.push(p),
            Err(e) => return Err(e),
        }
    }
    for name in builtin_names() {
        if !out.items.iter().any(|t| t.name == name)
            && let Some(t) = builtin(name)
        {
            out.items.push(t);
        }
    }
    out.items.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The files of a workspace template directory, paths relative to it (one level of
/// subdirectories: `roles/`, `shortcuts/`, `docs/`).
fn read_tree(
    ws: &Workspace,
    dir: &std::path::Path,
    prefix: &str,
) -> Result<Vec<(String, Vec<u8>)>, Error> {
    let mut out = Vec::new();
    for (name, path) in ws.fs.list_dir(dir)? {
        if name.starts_with('.') {
            continue;
        }
        let rel = format!("{prefix}{name}");
        if path.is_dir() {
            if prefix.is_empty() {
                out.extend(read_tree(ws, &path, &format!("{rel}/"))?);
            }
        } else {
            out.push((rel, ws.fs.read(&path)?));
        }
    }
    Ok(out)
}

/// A seeded role or shortcut: the template's file with `created`, `created_by`, `owner` and
/// `rev` filled in after `name` (FORMAT §9), keeping every other key and the body.
pub fn seed(bytes: &[u8], shown: &str, me: &str, rev: ulid::Ulid) -> Result<Document, Problem> {
    let doc = Document::parse(shown, bytes)?;
    let mut front = DocumentMut::new();
    for key in ["kind", "name"] {
        if let Some(item) = doc.front.get(key) {
            front[key] = item.clone();
        }
    }
    front["created"] = value(toml_time(ulid_time(rev)));
    front["created_by"] = value(me);
    front["owner"] = value(me);
    front["rev"] = value(rev.to_string());
    for (key, item) in doc.front.iter() {
        if !matches!(
            key,
            "kind" | "name" | "id" | "created" | "created_by" | "owner" | "rev"
        ) {
            front[key] = item.clone();
        }
    }
    Ok(Document::new(front, doc.body))
}

/// Reads a template file of the workspace for display (used by `template show`).
pub fn main_document(ws: &Workspace, t: &Template) -> Result<Option<Document>, Error> {
    match &t.dir {
        Some(d) => Ok(Some(read_document(ws, &d.join("template.md"))?)),
        None => Ok(None),
    }
}
