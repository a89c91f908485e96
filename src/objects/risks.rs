//! Risks (docs/FORMAT.md §16): listing every project's `risks/`, resolving a `<RISK>`
//! reference, re-reading one risk under its lock, and creating a risk file (create-new, with
//! the slug collision rule of notes).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::model::id::parse_ulid;
use crate::model::risk::RiskHead;
use crate::store::{Document, Problem, Reason, TEMP_PREFIX};
use crate::workspace::Workspace;
use crate::workspace::names::{check_slug, slugify};

use super::{Error, Listing, field_problem, projects, read_document, warn_or_fail};

/// A risk as found on disk.
#[derive(Debug, Clone)]
pub struct Located {
    /// The project's directory name.
    pub project: String,
    /// The file stem (the slug made from the title at creation).
    pub slug: String,
    pub file: PathBuf,
    /// Path relative to the work-tree root, for output.
    pub path: String,
    pub risk: RiskHead,
    pub doc: Document,
}

impl Located {
    /// `<project>/<slug>`, the reference COMMANDS.md §1.2 accepts.
    pub fn reference(&self) -> String {
        format!("{}/{}", self.project, self.slug)
    }
}

/// Every risk of project `slug`, sorted by id. Unusable files are skipped and reported; of
/// two files with one id (a hand copy or a merge) the greater `rev` is used and both are
/// reported as `duplicate_id`.
pub fn list(ws: &Workspace, slug: &str) -> Result<Listing<Located>, Error> {
    let mut out = Listing::default();
    let mut by_id: BTreeMap<String, Vec<Located>> = BTreeMap::new();
    for (name, path) in ws.fs.list_dir(&ws.path(&["projects", slug, "risks"]))? {
        if name.starts_with('.') || name.starts_with(TEMP_PREFIX) {
            continue;
        }
        let Some(stem) = name.strip_suffix(".md") else {
            continue;
        };
        let Some(doc) = warn_or_fail(&mut out.warnings, read_document(ws, &path))? else {
            continue;
        };
        match RiskHead::parse(&doc.front, &doc.body) {
            Ok(risk) => by_id.entry(risk.id.clone()).or_default().push(Located {
                project: slug.to_string(),
                slug: crate::model::task::parse_keyed_filename(&name)
                    .map_or(stem, |(_, slug)| slug)
                    .to_string(),
                path: ws.display(&path),
                file: path,
                risk,
                doc,
            }),
            Err(e) => out.warnings.push(field_problem(ws, &path, e)),
        }
    }
    for (id, mut copies) in by_id {
        if copies.len() > 1 {
            copies.sort_by(|a, b| b.risk.rev.cmp(&a.risk.rev).then(a.path.cmp(&b.path)));
            let paths: Vec<String> = copies.iter().map(|c| c.path.clone()).collect();
            for c in &copies {
                let others: Vec<&str> = paths
                    .iter()
                    .filter(|p| **p != c.path)
                    .map(String::as_str)
                    .collect();
                out.warnings.push(Problem {
                    path: c.path.clone(),
                    reason: Reason::DuplicateId,
                    detail: format!("{id} is also at {}", others.join(", ")),
                });
            }
        }
        out.items.extend(copies.into_iter().next());
    }
    Ok(out)
}

/// Every risk of every project (projects sorted by slug), with the warnings of both listings.
pub fn list_all(ws: &Workspace) -> Result<Listing<Located>, Error> {
    let mut out = Listing::default();
    let p = projects::list(ws)?;
    out.warnings.extend(p.warnings);
    for project in &p.items {
        let r = list(ws, &project.slug)?;
        out.warnings.extend(r.warnings);
        out.items.extend(r.items);
    }
    Ok(out)
}

/// Why a risk reference did not resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    NotFound {
        reference: String,
    },
    /// Several risks share the slug; each as `<project>/<slug>`.
    Ambiguous {
        reference: String,
        candidates: Vec<String>,
    },
}

/// Resolves `r-<ULID>`, a bare ULID, the short id `r~<end of the ULID>` that `risk list`
/// shows on a terminal (four characters or more, any case), `<project>/<slug>` (project as
/// slug or `p-<slug>`), or a slug that is unique across projects.
pub fn resolve<'a>(risks: &'a [Located], reference: &str) -> Result<&'a Located, ResolveError> {
    let input = reference.trim();
    let ulid = input.strip_prefix("r-").unwrap_or(input);
    let matches: Vec<&Located> = if let Some(u) = parse_ulid(ulid) {
        let id = format!("r-{u}");
        risks.iter().filter(|r| r.risk.id == id).collect()
    } else if let Some(end) = input
        .strip_prefix("r~")
        .filter(|e| e.len() >= 4 && e.bytes().all(|b| b.is_ascii_alphanumeric()))
    {
        let end = end.to_ascii_uppercase();
        risks.iter().filter(|r| r.risk.id.ends_with(&end)).collect()
    } else if let Some((project, slug)) = input.split_once('/') {
        let project = project.strip_prefix("p-").unwrap_or(project);
        let slug = slug.strip_suffix(".md").unwrap_or(slug);
        risks
            .iter()
            .filter(|r| r.project == project && r.slug == slug)
            .collect()
    } else {
        risks.iter().filter(|r| r.slug == input).collect()
    };
    match matches.as_slice() {
        [one] => Ok(one),
        [] => Err(ResolveError::NotFound {
            reference: reference.to_string(),
        }),
        many => Err(ResolveError::Ambiguous {
            reference: reference.to_string(),
            candidates: many.iter().map(|r| r.reference()).collect(),
        }),
    }
}

/// Re-reads one risk by id from project `slug` (after taking its lock).
pub fn reload(ws: &Workspace, slug: &str, id: &str) -> Result<Located, Error> {
    list(ws, slug)?
        .items
        .into_iter()
        .find(|r| r.risk.id == id)
        .ok_or_else(|| Error::NotFound {
            what: "risk",
            id: id.to_string(),
        })
}

/// Creates the risk file of project `project` from its title's slug with create-new; when the
/// name is taken, `-` and the last six characters of the ULID (lower case) are appended, as
/// for notes (FORMAT §15). Returns the path.
pub fn create(
    ws: &Workspace,
    project: &str,
    risk_id: &str,
    title: &str,
    doc: &Document,
) -> Result<PathBuf, Error> {
    check_slug(project).map_err(|_| Error::NotFound {
        what: "project",
        id: project.to_string(),
    })?;
    let base = ws.path(&["projects", project, "risks"]);
    let slug = slugify(title);
    // `<ULID>-<slug>.md`: a path no other clone can create (FORMAT §22).
    let ulid = risk_id.strip_prefix("r-").unwrap_or(risk_id);
    let path = base.join(crate::model::task::keyed_filename(ulid, &slug));
    ws.fs.create_new(&path, doc.render().as_bytes())?;
    Ok(path)
}
