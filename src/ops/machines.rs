//! Work across clones (FORMAT §22): the renumbering of task numbers a merge made shared.
//!
//! Numbers are display handles. After a merge two tasks of a project can share one; the task
//! with the older ULID keeps it, and every other task that shares a number with an older one
//! gets a new number from a plan every clone computes alike from the same files: those tasks
//! in ULID order take the numbers after the project's highest. Each owner writes only its
//! own tasks' new numbers, at its sync; the plan makes two owners in two clones agree.

use std::collections::BTreeMap;

use toml_edit::value;

use super::Error;
use super::lint_fix::{Fixer, may_write};
use crate::model::taskdoc::Stamp;
use crate::objects::{projects, tasks};
use crate::store::Document;
use crate::workspace::Workspace;

/// One task given a new number.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Renumbered {
    pub project: String,
    pub id: String,
    pub from: u32,
    pub to: u32,
}

/// The new numbers of the tasks of one project whose number an older task also has:
/// `(id, old, new)`, in ULID order, from `tasks` (`(id, number)` pairs).
pub fn plan(tasks: &[(String, u32)]) -> Vec<(String, u32, u32)> {
    let mut sorted: Vec<&(String, u32)> = tasks.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut holder: BTreeMap<u32, &str> = BTreeMap::new();
    let mut moving = Vec::new();
    for (id, n) in sorted {
        if holder.contains_key(n) {
            moving.push((id.clone(), *n));
        } else {
            holder.insert(*n, id);
        }
    }
    let mut next = tasks.iter().map(|(_, n)| *n).max().unwrap_or(0);
    moving
        .into_iter()
        .map(|(id, n)| {
            next += 1;
            (id, n, next)
        })
        .collect()
}

/// Gives every task `by.me` may write whose number an older task also has the number the
/// [`plan`] says, under the project's sequence lock and the task's lock, with a new `rev` and
/// a Log line. With `dry_run` only reports.
pub fn renumber_owned(
    by: &Fixer<'_>,
    ws: &Workspace,
    dry_run: bool,
) -> Result<Vec<Renumbered>, Error> {
    let mut out = Vec::new();
    for project in projects::list(ws)?.items {
        let slug = project.slug;
        let listed = crate::objects::index::tasks(ws, &slug)?;
        let pairs: Vec<(String, u32)> = listed
            .items
            .iter()
            .map(|e| (e.id().to_string(), e.number()))
            .collect();
        let mine: Vec<(String, u32, u32)> = plan(&pairs)
            .into_iter()
            .filter(|(id, _, _)| {
                listed
                    .items
                    .iter()
                    .find(|e| e.id() == id)
                    .is_some_and(|e| may_write(by, ws, e.owner()).unwrap_or(false))
            })
            .collect();
        if mine.is_empty() {
            continue;
        }
        if dry_run {
            out.extend(mine.into_iter().map(|(id, from, to)| Renumbered {
                project: slug.clone(),
                id,
                from,
                to,
            }));
            continue;
        }
        let _seq = ws.fs.lock(&ws.lock_path(&format!("seq-{slug}")))?;
        // Re-planned under the lock: the files may have changed since the first look.
        let listed = crate::objects::index::tasks(ws, &slug)?;
        let pairs: Vec<(String, u32)> = listed
            .items
            .iter()
            .map(|e| (e.id().to_string(), e.number()))
            .collect();
        for (id, from, to) in plan(&pairs) {
            if !mine.iter().any(|(m, _, _)| *m == id) {
                continue;
            }
            let ulid = id.strip_prefix("t-").unwrap_or(&id).to_string();
            let _task = ws.fs.lock(&ws.lock_path(&format!("task-{ulid}")))?;
            let t = tasks::reload(ws, &slug, &id)?;
            let mut doc = t.doc.clone();
            doc.front["rev"] = value((by.mint)().to_string());
            tasks::set_seq(&mut doc.front, to);
            doc.log_line(
                Stamp {
                    at: by.at,
                    by: by.me,
                    event: None,
                },
                &format!("renumbered {from:03} -> {to:03} (number shared after a merge)"),
            );
            let dest = tasks::file_for(ws, &slug, doc.status, &id, &t.task.slug);
            let rendered = Document::new(doc.front, doc.body).render();
            if dest == t.file {
                ws.fs.replace(&dest, rendered.as_bytes())?;
            } else {
                let _moving = ws.fs.lock(&tasks::moves_lock(ws, &slug))?;
                ws.fs.create_new(&dest, rendered.as_bytes())?;
                ws.fs.remove(&t.file)?;
            }
            out.push(Renumbered {
                project: slug.clone(),
                id,
                from,
                to,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::plan;

    #[test]
    fn the_older_ulid_keeps_the_number_and_the_rest_follow_the_highest_in_ulid_order() {
        let tasks = vec![
            ("t-02".to_string(), 6),
            ("t-01".to_string(), 6),
            ("t-03".to_string(), 7),
            ("t-04".to_string(), 7),
            ("t-00".to_string(), 5),
        ];
        assert_eq!(
            plan(&tasks),
            vec![("t-02".to_string(), 6, 8), ("t-04".to_string(), 7, 9)]
        );
        assert!(plan(&[("t-1".into(), 1), ("t-2".into(), 2)]).is_empty());
    }
}
