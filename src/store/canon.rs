//! The canonical byte form of every file dacli writes (docs/FORMAT.md §2).

const BOM: &str = "\u{feff}";

/// Returns the canonical form of `text`: no byte-order mark, LF line ends only (CRLF and lone
/// CR become LF), and exactly one final LF. An empty text stays empty.
pub fn canonicalize(text: &str) -> String {
    let text = text.strip_prefix(BOM).unwrap_or(text);
    let mut out = String::with_capacity(text.len() + 1);
    // Most files have no CR at all: copied whole rather than character by character.
    let mut lines = text.split('\r');
    out.push_str(lines.next().unwrap_or_default());
    for line in lines {
        out.push('\n');
        out.push_str(line.strip_prefix('\n').unwrap_or(line));
    }
    let trimmed = out.trim_end_matches('\n').len();
    out.truncate(trimmed);
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// True when `bytes` are already canonical (valid UTF-8, no BOM, no NUL, no CR, one final LF).
pub fn is_canonical(bytes: &[u8]) -> bool {
    noncanonical_reasons(bytes).is_empty()
}

/// Names what keeps `bytes` from being canonical, for `lint` and `doctor` details.
/// Invalid UTF-8 and NUL are not listed here: they make a file malformed, not noncanonical.
pub fn noncanonical_reasons(bytes: &[u8]) -> Vec<&'static str> {
    let mut reasons = Vec::new();
    if bytes.starts_with(BOM.as_bytes()) {
        reasons.push("byte-order mark");
    }
    if bytes.contains(&b'\r') {
        reasons.push("CR line ends");
    }
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        reasons.push("no final newline");
    }
    if bytes.ends_with(b"\n\n") {
        reasons.push("more than one final newline");
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_form_drops_bom_crlf_and_extra_newlines() {
        assert_eq!(canonicalize("\u{feff}a\r\nb\rc\n\n\n"), "a\nb\nc\n");
        assert_eq!(canonicalize("a\r\r\nb\r\n\r\nc\r"), "a\n\nb\n\nc\n");
        assert_eq!(canonicalize("\r\n\r"), "");
        assert_eq!(canonicalize("é\r\nü"), "é\nü\n");
        assert_eq!(canonicalize("x"), "x\n");
        assert_eq!(canonicalize(""), "");
        assert!(is_canonical(b"a\nb\n"));
        assert!(!is_canonical(b"a\r\nb\n"));
        assert!(!is_canonical(b"a\n\n"));
        assert!(!is_canonical(b"a"));
    }
}
