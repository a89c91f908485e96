//! The HTTP client: octocrab on a current-thread tokio runtime owned by the call, so a command
//! stays synchronous and nothing outlives it. Every request is counted against a budget, and
//! every non-success is classified by [`super::access::classify`] before a caller sees it.

use std::cell::{Cell, RefCell};
use std::time::Duration;

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
    /// The read timeout of one request; the connect timeout is a fifth of it, at least 1 s.
    pub timeout: Duration,
    /// Requests allowed in this client's life (`max_api_calls`).
    pub max_calls: u32,
}

/// A client for one command run.
///
/// Invariant: at most `max_calls` requests are sent; the token is held only inside octocrab.
pub struct Client {
    /// Always `Some` until dropped.
    rt: Option<tokio::runtime::Runtime>,
    octo: Octocrab,
    calls: Cell<u32>,
    max_calls: u32,
    rate: RefCell<Rate>,
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
        match parsed {
            Ok(u) if matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some() => {}
            _ => {
                return Err(ConnectError::BadUrl(format!(
                    "`{url}` is not an http(s) URL"
                )));
            }
        }
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
        Ok(Client {
            rt: Some(rt),
            octo,
            calls: Cell::new(0),
            max_calls: c.max_calls,
            rate: RefCell::new(Rate::default()),
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
        if self.calls.get() >= self.max_calls {
            return Err(CallError::Budget {
                limit: self.max_calls,
                route: shown,
            });
        }
        self.calls.set(self.calls.get() + 1);
        let octo = &self.octo;
        let rt = self
            .rt
            .as_ref()
            .expect("the runtime lives as long as the client");
        let result = off_runtime(|| {
            rt.block_on(async {
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
        });
        let (status, headers, text) = result.map_err(|e| CallError::Access {
            problem: AccessProblem::NetworkUnreachable {
                detail: transport_detail(&e),
            },
            route: shown.clone(),
        })?;
        self.observe(&headers);
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

    /// Every element of a paginated list endpoint (`per_page=100`), up to `max_pages` pages.
    /// `key` names the array inside a wrapper object (`check_runs`, `workflow_runs`), `None`
    /// for endpoints that answer a bare array. Returns the items and whether pages remain.
    pub fn get_pages(
        &self,
        route: &str,
        key: Option<&str>,
        max_pages: u32,
    ) -> Result<(Vec<Value>, bool), CallError> {
        let sep = if route.contains('?') { '&' } else { '?' };
        let mut out = Vec::new();
        for page in 1..=max_pages {
            let body = self.get(&format!("{route}{sep}per_page=100&page={page}"))?;
            let items = match key {
                Some(k) => body.get(k).cloned().unwrap_or(Value::Null),
                None => body,
            };
            let Value::Array(items) = items else {
                return Err(CallError::Decode {
                    route: route.to_string(),
                    detail: "expected a list".into(),
                });
            };
            let n = items.len();
            out.extend(items);
            if n < 100 {
                return Ok((out, false));
            }
        }
        Ok((out, true))
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
