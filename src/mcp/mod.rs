//! L7: the MCP stdio server (spec MCP.md). One process per agent: the workspace and the
//! identity are bound once, at launch, from the CLI's discovery rules and `DACLI_AGENT`;
//! then one JSON-RPC message per line is read from stdin and answered on stdout.
//! Stdout carries the protocol and nothing else; diagnostics go to stderr.
//!
//! The reading loop is hand-rolled on a current-thread tokio runtime and serde_json: the
//! official SDK transports read lines without a length limit, and the server needs none of
//! their session machinery. It never waits for a tool call: `ping`, `tools/list` and the
//! handshake are answered at once, tool calls run on [`lanes`] (writes one at a time in
//! arrival order, reads beside them), and one writer thread puts every answer, progress
//! notification and error on stdout, a whole line at a time. Tool calls run the same
//! commands through the same [`Table`] as the CLI.
#![deny(clippy::print_stdout)]

mod call;
mod lanes;
mod lines;
mod protocol;
mod requests;
mod schema;

use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc;

use serde_json::Value;
use tokio::io::{AsyncBufRead, BufReader};

use crate::dispatch::{Ctx, Env, Error, Outcome, Output, Table, exit_code};

/// Runs `dacli mcp serve` until stdin closes; returns the process exit code. A refused token
/// or a missing workspace ends it before stdin is read.
pub fn serve(table: &Table, env: Env, start: Option<PathBuf>) -> u8 {
    let output = Output {
        json: true,
        quiet: true,
        color: false,
        err_color: false,
        width: None,
    };
    let ctx = Ctx::new(table, env, start, output);
    if let Some(code) = bind(&ctx) {
        return code;
    }
    match ctx.hold_agent_session() {
        Ok(None) => {}
        other => return refuse_start(other),
    }
    ctx.serve_many_calls();
    // Reading stdin is the only blocking work of the runtime, one read at a time; without a
    // cap, a fast stream of input grew the pool by a thread (and its stack) per read that
    // overlapped the last one's hand-back.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(2)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("dacli mcp serve: cannot start the I/O runtime: {e}");
            return 1;
        }
    };
    let server = call::Server::new(table);
    let (code, _) = with_writer(std::io::stdout(), |out| {
        std::thread::scope(|scope| {
            let mut runner = lanes::Lanes::start(scope, &server, ctx, out.clone());
            let code = runtime.block_on(run(
                &server,
                BufReader::new(tokio::io::stdin()),
                &mut runner,
                out,
            ));
            runner.finish();
            code
        })
    });
    code
}

/// One session over `input` as if it arrived on stdin: the same identity binding, bounded
/// line reader, protocol and result mapping as [`serve`], with stdout collected. Calls run
/// one after another on this thread, so the lines come out in a reproducible order. Returns
/// the lines the server wrote and its exit code. For fuzzing and tests, which need the loop
/// without a process.
pub fn replay(table: &Table, env: Env, start: Option<PathBuf>, input: &[u8]) -> (Vec<String>, u8) {
    let output = Output {
        json: true,
        quiet: true,
        color: false,
        err_color: false,
        width: None,
    };
    let ctx = Ctx::new(table, env, start, output);
    if let Some(code) = bind(&ctx) {
        return (Vec::new(), code);
    }
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() else {
        return (Vec::new(), 1);
    };
    let server = call::Server::new(table);
    let (code, out) = with_writer(Vec::<u8>::new(), |out| {
        let mut runner = lanes::Inline {
            server: &server,
            ctx: &ctx,
            out: out.clone(),
        };
        runtime.block_on(run(&server, input, &mut runner, out))
    });
    let text = String::from_utf8_lossy(&out);
    (text.lines().map(str::to_string).collect(), code)
}

/// Where messages for stdout go: the one writer thread, which writes each as one line.
pub(crate) type Outbox = mpsc::Sender<Value>;

/// Runs `body` with an [`Outbox`] whose messages a writer thread writes to `sink`, one line
/// each, until every sender is gone; returns `body`'s value and the sink. A sink that fails
/// (the client closed its end) drops the rest: nobody is left to read them.
fn with_writer<W, T>(sink: W, body: impl FnOnce(&Outbox) -> T) -> (T, W)
where
    W: Write + Send,
{
    let (tx, rx) = mpsc::channel::<Value>();
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || {
            let mut sink = sink;
            let mut open = true;
            for message in rx {
                if !open {
                    continue;
                }
                let mut text = message.to_string();
                text.push('\n');
                open = sink
                    .write_all(text.as_bytes())
                    .and_then(|()| sink.flush())
                    .is_ok();
            }
            sink
        });
        let value = body(&tx);
        drop(tx);
        let sink = match writer.join() {
            Ok(sink) => sink,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        (value, sink)
    })
}

/// Binds the identity; `Some(exit code)` after telling stderr why the server cannot start.
fn bind(ctx: &Ctx) -> Option<u8> {
    match ctx.bind_identity() {
        Ok(None) => None,
        other => Some(refuse_start(other)),
    }
}

/// Tells stderr why the server cannot start; returns the exit code.
fn refuse_start(outcome: Result<Option<crate::model::Refusal>, Error>) -> u8 {
    let mut err = std::io::stderr().lock();
    match outcome {
        Ok(None) => 0,
        Ok(Some(refusal)) => {
            let _ = writeln!(
                err,
                "dacli mcp serve: refused [{}]: {}\nnext: {}",
                refusal.policy, refusal.reason, refusal.next
            );
            exit_code(&Ok(Outcome::Refused(refusal)))
        }
        Err(e) => {
            let _ = writeln!(err, "dacli mcp serve: error[{}]: {}", e.code, e.message);
            for h in &e.hints {
                let _ = writeln!(err, "hint: {h}");
            }
            exit_code(&Err::<Outcome<crate::dispatch::Reply>, Error>(e))
        }
    }
}

async fn run<R, L>(server: &call::Server<'_>, reader: R, runner: &mut L, out: &Outbox) -> u8
where
    R: AsyncBufRead + Unpin,
    L: lanes::Runner,
{
    let mut input = lines::Lines::new(reader, lines::MAX_LINE);
    let mut session = protocol::Session::new(server);
    loop {
        let reply = match input.next().await {
            Ok(lines::Line::Text(bytes)) => session.on_line(&bytes),
            Ok(lines::Line::TooLong(prefix)) => session.on_too_long(&prefix),
            Ok(lines::Line::Eof) => return 0,
            Err(e) => {
                eprintln!("dacli mcp serve: cannot read stdin: {e}");
                return 1;
            }
        };
        match reply {
            protocol::Reply::Send(message) => {
                let _ = out.send(message);
            }
            protocol::Reply::Call(job) => runner.submit(job),
            protocol::Reply::Cancel(id) => runner.cancel(&id),
            protocol::Reply::Nothing => {}
            protocol::Reply::Quit(code, why) => {
                eprintln!("dacli mcp serve: {why}");
                runner.cancel_all();
                return code;
            }
        }
    }
}
