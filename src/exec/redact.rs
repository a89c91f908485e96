//! Secrets kept away from child processes: the variables a child never inherits
//! ([`SECRET_VARS`]) and the redaction of dacli agent tokens from what a child prints
//! ([`redact`], [`Redactor`] for a stream).
//!
//! A token is `dacli_<agent-id>_<64 hex digits>` (FORMAT §6). Output is redacted of every
//! string of that shape, whoever's token it is, live or not: a token-shaped string in a
//! command's output is never something a reader needs.

/// The variables dacli reads that hold secrets: removed from the environment of every child.
pub const SECRET_VARS: [&str; 3] = ["DACLI_AGENT", "GH_TOKEN", "GITHUB_TOKEN"];

/// What a redacted token is replaced with.
pub const REDACTED: &str = "[redacted token]";

const PREFIX: &[u8] = b"dacli_";
const SECRET_HEX: usize = 64;
/// The longest token: the prefix, an agent id (`a-<role>-<ULID>`, role ≤ 64) and the secret.
const MAX_TOKEN: usize = 256;

fn token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The byte ranges of token-shaped strings in `text`, in order, not overlapping.
pub fn token_spans(text: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + PREFIX.len() <= text.len() {
        if &text[i..i + PREFIX.len()] != PREFIX {
            i += 1;
            continue;
        }
        let start = i;
        let mut run_end = start + PREFIX.len();
        while run_end < text.len() && token_char(text[run_end]) {
            run_end += 1;
        }
        // The agent id runs to an `_` followed by exactly the 64 hex digits of the secret.
        let found = (start + PREFIX.len() + 1..run_end).find_map(|sep| {
            let end = sep + 1 + SECRET_HEX;
            (text[sep] == b'_'
                && end <= run_end
                && text[sep + 1..end].iter().all(u8::is_ascii_hexdigit))
            .then_some(end)
        });
        match found {
            Some(end) => {
                out.push((start, end));
                i = end;
            }
            None => i = start + 1,
        }
    }
    out
}

/// `text` with every token-shaped string replaced by [`REDACTED`].
pub fn redact_bytes(text: &[u8]) -> Vec<u8> {
    let spans = token_spans(text);
    if spans.is_empty() {
        return text.to_vec();
    }
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    for (s, e) in spans {
        out.extend_from_slice(&text[at..s]);
        out.extend_from_slice(REDACTED.as_bytes());
        at = e;
    }
    out.extend_from_slice(&text[at..]);
    out
}

/// `text` with every token-shaped string replaced by [`REDACTED`].
pub fn redact(text: &str) -> String {
    String::from_utf8_lossy(&redact_bytes(text.as_bytes())).into_owned()
}

/// Redacts a stream that arrives in chunks: a token split between two chunks is still found,
/// because the trailing run of token characters (at most [`MAX_TOKEN`] bytes) is held back
/// until the next chunk or the end.
#[derive(Debug, Default)]
pub struct Redactor {
    held: Vec<u8>,
}

impl Redactor {
    /// Takes a chunk; returns what can be passed on now.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        self.held.extend_from_slice(chunk);
        let run = self
            .held
            .iter()
            .rev()
            .take_while(|b| token_char(**b))
            .count()
            .min(MAX_TOKEN);
        let cut = self.held.len() - run;
        let rest = self.held.split_off(cut);
        let ready = std::mem::replace(&mut self.held, rest);
        redact_bytes(&ready)
    }

    /// The end of the stream: everything still held, redacted.
    pub fn finish(&mut self) -> Vec<u8> {
        redact_bytes(&std::mem::take(&mut self.held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(id: &str) -> String {
        format!("dacli_{id}_{}", "0123456789abcdef".repeat(4))
    }

    #[test]
    fn tokens_are_found_wherever_they_stand() {
        let t = token("a-builder-01KJPWD6M0NXPMMVRRH914WRBV");
        let text = format!("x={t}\0DACLI_AGENT={t}\nq\"{t}\"");
        let out = redact(&text);
        assert!(!out.contains(&t), "{out}");
        assert_eq!(out.matches(REDACTED).count(), 3);
        assert_eq!(redact("dacli_a-root_abc"), "dacli_a-root_abc");
        assert_eq!(redact("plain text"), "plain text");
    }

    #[test]
    fn a_stream_split_anywhere_is_redacted() {
        let t = token("a-root");
        let text = format!("before {t} after {t}");
        for cut in 0..text.len() {
            let mut r = Redactor::default();
            let mut out = r.push(&text.as_bytes()[..cut]);
            out.extend(r.push(&text.as_bytes()[cut..]));
            out.extend(r.finish());
            assert_eq!(
                String::from_utf8_lossy(&out),
                format!("before {REDACTED} after {REDACTED}"),
                "cut at {cut}"
            );
        }
    }
}
