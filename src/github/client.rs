//! The HTTP client: octocrab on a current-thread tokio runtime owned by the call, so a command
//! stays synchronous and nothing outlives it. Every request is counted against a budget, and
//! every non-success is classified by [`super::access::classify`] before a caller sees it.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use octocrab::Octocrab;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::access::{self, AccessProblem};

/// The REST API version every request pins (`X-GitHub-Api-Version`, set by octocrab from its
/// own manifest); recorded in evidence. A bump is a deliberate, tested change.
pub const API_VERSION: &str = "2022-11-28";

/// Where a token came from. The value itself is never stored, logged or returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// `GH_TOKEN` or `GITHUB_TOKEN`.
    Env,
    /// `gh auth token`.
    GhCli,
    /// None was found.
    None,
}

impl TokenSource {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenSource::Env => "env",
            TokenSource::GhCli => "gh_cli",
            TokenSource::None => "none",
        }
    }
}

/// A token and its source. `Debug` never shows the value; nothing serializes it.
pub struct Token {
    secret: String,
    pub source: TokenSource,
}

impl Token {
    /// Wraps a token value found at `source`.
    pub fn new(secret: String, source: TokenSource) -> Token {
        Token { secret, source }
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("secret", &"[redacted]")
            .field("source", &self.source)
            .finish()
    }
}

/// The HTTP methods dacli sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }
}

/// One answer from GitHub, whatever its status.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The parsed JSON body; `Null` when empty or not JSON.
    pub body: Value,
}

impl Reply {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Why a call gave no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// An access problem (classified from status and headers, or the transport).
    Access {
        problem: AccessProblem,
        route: String,
    },
    /// `max_api_calls` is spent; the call was not made.
    Budget { limit: u32, route: String },
    /// A status that is neither success nor an access problem (e.g. 422 on a read).
    Status { status: u16, route: String },
    /// A success whose body does not have the documented shape.
    Decode { route: String, detail: String },
    /// The run's overall deadline passed; the call was not made or was cut.
    Deadline { after_ms: u64, route: String },
    /// A list had more pages than its caller reads (`max_pages`).
    PageLimit { pages: u32, route: String },
}

impl CallError {
    /// The access problem, when that is what it is.
    pub fn problem(&self) -> Option<&AccessProblem> {
        match self {
            CallError::Access { problem, .. } => Some(problem),
            _ => None,
        }
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Access { problem, route } => {
                write!(f, "{} ({}: {route})", problem.describe(), problem.kind())
            }
            CallError::Budget { limit, route } => write!(
                f,
                "the budget of {limit} API calls is spent (next call would have been {route})"
            ),
            CallError::Status { status, route } => {
                write!(f, "GitHub answered {status} to {route}")
            }
            CallError::Decode { route, detail } => {
                write!(
                    f,
                    "GitHub's answer to {route} is not what its documentation says: {detail}"
                )
            }
            CallError::Deadline { after_ms, route } => write!(
                f,
                "the run's deadline of {} s passed (next call would have been {route})",
                after_ms.div_ceil(1000)
            ),
            CallError::PageLimit { pages, route } => {
                write!(f, "only the first {pages} pages of {route} are read")
            }
        }
    }
}

/// The rate-limit headers of the latest answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Rate {
    pub remaining: Option<i64>,
    pub reset_at: Option<String>,
}

/// How to reach GitHub.
#[derive(Debug)]
pub struct Connect<'a> {
    /// The REST base (`https://api.github.com`, `https://ghe.example/api/v3`).
    pub api_url: &'a str,
    pub token: &'a Token,
    /// How long one whole request may take, answer body included; the connect timeout is a
    /// fifth of it, at least 1 s.
    pub timeout: Duration,
    /// Requests allowed in this client's life (`max_api_calls`).
    pub max_calls: u32,
    /// How long the whole run may talk to GitHub; no request starts or runs past it.
    pub deadline: Duration,
}

/// Every item of a paginated list that was read, and why it ends early when it does.
#[derive(Debug, Clone)]
pub struct Listing {
    pub items: Vec<Value>,
    /// `total_count` of a wrapped list's first page, when GitHub gave one.
    pub total_count: Option<u64>,
    /// Why pages that exist were not read (budget, deadline, rate limit, page limit, a failed
    /// later page); `None` when the list is complete.
    pub cut: Option<CallError>,
}

/// A client for one command run.
///
/// Invariant: at most `max_calls` requests are sent; the token is held only inside octocrab.
pub struct Client {
    /// Always `Some` until dropped.
    rt: Option<tokio::runtime::Runtime>,
    octo: Octocrab,
    /// Scheme and authority of the API base: the only origin a `Link` may lead to.
    origin: (String, String),
    /// The path of the API base (`/api/v3` on GitHub Enterprise Server, else empty).
    base_path: String,
    timeout: Duration,
    started: Instant,
    deadline: Duration,
    /// The rate limit that stopped this client: no further request is sent.
    halted: RefCell<Option<AccessProblem>>,
    calls: Cell<u32>,
    max_calls: u32,
    rate: RefCell<Rate>,
    /// How long after the latest answer the rate limit resets, by GitHub's own clock.
    reset_in: RefCell<Option<Duration>>,
    scopes: RefCell<Option<Vec<String>>>,
    sso_partial: RefCell<Vec<String>>,
}

/// Why a client could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectError {
    /// The API URL is not an absolute `http(s)` URL.
    BadUrl(String),
    /// The runtime or the TLS setup failed.
    Setup(String),
}

impl Client {
    /// Builds the client; sends nothing.
    pub fn connect(c: Connect<'_>) -> Result<Client, ConnectError> {
        let url = c.api_url.trim_end_matches('/');
        let parsed: Result<http::Uri, _> = url.parse();
        let (origin, base_path) = match parsed {
            Ok(u) if matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some() => (
                (
                    u.scheme_str().unwrap_or_default().to_string(),
                    u.authority().map(|a| a.to_string()).unwrap_or_default(),
                ),
                u.path().trim_end_matches('/').to_string(),
            ),
            _ => {
                return Err(ConnectError::BadUrl(format!(
                    "`{url}` is not an http(s) URL"
                )));
            }
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ConnectError::Setup(format!("no async runtime: {e}")))?;
        // octocrab spawns its buffer worker while building, so it needs the runtime entered.
        let secret = c.token.secret.clone();
        let timeout = c.timeout;
        let octo = off_runtime(|| {
            let _entered = rt.enter();
            Octocrab::builder()
                .base_uri(url)
                .map_err(|e| ConnectError::BadUrl(format!("`{url}`: {e}")))?
                .personal_token(secret)
                .add_header(
                    http::header::ACCEPT,
                    "application/vnd.github+json".to_string(),
                )
                .set_connect_timeout(Some((timeout / 5).max(Duration::from_secs(1))))
                .set_read_timeout(Some(timeout))
                .set_write_timeout(Some(timeout))
                .build()
                .map_err(|e| ConnectError::Setup(e.to_string()))
        })?;
        #[allow(
            clippy::disallowed_methods,
            reason = "a deadline needs a monotonic clock"
        )]
        let started = Instant::now();
        Ok(Client {
            rt: Some(rt),
            octo,
            origin,
            base_path,
            timeout,
            started,
            deadline: c.deadline,
            halted: RefCell::new(None),
            calls: Cell::new(0),
            max_calls: c.max_calls,
            rate: RefCell::new(Rate::default()),
            reset_in: RefCell::new(None),
            scopes: RefCell::new(None),
            sso_partial: RefCell::new(Vec::new()),
        })
    }

    /// Requests sent so far.
    pub fn calls(&self) -> u32 {
        self.calls.get()
    }

    /// The rate-limit state of the latest answer.
    pub fn rate(&self) -> Rate {
        self.rate.borrow().clone()
    }

    /// How long until the rate limit resets, measured from the latest answer by GitHub's own
    /// clock (its `x-ratelimit-reset` against its `Date`), so a skewed local clock cannot make
    /// a client wait too little or too long.
    pub fn reset_in(&self) -> Option<Duration> {
        *self.reset_in.borrow()
    }

    /// What is left of the run's deadline.
    pub fn time_left(&self) -> Duration {
        self.deadline.saturating_sub(self.started.elapsed())
    }

    /// Starts another look at GitHub after a pause (`pr diagnose --watch`): a new budget of
    /// `max_calls`, and a rate limit that stopped the last look lifted (the caller waited for
    /// its reset). The run's deadline runs on.
    pub fn renew(&self) {
        self.calls.set(0);
        *self.halted.borrow_mut() = None;
    }

    /// The classic token's OAuth scopes, when an answer named them (`X-OAuth-Scopes`).
    pub fn scopes(&self) -> Option<Vec<String>> {
        self.scopes.borrow().clone()
    }

    /// Organizations an answer left out for SAML SSO (a warning).
    pub fn sso_partial(&self) -> Vec<String> {
        self.sso_partial.borrow().clone()
    }

    /// Sends one request and returns GitHub's answer whatever its status; only the transport
    /// and the budget fail.
    pub fn send(
        &self,
        method: Method,
        route: &str,
        body: Option<&Value>,
    ) -> Result<Reply, CallError> {
        let shown = format!("{} {route}", method.as_str());
        if let Some(problem) = self.halted.borrow().clone() {
            return Err(CallError::Access {
                problem,
                route: shown,
            });
        }
        if self.calls.get() >= self.max_calls {
            return Err(CallError::Budget {
                limit: self.max_calls,
                route: shown,
            });
        }
        let left = self.deadline.saturating_sub(self.started.elapsed());
        if left.is_zero() {
            return Err(CallError::Deadline {
                after_ms: self.deadline.as_millis() as u64,
                route: shown,
            });
        }
        // The timeout bounds the whole exchange, body included: a server dripping its answer
        // cannot hold a request open past it, nor the run past its deadline.
        let limit = self.timeout.min(left);
        let cut_by_deadline = left < self.timeout;
        self.calls.set(self.calls.get() + 1);
        let octo = &self.octo;
        let rt = self
            .rt
            .as_ref()
            .expect("the runtime lives as long as the client");
        let result = off_runtime(|| {
            rt.block_on(async {
                tokio::time::timeout(limit, async {
                    let resp = match method {
                        Method::Get => octo._get(route).await,
                        Method::Post => octo._post(route, body).await,
                        Method::Put => octo._put(route, body).await,
                        Method::Patch => octo._patch(route, body).await,
                        Method::Delete => octo._delete(route, body).await,
                    }?;
                    let status = resp.status().as_u16();
                    let headers: Vec<(String, String)> = resp
                        .headers()
                        .iter()
                        .filter_map(|(k, v)| {
                            Some((k.as_str().to_string(), v.to_str().ok()?.to_string()))
                        })
                        .collect();
                    let text = octo.body_to_string(resp).await?;
                    Ok::<_, octocrab::Error>((status, headers, text))
                })
                .await
            })
        });
        let (status, headers, text) = match result {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                return Err(CallError::Access {
                    problem: AccessProblem::NetworkUnreachable {
                        detail: transport_detail(&e),
                    },
                    route: shown,
                });
            }
            Err(_) if cut_by_deadline => {
                return Err(CallError::Deadline {
                    after_ms: self.deadline.as_millis() as u64,
                    route: shown,
                });
            }
            Err(_) => {
                return Err(CallError::Access {
                    problem: AccessProblem::NetworkUnreachable {
                        detail: format!(
                            "timed out: no complete answer within {} ms",
                            limit.as_millis()
                        ),
                    },
                    route: shown,
                });
            }
        };
        self.observe(&headers);
        // A rate limit stops the run: every further request would be refused too and would
        // only count against the limit (GitHub bans clients that keep calling).
        if let Some(p @ AccessProblem::RateLimited { .. }) = access::classify(status, &headers) {
            *self.halted.borrow_mut() = Some(p);
        }
        let body = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::Null)
        };
        Ok(Reply {
            status,
            headers,
            body,
        })
    }

    /// `send`, with every non-success turned into a [`CallError`].
    pub fn call(
        &self,
        method: Method,
        route: &str,
        body: Option<&Value>,
    ) -> Result<Value, CallError> {
        let reply = self.send(method, route, body)?;
        if reply.is_success() {
            return Ok(reply.body);
        }
        Err(failure(&reply, &format!("{} {route}", method.as_str())))
    }

    /// A GET whose success body is returned as JSON.
    pub fn get(&self, route: &str) -> Result<Value, CallError> {
        self.call(Method::Get, route, None)
    }

    /// A GET decoded into `T`.
    pub fn get_as<T: DeserializeOwned>(&self, route: &str) -> Result<T, CallError> {
        decode(self.get(route)?, route)
    }

    /// Every element of a paginated list endpoint (`per_page=100`), up to `max_pages` pages,
    /// following GitHub's `Link: rel="next"`. `key` names the array inside a wrapper object
    /// (`check_runs`, `workflow_runs`), `None` for endpoints that answer a bare array. Returns
    /// the items and whether pages remain; a failed later page fails the whole list.
    pub fn get_pages(
        &self,
        route: &str,
        key: Option<&str>,
        max_pages: u32,
    ) -> Result<(Vec<Value>, bool), CallError> {
        let listing = self.list(route, key, max_pages)?;
        match listing.cut {
            None => Ok((listing.items, false)),
            Some(CallError::PageLimit { .. }) => Ok((listing.items, true)),
            Some(e) => Err(e),
        }
    }

    /// A paginated list read page by page along `Link: rel="next"` until the last page, the
    /// call budget, the deadline, a rate limit or `max_pages`. Only a failed first page is an
    /// error; a list cut later keeps what was read and says why in [`Listing::cut`].
    pub fn list(
        &self,
        route: &str,
        key: Option<&str>,
        max_pages: u32,
    ) -> Result<Listing, CallError> {
        let sep = if route.contains('?') { '&' } else { '?' };
        let mut next = if route.contains("per_page=") {
            route.to_string()
        } else {
            format!("{route}{sep}per_page=100")
        };
        let mut listing = Listing {
            items: Vec::new(),
            total_count: None,
            cut: None,
        };
        for page in 1..=max_pages.max(1) {
            let reply = match self.send(Method::Get, &next, None) {
                Ok(r) if r.is_success() => r,
                Ok(r) => {
                    let e = failure(&r, &format!("GET {next}"));
                    if page == 1 {
                        return Err(e);
                    }
                    listing.cut = Some(e);
                    return Ok(listing);
                }
                Err(e) if page == 1 => return Err(e),
                Err(e) => {
                    listing.cut = Some(e);
                    return Ok(listing);
                }
            };
            let (items, total) = match key {
                Some(k) => (
                    reply.body.get(k).cloned().unwrap_or(Value::Null),
                    reply.body.get("total_count").and_then(Value::as_u64),
                ),
                None => (reply.body, None),
            };
            let Value::Array(items) = items else {
                return Err(CallError::Decode {
                    route: route.to_string(),
                    detail: "expected a list".into(),
                });
            };
            if page == 1 {
                listing.total_count = total;
            }
            listing.items.extend(items);
            match next_link(&reply.headers) {
                None => return Ok(listing),
                Some(url) => match self.same_origin(&url) {
                    Some(path) => next = path,
                    None => {
                        listing.cut = Some(CallError::Decode {
                            route: route.to_string(),
                            detail: "its next page lies outside the API's host".into(),
                        });
                        return Ok(listing);
                    }
                },
            }
        }
        listing.cut = Some(CallError::PageLimit {
            pages: max_pages,
            route: route.to_string(),
        });
        Ok(listing)
    }

    /// The page after `reply`, when its `Link` names one: `None` on the last page. A next
    /// page on another origin is a [`CallError::Decode`]; a non-success answer is its
    /// [`failure`].
    pub fn next_page(&self, reply: &Reply) -> Option<Result<Reply, CallError>> {
        let url = next_link(&reply.headers)?;
        let Some(route) = self.same_origin(&url) else {
            return Some(Err(CallError::Decode {
                route: "a Link header".into(),
                detail: "its next page lies outside the API's host".into(),
            }));
        };
        Some(match self.send(Method::Get, &route, None) {
            Ok(r) if r.is_success() => Ok(r),
            Ok(r) => Err(failure(&r, &format!("GET {route}"))),
            Err(e) => Err(e),
        })
    }

    /// The path and query of `url` when it is on the API's own origin: the token goes nowhere
    /// else, whatever a `Link` header says.
    fn same_origin(&self, url: &str) -> Option<String> {
        let u: http::Uri = url.parse().ok()?;
        let scheme = u.scheme_str()?;
        let authority = u.authority()?.as_str();
        if scheme != self.origin.0 || !authority.eq_ignore_ascii_case(&self.origin.1) {
            return None;
        }
        Some(u.path_and_query()?.as_str().to_string())
    }

    /// One GraphQL query (a read, though it is a POST), at `/graphql` of the API base, or
    /// `/api/graphql` for GitHub Enterprise Server's `/api/v3` base. GraphQL reports its own
    /// errors inside a 200; they are a [`CallError::Decode`].
    pub fn graphql(&self, query: &str, variables: Value) -> Result<Value, CallError> {
        let route = if self.base_path.ends_with("/api/v3") {
            format!(
                "{}://{}{}/graphql",
                self.origin.0,
                self.origin.1,
                self.base_path.trim_end_matches("/v3")
            )
        } else {
            "/graphql".to_string()
        };
        let body = serde_json::json!({ "query": query, "variables": variables });
        let answer = self.call(Method::Post, &route, Some(&body))?;
        if let Some(errors) = answer.get("errors").filter(|e| !e.is_null()) {
            return Err(CallError::Decode {
                route: "POST /graphql".into(),
                detail: format!("GraphQL errors: {errors}"),
            });
        }
        Ok(answer)
    }

    /// The rate limit that stopped this client, if one did.
    pub fn halted(&self) -> Option<AccessProblem> {
        self.halted.borrow().clone()
    }

    fn observe(&self, headers: &[(String, String)]) {
        let remaining = access::header(headers, "x-ratelimit-remaining")
            .and_then(|v| v.trim().parse::<i64>().ok());
        if remaining.is_some() {
            let reset_at = access::header(headers, "x-ratelimit-reset")
                .and_then(|v| v.trim().parse::<i64>().ok())
                .and_then(|s| jiff::Timestamp::from_second(s).ok())
                .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
            *self.rate.borrow_mut() = Rate {
                remaining,
                reset_at,
            };
            let reset = access::header(headers, "x-ratelimit-reset")
                .and_then(|v| v.trim().parse::<i64>().ok());
            let date = access::header(headers, "date").and_then(|d| {
                jiff::fmt::rfc2822::DateTimeParser::new()
                    .parse_timestamp(d.trim())
                    .ok()
            });
            *self.reset_in.borrow_mut() = match (reset, date) {
                (Some(r), Some(d)) => Some(Duration::from_secs(
                    u64::try_from(r - d.as_second()).unwrap_or(0),
                )),
                _ => None,
            };
        }
        if let Some(scopes) = access::header(headers, "x-oauth-scopes") {
            *self.scopes.borrow_mut() = Some(
                scopes
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect(),
            );
        }
        if let Some(orgs) = access::sso_partial(headers) {
            let mut seen = self.sso_partial.borrow_mut();
            for o in orgs {
                if !seen.contains(&o) {
                    seen.push(o);
                }
            }
        }
    }
}

/// Runs `f` on a scoped thread of its own: the caller may itself be inside an async runtime
/// (the MCP server), where blocking on ours would panic.
fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| match s.spawn(f).join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

impl Drop for Client {
    // The caller may be inside another runtime (the MCP server), where dropping ours the
    // ordinary way would block and panic.
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// The `rel="next"` target of a `Link` header (RFC 8288), as GitHub paginates.
pub fn next_link(headers: &[(String, String)]) -> Option<String> {
    link_rel(headers, "next")
}

/// The number of the last page a `Link` header names (`rel="last"`, its `page` parameter):
/// how many pages a list has in all, known from its first.
pub fn last_page(headers: &[(String, String)]) -> Option<u32> {
    let url = link_rel(headers, "last")?;
    let query = url.split_once('?')?.1;
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix("page="))
        .and_then(|n| n.parse().ok())
}

/// The target of the link with relation `rel` in a `Link` header.
fn link_rel(headers: &[(String, String)], rel: &str) -> Option<String> {
    let value = access::header(headers, "link")?;
    let quoted = format!("rel=\"{rel}\"");
    let bare = format!("rel={rel}");
    let mut rest = value;
    while let Some(open) = rest.find('<') {
        let after = &rest[open + 1..];
        let close = after.find('>')?;
        let url = &after[..close];
        let params_end = after[close..].find('<').map_or(after.len(), |i| close + i);
        let params = &after[close + 1..params_end];
        if params
            .split(';')
            .map(|p| p.trim_matches(|c: char| c == ',' || c.is_whitespace()))
            .any(|p| p.eq_ignore_ascii_case(&quoted) || p.eq_ignore_ascii_case(&bare))
        {
            return Some(url.to_string());
        }
        rest = &after[params_end..];
    }
    None
}

/// The error for a non-success reply.
pub fn failure(reply: &Reply, route: &str) -> CallError {
    match access::classify(reply.status, &reply.headers) {
        Some(problem) => CallError::Access {
            problem,
            route: route.to_string(),
        },
        None => CallError::Status {
            status: reply.status,
            route: route.to_string(),
        },
    }
}

/// Decodes a success body into `T`.
pub fn decode<T: DeserializeOwned>(body: Value, route: &str) -> Result<T, CallError> {
    serde_json::from_value(body).map_err(|e| CallError::Decode {
        route: route.to_string(),
        detail: e.to_string(),
    })
}

/// What kind of transport failure it was, from the typed error chain (never a URL or header).
fn transport_detail(e: &octocrab::Error) -> String {
    if let octocrab::Error::Hyper { source, .. } = e {
        if source.is_timeout() {
            return "timed out".into();
        }
        if source.is_incomplete_message() || source.is_closed() {
            return "connection closed before the answer".into();
        }
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::TimedOut => "timed out".into(),
                std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
                std::io::ErrorKind::ConnectionReset => "connection reset".into(),
                kind => format!("i/o error: {kind}"),
            };
        }
        source = err.source();
    }
    "transport error".into()
}

#[cfg(test)]
mod tests {
    use super::{last_page, next_link};

    #[test]
    fn the_next_link_is_found_among_the_others() {
        let h = |v: &str| vec![("Link".to_string(), v.to_string())];
        assert_eq!(
            next_link(&h(
                r#"<https://api.github.com/x?labels=a,b&page=2>; rel="next", <https://api.github.com/x?page=5>; rel="last""#
            ))
            .as_deref(),
            Some("https://api.github.com/x?labels=a,b&page=2")
        );
        assert_eq!(
            next_link(&h(r#"<https://api.github.com/x?page=1>; rel="prev""#)),
            None
        );
        assert_eq!(next_link(&[]), None);
        assert_eq!(
            last_page(&h(
                r#"<https://api.github.com/x?per_page=100&page=2>; rel="next", <https://api.github.com/x?per_page=100&page=11>; rel="last""#
            )),
            Some(11)
        );
    }
}
