//! Token counting: real BPE vocabularies compiled into the binary (`o200k_base`,
//! `cl100k_base`) and the cheap `chars4` estimate, plus a memo of counts kept in the derived
//! index so that a repeated brief counts nothing again.
//!
//! The counters need no build at run time. `build.rs` writes each vocabulary as a static table
//! of its tokens' bytes in sorted order with their ranks (taken byte for byte from tiktoken-rs),
//! and the character classes of the split patterns as a static table of code-point ranges; a
//! count splits the text the way tiktoken's pattern does, by hand, and merges each piece by
//! binary search in the table. The BPE merge is written here rather than taken from
//! tiktoken-rs because the crate's encoder exists only as hash maps it builds from the
//! vocabulary on first use (150–450 ms and about 65 MiB per process, spec/BRIEF.md §2); its
//! split patterns are written out by hand because compiling them is itself the next cost
//! (`o200k_base`'s, with its large Unicode classes, takes 3–19 ms, more than a whole call).
//! tests/it/tokens_static.rs checks every count against tiktoken-rs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

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

    /// The exact token count of `text`, special-token lookalikes counted as ordinary text
    /// (tiktoken's `encode_ordinary`).
    pub fn count(self, text: &str) -> usize {
        match self {
            Tokenizer::O200kBase => bpe_count(text, &O200K, o200k_piece),
            Tokenizer::Cl100kBase => bpe_count(text, &CL100K, cl100k_piece),
            Tokenizer::Chars4 => text.chars().count().div_ceil(4),
        }
    }

    /// The bytes of each token of `text`, in order (BPE tokenizers; empty for `chars4`): what
    /// the tests compare with tiktoken's tokens, a stricter check than the counts.
    #[doc(hidden)]
    pub fn token_bytes(self, text: &str) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut push = |t: &[u8]| out.push(t.to_vec());
        match self {
            Tokenizer::O200kBase => bpe_tokens(text, &O200K, o200k_piece, &mut push),
            Tokenizer::Cl100kBase => bpe_tokens(text, &CL100K, cl100k_piece, &mut push),
            Tokenizer::Chars4 => {}
        }
        out
    }
}

/// A vocabulary as `build.rs` lays it out: `n`, `n + 1` offsets, `n` ranks, 257 first-entry
/// indices by leading byte, then the token bytes (all integers u32 little-endian), the entries
/// sorted by their bytes.
struct Vocab {
    data: &'static [u8],
}

static O200K: Vocab = Vocab {
    data: include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.bpe")),
};
static CL100K: Vocab = Vocab {
    data: include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.bpe")),
};

impl Vocab {
    fn word(&self, index: usize) -> usize {
        let at = 4 * index;
        let d = self.data;
        u32::from_le_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]]) as usize
    }

    fn len(&self) -> usize {
        self.word(0)
    }

    fn token(&self, entry: usize) -> &'static [u8] {
        let n = self.len();
        let base = 4 * (1 + (n + 1) + n + 257);
        let data: &'static [u8] = self.data;
        &data[base + self.word(1 + entry)..base + self.word(2 + entry)]
    }

    /// The rank of the token whose bytes are `piece`, if it is one.
    fn rank(&self, piece: &[u8]) -> Option<u32> {
        let first = *piece.first()?;
        let n = self.len();
        let firsts = 1 + (n + 1) + n;
        let (mut lo, mut hi) = (
            self.word(firsts + usize::from(first)),
            self.word(firsts + usize::from(first) + 1),
        );
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.token(mid).cmp(piece) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(self.word(1 + (n + 1) + mid) as u32),
            }
        }
        None
    }

    fn rank_or_max(&self, piece: &[u8]) -> u32 {
        self.rank(piece).unwrap_or(u32::MAX)
    }
}

/// Counts the tokens of `text`: split into pieces by `piece` (the encoding's pattern), each
/// piece one token when the vocabulary holds it whole, else merged by rank.
fn bpe_count(text: &str, vocab: &Vocab, piece: fn(&[Ch], usize) -> usize) -> usize {
    let mut total = 0;
    bpe_tokens(text, vocab, piece, &mut |_| total += 1);
    total
}

/// Hands each token of `text` to `token`, in order.
fn bpe_tokens(
    text: &str,
    vocab: &Vocab,
    piece: fn(&[Ch], usize) -> usize,
    token: &mut impl FnMut(&[u8]),
) {
    let chars: Vec<Ch> = text
        .char_indices()
        .map(|(at, c)| Ch {
            at,
            c,
            class: classes(c),
        })
        .collect();
    let mut i = 0;
    while i < chars.len() {
        let end = piece(&chars, i).max(i + 1);
        let to = chars.get(end).map_or(text.len(), |c| c.at);
        let bytes = &text.as_bytes()[chars[i].at..to];
        if vocab.rank(bytes).is_some() {
            token(bytes);
        } else {
            merge(vocab, bytes, token);
        }
        i = end;
    }
}

/// Hands each token byte-pair merging makes of `piece` to `token`, with tiktoken's two merge
/// loops: a linear scan below 100 bytes and a heap above (they agree; each is the faster
/// there).
fn merge(vocab: &Vocab, piece: &[u8], token: &mut impl FnMut(&[u8])) {
    match piece.len() {
        0 => {}
        1 => token(piece),
        n if n < 100 => merge_small(vocab, piece, token),
        _ => merge_large(vocab, piece, token),
    }
}

/// Repeatedly merges the adjacent pair whose joined bytes have the lowest rank (the leftmost
/// of equal ranks) until no joined pair is a token.
fn merge_small(vocab: &Vocab, piece: &[u8], token: &mut impl FnMut(&[u8])) {
    // (start, rank of the pair starting here)
    let mut parts: Vec<(usize, u32)> = Vec::with_capacity(piece.len() + 1);
    let mut min = (u32::MAX, usize::MAX);
    for i in 0..piece.len() - 1 {
        let rank = vocab.rank_or_max(&piece[i..i + 2]);
        if rank < min.0 {
            min = (rank, i);
        }
        parts.push((i, rank));
    }
    parts.push((piece.len() - 1, u32::MAX));
    parts.push((piece.len(), u32::MAX));
    let rank_at = |parts: &Vec<(usize, u32)>, i: usize| {
        if i + 3 < parts.len() {
            vocab.rank_or_max(&piece[parts[i].0..parts[i + 3].0])
        } else {
            u32::MAX
        }
    };
    while min.0 != u32::MAX {
        let i = min.1;
        if i > 0 {
            parts[i - 1].1 = rank_at(&parts, i - 1);
        }
        parts[i].1 = rank_at(&parts, i);
        parts.remove(i + 1);
        min = (u32::MAX, usize::MAX);
        for (i, &(_, rank)) in parts[..parts.len() - 1].iter().enumerate() {
            if rank < min.0 {
                min = (rank, i);
            }
        }
    }
    for w in parts.windows(2) {
        token(&piece[w[0].0..w[1].0]);
    }
}

/// The same merge as [`merge_small`] with a heap of candidate merges, for long pieces.
fn merge_large(vocab: &Vocab, piece: &[u8], token: &mut impl FnMut(&[u8])) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    struct State {
        prev: usize,
        end: usize,
        next_end: usize,
        next_rank: u32,
    }
    let mut state: Vec<State> = Vec::with_capacity(piece.len());
    state.push(State {
        prev: usize::MAX,
        end: 1,
        next_end: 2,
        next_rank: u32::MAX,
    });
    // Lowest rank first, then lowest start.
    let mut heap: BinaryHeap<Reverse<(u32, usize)>> = BinaryHeap::with_capacity(piece.len());
    for i in 0..piece.len() - 1 {
        if let Some(rank) = vocab.rank(&piece[i..i + 2]) {
            heap.push(Reverse((rank, i)));
            state[i].next_rank = rank;
        }
        state.push(State {
            prev: i,
            end: i + 2,
            next_end: i + 3,
            next_rank: u32::MAX,
        });
    }
    let potential = |state: &mut Vec<State>,
                     heap: &mut BinaryHeap<Reverse<(u32, usize)>>,
                     start: usize,
                     next_end: usize| {
        state[start].next_end = next_end;
        state[start].next_rank = u32::MAX;
        if next_end <= piece.len()
            && let Some(rank) = vocab.rank(&piece[start..next_end])
        {
            heap.push(Reverse((rank, start)));
            state[start].next_rank = rank;
        }
    };
    while let Some(Reverse((rank, left))) = heap.pop() {
        if rank == u32::MAX {
            break;
        }
        if rank != state[left].next_rank {
            continue;
        }
        let right = state[left].end;
        let right_end = state[left].next_end;
        let right_next_end = state[right].next_end;
        state[left].end = right_end;
        potential(&mut state, &mut heap, left, right_next_end);
        if right_end < state.len() {
            state[right_end].prev = left;
        }
        if left > 0 {
            let prev = state[left].prev;
            potential(&mut state, &mut heap, prev, right_end);
        }
        state[right].next_rank = u32::MAX;
    }
    let mut i = 0;
    while i < state.len() {
        token(&piece[i..state[i].end]);
        i = state[i].end;
    }
}

/// A character of the text being split, with its byte offset and its classes.
#[derive(Clone, Copy)]
struct Ch {
    at: usize,
    c: char,
    class: u16,
}

// The classes of `CHAR_CLASSES`, in build.rs's bit order.
const L: u16 = 1;
const N: u16 = 1 << 1;
/// `\s`: Unicode White_Space.
const S: u16 = 1 << 2;
const LU: u16 = 1 << 3;
const LT: u16 = 1 << 4;
const LM: u16 = 1 << 5;
const LO: u16 = 1 << 6;
const LL: u16 = 1 << 7;
const M: u16 = 1 << 8;

mod char_table {
    include!(concat!(env!("OUT_DIR"), "/char_classes.rs"));
}

fn classes(c: char) -> u16 {
    let c = u32::from(c);
    if let Some(&ascii) = char_table::ASCII_CLASSES.get(c as usize) {
        return ascii;
    }
    let table = &char_table::CHAR_CLASSES;
    match table.binary_search_by(|&(lo, hi, _)| {
        if hi < c {
            std::cmp::Ordering::Less
        } else if lo > c {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    }) {
        Ok(i) => table[i].2,
        Err(_) => 0,
    }
}

/// Reads a split pattern's match by hand: `chars` and the classes of each.
struct Text<'a>(&'a [Ch]);

impl Text<'_> {
    fn class(&self, i: usize) -> u16 {
        self.0.get(i).map_or(0, |c| c.class)
    }
    fn has(&self, i: usize, class: u16) -> bool {
        self.class(i) & class != 0
    }
    fn char(&self, i: usize) -> Option<char> {
        self.0.get(i).map(|c| c.c)
    }
    fn is(&self, i: usize, set: &[char]) -> bool {
        self.char(i).is_some_and(|c| set.contains(&c))
    }
    /// The end of the run of characters in `class` from `i`.
    fn run(&self, mut i: usize, class: u16) -> usize {
        while self.has(i, class) {
            i += 1;
        }
        i
    }
    /// `[^\s\p{L}\p{N}]`: a character that is none of whitespace, letter or number.
    fn other(&self, i: usize) -> bool {
        i < self.0.len() && !self.has(i, S | L | N)
    }
    fn other_run(&self, mut i: usize) -> usize {
        while self.other(i) {
            i += 1;
        }
        i
    }
    /// `[^\r\n\p{L}\p{N}]`: the optional character before a word.
    fn before_word(&self, i: usize) -> bool {
        i < self.0.len() && !self.has(i, L | N) && !self.is(i, &['\r', '\n'])
    }
    /// `\s*[\r\n]` and `\s*[\r\n]+` alike: up to the last line break of the whitespace run
    /// `i..ws_end`, greedy `\s*` giving back characters until a break follows.
    fn through_last_break(&self, i: usize, ws_end: usize) -> Option<usize> {
        (i..ws_end)
            .rev()
            .find(|&k| self.is(k, &['\r', '\n']))
            .map(|k| k + 1)
    }
    /// The case-insensitive contraction (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d`) at `i`,
    /// if any: its end. `s` matches `ſ` too under Unicode case folding.
    fn contraction(&self, i: usize, one: &[char], two: &[[char; 2]]) -> Option<usize> {
        if self.char(i) != Some('\'') {
            return None;
        }
        let c1 = self.char(i + 1)?.to_ascii_lowercase();
        let c1 = if c1 == 'ſ' { 's' } else { c1 };
        if one.contains(&c1) {
            return Some(i + 2);
        }
        let c2 = self.char(i + 2)?.to_ascii_lowercase();
        two.contains(&[c1, c2]).then_some(i + 3)
    }
}

/// The end of the `o200k_base` pattern's match at `i` (every position starts one):
///
/// ```text
/// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
/// |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
/// |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
/// ```
///
/// read with a backtracking engine's leftmost-first priorities, as fancy-regex matches it.
fn o200k_piece(chars: &[Ch], i: usize) -> usize {
    const UPPER: u16 = LU | LT | LM | LO | M;
    const LOWER: u16 = LL | LM | LO | M;
    let t = Text(chars);
    let suffix = |end: usize| {
        t.contraction(
            end,
            &['s', 't', 'm', 'd'],
            &[['r', 'e'], ['v', 'e'], ['l', 'l']],
        )
        .unwrap_or(end)
    };
    let starts: &[usize] = if t.before_word(i) { &[i + 1, i] } else { &[i] };
    // Upper* Lower+: greedy Upper* gives back characters until a Lower follows.
    for &j in starts {
        let upper_end = t.run(j, UPPER);
        if let Some(k) = (j..=upper_end).rev().find(|&k| t.has(k, LOWER)) {
            return suffix(t.run(k, LOWER));
        }
    }
    // Upper+ Lower*.
    for &j in starts {
        if t.has(j, UPPER) {
            return suffix(t.run(t.run(j, UPPER), LOWER));
        }
    }
    if t.has(i, N) {
        return t.run(i, N).min(i + 3);
    }
    let punct = if t.is(i, &[' ']) && t.other(i + 1) {
        Some(i + 1)
    } else if t.other(i) {
        Some(i)
    } else {
        None
    };
    if let Some(j) = punct {
        let mut end = t.other_run(j);
        while t.is(end, &['\r', '\n', '/']) {
            end += 1;
        }
        return end;
    }
    let ws_end = t.run(i, S);
    if let Some(end) = t.through_last_break(i, ws_end) {
        return end;
    }
    if ws_end == chars.len() || ws_end - i < 2 {
        // `\s+(?!\S)` takes a run at the end whole; else `\s+` does.
        return ws_end;
    }
    // `\s+(?!\S)` leaves the last whitespace character to the word after the run.
    ws_end - 1
}

/// The end of the `cl100k_base` pattern's match at `i` (every position starts one):
///
/// ```text
/// '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+
/// |\s++$|\s*[\r\n]|\s+(?!\S)|\s
/// ```
fn cl100k_piece(chars: &[Ch], i: usize) -> usize {
    let t = Text(chars);
    if let Some(end) = t.contraction(
        i,
        &['s', 'd', 'm', 't'],
        &[['l', 'l'], ['v', 'e'], ['r', 'e']],
    ) {
        return end;
    }
    // The possessive prefix never gives its character back, and without it the character
    // would have to be a letter, which it is not.
    if t.before_word(i) {
        if t.has(i + 1, L) {
            return t.run(i + 1, L);
        }
    } else if t.has(i, L) {
        return t.run(i, L);
    }
    if t.has(i, N) {
        return t.run(i, N).min(i + 3);
    }
    let punct = if t.is(i, &[' ']) && t.other(i + 1) {
        Some(i + 1)
    } else if t.other(i) {
        Some(i)
    } else {
        None
    };
    if let Some(j) = punct {
        let mut end = t.other_run(j);
        while t.is(end, &['\r', '\n']) {
            end += 1;
        }
        return end;
    }
    let ws_end = t.run(i, S);
    if ws_end == chars.len() {
        return ws_end;
    }
    if let Some(end) = t.through_last_break(i, ws_end) {
        return end;
    }
    if ws_end - i >= 2 {
        return ws_end - 1;
    }
    i + 1
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
