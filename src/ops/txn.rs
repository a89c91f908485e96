//! The transaction runner of the preview/apply contract (GIT_GITHUB.md B0): a transaction
//! holds `txn-<id>.lock` for its whole life, so a concurrent resume waits and then finds the
//! outcome; its plan and every step are files created new under `txn/<id>/`.

use serde_json::Value;
use ulid::Ulid;

use super::Error;
use super::error::Kind;
use crate::journal::txn::{NewStep, StepStatus, Txn, TxnOutcome};
use crate::store::LockGuard;
use crate::workspace::Workspace;

/// A transaction id minted and locked before anything else is locked (FORMAT §4.3 orders
/// `txn-<ULID>.lock` before `archive.lock`); its plan is written by [`Reserved::begin`].
pub struct Reserved {
    id: Ulid,
    lock: LockGuard,
}

/// A transaction being applied.
pub struct Run<'w> {
    ws: &'w Workspace,
    pub txn: Txn,
    /// The test hook's step number (see [`pause_if_asked`]).
    pause_after: Option<i64>,
    _lock: LockGuard,
}

/// Locks the fresh transaction id `id`.
pub fn reserve(ws: &Workspace, id: Ulid) -> Result<Reserved, Error> {
    let lock = ws.fs.lock(&ws.lock_path(&format!("txn-{id}")))?;
    Ok(Reserved { id, lock })
}

impl Reserved {
    /// Opens the transaction with the frozen plan, created by `who`.
    pub fn begin<'w>(
        self,
        ws: &'w Workspace,
        tool: &str,
        who: &str,
        digest: &str,
        plan: Value,
        pause_after: Option<i64>,
    ) -> Result<Run<'w>, Error> {
        let txn = Txn::begin(ws, tool, self.id, who, digest, plan)?;
        pause_if_asked(pause_after, 1);
        Ok(Run {
            ws,
            txn,
            pause_after,
            _lock: self.lock,
        })
    }
}

/// Takes the lock of an open transaction and reads it again (a concurrent run may have
/// finished it meanwhile).
pub fn resume<'w>(
    ws: &'w Workspace,
    txn: &Txn,
    pause_after: Option<i64>,
) -> Result<Run<'w>, Error> {
    let id = txn.id().to_string();
    let lock = ws.fs.lock(&ws.lock_path(&format!("txn-{id}")))?;
    let txn = Txn::load(ws, &id)?.ok_or_else(|| {
        Error::rejected(
            Kind::NotFound,
            "E_NOT_FOUND",
            format!("transaction `{id}` vanished"),
        )
    })?;
    Ok(Run {
        ws,
        txn,
        pause_after,
        _lock: lock,
    })
}

impl Run<'_> {
    /// Records one step file; `fresh` is a new ULID for its id.
    pub fn step(
        &mut self,
        fresh: Ulid,
        step: &str,
        status: StepStatus,
        guard: Value,
        observed: Value,
    ) -> Result<(), Error> {
        let seq = self.txn.record(
            self.ws,
            NewStep {
                fresh,
                step,
                status,
                guard,
                observed,
            },
        )?;
        pause_if_asked(self.pause_after, seq);
        Ok(())
    }

    /// Closes the transaction.
    pub fn finish(
        &mut self,
        fresh: Ulid,
        outcome: TxnOutcome,
        observed: Value,
    ) -> Result<(), Error> {
        self.txn.finish(self.ws, fresh, outcome, observed)?;
        Ok(())
    }
}

/// The test hook `DACLI_TEST_PAUSE_AFTER_STEP=<n>` (read by the caller's context): after
/// writing step file `n`, stop and wait to be killed (a test sends SIGKILL), so a crash can
/// be placed between any two steps. Left alone, the process aborts after two minutes: it
/// never goes on as if nothing happened.
fn pause_if_asked(wanted: Option<i64>, seq: i64) {
    if wanted == Some(seq) {
        for _ in 0..1200 {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        std::process::abort();
    }
}
