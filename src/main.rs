//! The composition root: build the command table, hand argv to the front end, exit with the
//! code the kernel decided.

use std::process::ExitCode;

fn main() -> ExitCode {
    let table = dacli::commands::table();
    let code = dacli::cli::run(
        &table,
        std::env::args_os().collect(),
        dacli::dispatch::Env::capture(),
    );
    ExitCode::from(code)
}
