#![no_main]

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

#[path = "../props.rs"]
mod props;

/// A workspace of this process's own, made fresh every 500 runs: tool calls write to it,
/// and a workspace that only grows would slow the runs down.
static WORKSPACE: Mutex<Option<PathBuf>> = Mutex::new(None);
static RUNS: AtomicU64 = AtomicU64::new(0);

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut ws = WORKSPACE.lock().expect("one fuzz thread");
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    if ws.is_none() || run % 500 == 0 {
        let dir = std::env::temp_dir().join(format!("dacli-fuzz-mcp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        props::mcp_workspace(&dir);
        *ws = Some(dir);
    }
    if let Some(dir) = ws.as_ref() {
        props::mcp_lines(dir, data);
    }
});
