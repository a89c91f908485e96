//! Token counting: real BPE vocabularies compiled into the binary (`o200k_base`,
//! `cl100k_base`) and the cheap `chars4` estimate, plus a memo of counts kept in the derived
//! index so that a repeated brief does not build an encoder at all.
//!
//! Building an encoder from the embedded vocabulary costs tens to hundreds of milliseconds
//! (spec/BRIEF.md §2), more than a whole CLI call should take. So an encoder is built at most
//! once per process, lazily, and only when a count is not in the memo; commands that never
//! count tokens never touch it.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tiktoken_rs::CoreBPE;

use crate::workspace::Workspace;

/// A token counter known to dacli.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tokenizer {
    O200kBase,
    Cl100kBase,
    /// Characters ÷ 4, rounded up (FORMAT §5).
    Chars4,
}

impl Tokenizer {
    /// The counter used when `defaults.tokenizer` is not set.
    pub const DEFAULT: Tokenizer = Tokenizer::O200kBase;

    /// The counter named `name` in `config.toml`, if dacli knows it.
    pub fn parse(name: &str) -> Option<Tokenizer> {
        match name {
            "o200k_base" => Some(Tokenizer::O200kBase),
            "cl100k_base" => Some(Tokenizer::Cl100kBase),
            "chars4" => Some(Tokenizer::Chars4),
            _ => None,
        }
    }

    /// The name as written in `config.toml` and in the brief's header.
    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::O200kBase => "o200k_base",
            Tokenizer::Cl100kBase => "cl100k_base",
            Tokenizer::Chars4 => "chars4",
        }
    }

    /// The exact token count of `text`, special-token lookalikes counted as ordinary text.
    /// Builds the BPE encoder on first use in this process.
    pub fn count(self, text: &str) -> usize {
        match self {
            Tokenizer::O200kBase => encoder(self).count_ordinary(text),
            Tokenizer::Cl100kBase => encoder(self).count_ordinary(text),
            Tokenizer::Chars4 => text.chars().count().div_ceil(4),
        }
    }
}

/// The encoder of a BPE tokenizer, built once per process.
fn encoder(t: Tokenizer) -> &'static CoreBPE {
    static O200K: OnceLock<CoreBPE> = OnceLock::new();
    static CL100K: OnceLock<CoreBPE> = OnceLock::new();
    match t {
        Tokenizer::Cl100kBase => CL100K.get_or_init(|| {
            tiktoken_rs::cl100k_base().expect("the embedded cl100k_base vocabulary is valid")
        }),
        _ => O200K.get_or_init(|| {
            tiktoken_rs::o200k_base().expect("the embedded o200k_base vocabulary is valid")
        }),
    }
}

/// Names the vocabulary build in the memo's file, so a dependency upgrade that changed the
/// counts can never be served stale numbers.
const MEMO_FORMAT: &str = "tiktoken-rs-0.12/1";
/// Entries kept in a memo file: enough for the briefs of many tasks, bounded in size.
const MEMO_CAP: usize = 8192;

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Memoed {
    tokens: usize,
    /// The save generation that last used the entry; older entries are evicted first.
    generation: u64,
}

#[derive(Serialize, Deserialize)]
struct MemoFile {
    format: String,
    generation: u64,
    counts: BTreeMap<String, Memoed>,
}

/// Counts tokens with one tokenizer, remembering counts by SHA-256 of the text.
///
/// Invariant: a count served from the memo equals [`Tokenizer::count`] of the same text (the
/// key is the text's digest and the file names the vocabulary build), so the memo changes
/// only speed, never a brief.
pub struct Counter {
    tokenizer: Tokenizer,
    generation: u64,
    counts: BTreeMap<String, Memoed>,
    /// Keys used by this process: they are the ones kept first when the memo is saved.
    used: std::collections::BTreeSet<String>,
    /// Whether a count was computed (only then is the memo written back).
    dirty: bool,
}

impl Counter {
    /// A counter for `tokenizer`, with the memo of `ws` loaded (BPE tokenizers only).
    pub fn load(ws: &Workspace, tokenizer: Tokenizer) -> Counter {
        let mut counter = Counter {
            tokenizer,
            generation: 0,
            counts: BTreeMap::new(),
            used: std::collections::BTreeSet::new(),
            dirty: false,
        };
        if tokenizer == Tokenizer::Chars4 {
            return counter;
        }
        let memo = ws
            .fs
            .read(&memo_file(ws, tokenizer))
            .ok()
            .and_then(|b| serde_json::from_slice::<MemoFile>(&b).ok())
            .filter(|m| m.format == MEMO_FORMAT);
        if let Some(m) = memo {
            counter.generation = m.generation;
            counter.counts = m.counts;
        }
        counter
    }

    /// The tokenizer this counter uses.
    pub fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
    }

    /// The token count of `text`.
    pub fn count(&mut self, text: &str) -> usize {
        if self.tokenizer == Tokenizer::Chars4 {
            return self.tokenizer.count(text);
        }
        let key = digest(text);
        if let Some(hit) = self.counts.get(&key) {
            let tokens = hit.tokens;
            self.used.insert(key);
            return tokens;
        }
        let tokens = self.tokenizer.count(text);
        self.counts.insert(
            key.clone(),
            Memoed {
                tokens,
                generation: 0,
            },
        );
        self.used.insert(key);
        self.dirty = true;
        tokens
    }

    /// Writes the memo back when a count was added, keeping the most recently used entries.
    /// A call served wholly from the memo writes nothing. Failure is ignored: the memo is
    /// derived data.
    pub fn save(mut self, ws: &Workspace) {
        if !self.dirty || self.tokenizer == Tokenizer::Chars4 {
            return;
        }
        let generation = self.generation + 1;
        for key in &self.used {
            if let Some(entry) = self.counts.get_mut(key) {
                entry.generation = generation;
            }
        }
        if self.counts.len() > MEMO_CAP {
            let mut by_age: Vec<(u64, String)> = self
                .counts
                .iter()
                .map(|(k, v)| (v.generation, k.clone()))
                .collect();
            by_age.sort();
            let excess = self.counts.len() - MEMO_CAP;
            for (_, k) in by_age.into_iter().take(excess) {
                self.counts.remove(&k);
            }
        }
        let file = MemoFile {
            format: MEMO_FORMAT.to_string(),
            generation,
            counts: self.counts,
        };
        if let Ok(bytes) = serde_json::to_vec(&file) {
            let _ = ws.fs.replace(&memo_file(ws, self.tokenizer), &bytes);
        }
    }
}

fn memo_file(ws: &Workspace, t: Tokenizer) -> std::path::PathBuf {
    ws.path(&["cache", &format!("tokens-{}.json", t.name())])
}

/// `sha256:<hex>` of a text.
pub fn digest(text: &str) -> String {
    // Asked of every line of every brief: `format!` per byte was a tenth of a warm brief.
    format!("sha256:{}", hex::encode(Sha256::digest(text.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chars4_rounds_up_over_characters() {
        assert_eq!(Tokenizer::Chars4.count(""), 0);
        assert_eq!(Tokenizer::Chars4.count("abcd"), 1);
        assert_eq!(Tokenizer::Chars4.count("abcde"), 2);
        // Characters, not bytes: four em dashes are twelve bytes and one token.
        assert_eq!(Tokenizer::Chars4.count("————"), 1);
    }

    #[test]
    fn names_round_trip() {
        for t in [
            Tokenizer::O200kBase,
            Tokenizer::Cl100kBase,
            Tokenizer::Chars4,
        ] {
            assert_eq!(Tokenizer::parse(t.name()), Some(t));
        }
        assert_eq!(Tokenizer::parse("gpt2"), None);
    }
}
