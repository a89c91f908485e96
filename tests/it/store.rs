//! The store (L0) through its public API: preservation, canonical form, atomic writes under
//! injected faults, create-new, locks with a deadline.

use std::path::Path;
use std::time::Duration;

use dacli::store::{Document, Error, Fault, FaultOp, Fs};
use toml_edit::value;

fn fs_in(dir: &Path) -> Fs {
    Fs::new(
        Some(dir.to_path_buf()),
        Some(dir.canonicalize().unwrap()),
        42,
        Duration::from_millis(200),
    )
}

const TASK: &str = r#"+++
id = "t-01KJPXJ57RGDMEE50E5T1E877Q"
kind = "task"
# owner changes on handover; keep this comment
owner = "a-root"
rev = "01KJSSCMFRW7NBCHZKGE19JXD9"
priority   =   "must"   # odd spacing survives too
estimate = { optimistic = 2, probable = 4, pessimistic = 9 }

[ext]
tracker = "JIRA-1234" # another program's key
+++

# Add the rounding shim

## Log
- 2026-03-02T09:20:11Z a-root created
"#;

#[test]
fn setting_one_key_changes_only_that_keys_bytes() {
    let mut doc = Document::parse("task.md", TASK.as_bytes()).unwrap();
    doc.front["rev"] = value("01KJSSCMFRW7NBCHZKGE19JXDA");
    let after = doc.render();
    let diff = similar::TextDiff::from_lines(TASK, &after);
    let changes: Vec<(similar::ChangeTag, String)> = diff
        .iter_all_changes()
        .filter(|c| c.tag() != similar::ChangeTag::Equal)
        .map(|c| (c.tag(), c.value().to_string()))
        .collect();
    assert_eq!(
        changes,
        vec![
            (
                similar::ChangeTag::Delete,
                "rev = \"01KJSSCMFRW7NBCHZKGE19JXD9\"\n".to_string()
            ),
            (
                similar::ChangeTag::Insert,
                "rev = \"01KJSSCMFRW7NBCHZKGE19JXDA\"\n".to_string()
            ),
        ],
        "the byte diff of a one-key rewrite:\n{}",
        diff.unified_diff()
    );
    // Byte level: everything before and after the key is identical.
    let at = TASK.find("rev = ").unwrap();
    assert_eq!(&after[..at], &TASK[..at]);
    let tail = &TASK[at + "rev = \"01KJSSCMFRW7NBCHZKGE19JXD9\"".len()..];
    assert!(after.ends_with(tail));
}

#[test]
fn removing_and_adding_keys_keeps_ext_and_comments() {
    let mut doc = Document::parse("task.md", TASK.as_bytes()).unwrap();
    doc.front.remove("priority");
    doc.front["assignee"] = value("a-builder-01KJPX6ZT81TTNRTABC9KBJYTV");
    let after = doc.render();
    assert!(after.contains("# owner changes on handover; keep this comment\n"));
    assert!(after.contains("tracker = \"JIRA-1234\" # another program's key\n"));
    assert!(!after.contains("priority"));
    assert!(after.contains("assignee = \"a-builder-01KJPX6ZT81TTNRTABC9KBJYTV\"\n"));
    let reparsed = Document::parse("task.md", after.as_bytes()).unwrap();
    assert_eq!(reparsed.front["ext"]["tracker"].as_str(), Some("JIRA-1234"));
}

#[test]
fn rewriting_a_noncanonical_file_yields_the_canonical_form() {
    let messy = format!("\u{feff}{}\n\n\n", TASK.replace('\n', "\r\n"));
    let doc = Document::parse("task.md", messy.as_bytes()).unwrap();
    let out = doc.render();
    assert_eq!(out, TASK);
    assert!(dacli::store::is_canonical(out.as_bytes()));
    assert!(!dacli::store::is_canonical(messy.as_bytes()));
}

#[test]
fn oversized_files_and_frontmatter_are_named_and_read_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let fs = fs_in(dir.path());
    let big = dir.path().join("big.md");
    std::fs::write(&big, vec![b'a'; 3 * 1024 * 1024]).unwrap();
    match fs.read(&big) {
        Err(Error::Malformed(p)) => {
            assert_eq!(p.reason.as_str(), "too_large");
            assert_eq!(p.path, "big.md");
        }
        other => panic!("expected too_large, got {other:?}"),
    }
    let front = format!("+++\nx = \"{}\"\n+++\n", "a".repeat(70 * 1024));
    let err = Document::parse("fm.md", front.as_bytes()).unwrap_err();
    assert_eq!(err.reason.as_str(), "frontmatter_too_large");
    assert_eq!(err.path, "fm.md");
}

#[test]
fn create_new_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let fs = fs_in(dir.path());
    let path = dir.path().join("events/e.md");
    fs.create_new(&path, b"first\n").unwrap();
    match fs.create_new(&path, b"second\n") {
        Err(Error::Exists { path }) => assert_eq!(path, "events/e.md"),
        other => panic!("expected Exists, got {other:?}"),
    }
    assert_eq!(std::fs::read(&path).unwrap(), b"first\n");
    assert_eq!(leftover_temps(&dir.path().join("events")), 0);
}

/// A record staged in one directory and published in another appears whole under its
/// name, never over an existing file, and leaves no temporary file behind, published or
/// not (a task's file is staged in `cache/` before its number is known).
#[test]
fn a_staged_record_is_published_once_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let fs = fs_in(dir.path());
    let cache = dir.path().join("cache");
    let path = dir.path().join("tasks/open/001-a.md");
    let staged = fs.stage(&cache, b"first\n").unwrap();
    assert_eq!(leftover_temps(&cache), 1, "staged under a temporary name");
    assert!(!path.exists(), "not published yet");
    fs.publish_new(staged, &path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"first\n");
    assert_eq!(leftover_temps(&cache), 0);
    let again = fs.stage(&cache, b"second\n").unwrap();
    match fs.publish_new(again, &path) {
        Err(Error::Exists { path }) => assert_eq!(path, "tasks/open/001-a.md"),
        other => panic!("expected Exists, got {other:?}"),
    }
    assert_eq!(std::fs::read(&path).unwrap(), b"first\n");
    assert_eq!(
        leftover_temps(&cache),
        0,
        "a refused record is not left behind"
    );
    drop(fs.stage(&cache, b"dropped\n").unwrap());
    assert_eq!(
        leftover_temps(&cache),
        0,
        "a record never published is removed"
    );
    assert_eq!(leftover_temps(&dir.path().join("tasks/open")), 0);
}

/// A derived file replaced (by exchanging names, on Linux) holds the new bytes, leaves no
/// temporary file, and a reader that opened the old one still reads the old bytes whole.
#[test]
fn replacing_a_derived_file_leaves_one_whole_file_and_old_readers_their_bytes() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let fs = fs_in(dir.path());
    let path = dir.path().join("cache/rows.bin");
    fs.replace_derived(&path, b"first version\n").unwrap();
    let mut old = std::fs::File::open(&path).unwrap();
    fs.replace_derived(&path, b"second, longer version\n")
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"second, longer version\n");
    let mut held = String::new();
    old.read_to_string(&mut held).unwrap();
    assert_eq!(held, "first version\n");
    assert_eq!(leftover_temps(&dir.path().join("cache")), 0);
    // And over nothing: a plain rename.
    let fresh = dir.path().join("cache/new.bin");
    fs.replace_derived(&fresh, b"made\n").unwrap();
    assert_eq!(std::fs::read(&fresh).unwrap(), b"made\n");
    assert_eq!(leftover_temps(&dir.path().join("cache")), 0);
}

#[test]
fn a_failed_write_at_any_step_leaves_the_old_bytes_and_no_temp_file() {
    for op in [FaultOp::Write, FaultOp::Sync, FaultOp::Rename] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("obj.md");
        fs_in(dir.path()).replace(&path, b"old\n").unwrap();
        let fs = fs_in(dir.path()).with_fault(Some(Fault { op, nth: 1 }));
        let err = fs.replace(&path, b"new\n").unwrap_err();
        assert!(err.to_string().contains("injected fault"), "{op:?}: {err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"old\n", "{op:?}");
        assert_eq!(leftover_temps(dir.path()), 0, "{op:?}");
    }
    for op in [FaultOp::Write, FaultOp::Sync, FaultOp::Link] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.md");
        let fs = fs_in(dir.path()).with_fault(Some(Fault { op, nth: 1 }));
        fs.create_new(&path, b"rec\n").unwrap_err();
        assert!(
            !path.exists(),
            "{op:?}: no partial record under the final name"
        );
        assert_eq!(leftover_temps(dir.path()), 0, "{op:?}");
    }
}

#[test]
fn the_fault_hook_parses() {
    assert_eq!(
        Fault::parse("rename:2"),
        Some(Fault {
            op: FaultOp::Rename,
            nth: 2
        })
    );
    assert_eq!(Fault::parse("rename:0"), None);
    assert_eq!(Fault::parse("explode:1"), None);
}

#[test]
fn a_held_lock_times_out_naming_the_lock_and_is_free_after_release() {
    let dir = tempfile::tempdir().unwrap();
    let fs = fs_in(dir.path());
    let lock = dir
        .path()
        .join(".locks/task-01KJPXJ57RGDMEE50E5T1E877Q.lock");
    let held = fs.lock(&lock).unwrap();
    assert!(fs.is_locked(&lock).unwrap());
    match fs.lock(&lock) {
        Err(Error::LockTimeout { path, waited_ms }) => {
            assert_eq!(path, ".locks/task-01KJPXJ57RGDMEE50E5T1E877Q.lock");
            assert!(waited_ms >= 200);
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    drop(held);
    let again = fs.lock(&lock).unwrap();
    drop(again);
    assert!(lock.exists(), "lock files are never deleted");
}

#[test]
fn concurrent_read_modify_writes_under_the_lock_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("counter.txt");
    fs_in(dir.path()).replace(&counter, b"0\n").unwrap();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let root = dir.path().to_path_buf();
            std::thread::spawn(move || {
                let fs = Fs::new(
                    Some(root.clone()),
                    Some(root.canonicalize().unwrap()),
                    t,
                    Duration::from_secs(30),
                );
                let lock = root.join(".locks/counter.lock");
                let counter = root.join("counter.txt");
                for _ in 0..25 {
                    let _guard = fs.lock(&lock).unwrap();
                    let n: u32 = std::fs::read_to_string(&counter)
                        .unwrap()
                        .trim()
                        .parse()
                        .unwrap();
                    fs.replace(&counter, format!("{}\n", n + 1).as_bytes())
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(std::fs::read_to_string(&counter).unwrap(), "200\n");
}

fn leftover_temps(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".dacli-tmp-")
            })
            .count()
        })
        .unwrap_or(0)
}
