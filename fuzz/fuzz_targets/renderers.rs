#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

#[path = "../props.rs"]
mod props;

/// A workspace of this process's own: the renderers only read it, and each input replaces
/// the same two files.
static WORKSPACE: OnceLock<PathBuf> = OnceLock::new();

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let dir = WORKSPACE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("dacli-fuzz-render-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        props::renderers_workspace(&dir);
        dir
    });
    props::renderers(dir, data);
});
