//! The composition root: build the command table, pick the front end (the CLI, or the MCP
//! server for `mcp serve`), exit with the code the front end decided.

use std::process::ExitCode;

fn main() -> ExitCode {
    let table = dacli::commands::table();
    let code = dacli::cli::run(
        &table,
        std::env::args_os().collect(),
        dacli::dispatch::Env::capture(),
        &[("mcp.serve", dacli::mcp::serve)],
    );
    ExitCode::from(code)
}
