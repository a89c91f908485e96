//! Records the commit dacli is built from, for `dacli version`, by reading the git directory
//! directly (`build/git_sha.rs`: no process spawn, so a build without git still works and says
//! "unknown"); and writes the token counters' tables (`src/brief/tokens.rs`) into `OUT_DIR`,
//! where the crate `include_bytes!`es them.

// The build script runs apart from dacli: cargo hands it `OUT_DIR` in the environment, and the
// files it writes there are its whole output.
#![allow(
    clippy::disallowed_methods,
    reason = "a build script, outside the crate's layers"
)]

#[path = "build/git_sha.rs"]
mod git_sha;

use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/git_sha.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    vocabulary(&out, "o200k_base", || {
        tiktoken_rs::o200k_base().map_err(|e| e.to_string())
    });
    vocabulary(&out, "cl100k_base", || {
        tiktoken_rs::cl100k_base().map_err(|e| e.to_string())
    });
    char_classes(&out);
    let (sha, watched) = git_sha::head_commit(Path::new(".git"));
    for path in watched {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let sha = sha.unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=DACLI_GIT_SHA={sha}");
}

/// Writes the vocabulary of `name` as a static sorted table, `<name>.bpe`, taken byte for byte
/// from tiktoken-rs (its public decoder, rank by rank), so the binary builds no map at run time.
///
/// Layout, all integers u32 little-endian: `n`; then `n + 1` offsets into the token bytes (the
/// entries sorted by their bytes); then `n` ranks in that order; then 257 entry indices, the
/// first entry whose first byte is at least `b` for each `b` (narrowing every binary search to
/// the tokens of one leading byte); then the token bytes, concatenated.
///
/// The table depends only on the build-dependency's version, which names this script's output
/// folder, so a table already there is kept: git's HEAD, which this script also watches, moves
/// with every commit, and building the encoder again each time would cost seconds a build.
fn vocabulary(
    out: &Path,
    name: &str,
    build: impl FnOnce() -> Result<tiktoken_rs::CoreBPE, String>,
) {
    let path = out.join(format!("{name}.bpe"));
    if path.exists() {
        return;
    }
    let bpe = build().unwrap_or_else(|e| panic!("tiktoken-rs builds {name}: {e}"));
    // Ranks are dense from 0 up to the first special token; the first rank with no bytes
    // ends the ordinary vocabulary.
    let specials = bpe.special_tokens();
    let mut tokens: Vec<(Vec<u8>, u32)> = Vec::new();
    for rank in 0u32.. {
        match bpe.decode_bytes(&[rank]) {
            Ok(bytes) if !specials.iter().any(|s| s.as_bytes() == bytes.as_slice()) => {
                tokens.push((bytes, rank))
            }
            _ => break,
        }
    }
    tokens.sort();
    assert!(
        tokens.windows(2).all(|w| w[0].0 != w[1].0),
        "{name}: a token's bytes appear twice"
    );
    assert!(
        tokens.iter().all(|(b, _)| !b.is_empty()),
        "{name}: an empty token"
    );
    let n = u32::try_from(tokens.len()).expect("fewer than 2^32 tokens");
    let mut head: Vec<u8> = Vec::new();
    let put = |v: &mut Vec<u8>, x: usize| {
        v.extend_from_slice(&u32::try_from(x).expect("fits in u32").to_le_bytes())
    };
    put(&mut head, n as usize);
    let mut offset = 0usize;
    for (bytes, _) in &tokens {
        put(&mut head, offset);
        offset += bytes.len();
    }
    put(&mut head, offset);
    for (_, rank) in &tokens {
        put(&mut head, *rank as usize);
    }
    for b in 0..=256usize {
        let first = tokens.partition_point(|(bytes, _)| usize::from(bytes[0]) < b);
        put(&mut head, first);
    }
    for (bytes, _) in &tokens {
        head.extend_from_slice(bytes);
    }
    write_new(&path, &head);
}

/// Writes `bytes` to `path` whole: a build stopped half-way leaves no table to be kept.
fn write_new(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, bytes).unwrap_or_else(|e| panic!("writing {}: {e}", tmp.display()));
    fs::rename(&tmp, path).unwrap_or_else(|e| panic!("renaming {}: {e}", tmp.display()));
}

/// The character classes of the tokenizers' split patterns, as the `regex` crate that
/// tiktoken-rs matches them with defines them (its Unicode tables, through regex-syntax):
/// `char_classes.rs`, a sorted table of `(first, last, classes)` ranges of code points, and the
/// classes of the ASCII characters by code.
fn char_classes(out: &Path) {
    // Bit order is the order of `CLASS_BITS` in `src/brief/tokens.rs`.
    const CLASSES: [&str; 9] = [
        r"\p{L}", r"\p{N}", r"\s", r"\p{Lu}", r"\p{Lt}", r"\p{Lm}", r"\p{Lo}", r"\p{Ll}", r"\p{M}",
    ];
    let mut bounds: Vec<u32> = vec![0, 0x11_0000];
    let mut sets: Vec<Vec<(u32, u32)>> = Vec::new();
    for pattern in CLASSES {
        let hir = regex_syntax::parse(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        let regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(class)) =
            hir.kind()
        else {
            panic!("{pattern} is not a Unicode class");
        };
        let ranges: Vec<(u32, u32)> = class
            .ranges()
            .iter()
            .map(|r| (u32::from(r.start()), u32::from(r.end())))
            .collect();
        for &(a, b) in &ranges {
            bounds.push(a);
            bounds.push(b + 1);
        }
        sets.push(ranges);
    }
    bounds.sort_unstable();
    bounds.dedup();
    let mut table: Vec<(u32, u32, u16)> = Vec::new();
    for w in bounds.windows(2) {
        let (a, b) = (w[0], w[1] - 1);
        let mut mask = 0u16;
        for (bit, set) in sets.iter().enumerate() {
            if set.iter().any(|&(lo, hi)| lo <= a && a <= hi) {
                mask |= 1 << bit;
            }
        }
        if mask == 0 {
            continue;
        }
        match table.last_mut() {
            Some(last) if last.1 + 1 == a && last.2 == mask => last.1 = b,
            _ => table.push((a, b, mask)),
        }
    }
    let mut src = String::from(
        "// Generated by build.rs from regex-syntax's Unicode tables.\n\
         /// The classes of each ASCII character, looked up directly.\n\
         pub static ASCII_CLASSES: [u16; 128] = [\n",
    );
    for c in 0..128u32 {
        let mask = table
            .iter()
            .find(|&&(a, b, _)| a <= c && c <= b)
            .map_or(0, |&(_, _, m)| m);
        src.push_str(&format!("{mask:#x},\n"));
    }
    src.push_str(&format!(
        "];\n/// `(first, last, classes)` for every range of code points in some class.\n\
         pub static CHAR_CLASSES: [(u32, u32, u16); {}] = [\n",
        table.len()
    ));
    for (a, b, m) in table {
        src.push_str(&format!("({a:#x}, {b:#x}, {m:#x}),\n"));
    }
    src.push_str("];\n");
    let path = out.join("char_classes.rs");
    if fs::read_to_string(&path).ok().as_deref() != Some(src.as_str()) {
        write_new(&path, src.as_bytes());
    }
}
