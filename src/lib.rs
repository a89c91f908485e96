//! dacli: the shared workspace for teams of coding agents.
//!
//! The modules are layers (docs/ARCHITECTURE.md): each names only layers below it, which
//! `tests/it/architecture.rs` enforces.

pub mod brief;
pub mod cli;
pub mod commands;
pub mod dispatch;
pub mod exec;
pub mod git;
pub mod github;
pub mod journal;
pub mod mcp;
pub mod model;
pub mod objects;
pub mod ops;
pub mod policy;
pub mod store;
pub mod workspace;
