//! L5: the only module that links octocrab (GIT_GITHUB.md B0, B8). It knows how to reach
//! GitHub, how to classify what went wrong ([`access`]) and the names GitHub uses; what the
//! answers mean for dacli is decided by the commands above it.

pub mod access;
mod client;
pub mod types;

pub use access::{AccessProblem, RateKind};
pub use client::{
    API_VERSION, CallError, Client, Connect, ConnectError, Listing, Method, Rate, Reply, Token,
    TokenSource, decode, failure, last_page, next_link,
};

/// The REST base used when none is configured.
pub const DEFAULT_API_URL: &str = "https://api.github.com";

/// Whether `s` is `owner/name` as GitHub allows them: two non-empty segments of ASCII letters,
/// digits, `-`, `_` and `.`, neither `.` nor `..`.
pub fn is_repo_name(s: &str) -> bool {
    let Some((owner, name)) = s.split_once('/') else {
        return false;
    };
    [owner, name].iter().all(|part| {
        !part.is_empty()
            && *part != "."
            && *part != ".."
            && part.len() <= 100
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    })
}

/// The host `gh auth token --hostname` expects for an API base: `github.com` for
/// `api.github.com`, the server's host for GitHub Enterprise Server (`https://ghe/api/v3`).
pub fn host_of(api_url: &str) -> Option<String> {
    let uri: http::Uri = api_url.parse().ok()?;
    let host = uri.host()?;
    Some(if host == "api.github.com" {
        "github.com".to_string()
    } else {
        host.to_string()
    })
}

/// Percent-encodes one path segment or query value (branch names carry `/`).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_names_and_hosts() {
        assert!(is_repo_name("acme/widget"));
        assert!(is_repo_name("a-b/c.d_e"));
        assert!(!is_repo_name("acme"));
        assert!(!is_repo_name("acme/"));
        assert!(!is_repo_name("acme/../x"));
        assert!(!is_repo_name("acme/wid get"));
        assert_eq!(
            host_of("https://api.github.com").as_deref(),
            Some("github.com")
        );
        assert_eq!(
            host_of("https://ghe.example.com/api/v3").as_deref(),
            Some("ghe.example.com")
        );
        assert_eq!(encode("dacli/train/x"), "dacli%2Ftrain%2Fx");
    }
}
