//! Where tool calls run, so that the reading loop never waits for one.
//!
//! - The write lane: one thread, holding the context bound at launch, runs every call whose
//!   tool is not read-only (`append`, `mutate`, `read/apply`, `run_shortcut`, `cli`) one at a
//!   time, in the order the requests arrived. Two writes of one server therefore never
//!   interleave, exactly as before calls left the reading thread; the store's file locks
//!   still order them against other processes.
//! - The read lanes: [`READERS`] threads, each with its own context, run read-only tools
//!   beside the write lane. A read sees the store as the last finished write left it (every
//!   write is an atomic rename), never a half-written file.
//!
//! A call in flight is found by its request id. `notifications/cancelled` sets its
//! [`Cancel`]: a call not yet started is skipped, a running one has its child process group
//! killed by `exec`, and neither sends a result (the MCP cancellation rule). A call carrying
//! `_meta.progressToken` gets its progress sink, which turns each step into
//! `notifications/progress` on the [`Outbox`].

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::{Scope, ScopedJoinHandle};

use serde_json::Value;

use super::Outbox;
use super::call::Server;
use super::protocol::{self, Job};
use crate::dispatch::{CallHooks, Cancel, Ctx, ProgressSink, Step};

/// Threads running read-only tools. Two keep a read answering while another read waits on
/// the network (a GitHub diagnosis) without multiplying contexts on a small machine.
pub const READERS: u64 = 2;

/// What the reading loop hands calls to.
pub trait Runner {
    /// Runs (or queues) one call; its answer goes to the outbox when it ends.
    fn submit(&mut self, job: Job);
    /// The client cancelled the request `id`: stop it and send nothing for it.
    fn cancel(&mut self, id: &Value);
    /// The server is stopping: cancel every call in flight.
    fn cancel_all(&mut self);
}

/// Calls in flight by request key, shared by the reading loop (which cancels) and the lanes
/// (which finish).
#[derive(Clone, Default)]
struct InFlight(Arc<Mutex<HashMap<String, Cancel>>>);

impl InFlight {
    fn add(&self, key: String) -> Cancel {
        let cancel = Cancel::new();
        if let Ok(mut map) = self.0.lock() {
            map.insert(key, cancel.clone());
        }
        cancel
    }

    fn cancel(&self, key: &str) {
        if let Ok(map) = self.0.lock()
            && let Some(c) = map.get(key)
        {
            c.cancel();
        }
    }

    fn cancel_all(&self) {
        if let Ok(map) = self.0.lock() {
            map.values().for_each(Cancel::cancel);
        }
    }

    fn remove(&self, key: &str) {
        if let Ok(mut map) = self.0.lock() {
            map.remove(key);
        }
    }
}

struct Task {
    job: Job,
    cancel: Cancel,
}

/// The lanes of `dacli mcp serve`.
pub struct Lanes<'scope> {
    write: Option<mpsc::Sender<Task>>,
    read: Option<mpsc::Sender<Task>>,
    threads: Vec<ScopedJoinHandle<'scope, ()>>,
    in_flight: InFlight,
}

impl<'scope> Lanes<'scope> {
    /// Starts the write lane with `ctx` (the context bound at launch, which holds the agent's
    /// session lock) and the read lanes with contexts of their own.
    pub fn start<'env, 't>(
        scope: &'scope Scope<'scope, 'env>,
        server: &'env Server<'t>,
        ctx: Ctx<'t>,
        out: Outbox,
    ) -> Lanes<'scope>
    where
        't: 'env,
    {
        let in_flight = InFlight::default();
        let mut threads = Vec::new();
        let (write, write_rx) = mpsc::channel::<Task>();
        let readers: Vec<Ctx<'t>> = (1..=READERS).map(|n| ctx.sibling(n)).collect();
        {
            let (out, in_flight) = (out.clone(), in_flight.clone());
            threads.push(scope.spawn(move || {
                for task in write_rx {
                    run_task(server, &ctx, task, &out, &in_flight);
                }
            }));
        }
        let (read, read_rx) = mpsc::channel::<Task>();
        let read_rx = Arc::new(Mutex::new(read_rx));
        for reader in readers {
            let (out, in_flight, rx) = (out.clone(), in_flight.clone(), read_rx.clone());
            threads.push(scope.spawn(move || {
                // Bound here, off the reading thread; a refusal shows in each call's result.
                let _ = reader.bind_identity();
                loop {
                    let next = match rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok(task) = next else { return };
                    run_task(server, &reader, task, &out, &in_flight);
                }
            }));
        }
        Lanes {
            write: Some(write),
            read: Some(read),
            threads,
            in_flight,
        }
    }

    /// Stops taking calls and waits for the ones in flight (their answers are still sent).
    pub fn finish(mut self) {
        self.write.take();
        self.read.take();
        for t in self.threads.drain(..) {
            if let Err(panic) = t.join() {
                std::panic::resume_unwind(panic);
            }
        }
    }
}

impl Runner for Lanes<'_> {
    fn submit(&mut self, job: Job) {
        let cancel = self.in_flight.add(job.key());
        let lane = if job.tool.class == "read" {
            &self.read
        } else {
            &self.write
        };
        if let Some(lane) = lane {
            let _ = lane.send(Task { job, cancel });
        }
    }

    fn cancel(&mut self, id: &Value) {
        self.in_flight.cancel(&protocol::request_key(id));
    }

    fn cancel_all(&mut self) {
        self.in_flight.cancel_all();
    }
}

/// Runs one call on a lane's context and sends its answer, unless it was cancelled.
fn run_task(server: &Server<'_>, ctx: &Ctx, task: Task, out: &Outbox, in_flight: &InFlight) {
    let Task { job, cancel } = task;
    if !cancel.is_cancelled() {
        ctx.attach_call(CallHooks {
            cancel: Some(cancel.clone()),
            progress: job
                .progress_token
                .clone()
                .map(|token| progress_sink(token, out.clone())),
        });
        let result = server.call(ctx, job.tool, job.arguments.as_ref());
        ctx.detach_call();
        if !cancel.is_cancelled() {
            let _ = out.send(job.answer(result));
        }
    }
    in_flight.remove(&job.key());
}

/// The sink that turns a call's progress steps into `notifications/progress` for `token`.
fn progress_sink(token: Value, out: Outbox) -> ProgressSink {
    let out = Mutex::new(out);
    Arc::new(move |step: Step| {
        if let Ok(out) = out.lock() {
            let _ = out.send(protocol::progress(
                &token,
                step.progress,
                step.total,
                &step.message,
            ));
        }
    })
}

/// Runs each call at once on the reading thread, with one context: [`super::replay`], whose
/// output must not depend on thread timing.
pub struct Inline<'a, 't> {
    pub server: &'a Server<'t>,
    pub ctx: &'a Ctx<'t>,
    pub out: Outbox,
}

impl Runner for Inline<'_, '_> {
    fn submit(&mut self, job: Job) {
        let in_flight = InFlight::default();
        let cancel = in_flight.add(job.key());
        run_task(
            self.server,
            self.ctx,
            Task { job, cancel },
            &self.out,
            &in_flight,
        );
    }

    fn cancel(&mut self, _id: &Value) {}

    fn cancel_all(&mut self) {}
}
