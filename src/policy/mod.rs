//! L4: pure decision engines. Values in, values out: no files, no clock, no environment.

pub mod apply;
pub mod disclosure;
pub mod dod;
pub mod guard;
pub mod lint;
pub mod plan;
pub mod queue;
pub mod risk;
pub mod runtime;
pub mod scope;
pub mod shortcut;
pub mod train;
