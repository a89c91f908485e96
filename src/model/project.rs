//! Projects (docs/FORMAT.md §11).

use toml_edit::DocumentMut;

use super::fields::{FieldError, Fields};

/// Project status values.
pub const PROJECT_STATUSES: [&str; 4] = ["active", "paused", "done", "abandoned"];

/// The parts of a project that listings need.
///
/// Invariant: `id` is `p-<slug>` where `<slug>` is the project's directory name.
#[derive(Debug, Clone)]
pub struct ProjectHead {
    pub id: String,
    pub slug: String,
    pub title: String,
    pub status: String,
    pub stage: String,
    pub owner: String,
}

impl ProjectHead {
    /// Parses `project.md` of the directory `slug`; `title` is the body's first H1.
    pub fn from_front(
        front: &DocumentMut,
        slug: &str,
        title: Option<&str>,
    ) -> Result<ProjectHead, FieldError> {
        let f = Fields(front.as_table());
        f.expect_kind("project")?;
        let id = f.str("id")?;
        if id != format!("p-{slug}") {
            return Err(FieldError::id_mismatch(format!(
                "`id` \"{id}\" does not match the directory \"{slug}\" (expected \"p-{slug}\")"
            )));
        }
        let title =
            title.ok_or_else(|| FieldError::schema("the body has no level-1 heading (title)"))?;
        Ok(ProjectHead {
            id: id.to_string(),
            slug: slug.to_string(),
            title: title.to_string(),
            status: f.enum_str("status", &PROJECT_STATUSES)?.to_string(),
            stage: f.str("stage")?.to_string(),
            owner: f.str("owner")?.to_string(),
        })
    }
}
