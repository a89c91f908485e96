//! K: the kernel both front ends share. One command table ([`Table`]), one context ([`Ctx`]),
//! one outcome type ([`Outcome`]), one error type ([`Error`]) whose kind maps to the process
//! exit code in one function ([`exit_code`]), and one JSON envelope ([`envelope`]).

pub mod apply;
mod command;
mod ctx;
pub mod editor;
mod env;
mod error;
pub mod github;
pub mod hint;
mod identity;
pub mod one_task;
mod progress;
pub mod project;
pub mod text;
pub mod tools;
pub mod usage;

pub use command::{
    Class, Classify, Command, Data, Input, MULTI_LINE, Mcp, Needs, Reply, Table, shape_of,
};
pub use ctx::{CallHooks, Ctx, Output, read_only_workspace};
pub use env::{Env, holds_workspace_token};
pub use error::{Error, ErrorKind};
pub use identity::{Identity, IdentitySource};
pub use progress::{Progress, ProgressSink, Step};

/// The token a front end sets to stop a running call's child processes.
pub use crate::exec::Cancel;

pub use crate::model::Refusal;
use crate::store::Problem;

/// What a command produced: its response, or a refusal by policy.
#[derive(Debug)]
pub enum Outcome<T> {
    Done(T),
    Refused(Refusal),
}

/// The result of one call, as both front ends see it.
pub type CallResult = Result<Outcome<Reply>, Error>;

/// The process exit code for a call (ARCHITECTURE.md §4). The only place that decides it.
pub fn exit_code(result: &CallResult) -> u8 {
    match result {
        Ok(Outcome::Done(_)) => 0,
        Ok(Outcome::Refused(_)) => 3,
        Err(e) => match e.kind {
            ErrorKind::Operational => 1,
            ErrorKind::Usage => 2,
            ErrorKind::NotFound => 4,
            ErrorKind::Conflict => 5,
            ErrorKind::Internal => 70,
        },
    }
}

/// The one JSON document a call prints with `--json` (COMMANDS.md §1.5).
pub fn envelope(result: &CallResult, warnings: &[Problem]) -> serde_json::Value {
    let body = match result {
        Ok(Outcome::Done(reply)) => ("data", reply.data.to_value()),
        other => failure(other),
    };
    wrap(body, warnings)
}

/// [`envelope`] of a result the caller is done with: the reply's data is moved, not copied
/// (a `status` of thousands of active tasks is hundreds of kilobytes).
pub fn into_envelope(result: CallResult, warnings: &[Problem]) -> serde_json::Value {
    let body = match result {
        Ok(Outcome::Done(reply)) => ("data", reply.data.into_value()),
        other => failure(&other),
    };
    wrap(body, warnings)
}

/// The text of [`into_envelope`], byte for byte: a reply's data still in its text is
/// written as it is, never parsed into a value (a reconcile of ten thousand tasks is 8 MB
/// of JSON, about 50 MiB as a value).
pub fn envelope_text(result: CallResult, warnings: &[Problem]) -> serde_json::Result<String> {
    match result {
        Ok(Outcome::Done(Reply {
            data: Data::Text(raw),
            ..
        })) => {
            let mut out = String::with_capacity(raw.get().len() + 32);
            out.push_str(r#"{"ok":true,"data":"#);
            out.push_str(raw.get());
            drop(raw);
            if let Some(list) = warning_list(warnings) {
                out.push_str(r#","warnings":"#);
                out.push_str(&serde_json::to_string(&list)?);
            }
            out.push('}');
            Ok(out)
        }
        other => {
            let doc = into_envelope(other, warnings);
            let text = serde_json::to_string(&doc);
            // The process ends after printing: freeing a document of thousands of values
            // one by one would cost more than printing it.
            std::mem::forget(doc);
            text
        }
    }
}

/// The member a refusal or an error puts in the envelope.
fn failure(result: &CallResult) -> (&'static str, serde_json::Value) {
    use serde_json::{Value, json};
    match result {
        Ok(Outcome::Done(_)) => ("data", Value::Null),
        Ok(Outcome::Refused(r)) => (
            "refused",
            json!({"policy": r.policy, "reason": r.reason, "next": r.next}),
        ),
        Err(e) => (
            "error",
            json!({"code": e.code, "message": e.message, "hints": e.hints}),
        ),
    }
}

/// `{"ok": …, <member>: …, "warnings": […]}`; `ok` is true for data.
fn wrap(
    (member, value): (&'static str, serde_json::Value),
    warnings: &[Problem],
) -> serde_json::Value {
    use serde_json::{Map, Value};
    let mut doc = Map::new();
    doc.insert("ok".into(), Value::Bool(member == "data"));
    doc.insert(member.into(), value);
    if let Some(list) = warning_list(warnings) {
        doc.insert("warnings".into(), list);
    }
    Value::Object(doc)
}

/// The envelope's `warnings` member, when there are any.
pub fn warning_list(warnings: &[Problem]) -> Option<serde_json::Value> {
    use serde_json::json;
    (!warnings.is_empty()).then(|| {
        warnings
            .iter()
            .map(|w| json!({"path": w.path, "reason": w.reason.as_str(), "detail": w.detail}))
            .collect()
    })
}
