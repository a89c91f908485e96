//! L5½: the operations layer. Every transaction of a workspace (lock, reload, fold, decide,
//! write) and every read model lives here, the way cargo's `ops` sits under its commands:
//! a command parses its request, calls one operation and renders what it returns.
//!
//! Invariants:
//! - `commands/` makes no file-system write or lock call; it reaches files only through this
//!   layer (`tests/it/architecture.rs`, rule `commands_fs`).
//! - An operation takes what it needs as values (the workspace, the acting agent, the time,
//!   fresh ULIDs): the clock, the environment and the identity belong to the call's context
//!   (`dispatch::Ctx`), which sits above this layer.
//! - Policy stays pure and is called directly; an operation that policy refuses returns
//!   [`Decided::Refused`] and writes nothing.

pub mod admin;
pub mod agents;
pub mod archive;
pub mod briefs;
pub mod cleanup;
pub mod collab;
pub mod delivery;
pub mod drafts;
pub mod error;
pub mod evidence;
pub mod github;
pub mod github_map;
pub mod glossary;
pub mod lineage;
pub mod lint_fix;
pub mod machines;
pub mod notes;
pub mod owner;
pub mod projects;
pub mod queues;
pub mod reports;
pub mod review;
pub mod risks;
pub mod roles;
pub mod runtimes;
pub mod search;
pub mod shortcuts;
pub mod tasks;
pub mod templates;
pub mod train;
pub mod txn;
pub mod upgrade;

pub use error::Error;

use crate::model::Refusal;

/// What a transaction decided: done (with what it returns), or refused by policy before it
/// wrote anything.
#[derive(Debug)]
#[must_use]
pub enum Decided<T> {
    Done(T),
    Refused(Refusal),
}
