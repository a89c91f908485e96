//! The composition root: build the command table, pick the front end (the CLI, or the MCP
//! server for `mcp serve`), exit with the code the front end decided.

use std::process::ExitCode;

fn main() -> ExitCode {
    let table = dacli::commands::table();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let env = dacli::dispatch::Env::capture();
    // A shell asking for completions (`COMPLETE=<shell> dacli -- <words>`) is answered here.
    if let Some(code) = dacli::commands::complete_from_env(&table, &args, env.cwd.clone()) {
        return ExitCode::from(code);
    }
    let code = dacli::cli::run(&table, args, env, &[("mcp.serve", dacli::mcp::serve)]);
    ExitCode::from(code)
}
