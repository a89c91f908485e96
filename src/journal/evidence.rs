//! Evidence records (FORMAT §18.1): `evidence/<tool>/<ULID>.toml`, created new and never
//! changed. They prove what a run observed and did, and obey the content rule: only ids,
//! digests, SHAs, counts, enumeration values and repo paths; never a token, environment value,
//! body text or absolute path. The types below admit nothing else by construction of their
//! callers, which fill them from plans made of those values.

use std::path::PathBuf;

use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, value};
use ulid::Ulid;

use crate::model::id::ulid_time;
use crate::model::{Grant, toml_time};
use crate::objects;
use crate::workspace::Workspace;

/// One action or observation of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceItem {
    /// An object id, ref name or repo path.
    pub subject: String,
    pub action: String,
    /// `done`, `skipped`, `failed`, `kept` or `withheld`.
    pub result: String,
    /// A SHA, digest or `none`.
    pub before: Option<String>,
    pub after: Option<String>,
    /// Tool-defined enumeration values.
    pub reasons: Vec<String>,
}

/// An evidence record to create.
#[derive(Debug, Clone)]
pub struct Evidence<'a> {
    pub id: Ulid,
    /// `cleanup`, `reconcile-delivery`, `reconcile-events`, ...
    pub tool: &'a str,
    pub created_by: &'a str,
    pub grant: Grant,
    /// `preview`, `completed`, `partial` or `refused`.
    pub outcome: &'a str,
    pub txn: Option<&'a str>,
    pub plan_digest: Option<&'a str>,
    pub git_head: Option<&'a str>,
    /// Integer counters.
    pub summary: Vec<(&'a str, i64)>,
    pub items: Vec<EvidenceItem>,
}

/// Creates the record; returns its path.
pub fn write(ws: &Workspace, ev: &Evidence<'_>) -> Result<PathBuf, objects::Error> {
    let mut doc = DocumentMut::new();
    doc["id"] = value(ev.id.to_string());
    doc["kind"] = value("evidence");
    doc["tool"] = value(ev.tool);
    doc["created"] = value(toml_time(ulid_time(ev.id)));
    doc["created_by"] = value(ev.created_by);
    doc["grant"] = value(ev.grant.as_str());
    doc["outcome"] = value(ev.outcome);
    if let Some(t) = ev.txn {
        doc["txn"] = value(t);
    }
    if let Some(d) = ev.plan_digest {
        doc["plan_digest"] = value(d);
    }
    if let Some(h) = ev.git_head {
        doc["git_head"] = value(h);
    }
    if !ev.summary.is_empty() {
        let mut t = InlineTable::new();
        for (k, v) in &ev.summary {
            t.insert(*k, (*v).into());
        }
        doc["summary"] = value(t);
    }
    if !ev.items.is_empty() {
        let mut aot = ArrayOfTables::new();
        for item in &ev.items {
            let mut t = Table::new();
            t["subject"] = value(item.subject.as_str());
            t["action"] = value(item.action.as_str());
            t["result"] = value(item.result.as_str());
            if let Some(b) = &item.before {
                t["before"] = value(b.as_str());
            }
            if let Some(a) = &item.after {
                t["after"] = value(a.as_str());
            }
            if !item.reasons.is_empty() {
                let mut arr = Array::new();
                for r in &item.reasons {
                    arr.push(r.as_str());
                }
                t["reasons"] = value(arr);
            }
            aot.push(t);
        }
        doc["item"] = Item::ArrayOfTables(aot);
    }
    let path = ws.path(&["evidence", ev.tool, &format!("{}.toml", ev.id)]);
    ws.fs.create_new(&path, doc.to_string().as_bytes())?;
    Ok(path)
}

/// Every `[[item]]` of every record of `tool`, with the record's id, oldest record first.
/// Tools use it to deduplicate (a delivery already recorded is not recorded again); a record
/// that does not parse is a warning.
pub fn items(
    ws: &Workspace,
    tool: &str,
) -> Result<crate::objects::Listing<(String, EvidenceItem)>, objects::Error> {
    let mut listing = crate::objects::Listing::default();
    for (name, path) in ws.fs.list_dir(&ws.path(&["evidence", tool]))? {
        let Some(id) = name.strip_suffix(".toml") else {
            continue;
        };
        let record = match ws
            .fs
            .read(&path)
            .map_err(objects::Error::from)
            .and_then(|b| {
                crate::store::TomlRecord::parse(&ws.display(&path), &b)
                    .map_err(objects::Error::malformed)
            }) {
            Ok(r) => r,
            Err(objects::Error::Store(crate::store::Error::Malformed(p))) => {
                listing.warnings.push(p);
                continue;
            }
            Err(e) => return Err(e),
        };
        let Some(aot) = record.doc.get("item").and_then(|i| i.as_array_of_tables()) else {
            continue;
        };
        for t in aot.iter() {
            let s = |k: &str| t.get(k).and_then(|v| v.as_str()).map(str::to_string);
            listing.items.push((
                id.to_string(),
                EvidenceItem {
                    subject: s("subject").unwrap_or_default(),
                    action: s("action").unwrap_or_default(),
                    result: s("result").unwrap_or_default(),
                    before: s("before"),
                    after: s("after"),
                    reasons: t
                        .get("reasons")
                        .and_then(|r| r.as_array())
                        .map(|a| {
                            a.iter()
                                .filter_map(|v| v.as_str())
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default(),
                },
            ));
        }
    }
    Ok(listing)
}
