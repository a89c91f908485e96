//! RELIABILITY F1–F5 in the normal test run (SQLite's fuzzcheck): the fuzz seeds and every
//! kept finding under `fuzz/regressions/<target>/` are fed to the same property functions
//! the cargo-fuzz targets call (`fuzz/props.rs`, included here). CI needs no cargo-fuzz.

use std::path::{Path, PathBuf};

#[path = "../../fuzz/props.rs"]
mod props;

const TARGETS: [&str; 6] = [
    "frontmatter",
    "mcp_lines",
    "path_safety",
    "event_fold",
    "argv",
    "renderers",
];

/// Every seed and regression input of `target`, sorted by path.
fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let root = crate::support::repo_root().join("fuzz");
    let mut out = Vec::new();
    for dir in ["seeds", "regressions"] {
        let Ok(rd) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_file() && e.file_name() != ".gitkeep" {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p, bytes));
            }
        }
    }
    out.sort();
    out
}

/// Feeds each input to `check`, naming the file of the first that fails.
fn replay(target: &str, check: impl Fn(&[u8])) -> usize {
    let all = inputs(target);
    assert!(!all.is_empty(), "{target} has seeds");
    for (path, bytes) in &all {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(bytes)));
        assert!(
            ok.is_ok(),
            "{target}: {} fails its property",
            path.display()
        );
    }
    all.len()
}

#[test]
fn f1_frontmatter_seeds_and_findings_replay() {
    replay("frontmatter", props::frontmatter);
}

#[test]
fn f2_mcp_lines_seeds_and_findings_replay() {
    let dir = tempfile::tempdir().unwrap();
    props::mcp_workspace(dir.path());
    replay("mcp_lines", |b| props::mcp_lines(dir.path(), b));
}

#[test]
fn f3_path_safety_seeds_and_findings_replay() {
    replay("path_safety", props::path_safety);
}

#[test]
fn f4_event_fold_seeds_and_findings_replay() {
    replay("event_fold", props::event_fold);
}

#[test]
fn f5_argv_seeds_and_findings_replay() {
    replay("argv", props::argv);
}

/// F6 replays its own inputs and, since every stored file is what a renderer may meet, the
/// stored-data inputs of F1 too.
#[test]
fn f6_renderers_seeds_and_findings_replay() {
    let dir = tempfile::tempdir().unwrap();
    props::renderers_workspace(dir.path());
    let own = replay("renderers", |b| props::renderers(dir.path(), b));
    let stored = replay("frontmatter", |b| props::renderers(dir.path(), b));
    assert!(own >= 4 && stored >= 10, "{own} + {stored} inputs");
    let views = props::renderer_argvs(&dacli::commands::table()).len();
    eprintln!("F6: {own} + {stored} inputs, {views} human views each");
}

#[test]
fn every_target_has_a_binary_seeds_and_a_regressions_directory() {
    let root = crate::support::repo_root().join("fuzz");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    for t in TARGETS {
        assert!(
            manifest.contains(&format!("name = \"{t}\"")),
            "{t} in fuzz/Cargo.toml"
        );
        assert!(root.join("fuzz_targets").join(format!("{t}.rs")).is_file());
        assert!(Path::new(&root.join("regressions").join(t)).is_dir(), "{t}");
    }
    // The root package never builds the fuzz crate.
    let root_manifest =
        std::fs::read_to_string(crate::support::repo_root().join("Cargo.toml")).unwrap();
    assert!(
        !root_manifest.contains("fuzz"),
        "fuzz/ is not a workspace member"
    );
}
