//! gix: reading committed trees and blobs without a checkout, for `review` and `log`.
//!
//! A comparison walks two trees side by side and descends only into subtrees whose ids differ,
//! so comparing two commits costs the size of what changed, not of the workspace.

use std::collections::BTreeMap;

use gix::ObjectId;
use gix::bstr::ByteSlice;

use super::{Error, Repo};

/// One commit, as `log` shows it.
#[derive(Debug, Clone)]
pub struct CommitInfo {
    pub sha: String,
    pub author: String,
    pub email: String,
    /// Author time, seconds since the Unix epoch.
    pub time: i64,
    pub summary: String,
    pub parents: Vec<String>,
    /// The commit's root tree.
    pub tree: String,
}

/// A file that differs between two trees: its path (relative to the compared trees) and its
/// blob on each side (`None`: absent on that side).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub path: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

/// Git's order of tree entries: a tree sorts as if its name ended in `/`.
fn key_cmp(
    a: &gix::objs::tree::EntryRef<'_>,
    b: &gix::objs::tree::EntryRef<'_>,
) -> std::cmp::Ordering {
    let (at, bt) = (a.mode.is_tree(), b.mode.is_tree());
    if at == bt {
        return a.filename.cmp(b.filename);
    }
    let key = |name: &[u8], tree: bool| {
        let mut k = name.to_vec();
        if tree {
            k.push(b'/');
        }
        k
    };
    key(a.filename, at).cmp(&key(b.filename, bt))
}

/// The next entry of a tree being read (`None`: no tree, or its end).
fn next_entry<'a>(
    it: &mut Option<gix::objs::TreeRefIter<'a>>,
) -> Result<Option<gix::objs::tree::EntryRef<'a>>, Error> {
    match it {
        Some(it) => it.next().transpose().map_err(Error::gix),
        None => Ok(None),
    }
}

/// The id git gives `bytes` as a blob (what `git hash-object` prints).
pub fn blob_id(bytes: &[u8]) -> String {
    gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, bytes)
        .map(|id| id.to_string())
        .unwrap_or_default()
}

impl Repo {
    /// The commit a revision names (`HEAD`, a branch, a tag, a SHA, `main~3`...).
    pub fn rev_parse(&self, spec: &str) -> Result<String, Error> {
        let id = self
            .repo
            .rev_parse_single(spec)
            .map_err(|e| Error::Git(format!("`{spec}` names no commit: {e}")))?;
        let commit = id
            .object()
            .map_err(Error::gix)?
            .peel_to_commit()
            .map_err(|e| Error::Git(format!("`{spec}` names no commit: {e}")))?;
        Ok(commit.id.to_string())
    }

    /// What `log` shows of a commit.
    pub fn commit_info(&self, sha: &str) -> Result<CommitInfo, Error> {
        let commit = self.repo.find_commit(oid(sha)?).map_err(Error::gix)?;
        let author = commit.author().map_err(Error::gix)?;
        let time = author.time().map(|t| t.seconds).unwrap_or(0);
        let summary = commit
            .message()
            .map(|m| m.summary().to_str_lossy().into_owned())
            .unwrap_or_default();
        Ok(CommitInfo {
            sha: commit.id.to_string(),
            author: author.name.to_str_lossy().into_owned(),
            email: author.email.to_str_lossy().into_owned(),
            time,
            summary,
            parents: commit.parent_ids().map(|p| p.to_string()).collect(),
            tree: commit.tree_id().map_err(Error::gix)?.to_string(),
        })
    }

    /// The commits reachable from `tip`, newest first (by commit time), at most `limit`.
    pub fn history(&self, tip: &str, limit: Option<usize>) -> Result<Vec<String>, Error> {
        use gix::revision::walk::Sorting;
        let walk = self
            .repo
            .rev_walk([oid(tip)?])
            .sorting(Sorting::ByCommitTime(Default::default()))
            .all()
            .map_err(Error::gix)?;
        let mut out = Vec::new();
        for info in walk {
            if limit.is_some_and(|l| out.len() >= l) {
                break;
            }
            out.push(info.map_err(Error::gix)?.id.to_string());
        }
        Ok(out)
    }

    /// The best common ancestor of two commits, if they have one.
    pub fn merge_base(&self, a: &str, b: &str) -> Result<Option<String>, Error> {
        let base = self.repo.merge_base(oid(a)?, oid(b)?).map_err(Error::gix)?;
        Ok(base.map(|id| id.to_string()))
    }

    /// The tree at `path` (`/`-separated, relative to the root) in `tree`; `None` when there is
    /// no directory there.
    pub fn subtree(&self, tree: &str, path: &str) -> Result<Option<String>, Error> {
        let mut at = oid(tree)?;
        for segment in path.split('/').filter(|s| !s.is_empty()) {
            let t = self.repo.find_tree(at).map_err(Error::gix)?;
            let decoded = t.decode().map_err(Error::gix)?;
            let Some(e) = decoded
                .entries
                .iter()
                .find(|e| e.filename == segment.as_bytes() && e.mode.is_tree())
            else {
                return Ok(None);
            };
            at = e.oid.to_owned();
        }
        Ok(Some(at.to_string()))
    }

    /// Every file below `tree`, by path relative to it, with its blob id. `skip` is asked about
    /// every entry's path (directories without the trailing `/`) and prunes what it accepts.
    pub fn list_tree(
        &self,
        tree: &str,
        skip: &dyn Fn(&str) -> bool,
    ) -> Result<BTreeMap<String, String>, Error> {
        let mut out = BTreeMap::new();
        self.list_into(oid(tree)?, "", skip, &mut out)?;
        Ok(out)
    }

    fn list_into(
        &self,
        tree: ObjectId,
        prefix: &str,
        skip: &dyn Fn(&str) -> bool,
        out: &mut BTreeMap<String, String>,
    ) -> Result<(), Error> {
        for (name, id, is_tree) in self.entries(tree)? {
            let path = format!("{prefix}{name}");
            if skip(&path) {
                continue;
            }
            if is_tree {
                self.list_into(id, &format!("{path}/"), skip, out)?;
            } else {
                out.insert(path, id.to_string());
            }
        }
        Ok(())
    }

    /// The files that differ between two trees (either may be absent: everything is added or
    /// removed), by path. Subtrees with equal ids are not opened.
    pub fn diff_trees(
        &self,
        old: Option<&str>,
        new: Option<&str>,
        skip: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<Changed>, Error> {
        let mut out = Vec::new();
        let old = old.map(oid).transpose()?;
        let new = new.map(oid).transpose()?;
        self.diff_into(old, new, "", skip, &mut out)?;
        Ok(out)
    }

    fn diff_into(
        &self,
        old: Option<ObjectId>,
        new: Option<ObjectId>,
        prefix: &str,
        skip: &dyn Fn(&str) -> bool,
        out: &mut Vec<Changed>,
    ) -> Result<(), Error> {
        if old == new {
            return Ok(());
        }
        let old_tree = old
            .map(|t| self.repo.find_tree(t).map_err(Error::gix))
            .transpose()?;
        let new_tree = new
            .map(|t| self.repo.find_tree(t).map_err(Error::gix))
            .transpose()?;
        // Entries are read straight from each tree's bytes: a directory of ten thousand
        // files is compared once per commit of a history, and listing it first cost a
        // quarter of `log`.
        let hash = self.repo.object_hash();
        let mut a = old_tree
            .as_ref()
            .map(|t| gix::objs::TreeRefIter::from_bytes(&t.data, hash));
        let mut b = new_tree
            .as_ref()
            .map(|t| gix::objs::TreeRefIter::from_bytes(&t.data, hash));
        let (mut x, mut y) = (next_entry(&mut a)?, next_entry(&mut b)?);
        // Both trees are in git's order (a tree sorts as its name followed by `/`), so one
        // merge walk pairs them; equal entries cost one comparison and no allocation.
        while x.is_some() || y.is_some() {
            let order = match (&x, &y) {
                (Some(x), Some(y)) => key_cmp(x, y),
                (Some(_), None) => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            let (o, n) = match order {
                std::cmp::Ordering::Equal => {
                    let pair = (x, y);
                    (x, y) = (next_entry(&mut a)?, next_entry(&mut b)?);
                    pair
                }
                std::cmp::Ordering::Less => {
                    let pair = (x, None);
                    x = next_entry(&mut a)?;
                    pair
                }
                std::cmp::Ordering::Greater => {
                    let pair = (None, y);
                    y = next_entry(&mut b)?;
                    pair
                }
            };
            if let (Some(x), Some(y)) = (o, n)
                && x.oid == y.oid
            {
                continue;
            }
            let name = o
                .or(n)
                .map(|e| e.filename.to_str_lossy().into_owned())
                .unwrap_or_default();
            let path = format!("{prefix}{name}");
            if skip(&path) {
                continue;
            }
            let is_tree = o.or(n).is_some_and(|e| e.mode.is_tree());
            if is_tree {
                self.diff_into(
                    o.map(|e| e.oid.to_owned()),
                    n.map(|e| e.oid.to_owned()),
                    &format!("{path}/"),
                    skip,
                    out,
                )?;
            } else {
                out.push(Changed {
                    path,
                    old: o.map(|e| e.oid.to_string()),
                    new: n.map(|e| e.oid.to_string()),
                });
            }
        }
        Ok(())
    }

    /// The entries of one tree: name, id, whether it is a tree. Submodules and symlinks count
    /// as files (their ids change when they do).
    fn entries(&self, tree: ObjectId) -> Result<Vec<(String, ObjectId, bool)>, Error> {
        let t = self.repo.find_tree(tree).map_err(Error::gix)?;
        let decoded = t.decode().map_err(Error::gix)?;
        Ok(decoded
            .entries
            .iter()
            .map(|e| {
                (
                    e.filename.to_str_lossy().into_owned(),
                    e.oid.to_owned(),
                    e.mode.is_tree(),
                )
            })
            .collect())
    }

    /// The bytes of a blob.
    pub fn blob(&self, id: &str) -> Result<Vec<u8>, Error> {
        let blob = self.repo.find_blob(oid(id)?).map_err(Error::gix)?;
        Ok(blob.data.clone())
    }
}

fn oid(sha: &str) -> Result<ObjectId, Error> {
    ObjectId::from_hex(sha.as_bytes()).map_err(|_| Error::Git(format!("`{sha}` is not a SHA")))
}
