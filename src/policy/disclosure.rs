//! What may leave the workspace for GitHub (GIT_GITHUB.md B6, FORMAT §19.2): the visibility
//! order, whether a consent record covers the live repository, and the content guards every
//! published field passes. Pure: the caller reads the records and the live visibility.

/// The issue and comment body limit GitHub enforces. Truncating would publish something
/// nobody reviewed, so an oversized item is withheld instead.
pub const BODY_LIMIT: usize = 65_536;

/// The object classes a project may publish (`github_projection.classes`).
pub const CLASSES: [&str; 7] = [
    "tasks",
    "decisions",
    "findings",
    "metrics",
    "refs",
    "risks",
    "escalations",
];

/// How exposed a repository is: private < internal < public.
pub fn exposure(visibility: &str) -> Option<u8> {
    match visibility {
        "private" => Some(0),
        "internal" => Some(1),
        "public" => Some(2),
        _ => None,
    }
}

/// A consent record as it matters here: the latest one for the (project, repo) pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consent {
    pub id: String,
    pub action: String,
    pub repo: String,
    pub visibility: String,
    pub classes: Vec<String>,
    pub granted_by: String,
}

/// Why nothing, or a class, may be published to the live repository; `None` when the consent
/// covers it. Private repositories need no consent.
pub fn consent_gap(
    consent: Option<&Consent>,
    live_repo: &str,
    live_visibility: &str,
) -> Option<&'static str> {
    let live = exposure(live_visibility)?;
    if live == 0 {
        return None;
    }
    let Some(c) = consent else {
        return Some("consent_missing");
    };
    if c.action != "grant" {
        return Some("consent_missing");
    }
    if c.repo != live_repo {
        return Some("consent_repo_mismatch");
    }
    match exposure(&c.visibility) {
        Some(recorded) if live <= recorded => None,
        _ => Some("consent_visibility_exceeded"),
    }
}

/// The classes that may be published: the project's allowlist, intersected with the
/// consent's classes unless the repository is private.
pub fn publishable_classes(
    project_classes: &[String],
    consent: Option<&Consent>,
    live_visibility: &str,
) -> Vec<String> {
    let private = exposure(live_visibility) == Some(0);
    project_classes
        .iter()
        .filter(|c| private || consent.is_some_and(|k| k.classes.contains(c)))
        .cloned()
        .collect()
}

/// A content guard that stopped a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guarded {
    /// `secret_pattern`, `absolute_path` or `body_too_large`.
    pub reason: &'static str,
    /// The pattern id for secrets, the limit for size; never the matched text.
    pub detail: String,
}

/// Token and key shapes that must never be published, by pattern id.
const SECRET_PREFIXES: [(&str, &str); 9] = [
    ("github_pat", "github_pat_"),
    ("github_token", "ghp_"),
    ("github_oauth", "gho_"),
    ("github_user_to_server", "ghu_"),
    ("github_server_to_server", "ghs_"),
    ("github_refresh", "ghr_"),
    ("dacli_agent_token", "dacli_a-"),
    ("slack_token", "xoxb-"),
    ("private_key", "-----BEGIN "),
];

/// Scans `text` with every guard. An empty result means it may be published.
pub fn guard(text: &str) -> Vec<Guarded> {
    let mut out = Vec::new();
    if let Some(id) = secret_pattern(text) {
        out.push(Guarded {
            reason: "secret_pattern",
            detail: id.to_string(),
        });
    }
    if has_absolute_path(text) {
        out.push(Guarded {
            reason: "absolute_path",
            detail: "an absolute file-system path".into(),
        });
    }
    if text.chars().count() > BODY_LIMIT {
        out.push(Guarded {
            reason: "body_too_large",
            detail: format!("over {BODY_LIMIT} characters"),
        });
    }
    out
}

fn secret_pattern(text: &str) -> Option<&'static str> {
    for (id, prefix) in SECRET_PREFIXES {
        if let Some(at) = text.find(prefix) {
            if id == "private_key" {
                if text[at..]
                    .lines()
                    .next()
                    .is_some_and(|l| l.contains("PRIVATE KEY"))
                {
                    return Some(id);
                }
                continue;
            }
            let rest = &text[at + prefix.len()..];
            let run = rest
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
                .count();
            if run >= 16 {
                return Some(id);
            }
        }
    }
    // AWS access key ids: AKIA + 16 upper-case letters or digits.
    let bytes = text.as_bytes();
    for i in 0..bytes.len().saturating_sub(19) {
        if &bytes[i..i + 4] == b"AKIA"
            && bytes[i + 4..i + 20]
                .iter()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        {
            return Some("aws_access_key");
        }
    }
    None
}

/// Unix paths under the usual roots, home-relative paths and Windows drive paths.
fn has_absolute_path(text: &str) -> bool {
    const ROOTS: [&str; 10] = [
        "/home/", "/Users/", "/root/", "/tmp/", "/var/", "/etc/", "/opt/", "/usr/", "/mnt/",
        "/srv/",
    ];
    let words = text.split(|c: char| c.is_whitespace() || matches!(c, '`' | '(' | '"' | '\''));
    words.into_iter().any(|w| {
        ROOTS.iter().any(|r| w.starts_with(r))
            || w.starts_with("~/")
            || (w.len() > 3 && w.as_bytes()[0].is_ascii_alphabetic() && &w[1..3] == ":\\")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn consent(repo: &str, vis: &str, classes: &[&str]) -> Consent {
        Consent {
            id: "01KJWEY3401D8YEST223MSSH1Q".into(),
            action: "grant".into(),
            repo: repo.into(),
            visibility: vis.into(),
            classes: classes.iter().map(|s| s.to_string()).collect(),
            granted_by: "human:mkoenig".into(),
        }
    }

    #[test]
    fn consent_covers_the_exact_repo_at_its_visibility_or_stricter() {
        let c = consent("acme/widget", "internal", &["tasks"]);
        assert_eq!(consent_gap(None, "acme/widget", "private"), None);
        assert_eq!(
            consent_gap(None, "acme/widget", "public"),
            Some("consent_missing")
        );
        assert_eq!(consent_gap(Some(&c), "acme/widget", "internal"), None);
        assert_eq!(
            consent_gap(Some(&c), "acme/widget", "public"),
            Some("consent_visibility_exceeded")
        );
        assert_eq!(
            consent_gap(Some(&c), "acme/other", "internal"),
            Some("consent_repo_mismatch")
        );
        let mut revoked = c.clone();
        revoked.action = "revoke".into();
        assert_eq!(
            consent_gap(Some(&revoked), "acme/widget", "internal"),
            Some("consent_missing")
        );
        let project = vec!["tasks".to_string(), "decisions".to_string()];
        assert_eq!(
            publishable_classes(&project, Some(&c), "internal"),
            vec!["tasks"]
        );
        assert_eq!(publishable_classes(&project, None, "private"), project);
    }

    #[test]
    fn guards_catch_secrets_paths_and_size_without_echoing_them() {
        assert!(guard("Round half-even once, at the boundary.").is_empty());
        let g = guard("token ghp_0123456789abcdefABCDEF0123 leaked");
        assert_eq!(g[0].reason, "secret_pattern");
        assert_eq!(g[0].detail, "github_token");
        assert!(!g[0].detail.contains("ghp_0123"));
        assert_eq!(
            guard("key AKIAIOSFODNN7EXAMPLE here")[0].detail,
            "aws_access_key"
        );
        assert_eq!(
            guard("-----BEGIN RSA PRIVATE KEY-----")[0].detail,
            "private_key"
        );
        assert_eq!(guard("see /home/ada/src/x.rs")[0].reason, "absolute_path");
        assert_eq!(guard("C:\\Users\\ada")[0].reason, "absolute_path");
        assert!(guard("the repo path src/money/round.rs").is_empty());
        assert_eq!(
            guard(&"x".repeat(BODY_LIMIT + 1))[0].reason,
            "body_too_large"
        );
    }
}
