//! gix: reading history, refs and worktrees, and the compare-and-swap ref edits that make an
//! apply safe to repeat.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use gix::bstr::{BString, ByteSlice};
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use gix::refs::{FullName, Target};

use super::Error;

/// Where `HEAD` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// A branch without a commit yet (a repository with no commits).
    Unborn { branch: String },
    /// A commit, not a branch.
    Detached { sha: String },
    /// A branch (full ref name) and its commit.
    Branch { name: String, sha: String },
}

/// A linked worktree, as its administrative entry under `.git/worktrees/` describes it.
#[derive(Debug, Clone)]
pub struct Worktree {
    /// The administrative id (the directory name under `.git/worktrees/`).
    pub id: String,
    /// The checkout directory, as recorded (it may be gone).
    pub path: PathBuf,
    pub locked: bool,
    /// Its checkout is gone: `git worktree prune` would remove the entry.
    pub prunable: bool,
    /// Where its `HEAD` points; `None` when it cannot be read.
    pub head: Option<Head>,
}

/// What a status walk found in a work tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cleanliness {
    /// Tracked files changed (staged or not).
    pub modified: usize,
    /// Files git does not track and does not ignore.
    pub untracked: usize,
}

impl Cleanliness {
    pub fn is_clean(&self) -> bool {
        self.modified == 0 && self.untracked == 0
    }
}

/// An open repository.
pub struct Repo {
    pub(super) repo: gix::Repository,
}

impl Repo {
    /// Opens the repository whose work tree (main or linked) is `root`.
    pub fn open(root: &Path) -> Result<Repo, Error> {
        let repo = gix::open(root).map_err(|_| Error::NotARepo {
            path: root.display().to_string(),
        })?;
        Ok(Repo { repo })
    }

    /// The work tree of this repository handle, if it has one.
    pub fn work_dir(&self) -> Option<&Path> {
        self.repo.workdir()
    }

    /// The common `.git` directory (shared by every worktree).
    pub fn common_dir(&self) -> &Path {
        self.repo.common_dir()
    }

    /// Where `HEAD` points.
    pub fn head(&self) -> Result<Head, Error> {
        let mut head = self.repo.head().map_err(Error::gix)?;
        if head.is_unborn() {
            let name = head
                .referent_name()
                .map(|n| n.as_bstr().to_string())
                .unwrap_or_default();
            return Ok(Head::Unborn {
                branch: name.trim_start_matches("refs/heads/").to_string(),
            });
        }
        let name = head.referent_name().map(|n| n.as_bstr().to_string());
        let sha = head.peel_to_commit().map_err(Error::gix)?.id.to_string();
        Ok(match name {
            Some(name) => Head::Branch { name, sha },
            None => Head::Detached { sha },
        })
    }

    /// True for a shallow clone: history is cut, so ancestry cannot be proven. A repository
    /// whose shallow state cannot be read counts as shallow: nothing is proven on a guess.
    pub fn is_shallow(&self) -> bool {
        self.repo.is_shallow().unwrap_or(true)
    }

    /// The commit a full ref name points to (peeled); `None` when the ref does not exist.
    pub fn resolve(&self, name: &str) -> Result<Option<String>, Error> {
        let Some(mut r) = self.repo.try_find_reference(name).map_err(Error::gix)? else {
            return Ok(None);
        };
        let id = r.peel_to_id().map_err(Error::gix)?;
        Ok(Some(id.to_string()))
    }

    /// Whether the object database has this commit.
    pub fn has_commit(&self, sha: &str) -> bool {
        gix::ObjectId::from_hex(sha.as_bytes())
            .ok()
            .and_then(|id| self.repo.find_commit(id).ok())
            .is_some()
    }

    /// Every ref under `prefix` (e.g. `refs/heads/dacli/`) with the commit it points to, by name.
    pub fn refs_with_prefix(&self, prefix: &str) -> Result<Vec<(String, String)>, Error> {
        let platform = self.repo.references().map_err(Error::gix)?;
        let iter = platform
            .prefixed(prefix.trim_end_matches('/'))
            .map_err(Error::gix)?;
        let mut out = Vec::new();
        for r in iter {
            let mut r = r.map_err(Error::gix)?;
            let name = r.name().as_bstr().to_string();
            if !name.starts_with(prefix) {
                continue;
            }
            let id = r.peel_to_id().map_err(Error::gix)?;
            out.push((name, id.to_string()));
        }
        out.sort();
        Ok(out)
    }

    /// Whether `a` is an ancestor of `b` (or equal). No merge base means `false`, never an error.
    pub fn is_ancestor(&self, a: &str, b: &str) -> Result<bool, Error> {
        let (a, b) = (oid(a)?, oid(b)?);
        if a == b {
            return Ok(true);
        }
        let base = self.repo.merge_base(a, b).map_err(Error::gix)?;
        Ok(base.is_some_and(|m| m.detach() == a))
    }

    /// The commits of `base`'s first-parent line (the mainline).
    pub fn first_parent_line(&self, base: &str) -> Result<HashSet<String>, Error> {
        let walk = self
            .repo
            .rev_walk([oid(base)?])
            .first_parent_only()
            .all()
            .map_err(Error::gix)?;
        let mut out = HashSet::new();
        for info in walk {
            out.insert(info.map_err(Error::gix)?.id.to_string());
        }
        Ok(out)
    }

    /// The commits reachable from `tip` but not from `base` (`base..tip`), newest first.
    pub fn unique_commits(&self, tip: &str, base: &str) -> Result<Vec<String>, Error> {
        let walk = self
            .repo
            .rev_walk([oid(tip)?])
            .with_hidden([oid(base)?])
            .all()
            .map_err(Error::gix)?;
        let mut out = Vec::new();
        for info in walk {
            out.push(info.map_err(Error::gix)?.id.to_string());
        }
        Ok(out)
    }

    /// Commits reachable from `tips` whose message ends in a trailer named by one of `keys`
    /// (compared case-insensitively), with every such value: `(commit, values)`. One walk.
    pub fn trailers(
        &self,
        tips: &[String],
        keys: &[&str],
    ) -> Result<Vec<(String, Vec<String>)>, Error> {
        if tips.is_empty() {
            return Ok(Vec::new());
        }
        let ids = tips.iter().map(|t| oid(t)).collect::<Result<Vec<_>, _>>()?;
        let walk = self.repo.rev_walk(ids).all().map_err(Error::gix)?;
        let mut out = Vec::new();
        for info in walk {
            let info = info.map_err(Error::gix)?;
            let commit = info.object().map_err(Error::gix)?;
            let message = commit.message().map_err(Error::gix)?;
            let Some(body) = message.body() else {
                continue;
            };
            let values: Vec<String> = body
                .trailers()
                .filter(|t| {
                    let token = t.token.to_str_lossy();
                    keys.iter().any(|k| token.eq_ignore_ascii_case(k))
                })
                .map(|t| t.value.to_str_lossy().trim().to_string())
                .collect();
            if !values.is_empty() {
                out.push((info.id.to_string(), values));
            }
        }
        Ok(out)
    }

    /// The linked worktrees (the main one excluded), by id.
    pub fn worktrees(&self) -> Result<Vec<Worktree>, Error> {
        let mut out = Vec::new();
        for proxy in self.repo.worktrees().map_err(Error::gix)? {
            let id = proxy.id().map(|i| i.to_string()).unwrap_or_default();
            let path = proxy.base().unwrap_or_default();
            let locked = proxy.is_locked();
            let prunable = proxy.is_prunable();
            let head = proxy
                .into_repo_with_possibly_inaccessible_worktree()
                .ok()
                .and_then(|r| Repo { repo: r }.head().ok());
            out.push(Worktree {
                id,
                path,
                locked,
                prunable,
                head,
            });
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    /// Branches (full names) checked out in any worktree, main included, with where.
    pub fn checked_out(&self) -> Result<BTreeMap<String, Vec<PathBuf>>, Error> {
        let mut out: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
        let main = self.repo.main_repo().map_err(Error::gix)?;
        let main = Repo { repo: main };
        let main_dir = main.work_dir().map(Path::to_path_buf).unwrap_or_default();
        match main.head()? {
            Head::Branch { name, .. } => out.entry(name).or_default().push(main_dir),
            Head::Unborn { branch } => out
                .entry(format!("refs/heads/{branch}"))
                .or_default()
                .push(main_dir),
            Head::Detached { .. } => {}
        }
        for wt in self.worktrees()? {
            if let Some(Head::Branch { name, .. }) = wt.head {
                out.entry(name).or_default().push(wt.path.clone());
            }
        }
        Ok(out)
    }

    /// The URL of a remote, when it is configured.
    pub fn remote_url(&self, remote: &str) -> Option<String> {
        self.repo
            .config_snapshot()
            .string(format!("remote.{remote}.url").as_str())
            .map(|u| u.to_string())
    }

    /// The repository's default branch: what `refs/remotes/origin/HEAD` names, else the branch
    /// checked out in the main worktree.
    pub fn default_branch(&self) -> Option<String> {
        let from_remote = self
            .repo
            .try_find_reference("refs/remotes/origin/HEAD")
            .ok()
            .flatten()
            .and_then(|r| match r.target() {
                gix::refs::TargetRef::Symbolic(name) => Some(
                    name.as_bstr()
                        .to_string()
                        .trim_start_matches("refs/remotes/origin/")
                        .to_string(),
                ),
                gix::refs::TargetRef::Object(_) => None,
            });
        if from_remote.is_some() {
            return from_remote;
        }
        let main = Repo {
            repo: self.repo.main_repo().ok()?,
        };
        match main.head().ok()? {
            Head::Branch { name, .. } => Some(name.trim_start_matches("refs/heads/").to_string()),
            Head::Unborn { branch } => Some(branch),
            Head::Detached { .. } => None,
        }
    }

    /// Whether git tracks `path`, or (for a directory) any file below it.
    pub fn is_tracked(&self, path: &str) -> Result<bool, Error> {
        let index = self.repo.index_or_empty().map_err(Error::gix)?;
        let want = path.trim_end_matches('/');
        let dir = format!("{want}/");
        Ok(index.entries().iter().any(|e| {
            let p = e.path(&index);
            p == want.as_bytes() || p.starts_with(dir.as_bytes())
        }))
    }

    /// Creates `name` at `sha` only if it does not exist (compare-and-swap). Returns `false`
    /// when it already points to `sha` (a repeated step), and fails when it points elsewhere.
    pub fn create_ref(&self, name: &str, sha: &str, message: &str) -> Result<bool, Error> {
        if let Some(existing) = self.resolve(name)? {
            return if existing == sha {
                Ok(false)
            } else {
                Err(Error::Git(format!(
                    "{name} already exists at {existing}, not {sha}"
                )))
            };
        }
        let edit = RefEdit {
            change: Change::Update {
                log: LogChange {
                    mode: RefLog::AndReference,
                    force_create_reflog: false,
                    message: BString::from(message),
                },
                expected: PreviousValue::MustNotExist,
                new: Target::Object(oid(sha)?),
            },
            name: FullName::try_from(name).map_err(Error::gix)?,
            deref: false,
        };
        self.repo.edit_reference(edit).map_err(Error::gix)?;
        Ok(true)
    }

    /// Deletes the local branch `name` only if it still points to `sha` and is checked out
    /// nowhere. Returns `false` when it is already gone.
    pub fn delete_branch_if_unchanged(&mut self, name: &str, sha: &str) -> Result<bool, Error> {
        if self.resolve(name)?.is_none() {
            return Ok(false);
        }
        let full = FullName::try_from(name).map_err(Error::gix)?;
        self.repo
            .delete_local_branches_if_unchanged([(full, Target::Object(oid(sha)?))])
            .map_err(Error::gix)?;
        Ok(true)
    }
}

/// What `git status` (untracked files included, ignored ones not) reports in the work tree at
/// `path`. gix's `is_dirty()` ignores untracked files, so it is no deletion gate; this is.
pub fn cleanliness(path: &Path) -> Result<Cleanliness, Error> {
    use gix::status::UntrackedFiles;
    let repo = gix::open(path).map_err(|_| Error::NotARepo {
        path: path.display().to_string(),
    })?;
    let iter = repo
        .status(gix::progress::Discard)
        .map_err(Error::gix)?
        .untracked_files(UntrackedFiles::Files)
        .into_iter(Vec::<BString>::new())
        .map_err(Error::gix)?;
    let mut c = Cleanliness::default();
    for item in iter {
        let item = item.map_err(Error::gix)?;
        if is_untracked(&item) {
            c.untracked += 1;
        } else {
            c.modified += 1;
        }
    }
    Ok(c)
}

fn is_untracked(item: &gix::status::Item) -> bool {
    use gix::status::index_worktree::Item as Iw;
    matches!(
        item,
        gix::status::Item::IndexWorktree(Iw::DirectoryContents { entry, .. })
            if entry.status == gix::dir::entry::Status::Untracked
    )
}

fn oid(sha: &str) -> Result<gix::ObjectId, Error> {
    gix::ObjectId::from_hex(sha.as_bytes()).map_err(|_| Error::Git(format!("`{sha}` is not a SHA")))
}
