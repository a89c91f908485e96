//! Records the commit dacli is built from, for `dacli version`, by reading `.git` directly
//! (no process spawn, so a build without git still works and says "unknown").

use std::fs;
use std::path::Path;

fn main() {
    let git = Path::new(".git");
    println!("cargo:rerun-if-changed=.git/HEAD");
    let sha = resolve(git).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=DACLI_GIT_SHA={sha}");
}

fn resolve(git: &Path) -> Option<String> {
    let head = fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim();
    let full = match head.strip_prefix("ref: ") {
        None => head.to_string(),
        Some(name) => {
            println!("cargo:rerun-if-changed=.git/{name}");
            println!("cargo:rerun-if-changed=.git/packed-refs");
            match fs::read_to_string(git.join(name)) {
                Ok(s) => s.trim().to_string(),
                Err(_) => fs::read_to_string(git.join("packed-refs"))
                    .ok()?
                    .lines()
                    .find_map(|l| l.strip_suffix(name).map(|s| s.trim().to_string()))?,
            }
        }
    };
    (full.len() >= 7 && full.bytes().all(|b| b.is_ascii_hexdigit())).then(|| full[..7].to_string())
}
