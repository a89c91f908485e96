//! Builds that do not redo themselves: the build script watches only paths that exist (cargo
//! counts a missing `rerun-if-changed` path as changed, and would rerun the script and
//! rebuild and relink the crate on every `cargo build`), in every shape of checkout, and still
//! finds the commit. The script's own logic (`build/git_sha.rs`) is tested directly: a real
//! `cargo build` of a fresh copy takes minutes on the target machine.

#[path = "../../build/git_sha.rs"]
mod git_sha;

use std::path::Path;

use crate::support::git;

fn short_head(dir: &Path) -> String {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args(["rev-parse", "--short=7", "HEAD"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn commit(dir: &Path, name: &str) {
    std::fs::write(dir.join(name), name).unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", name]);
}

/// Every watched path exists (so a second build with nothing changed reruns nothing), and
/// the commit read is git's.
fn assert_watches_only_existing(dot_git: &Path, expect: Option<&str>) {
    let (sha, watched) = git_sha::head_commit(dot_git);
    assert!(
        !watched.is_empty(),
        "nothing watched for {}",
        dot_git.display()
    );
    for p in &watched {
        assert!(
            p.exists(),
            "{} is watched but does not exist: cargo would rebuild on every build",
            p.display()
        );
    }
    assert_eq!(sha.as_deref(), expect, "watched: {watched:?}");
}

#[test]
fn a_fresh_git_init_without_packed_refs_watches_only_existing_paths() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    // Unborn: no ref file yet, HEAD names one.
    assert_watches_only_existing(&repo.join(".git"), None);
    commit(repo, "a");
    assert!(!repo.join(".git/packed-refs").exists());
    let head = short_head(repo);
    assert_watches_only_existing(&repo.join(".git"), Some(&head));
    let (_, watched) = git_sha::head_commit(&repo.join(".git"));
    assert!(
        watched.iter().any(|p| p.ends_with("refs/heads/main")),
        "the branch's loose ref is watched: {watched:?}"
    );
}

#[test]
fn packed_refs_and_a_linked_worktree_are_read_and_watched() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("r");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    commit(&repo, "a");
    git(&repo, &["pack-refs", "--all"]);
    assert!(!repo.join(".git/refs/heads/main").exists());
    let head = short_head(&repo);
    assert_watches_only_existing(&repo.join(".git"), Some(&head));

    let wt = dir.path().join("wt");
    git(
        &repo,
        &["worktree", "add", "-q", "-b", "side", wt.to_str().unwrap()],
    );
    commit(&wt, "b");
    let side = short_head(&wt);
    assert_ne!(side, head);
    assert_watches_only_existing(&wt.join(".git"), Some(&side));
}

/// The build this suite runs in: the build script's last output (what cargo reads to decide
/// whether the next build reruns it) names only paths that exist in this checkout, so a
/// second `cargo build` with nothing changed compiles nothing (cargo's fingerprint would say
/// `stale: missing <path>` otherwise).
#[test]
fn this_builds_script_output_watches_only_existing_paths() {
    let exe = std::env::current_exe().unwrap();
    // <target>/<profile>/deps/it-<hash>
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let mut outputs: Vec<(std::time::SystemTime, std::path::PathBuf)> =
        std::fs::read_dir(profile_dir.join("build"))
            .unwrap()
            .filter_map(|e| {
                let dir = e.ok()?.path();
                let name = dir.file_name()?.to_str()?.to_string();
                let out = dir.join("output");
                (name.starts_with("dacli-") && out.exists())
                    .then(|| Some((out.metadata().ok()?.modified().ok()?, out)))?
            })
            .collect();
    outputs.sort();
    let (_, newest) = outputs.last().expect("the build script ran for this build");
    let text = std::fs::read_to_string(newest).unwrap();
    let root = crate::support::repo_root();
    let watched: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("cargo:rerun-if-changed="))
        .collect();
    assert!(watched.contains(&"build.rs"), "{text}");
    for path in &watched {
        assert!(
            root.join(path).exists(),
            "the build script watches `{path}`, which does not exist: every build would rerun it and relink dacli\n{text}"
        );
    }
}
