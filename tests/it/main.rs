//! The one integration-test binary (docs/ARCHITECTURE.md §7): every suite is a module here so
//! the crate links once.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Tests build hostile trees, run git and pin clocks by hand: the hazard owners are for dacli.
#![allow(clippy::disallowed_methods)]

mod architecture;
mod brief;
mod brief_in_force;
mod build_script;
mod charts;
mod collab;
mod docs;
mod engine_prop;
mod example;
mod git;
mod git_scale;
mod github;
mod github_details;
mod github_graphql;
mod github_openapi;
mod github_projection_scale;
mod github_scale;
mod github_support;
mod github_watch;
mod hostile;
mod human;
mod human_completion;
mod human_editor;
mod human_editor_more;
mod human_errors;
#[cfg(target_os = "linux")]
mod human_progress;
#[cfg(target_os = "linux")]
mod human_tty;
#[cfg(target_os = "linux")]
mod human_tty_more;
mod insight;
mod knowledge;
mod lifecycle;
mod machines;
mod machines_claims;
mod mcp;
mod mcp_clients;
mod mcp_schema;
mod mcp_server;
mod perf;
mod pty;
mod queues;
mod reliability_concurrency;
mod reliability_crash;
mod reliability_fuzz;
mod reliability_hostile;
mod reliability_secrets;
mod review;
mod review_post;
mod review_support;
mod roles;
mod runtimes;
mod search;
mod shortcuts;
mod spine;
mod store;
mod support;
mod team;
mod templates;
mod tokens_static;
mod trust_exec;
mod trust_misc;
mod trust_text;
