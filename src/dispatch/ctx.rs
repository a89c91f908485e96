//! The context of a call: workspace, identity, clock, random source, environment, output
//! mode and the warnings collected on the way. The only owner of the clock, the random source
//! and the environment.

use std::cell::{Cell, OnceCell, RefCell};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ulid::Ulid;

use super::identity::{self, Identity};
use super::{Env, Error, Table};
use crate::model::{Grant, Refusal};
use crate::store::{Fault, Fs, Problem};
use crate::workspace::Workspace;

/// The output options chosen on the command line (or implied by the MCP server).
#[derive(Debug, Clone, Copy, Default)]
pub struct Output {
    pub json: bool,
    pub quiet: bool,
    pub color: bool,
    /// Whether diagnostics on stderr (warnings, refusals, errors) may use colour.
    pub err_color: bool,
    /// The terminal's width in columns, which human tables fit, shortening refs, agent ids
    /// and titles; `None` (full values) with `--wide`, `--json`, or stdout not a terminal.
    pub width: Option<usize>,
}

/// The context of one call (CLI) or one server session (MCP).
///
/// Invariants: the workspace is discovered at most once and identity resolved at most once per
/// context; with `DACLI_TEST_CLOCK` and `DACLI_TEST_SEED` set, every time and id it hands out is
/// a pure function of those values and the call sequence.
pub struct Ctx<'t> {
    table: &'t Table,
    env: Env,
    start: PathBuf,
    start_arg: Option<PathBuf>,
    output: Output,
    ws: OnceCell<Workspace>,
    identity: OnceCell<Identity>,
    clock: Option<jiff::Timestamp>,
    rng: RefCell<Rng>,
    last_ulid: Cell<Option<Ulid>>,
    warnings: RefCell<Vec<Problem>>,
    notices: RefCell<Vec<String>>,
    /// Held by a long-lived front end for its whole life (see [`Ctx::hold_agent_session`]).
    session: OnceCell<crate::store::LockGuard>,
    /// The front end this context serves: it decides how hints name what to do next.
    front: Cell<super::hint::Front>,
    /// What the front end attached to the call running now (see [`Ctx::attach_call`]).
    call: RefCell<CallHooks>,
}

/// The front end's handles on one running call: a token that stops its child processes and
/// where its progress goes. The CLI attaches none.
#[derive(Clone, Default)]
pub struct CallHooks {
    pub cancel: Option<crate::exec::Cancel>,
    pub progress: Option<super::ProgressSink>,
}

impl<'t> Ctx<'t> {
    /// A context for `table`, starting workspace discovery at `start` (the `-C` directory, or
    /// the working directory), with the given environment snapshot.
    pub fn new(table: &'t Table, env: Env, start: Option<PathBuf>, output: Output) -> Ctx<'t> {
        let start_arg = start.clone();
        let start = match start {
            Some(dir) if dir.is_absolute() => dir,
            Some(dir) => env.cwd.join(dir),
            None => env.cwd.clone(),
        };
        let clock = env
            .get("DACLI_TEST_CLOCK")
            .and_then(|s| s.parse::<jiff::Timestamp>().ok());
        let rng = match env
            .get("DACLI_TEST_SEED")
            .and_then(|s| s.parse::<u64>().ok())
        {
            Some(seed) => Rng::Seeded(seed),
            None => Rng::Os,
        };
        Ctx {
            table,
            env,
            start,
            start_arg,
            output,
            ws: OnceCell::new(),
            identity: OnceCell::new(),
            clock,
            rng: RefCell::new(rng),
            last_ulid: Cell::new(None),
            warnings: RefCell::new(Vec::new()),
            notices: RefCell::new(Vec::new()),
            session: OnceCell::new(),
            front: Cell::new(super::hint::Front::Cli),
            call: RefCell::new(CallHooks::default()),
        }
    }

    /// A context for another thread of the same front end (the MCP server's read lanes): the
    /// same table, environment, start directory and output mode, its own caches and call
    /// state. Under `DACLI_TEST_SEED` its random source starts from a seed of its own, derived
    /// from `n`, so that two threads never mint the same id.
    pub fn sibling(&self, n: u64) -> Ctx<'t> {
        let ctx = Ctx::new(
            self.table,
            self.env.clone(),
            self.start_arg.clone(),
            self.output,
        );
        if let Rng::Seeded(seed) = &mut *ctx.rng.borrow_mut() {
            *seed ^= n.wrapping_mul(0xD1B5_4A32_D192_ED03);
        }
        ctx.front.set(self.front.get());
        ctx
    }

    /// The command table (for `completions` and `capabilities`).
    pub fn table(&self) -> &Table {
        self.table
    }

    /// The environment snapshot.
    pub fn env(&self) -> &Env {
        &self.env
    }

    /// Where discovery starts.
    pub fn start_dir(&self) -> &Path {
        &self.start
    }

    /// The `-C` directory exactly as given, if any (`mcp config` writes it into the snippet).
    pub fn start_arg(&self) -> Option<&Path> {
        self.start_arg.as_deref()
    }

    /// Whether the caller asked for JSON.
    pub fn json(&self) -> bool {
        self.output.json
    }

    /// Whether human success text is suppressed.
    pub fn quiet(&self) -> bool {
        self.output.quiet
    }

    /// Whether human text may use colour.
    pub fn color(&self) -> bool {
        self.output.color
    }

    /// Whether diagnostics on stderr may use colour.
    pub fn err_color(&self) -> bool {
        self.output.err_color
    }

    /// The width human tables fit, when they are shortened for a terminal (see
    /// [`Output::width`]).
    pub fn width(&self) -> Option<usize> {
        self.output.width
    }

    /// The workspace, discovered on first use from the start directory.
    pub fn ws(&self) -> Result<&Workspace, Error> {
        if let Some(ws) = self.ws.get() {
            return Ok(ws);
        }
        let ws = Workspace::discover(&self.start, |root, dir| self.make_fs(root, dir))?;
        Ok(self.ws.get_or_init(|| ws))
    }

    /// A filesystem seam for a workspace that does not exist yet (`init`).
    pub fn make_fs(&self, root: PathBuf, jail: PathBuf) -> Fs {
        let timeout = self
            .env
            .get("DACLI_LOCK_TIMEOUT_MS")
            .and_then(|s| s.parse::<u64>().ok())
            .map_or(Duration::from_secs(30), Duration::from_millis);
        let fault = self.env.get("DACLI_TEST_FAULT").and_then(Fault::parse);
        let trace = self.env.get("DACLI_TEST_FS_TRACE").map(PathBuf::from);
        Fs::new(Some(root), Some(jail), self.random_u64(), timeout)
            .with_fault(fault)
            .with_trace(trace)
    }

    /// The caller. Only valid once the dispatcher resolved it (commands that need a workspace).
    pub fn identity(&self) -> Result<&Identity, Error> {
        self.identity
            .get()
            .ok_or_else(|| Error::internal("identity used before it was resolved"))
    }

    /// The refusal for a set-but-empty `DACLI_AGENT`, which needs no workspace to decide.
    pub(super) fn early_identity_refusal(&self) -> Option<Refusal> {
        identity::empty_token_refusal(&self.env)
    }

    /// Resolves the caller once: `Some(refusal)` when the token is refused.
    pub(super) fn resolve_identity(&self) -> Result<Option<Refusal>, Error> {
        if self.identity.get().is_some() {
            return Ok(None);
        }
        match identity::resolve(self.ws()?, &self.env)? {
            Ok(id) => {
                let _ = self.identity.set(id);
                Ok(None)
            }
            Err(refusal) => Ok(Some(refusal)),
        }
    }

    /// Discovers the workspace and resolves the caller now, for a front end that binds its
    /// identity once, at launch (`mcp serve`): `Ok(Some(refusal))` when the token is refused.
    pub fn bind_identity(&self) -> Result<Option<Refusal>, Error> {
        if let Some(refusal) = self.early_identity_refusal() {
            return Ok(Some(refusal));
        }
        self.ws()?;
        self.resolve_identity()
    }

    /// Declares this process long-lived (the MCP server).
    pub fn serve_many_calls(&self) {
        self.front.set(super::hint::Front::Mcp);
    }

    /// The front end this context serves (MCP once [`Ctx::serve_many_calls`] declared it).
    pub fn front(&self) -> super::hint::Front {
        self.front.get()
    }

    /// `text` with its `dacli …` commands said for this context's front end.
    pub fn hint(&self, text: &str) -> String {
        super::hint::render(text, self.front())
    }

    /// Makes this process the only server acting as the bound agent (RELIABILITY T15): holds
    /// `.locks/mcp-<agent-id>.lock` until the context is dropped. A refusal when another
    /// process holds it; two processes acting as one agent would race each other's claims
    /// and receipts with nothing to tell them apart.
    pub fn hold_agent_session(&self) -> Result<Option<Refusal>, Error> {
        let ws = self.ws()?;
        let agent = self.identity()?.agent.id.clone();
        let path = ws.lock_path(&format!("mcp-{agent}"));
        match ws.fs.try_lock(&path)? {
            Some(guard) => {
                let _ = self.session.set(guard);
                Ok(None)
            }
            None => Ok(Some(Refusal::new(
                "mcp.agent_busy",
                format!(
                    "another `dacli mcp serve` is already running as {agent} in this workspace"
                ),
                "Use that server, or stop it first; for parallel work, spawn another agent: `dacli agent spawn --grant <rw|ro> --role <role>`.",
            ))),
        }
    }

    /// Checks the identity bound at launch against the agent's record as it is now: a refusal
    /// once the agent has been retired (or its token no longer matches) since the bind.
    pub fn recheck_identity(&self) -> Result<Option<Refusal>, Error> {
        match identity::resolve(self.ws()?, &self.env)? {
            Ok(_) => Ok(None),
            Err(refusal) => Ok(Some(refusal)),
        }
    }

    /// The class gate of the guard for the resolved caller (no identity: nothing to check).
    pub(super) fn guard_class(
        &self,
        class: super::Class,
        command: &str,
        alternative: Option<&str>,
    ) -> Option<Refusal> {
        let id = self.identity.get()?;
        let ask = id
            .agent
            .parent
            .as_deref()
            .unwrap_or(crate::model::id::ROOT_AGENT);
        crate::policy::guard::class_gate(
            id.agent.grant,
            class.needs_rw(),
            command,
            ask,
            alternative,
        )
    }

    /// True when the caller is rw (root included).
    pub fn caller_is_rw(&self) -> bool {
        self.identity
            .get()
            .is_some_and(|i| i.agent.grant == Grant::Rw)
    }

    /// Now, or the pinned test clock.
    pub fn now(&self) -> jiff::Timestamp {
        match self.clock {
            Some(t) => t,
            None => {
                #[allow(
                    clippy::disallowed_methods,
                    reason = "Ctx is the one reader of the clock"
                )]
                let now = jiff::Timestamp::now();
                now
            }
        }
    }

    /// A fresh ULID: the clock's millisecond and 80 random bits; within one millisecond of the
    /// previous id the random part is incremented, so ids minted by one process strictly rise.
    pub fn new_ulid(&self) -> Ulid {
        let ms = self.now().as_millisecond().max(0) as u64;
        let next = match self.last_ulid.get() {
            Some(last) if last.timestamp_ms() >= ms => last.increment(),
            _ => None,
        };
        let id = next.unwrap_or_else(|| {
            let mut bytes = [0u8; 16];
            self.fill_random(&mut bytes);
            let random = u128::from_le_bytes(bytes) & ((1u128 << 80) - 1);
            Ulid::from_parts(ms, random)
        });
        self.last_ulid.set(Some(id));
        id
    }

    /// Fills `buf` from the OS random source (or the pinned test seed).
    pub fn fill_random(&self, buf: &mut [u8]) {
        self.rng.borrow_mut().fill(buf);
    }

    fn random_u64(&self) -> u64 {
        let mut b = [0u8; 8];
        self.fill_random(&mut b);
        u64::from_le_bytes(b)
    }

    /// Records a skipped file for the `warnings` of the envelope.
    pub fn warn(&self, problem: Problem) {
        self.warnings.borrow_mut().push(problem);
    }

    /// Records several skipped files.
    pub fn warn_all(&self, problems: impl IntoIterator<Item = Problem>) {
        self.warnings.borrow_mut().extend(problems);
    }

    /// Progress of work that may take more than a second: a spinner on stderr (silent off a
    /// terminal, with `--json` or `--quiet`) and steps to the call's progress sink, if the
    /// front end attached one. Stops when dropped.
    pub fn progress(&self, label: impl Into<String>) -> super::Progress {
        self.progress_of(label, None)
    }

    /// [`Ctx::progress`] of work in `total` parts, advanced with [`super::Progress::advance`].
    pub fn progress_of(&self, label: impl Into<String>, total: Option<u64>) -> super::Progress {
        let sink = self.call.borrow().progress.clone();
        super::Progress::start(
            label.into(),
            total,
            !self.output.json && !self.output.quiet,
            self.output.width.unwrap_or(80),
            sink,
        )
    }

    /// Progress steps for the call's sink only, without a spinner: for work whose own output
    /// already streams to the terminal (a shortcut run by the CLI).
    pub fn progress_unseen(&self, label: impl Into<String>) -> super::Progress {
        let sink = self.call.borrow().progress.clone();
        super::Progress::start(label.into(), None, false, 80, sink)
    }

    /// Attaches the front end's handles to the call about to run; [`Ctx::detach_call`] removes
    /// them when it ends.
    pub fn attach_call(&self, hooks: CallHooks) {
        *self.call.borrow_mut() = hooks;
    }

    pub fn detach_call(&self) {
        *self.call.borrow_mut() = CallHooks::default();
    }

    /// The token that stops the running call's child processes, if the front end can cancel.
    pub fn cancel_token(&self) -> Option<crate::exec::Cancel> {
        self.call.borrow().cancel.clone()
    }

    /// A diagnostic for stderr (never part of the JSON document).
    pub fn notice(&self, text: impl Into<String>) {
        self.notices.borrow_mut().push(text.into());
    }

    /// Takes the notices collected so far.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut *self.notices.borrow_mut())
    }

    /// How many distinct files were skipped so far.
    pub fn warning_count(&self) -> usize {
        let w = self.warnings.borrow();
        let paths: std::collections::BTreeSet<&str> = w.iter().map(|p| p.path.as_str()).collect();
        paths.len()
    }

    /// Takes the warnings collected so far (sorted by path, then reason; deduplicated).
    pub fn take_warnings(&self) -> Vec<Problem> {
        let mut w = std::mem::take(&mut *self.warnings.borrow_mut());
        w.sort_by(|a, b| (&a.path, a.reason, &a.detail).cmp(&(&b.path, b.reason, &b.detail)));
        w.dedup();
        w
    }
}

enum Rng {
    Os,
    Seeded(u64),
}

impl Rng {
    fn fill(&mut self, buf: &mut [u8]) {
        match self {
            Rng::Os => {
                #[allow(clippy::disallowed_methods, reason = "Ctx owns the random source")]
                let drawn = getrandom::fill(buf);
                if drawn.is_err() {
                    // No OS randomness is a broken machine; ids would collide across clones.
                    panic!("the OS random source is unavailable");
                }
            }
            Rng::Seeded(state) => {
                // SplitMix64: tiny, well-distributed, and only ever used under the test hook.
                for chunk in buf.chunks_mut(8) {
                    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                    let mut z = *state;
                    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                    z ^= z >> 31;
                    chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
                }
            }
        }
    }
}

/// The workspace shell completion lists names from: discovered from `start` (the `-C`
/// directory, else the working directory) and read without writing anything, not even the
/// index cache (which is read only when it exists). `None` outside a workspace.
pub fn read_only_workspace(start: Option<&Path>) -> Option<Workspace> {
    let env = super::Env::capture();
    let start = match start {
        Some(dir) if dir.is_absolute() => dir.to_path_buf(),
        Some(dir) => env.cwd.join(dir),
        None => env.cwd.clone(),
    };
    let mut ws = Workspace::discover(&start, |root, jail| {
        Fs::new(Some(root), Some(jail), 0, Duration::from_secs(1)).without_derived_writes()
    })
    .ok()?;
    let indexed = ws.index.path().exists();
    ws.index = crate::store::index::Index::new(ws.dir(), indexed);
    Some(ws)
}
