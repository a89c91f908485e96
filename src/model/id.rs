//! Identifiers (docs/FORMAT.md §3.1).

use ulid::Ulid;

/// The reserved id of the root agent.
pub const ROOT_AGENT: &str = "a-root";

/// Parses a ULID, case-insensitively, as stored or typed.
pub fn parse_ulid(s: &str) -> Option<Ulid> {
    if s.len() != 26 {
        return None;
    }
    Ulid::from_string(&s.to_ascii_uppercase()).ok()
}

/// The creation time a ULID encodes, truncated to whole seconds (`created` of its object).
pub fn ulid_time(u: Ulid) -> jiff::Timestamp {
    let secs = (u.timestamp_ms() / 1000) as i64;
    jiff::Timestamp::from_second(secs).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// True for a well-formed agent id: `a-root`, `a-<ULID>` or `a-<role>-<ULID>`.
pub fn is_agent_id(s: &str) -> bool {
    if s == ROOT_AGENT {
        return true;
    }
    let Some(rest) = s.strip_prefix("a-") else {
        return false;
    };
    if rest.len() == 26 {
        return is_upper_ulid(rest);
    }
    match rest.len().checked_sub(27) {
        Some(split) if rest.as_bytes()[split] == b'-' => {
            let (role, ulid) = (&rest[..split], &rest[split + 1..]);
            !role.is_empty()
                && role
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && is_upper_ulid(ulid)
        }
        _ => false,
    }
}

fn is_upper_ulid(s: &str) -> bool {
    s.len() == 26 && !s.bytes().any(|b| b.is_ascii_lowercase()) && parse_ulid(s).is_some()
}

/// True for `human:<login>`.
pub fn is_human_ref(s: &str) -> bool {
    s.strip_prefix("human:").is_some_and(|login| {
        !login.is_empty()
            && login
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_ids() {
        assert!(is_agent_id("a-root"));
        assert!(is_agent_id("a-01KJPX6ZT81TTNRTABC9KBJYTV"));
        assert!(is_agent_id("a-builder-01KJPX6ZT81TTNRTABC9KBJYTV"));
        assert!(is_agent_id("a-code-review-01KJPX6ZT81TTNRTABC9KBJYTV"));
        assert!(!is_agent_id("a-builder-01kjpx6zt81ttnrtabc9kbjytv"));
        assert!(!is_agent_id("a--01KJPX6ZT81TTNRTABC9KBJYTV"));
        assert!(!is_agent_id("a-../x"));
        assert!(!is_agent_id("root"));
    }

    #[test]
    fn ulid_time_truncates_to_seconds() {
        let u = parse_ulid("01KJPXJ57RGDMEE50E5T1E877Q").expect("valid");
        assert_eq!(
            crate::model::format_time(ulid_time(u)),
            "2026-03-02T09:20:11Z"
        );
    }
}
