//! The preview/apply contract of GIT_GITHUB.md B0, shared by every tool that previews a plan
//! and applies it under a digest (the repository tools and the GitHub tools): how an apply
//! starts (digest required, an already completed digest returns its record, an open
//! transaction is resumed) and a transaction run holding `txn-<id>.lock` for its whole life.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Ctx, Error, ErrorKind};
use crate::journal::txn::{StepStatus, Txn, TxnOutcome};
use crate::model::Refusal;
use crate::model::id::parse_ulid;
use crate::ops;
use crate::policy::apply::{self, ApplyRequest};

/// `--apply`, `--digest`, `--txn` of one call.
#[derive(Debug, Clone, Copy)]
pub struct ApplyArgs<'a> {
    /// The previewing command, as typed (`repo cleanup`, `github projection p`).
    pub command: &'a str,
    /// The transaction and evidence tool name (`cleanup`, `github-projection`).
    pub tool: &'a str,
    pub apply: bool,
    pub digest: Option<&'a str>,
    pub txn: Option<&'a str>,
}

/// How a call proceeds.
pub enum Start {
    /// No `--apply`: observe and return the plan; write nothing.
    Preview,
    /// The apply is refused before anything is observed.
    Refused(Refusal),
    /// A transaction with this digest already completed: return its record, do nothing.
    Completed(Txn),
    /// A transaction with this digest is open (interrupted or partial): finish it.
    Resume(Txn),
    /// Re-observe; run the plan only if its digest is the one given.
    Fresh { digest: String },
}

/// Decides how an apply starts, before anything is observed.
pub fn start(ctx: &Ctx, args: ApplyArgs<'_>) -> Result<Start, Error> {
    if !args.apply {
        if args.digest.is_some() || args.txn.is_some() {
            return Err(
                Error::usage("`--digest` and `--txn` are only taken with `--apply`")
                    .hint(format!("preview with `dacli {}`", args.command)),
            );
        }
        return Ok(Start::Preview);
    }
    let req = ApplyRequest {
        command: args.command,
        digest: args.digest,
    };
    if let Some(r) = apply::digest_required(req) {
        return Ok(Start::Refused(r));
    }
    let digest = args.digest.unwrap_or_default();
    if !apply::is_digest(digest) {
        return Err(Error::usage(format!(
            "`--digest {digest}` is not a plan digest (`sha256:` and 64 lower-case hex digits)"
        )));
    }
    let ws = ctx.ws()?;
    if let Some(id) = args.txn {
        let Some(txn) = parse_ulid(id)
            .and_then(|_| Txn::load(ws, id).transpose())
            .transpose()?
        else {
            return Err(Error::not_found(format!(
                "no transaction `{id}` under txn/"
            )));
        };
        if txn.tool() != args.tool {
            return Err(Error::usage(format!(
                "transaction {id} belongs to `{}`, not to `dacli {}`",
                txn.tool(),
                args.command
            )));
        }
        if let Some(r) = apply::drift(req, txn.plan_digest(), "the transaction's frozen plan") {
            return Ok(Start::Refused(r));
        }
        return Ok(if txn.outcome().is_some() {
            Start::Completed(txn)
        } else {
            Start::Resume(txn)
        });
    }
    let found = crate::journal::txn::with_digest(ws, args.tool, digest)?;
    ctx.warn_all(found.warnings);
    if let Some(done) = found.items.iter().rev().find(|t| t.outcome().is_some()) {
        return Ok(Start::Completed(done.clone()));
    }
    if let Some(open) = found.items.into_iter().last() {
        return Ok(Start::Resume(open));
    }
    Ok(Start::Fresh {
        digest: digest.to_string(),
    })
}

/// A transaction being applied: holds `txn-<id>.lock` for its whole life, so a concurrent
/// resume waits and then finds the outcome. The files are written by [`ops::txn`]; this
/// wrapper supplies the call's fresh ULIDs, identity and test hook.
pub struct Run<'c, 't> {
    ctx: &'c Ctx<'t>,
    inner: ops::txn::Run<'c>,
}

impl<'c> std::ops::Deref for Run<'c, '_> {
    type Target = ops::txn::Run<'c>;

    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

/// A transaction id minted and locked before anything else is locked (FORMAT §4.3 orders
/// `txn-<ULID>.lock` before `archive.lock`); its plan is written by [`Reserved::begin`].
pub struct Reserved(ops::txn::Reserved);

impl Reserved {
    /// Opens the transaction with the frozen plan.
    pub fn begin<'c, 't>(
        self,
        ctx: &'c Ctx<'t>,
        tool: &str,
        digest: &str,
        plan: Value,
    ) -> Result<Run<'c, 't>, Error> {
        let ws = ctx.ws()?;
        let who = ctx.identity()?.agent.id.clone();
        let inner = self
            .0
            .begin(ws, tool, &who, digest, plan, pause_after(ctx))?;
        Ok(Run { ctx, inner })
    }
}

impl<'c, 't> Run<'c, 't> {
    /// Mints and locks a transaction id.
    pub fn reserve(ctx: &Ctx) -> Result<Reserved, Error> {
        Ok(Reserved(ops::txn::reserve(ctx.ws()?, ctx.new_ulid())?))
    }

    /// Opens a new transaction with the frozen plan.
    pub fn begin(
        ctx: &'c Ctx<'t>,
        tool: &str,
        digest: &str,
        plan: Value,
    ) -> Result<Run<'c, 't>, Error> {
        Run::reserve(ctx)?.begin(ctx, tool, digest, plan)
    }

    /// Takes the lock of an open transaction and reads it again (a concurrent run may have
    /// finished it meanwhile).
    pub fn resume(ctx: &'c Ctx<'t>, txn: &Txn) -> Result<Run<'c, 't>, Error> {
        let inner = ops::txn::resume(ctx.ws()?, txn, pause_after(ctx))?;
        Ok(Run { ctx, inner })
    }

    /// Records one step file.
    pub fn step(
        &mut self,
        step: &str,
        status: StepStatus,
        guard: Value,
        observed: Value,
    ) -> Result<(), Error> {
        let fresh = self.ctx.new_ulid();
        Ok(self.inner.step(fresh, step, status, guard, observed)?)
    }

    /// Closes the transaction.
    pub fn finish(&mut self, outcome: TxnOutcome, observed: Value) -> Result<(), Error> {
        let fresh = self.ctx.new_ulid();
        Ok(self.inner.finish(fresh, outcome, observed)?)
    }
}

/// The test hook `DACLI_TEST_PAUSE_AFTER_STEP=<n>`: the step file after which
/// [`ops::txn`] stops and waits to be killed.
fn pause_after(ctx: &Ctx) -> Option<i64> {
    ctx.env()
        .get("DACLI_TEST_PAUSE_AFTER_STEP")
        .and_then(|v| v.parse::<i64>().ok())
}

/// The digest of a plan as previewed (GIT_GITHUB.md B0): what `--digest` must repeat.
pub fn digest_of<T: Serialize>(plan: &T) -> Result<String, Error> {
    apply::plan_digest_of(plan).map_err(|e| Error::internal(e.0))
}

/// The plan a transaction froze when it began, read back from its file as the tool's own type.
pub fn frozen<T: DeserializeOwned>(txn: &Txn) -> Result<T, Error> {
    let plan = txn.plan().ok_or_else(|| {
        Error::internal(format!(
            "transaction {} was begun by this call, which holds its plan",
            txn.id()
        ))
    })?;
    T::deserialize(plan).map_err(|e| {
        Error::new(
            ErrorKind::Operational,
            "E_MALFORMED",
            format!(
                "the frozen plan of transaction {} does not read back: {e}",
                txn.id()
            ),
        )
    })
}

/// A notice for `data.notices` (and stderr): a precise warning that changed nothing.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Notice {
    pub code: String,
    pub message: String,
}

impl Notice {
    pub fn new(code: &str, message: impl Into<String>) -> Notice {
        Notice {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// Prints notices on stderr (they are also in `data.notices`).
pub fn announce(ctx: &Ctx, notices: &[Notice]) {
    for n in notices {
        ctx.notice(format!("[{}] {}", n.code, n.message));
    }
}
