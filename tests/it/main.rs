//! The one integration-test binary (docs/ARCHITECTURE.md §7): every suite is a module here so
//! the crate links once.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Tests build hostile trees, run git and pin clocks by hand: the hazard owners are for dacli.
#![allow(clippy::disallowed_methods)]

mod architecture;
mod brief;
mod example;
mod hostile;
mod knowledge;
mod lifecycle;
mod spine;
mod store;
mod support;
mod team;
