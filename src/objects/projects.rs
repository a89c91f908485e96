//! Projects (docs/FORMAT.md §11).

use crate::model::project::ProjectHead;
use crate::store::{DirEntryKind, Problem, Reason};
use crate::workspace::Workspace;
use crate::workspace::names::check_slug;

use super::{Error, Listing, field_problem, read_document, warn_or_fail};

/// Every project, sorted by slug; a directory whose `project.md` is unreadable is skipped
/// and reported.
pub fn list(ws: &Workspace) -> Result<Listing<ProjectHead>, Error> {
    list_from(ws, &ws.path(&["projects"]))
}

fn list_from(ws: &Workspace, dir: &std::path::Path) -> Result<Listing<ProjectHead>, Error> {
    let mut out = Listing::default();
    for (name, path) in ws.fs.list_dir(dir)? {
        if name.starts_with('.') {
            continue;
        }
        match ws.fs.entry_kind(&path)? {
            DirEntryKind::Dir | DirEntryKind::SymlinkInside if path.is_dir() => {}
            DirEntryKind::SymlinkEscape => {
                out.warnings.push(Problem {
                    path: ws.display(&path),
                    reason: Reason::SymlinkEscape,
                    detail: "symlink resolves outside .dacli/; not followed".into(),
                });
                continue;
            }
            _ => continue,
        }
        if check_slug(&name).is_err() {
            continue;
        }
        let file = path.join("project.md");
        let Some(doc) = warn_or_fail(&mut out.warnings, read_document(ws, &file))? else {
            continue;
        };
        match ProjectHead::from_front(&doc.front, &name, doc.title()) {
            Ok(p) => out.items.push(p),
            Err(e) => out.warnings.push(field_problem(ws, &file, e)),
        }
    }
    Ok(out)
}

/// What `project.md` of a new project holds (`project add`, `init --project`).
pub struct NewProject<'a> {
    pub slug: &'a str,
    pub title: &'a str,
    pub owner: &'a str,
    pub rev: ulid::Ulid,
    pub stage: &'a str,
    pub template: Option<&'a str>,
    pub landing_mode: Option<&'a str>,
    pub landing_base: Option<&'a str>,
    pub tags: &'a [String],
    pub vision: &'a str,
    pub goal: &'a str,
    pub constraints: &'a [String],
    pub out_of_scope: &'a [String],
    pub success: &'a [String],
}

impl<'a> NewProject<'a> {
    /// A project with a title and nothing else, at stage `build`.
    pub fn titled(slug: &'a str, title: &'a str, owner: &'a str, rev: ulid::Ulid) -> Self {
        NewProject {
            slug,
            title,
            owner,
            rev,
            stage: "build",
            template: None,
            landing_mode: None,
            landing_base: None,
            tags: &[],
            vision: "",
            goal: "",
            constraints: &[],
            out_of_scope: &[],
            success: &[],
        }
    }

    /// The document: its frontmatter and all five structural sections.
    pub fn document(&self) -> crate::store::Document {
        use toml_edit::{Array, DocumentMut, InlineTable, Value, value};
        let mut front = DocumentMut::new();
        front["id"] = value(format!("p-{}", self.slug));
        front["kind"] = value("project");
        front["created"] = value(crate::model::toml_time(crate::model::id::ulid_time(
            self.rev,
        )));
        front["created_by"] = value(self.owner);
        front["owner"] = value(self.owner);
        front["rev"] = value(self.rev.to_string());
        front["status"] = value("active");
        front["stage"] = value(self.stage);
        if let Some(t) = self.template {
            front["template"] = value(t);
        }
        if self.landing_mode.is_some() || self.landing_base.is_some() {
            let mut l = InlineTable::new();
            if let Some(m) = self.landing_mode {
                l.insert("mode", Value::from(m));
            }
            if let Some(b) = self.landing_base {
                l.insert("base", Value::from(b));
            }
            front["landing"] = value(l);
        }
        if !self.tags.is_empty() {
            let mut a = Array::new();
            for t in self.tags {
                a.push(t.as_str());
            }
            front["tags"] = value(a);
        }
        let list = |items: &[String], prefix: &str| -> String {
            items
                .iter()
                .map(|i| format!("{prefix}{i}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let body = format!(
            "# {}\n\n## Vision\n{}\n\n## Goal\n{}\n\n## Constraints\n{}\n\n## Out of scope\n{}\n\n## Success criteria\n{}\n",
            self.title.trim(),
            self.vision.trim(),
            self.goal.trim(),
            list(self.constraints, "- "),
            list(self.out_of_scope, "- "),
            list(self.success, "- [ ] "),
        );
        crate::store::Document::new(front, body.replace("\n\n\n", "\n\n"))
    }
}
