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

/// Bytes of decoded objects a handle keeps.
const OBJECT_CACHE: usize = 64 << 20;

/// Bytes of delta bases a handle keeps, in at most 64 entries: a history whose commits each
/// rewrite one large tree stores most of those trees as deltas of one another, chains up to
/// 50 deep, and without this each is resolved from its chain's base (git keeps such a
/// cache too, `core.deltaBaseCacheLimit`).
const DELTA_BASE_CACHE: usize = 16 << 20;

/// Every commit reachable from one base, and its first-parent line: ancestry of many tips in
/// one pass (a lookup per tip, and a walk only over a tip's own commits).
pub struct Ancestry<'r> {
    repo: &'r Repo,
    base: gix::ObjectId,
    reachable: HashSet<gix::ObjectId>,
    mainline: HashSet<gix::ObjectId>,
}

impl Ancestry<'_> {
    /// Whether `sha` is the base or one of its ancestors.
    pub fn contains(&self, sha: &str) -> bool {
        oid(sha).is_ok_and(|id| self.reachable.contains(&id))
    }

    /// Whether `sha` is on the base's first-parent line.
    pub fn on_mainline(&self, sha: &str) -> bool {
        oid(sha).is_ok_and(|id| self.mainline.contains(&id))
    }

    /// The commits reachable from `tip` but not from the base (`base..tip`), and where they
    /// meet the base's history: walked from the tip down to the base's history only.
    fn unique(&self, tip: gix::ObjectId) -> Result<(usize, Vec<gix::ObjectId>), Error> {
        let mut seen = HashSet::new();
        let mut boundary = Vec::new();
        let mut stack = vec![tip];
        let mut count = 0;
        while let Some(id) = stack.pop() {
            if self.reachable.contains(&id) {
                if !boundary.contains(&id) {
                    boundary.push(id);
                }
                continue;
            }
            if !seen.insert(id) {
                continue;
            }
            count += 1;
            let commit = self.repo.repo.find_commit(id).map_err(Error::gix)?;
            stack.extend(commit.parent_ids().map(|p| p.detach()));
        }
        Ok((count, boundary))
    }

    /// How many commits of `tip` are not on the base.
    pub fn unique_count(&self, tip: &str) -> Result<usize, Error> {
        Ok(self.unique(oid(tip)?)?.0)
    }

    /// [`Repo::holds_work_of`] against this base, finding the fork point from the tip's own
    /// commits when they meet the base's history in one commit.
    pub fn holds_work_of(&self, tip: &str, landed: &str) -> Result<bool, Error> {
        let t = oid(tip)?;
        let fork = match self.unique(t)?.1.as_slice() {
            [one] => Some(*one),
            _ => self
                .repo
                .repo
                .merge_base(t, self.base)
                .map_err(Error::gix)?
                .map(|m| m.detach()),
        };
        match fork {
            Some(fork) => self.repo.tree_holds(fork, t, oid(landed)?),
            None => Ok(false),
        }
    }
}

/// An open repository.
pub struct Repo {
    pub(super) repo: gix::Repository,
}

impl Repo {
    /// Opens the repository whose work tree (main or linked) is `root`.
    pub fn open(root: &Path) -> Result<Repo, Error> {
        let mut repo = gix::open(root).map_err(|_| Error::NotARepo {
            path: root.display().to_string(),
        })?;
        // Comparing many branches reads the same large trees (a directory of thousands of
        // files) again and again; a bounded cache keeps them decoded once.
        repo.object_cache_size_if_unset(OBJECT_CACHE);
        repo.objects.set_pack_cache(|| {
            Box::new(gix::odb::pack::cache::lru::StaticLinkedList::<64>::new(
                DELTA_BASE_CACHE,
            ))
        });
        Ok(Repo { repo })
    }

    /// [`Repo::open`] for a call that reads each object about once (a review of two trees,
    /// a task's history): no object cache, which would keep 64 MiB of objects never asked for
    /// again (`log` over 1,000 commits: 119 -> 55 MiB, same speed).
    pub fn open_reading_once(root: &Path) -> Result<Repo, Error> {
        let mut repo = Repo::open(root)?;
        repo.repo.objects.unset_object_cache();
        Ok(repo)
    }

    /// Reachability from `base`, found in one walk of its history (through the commit-graph
    /// when the repository has one), for testing any number of tips against it.
    pub fn ancestry(&self, base: &str) -> Result<Ancestry<'_>, Error> {
        let base = oid(base)?;
        let mut reachable = HashSet::new();
        let walk = self.repo.rev_walk([base]).all().map_err(Error::gix)?;
        for info in walk {
            reachable.insert(info.map_err(Error::gix)?.id);
        }
        let mut mainline = HashSet::new();
        let walk = self
            .repo
            .rev_walk([base])
            .first_parent_only()
            .all()
            .map_err(Error::gix)?;
        for info in walk {
            mainline.insert(info.map_err(Error::gix)?.id);
        }
        Ok(Ancestry {
            repo: self,
            base,
            reachable,
            mainline,
        })
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

    /// The commit a full ref name points to (peeled); `None` when the ref does not exist or
    /// the name is not one git allows.
    pub fn resolve(&self, name: &str) -> Result<Option<String>, Error> {
        // A name git would refuse (a control character, `..`, a space) names no ref: a task
        // file's hand-written `delivery.branch` must not fail the whole observation.
        if gix::refs::FullName::try_from(name).is_err() {
            return Ok(None);
        }
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

    /// The committer time of a commit, in seconds since the epoch; `None` when the commit is
    /// not in this repository.
    pub fn commit_time(&self, sha: &str) -> Option<i64> {
        let id = gix::ObjectId::from_hex(sha.as_bytes()).ok()?;
        let commit = self.repo.find_commit(id).ok()?;
        commit.time().ok().map(|t| t.seconds)
    }

    /// Whether `landed`'s tree has, at every path that differs between `fork` and `tip`, the
    /// content (or absence) and mode it has at `tip`; `false` when the trees are equal.
    fn tree_holds(
        &self,
        fork: gix::ObjectId,
        tip: gix::ObjectId,
        landed: gix::ObjectId,
    ) -> Result<bool, Error> {
        let tree_of = |id: gix::ObjectId| -> Result<gix::ObjectId, Error> {
            let commit = self.repo.find_commit(id).map_err(Error::gix)?;
            commit.tree_id().map(|i| i.detach()).map_err(Error::gix)
        };
        let (a, b) = (tree_of(fork)?, tree_of(tip)?);
        if a == b {
            return Ok(false);
        }
        self.holds(Some(a), Some(b), Some(tree_of(landed)?))
    }

    /// [`Repo::tree_holds`] below one directory, whose tree is `a` at the fork, `b` at the tip
    /// and `l` on the landed commit (`None`: no such directory there). The three trees are
    /// walked side by side: only subtrees whose ids differ between fork and tip are opened, a
    /// subtree the landed commit has exactly as the tip has it is not opened at all, and a
    /// name is looked up in the landed tree by binary search. So the cost is the size of
    /// what the branch changed, with no per-path allocation.
    fn holds(
        &self,
        a: Option<gix::ObjectId>,
        b: Option<gix::ObjectId>,
        l: Option<gix::ObjectId>,
    ) -> Result<bool, Error> {
        use std::cmp::Ordering;
        if a == b || b == l {
            return Ok(true);
        }
        let read = |id: Option<gix::ObjectId>| -> Result<Option<gix::Tree<'_>>, Error> {
            id.map(|id| self.repo.find_tree(id).map_err(Error::gix))
                .transpose()
        };
        let (ta, tb, tl) = (read(a)?, read(b)?, read(l)?);
        fn decode<'t>(
            t: &'t Option<gix::Tree<'_>>,
        ) -> Result<Option<gix::objs::TreeRef<'t>>, Error> {
            t.as_ref()
                .map(|t| t.decode().map_err(Error::gix))
                .transpose()
        }
        let (da, db, dl) = (decode(&ta)?, decode(&tb)?, decode(&tl)?);
        let ea: &[gix::objs::tree::EntryRef<'_>] = da.as_ref().map_or(&[], |d| &d.entries);
        let eb: &[gix::objs::tree::EntryRef<'_>] = db.as_ref().map_or(&[], |d| &d.entries);
        let landed = |name: &gix::bstr::BStr, dir: bool| {
            dl.as_ref()
                .and_then(|d| d.bisect_entry(name, dir))
                .map(|e| (e.oid.to_owned(), e.mode))
        };
        let (mut i, mut j) = (0, 0);
        while i < ea.len() || j < eb.len() {
            let order = match (ea.get(i), eb.get(j)) {
                (Some(x), Some(y)) => gix::objs::tree::EntryRef::cmp(x, y),
                (Some(_), None) => Ordering::Less,
                _ => Ordering::Greater,
            };
            let (x, y) = match order {
                Ordering::Equal => {
                    i += 1;
                    j += 1;
                    (ea.get(i - 1), eb.get(j - 1))
                }
                Ordering::Less => {
                    i += 1;
                    (ea.get(i - 1), None)
                }
                Ordering::Greater => {
                    j += 1;
                    (None, eb.get(j - 1))
                }
            };
            if let (Some(x), Some(y)) = (x, y)
                && x.oid == y.oid
                && x.mode == y.mode
            {
                continue;
            }
            let Some(name) = x.or(y).map(|e| e.filename) else {
                continue;
            };
            let tree_of = |e: Option<&gix::objs::tree::EntryRef<'_>>| {
                e.filter(|e| e.mode.is_tree()).map(|e| e.oid.to_owned())
            };
            let file_of = |e: Option<&gix::objs::tree::EntryRef<'_>>| {
                e.filter(|e| !e.mode.is_tree())
                    .map(|e| (e.oid.to_owned(), e.mode))
            };
            let (xt, yt) = (tree_of(x), tree_of(y));
            if xt != yt && !self.holds(xt, yt, landed(name, true).map(|(id, _)| id))? {
                return Ok(false);
            }
            let (xf, yf) = (file_of(x), file_of(y));
            if xf != yf && landed(name, false) != yf {
                return Ok(false);
            }
        }
        Ok(true)
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

    /// Creates every ref `(name, sha)` in one transaction, each only if it does not exist
    /// (compare-and-swap): one existing fails them all and creates none.
    pub fn create_refs(&self, refs: &[(String, String)], message: &str) -> Result<(), Error> {
        if refs.is_empty() {
            return Ok(());
        }
        let mut edits = Vec::with_capacity(refs.len());
        for (name, sha) in refs {
            edits.push(RefEdit {
                change: Change::Update {
                    log: LogChange {
                        mode: RefLog::AndReference,
                        force_create_reflog: false,
                        message: BString::from(message),
                    },
                    expected: PreviousValue::MustNotExist,
                    new: Target::Object(oid(sha)?),
                },
                name: FullName::try_from(name.as_str()).map_err(Error::gix)?,
                deref: false,
            });
        }
        self.repo.edit_references(edits).map_err(Error::gix)?;
        Ok(())
    }

    /// Deletes every local branch `(name, sha)` in one transaction, only if each still points
    /// to its `sha` and is checked out nowhere: one that does not fails them all.
    pub fn delete_branches_if_unchanged(
        &mut self,
        branches: &[(String, String)],
    ) -> Result<(), Error> {
        if branches.is_empty() {
            return Ok(());
        }
        let mut list = Vec::with_capacity(branches.len());
        for (name, sha) in branches {
            list.push((
                FullName::try_from(name.as_str()).map_err(Error::gix)?,
                Target::Object(oid(sha)?),
            ));
        }
        self.repo
            .delete_local_branches_if_unchanged(list)
            .map_err(Error::gix)?;
        Ok(())
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
