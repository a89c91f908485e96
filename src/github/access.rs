//! Typed GitHub access problems (GIT_GITHUB.md B0), derived only from the HTTP status and the
//! response headers, never from message text: GitHub rewords messages freely, while statuses
//! and headers are its documented contract.

use serde::Serialize;

/// Why GitHub could not be used for a call. Any of them makes a gate `unknown`, and `unknown`
/// refuses: a problem is never read as "nothing there".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AccessProblem {
    /// No `GH_TOKEN`, no `GITHUB_TOKEN`, and `gh auth token` failed or is absent.
    MissingToken,
    /// 401: the token is wrong, expired or revoked.
    BadCredentials,
    /// 403 with `X-GitHub-SSO: required; url=…`: the organization enforces SAML SSO and the
    /// token is not authorized for it. The URL expires within about an hour.
    SsoRequired { authorize_url: Option<String> },
    /// A classic token lacking an OAuth scope the route accepts (`X-Accepted-OAuth-Scopes`
    /// against `X-OAuth-Scopes`).
    InsufficientScope {
        needed: Vec<String>,
        have: Vec<String>,
    },
    /// A fine-grained token or app lacking a permission (`X-Accepted-GitHub-Permissions`,
    /// alternative sets separated by `;`), or a 403 that names nothing.
    InsufficientPermission { needed_sets: Vec<String> },
    /// 403/429 with `x-ratelimit-remaining: 0` (primary) or with `retry-after` (secondary).
    RateLimited {
        limit: RateKind,
        #[serde(skip_serializing_if = "Option::is_none")]
        reset_at: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        retry_after_s: Option<u64>,
    },
    /// A 404 on a repository route: the object is absent, or this token cannot see it
    /// (fine-grained tokens get 404, not 403, for repositories they cannot see).
    NotFoundOrNoAccess,
    /// 5xx.
    ServerError { status: u16 },
    /// Transport or timeout errors: GitHub was not reached or did not answer in time.
    NetworkUnreachable { detail: String },
    /// The run's own limit (`--max-api-calls`) stopped reading: GitHub answered everything it
    /// was asked, and more was left to ask.
    BudgetSpent { limit: u32 },
    /// The run's overall deadline passed before everything was read.
    DeadlinePassed { after_ms: u64 },
}

/// Which rate limit was hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RateKind {
    Primary,
    Secondary,
}

impl AccessProblem {
    /// The variant name, as serialized in `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            AccessProblem::MissingToken => "missing_token",
            AccessProblem::BadCredentials => "bad_credentials",
            AccessProblem::SsoRequired { .. } => "sso_required",
            AccessProblem::InsufficientScope { .. } => "insufficient_scope",
            AccessProblem::InsufficientPermission { .. } => "insufficient_permission",
            AccessProblem::RateLimited { .. } => "rate_limited",
            AccessProblem::NotFoundOrNoAccess => "not_found_or_no_access",
            AccessProblem::ServerError { .. } => "server_error",
            AccessProblem::NetworkUnreachable { .. } => "network_unreachable",
            AccessProblem::BudgetSpent { .. } => "budget_spent",
            AccessProblem::DeadlinePassed { .. } => "deadline_passed",
        }
    }

    /// Transient problems (network, 5xx, rate limits) go away by waiting; the others need a
    /// person to change a token, a permission or an authorization.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            AccessProblem::RateLimited { .. }
                | AccessProblem::ServerError { .. }
                | AccessProblem::NetworkUnreachable { .. }
                | AccessProblem::BudgetSpent { .. }
                | AccessProblem::DeadlinePassed { .. }
        )
    }

    /// One sentence saying what happened, without any token or header value beyond the
    /// names GitHub documents.
    pub fn describe(&self) -> String {
        match self {
            AccessProblem::MissingToken => {
                "no GitHub token: GH_TOKEN and GITHUB_TOKEN are unset and `gh auth token` gave none"
                    .into()
            }
            AccessProblem::BadCredentials => {
                "GitHub rejected the token (401 bad credentials)".into()
            }
            AccessProblem::SsoRequired { .. } => {
                "the organization requires SAML single sign-on and the token is not authorized for it"
                    .into()
            }
            AccessProblem::InsufficientScope { needed, have } => format!(
                "the token's OAuth scopes ({}) lack one of {}",
                list_or_none(have),
                list_or_none(needed)
            ),
            AccessProblem::InsufficientPermission { needed_sets } => {
                if needed_sets.is_empty() {
                    "GitHub refused the call (403) without naming a permission".into()
                } else {
                    format!(
                        "the token lacks a permission; GitHub accepts any of: {}",
                        needed_sets.join(" | ")
                    )
                }
            }
            AccessProblem::RateLimited {
                limit: RateKind::Primary,
                reset_at,
                ..
            } => format!(
                "the primary rate limit is exhausted{}",
                reset_at
                    .as_deref()
                    .map(|r| format!(" until {r}"))
                    .unwrap_or_default()
            ),
            AccessProblem::RateLimited { retry_after_s, .. } => format!(
                "a secondary rate limit was hit{}",
                retry_after_s
                    .map(|s| format!("; retry after {s} s"))
                    .unwrap_or_default()
            ),
            AccessProblem::NotFoundOrNoAccess => {
                "GitHub answered 404: it does not exist, or this token cannot see it".into()
            }
            AccessProblem::ServerError { status } => format!("GitHub answered {status}"),
            AccessProblem::NetworkUnreachable { detail } => {
                format!("GitHub was not reached ({detail})")
            }
            AccessProblem::BudgetSpent { limit } => format!(
                "the budget of {limit} API calls was spent before everything was read"
            ),
            AccessProblem::DeadlinePassed { after_ms } => format!(
                "the run's deadline of {} s passed before everything was read",
                after_ms.div_ceil(1000)
            ),
        }
    }

    /// What to do about it: one concrete instruction (COMMANDS §2 `github.access`).
    pub fn remedy(&self) -> String {
        match self {
            AccessProblem::MissingToken => {
                "Set GH_TOKEN to a token that can read the repository, or log in with `gh auth login`."
                    .into()
            }
            AccessProblem::BadCredentials => {
                "Refresh the token (GH_TOKEN, GITHUB_TOKEN or `gh auth refresh`); this one is expired or revoked."
                    .into()
            }
            AccessProblem::SsoRequired {
                authorize_url: Some(url),
            } => format!("Open {url} to authorize the token for the organization, then run again."),
            AccessProblem::SsoRequired { authorize_url: None } => {
                "Authorize the token for the organization's SAML SSO in the token settings, then run again."
                    .into()
            }
            AccessProblem::InsufficientScope { needed, .. } => format!(
                "Grant the token the scope {} (`gh auth refresh -s {}`), then run again.",
                list_or_none(needed),
                needed.first().map(String::as_str).unwrap_or("repo")
            ),
            AccessProblem::InsufficientPermission { needed_sets } if !needed_sets.is_empty() => {
                format!(
                    "Grant the token {}, then run again.",
                    needed_sets.join(" or ")
                )
            }
            AccessProblem::InsufficientPermission { .. } => {
                "Use a token with read access to the repository's pull requests, checks and actions."
                    .into()
            }
            AccessProblem::RateLimited {
                reset_at,
                retry_after_s,
                ..
            } => match (reset_at, retry_after_s) {
                (Some(r), _) => format!("Wait for the rate limit to reset ({r}), then run again."),
                (None, Some(s)) => format!("Wait {s} s, then run again."),
                (None, None) => {
                    "Wait at least a minute for the rate limit, then run again.".into()
                }
            },
            AccessProblem::NotFoundOrNoAccess => {
                "Check the repository and number; the repo may be invisible to this token (fine-grained tokens see only the repositories they list)."
                    .into()
            }
            AccessProblem::ServerError { .. } | AccessProblem::NetworkUnreachable { .. } => {
                "Run again when GitHub is reachable.".into()
            }
            AccessProblem::BudgetSpent { limit } => {
                format!("Run again with `--max-api-calls` above {limit}.")
            }
            AccessProblem::DeadlinePassed { .. } => {
                "Run again, or raise DACLI_GITHUB_DEADLINE_MS.".into()
            }
        }
    }
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// The value of header `name` (case-insensitive).
pub fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn comma_list(value: Option<&str>) -> Vec<String> {
    value
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The RFC 3339 time of a `x-ratelimit-reset` epoch value.
fn reset_time(headers: &[(String, String)]) -> Option<String> {
    let secs: i64 = header(headers, "x-ratelimit-reset")?.trim().parse().ok()?;
    let t = jiff::Timestamp::from_second(secs).ok()?;
    Some(t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// Classifies a response. `None` for a success (2xx, 3xx) and for statuses that are answers
/// rather than access problems (405, 409, 422 ...: the route decides what they mean).
pub fn classify(status: u16, headers: &[(String, String)]) -> Option<AccessProblem> {
    let remaining = header(headers, "x-ratelimit-remaining").map(str::trim);
    let retry_after = header(headers, "retry-after").and_then(|v| v.trim().parse::<u64>().ok());
    match status {
        401 => Some(AccessProblem::BadCredentials),
        403 | 429 if remaining == Some("0") => Some(AccessProblem::RateLimited {
            limit: RateKind::Primary,
            reset_at: reset_time(headers),
            retry_after_s: retry_after,
        }),
        403 | 429 if retry_after.is_some() || status == 429 => Some(AccessProblem::RateLimited {
            limit: RateKind::Secondary,
            reset_at: None,
            retry_after_s: retry_after,
        }),
        403 | 404 if sso(headers).is_some() => sso(headers),
        403 | 404 => {
            if let Some(p) = header(headers, "x-accepted-github-permissions") {
                let needed_sets: Vec<String> = p
                    .split(';')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                return Some(AccessProblem::InsufficientPermission { needed_sets });
            }
            let needed = comma_list(header(headers, "x-accepted-oauth-scopes"));
            let have = comma_list(header(headers, "x-oauth-scopes"));
            if header(headers, "x-oauth-scopes").is_some()
                && !needed.is_empty()
                && !needed.iter().any(|n| covers(&have, n))
            {
                return Some(AccessProblem::InsufficientScope { needed, have });
            }
            if status == 404 {
                Some(AccessProblem::NotFoundOrNoAccess)
            } else {
                Some(AccessProblem::InsufficientPermission {
                    needed_sets: Vec::new(),
                })
            }
        }
        500..=599 => Some(AccessProblem::ServerError { status }),
        _ => None,
    }
}

/// Whether the scopes `have` grant `needed`: `repo` implies its `repo:*` and `public_repo`
/// sub-scopes, `admin:org` implies `read:org` and `write:org`, and so on.
fn covers(have: &[String], needed: &str) -> bool {
    have.iter().any(|h| {
        h == needed
            || (h == "repo" && (needed.starts_with("repo:") || needed == "public_repo"))
            || needed.split_once(':').is_some_and(|(level, area)| {
                h == &format!("admin:{area}") || (level == "read" && h == &format!("write:{area}"))
            })
    })
}

/// The SSO problem of an `X-GitHub-SSO: required; url=…` header.
fn sso(headers: &[(String, String)]) -> Option<AccessProblem> {
    let value = header(headers, "x-github-sso")?;
    let mut parts = value.split(';').map(str::trim);
    if parts.next() != Some("required") {
        return None;
    }
    let authorize_url = parts
        .find_map(|p| p.strip_prefix("url="))
        .map(str::to_string);
    Some(AccessProblem::SsoRequired { authorize_url })
}

/// Organizations whose results a 200 silently left out (`X-GitHub-SSO: partial-results;
/// organizations=…`): a warning, not a failure.
pub fn sso_partial(headers: &[(String, String)]) -> Option<Vec<String>> {
    let value = header(headers, "x-github-sso")?;
    let mut parts = value.split(';').map(str::trim);
    if parts.next() != Some("partial-results") {
        return None;
    }
    Some(comma_list(
        parts.find_map(|p| p.strip_prefix("organizations=")),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn statuses_and_headers_decide_never_the_message() {
        assert_eq!(classify(200, &[]), None);
        assert_eq!(classify(409, &[]), None);
        assert_eq!(classify(401, &[]), Some(AccessProblem::BadCredentials));
        assert_eq!(classify(404, &[]), Some(AccessProblem::NotFoundOrNoAccess));
        assert_eq!(
            classify(502, &[]),
            Some(AccessProblem::ServerError { status: 502 })
        );
        assert_eq!(
            classify(
                403,
                &h(&[(
                    "X-GitHub-SSO",
                    "required; url=https://github.com/orgs/acme/sso?x=1"
                )])
            ),
            Some(AccessProblem::SsoRequired {
                authorize_url: Some("https://github.com/orgs/acme/sso?x=1".into())
            })
        );
        assert_eq!(
            classify(
                403,
                &h(&[
                    ("x-ratelimit-remaining", "0"),
                    ("x-ratelimit-reset", "1772442000")
                ])
            ),
            Some(AccessProblem::RateLimited {
                limit: RateKind::Primary,
                reset_at: Some("2026-03-02T09:00:00Z".into()),
                retry_after_s: None
            })
        );
        assert_eq!(
            classify(429, &h(&[("retry-after", "60")])),
            Some(AccessProblem::RateLimited {
                limit: RateKind::Secondary,
                reset_at: None,
                retry_after_s: Some(60)
            })
        );
        assert_eq!(
            classify(
                403,
                &h(&[(
                    "X-Accepted-GitHub-Permissions",
                    "contents=read; pull_requests=write"
                )])
            ),
            Some(AccessProblem::InsufficientPermission {
                needed_sets: vec!["contents=read".into(), "pull_requests=write".into()]
            })
        );
        assert_eq!(
            classify(
                403,
                &h(&[
                    ("X-OAuth-Scopes", "public_repo"),
                    ("X-Accepted-OAuth-Scopes", "repo")
                ])
            ),
            Some(AccessProblem::InsufficientScope {
                needed: vec!["repo".into()],
                have: vec!["public_repo".into()]
            })
        );
    }

    #[test]
    fn broader_scopes_cover_narrower_ones() {
        let have = vec!["repo".to_string(), "admin:org".to_string()];
        assert!(covers(&have, "public_repo"));
        assert!(covers(&have, "repo:status"));
        assert!(covers(&have, "read:org"));
        assert!(!covers(&have, "workflow"));
    }

    #[test]
    fn partial_sso_is_a_warning_with_the_organizations() {
        assert_eq!(
            sso_partial(&h(&[(
                "x-github-sso",
                "partial-results; organizations=21955855,20582480"
            )])),
            Some(vec!["21955855".into(), "20582480".into()])
        );
        assert_eq!(
            classify(
                200,
                &h(&[("x-github-sso", "partial-results; organizations=1")])
            ),
            None
        );
    }
}
