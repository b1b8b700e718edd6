//! Session entity operations: `commitTransaction` / `abortTransaction` with a per-call
//! `timeoutMS`, and `withTransaction`, whose callback is a list of operations run through the
//! runner with the session.

use std::time::Duration;

use actors::{ClientSession, EndTransactionOptions, TransactionOptions};
use bson::{Bson, Document};
use futures_util::future::BoxFuture;

use super::{check_outcome, execute_inner, timeout_ms, Ctx, Entity, OpResult, R};

/// `sessionOptions` of a session entity, as the client's options.
pub(super) fn session_options(
    spec: &Document,
    values: &std::collections::HashMap<String, Bson>,
) -> R<actors::SessionOptions> {
    let mut options = actors::SessionOptions::default();
    if let Ok(o) = spec.get_document("sessionOptions") {
        options.snapshot_time = match o.get("snapshotTime") {
            Some(Bson::String(id)) => match values.get(id) {
                Some(Bson::Timestamp(t)) => Some(*t),
                _ => return Err(format!("snapshotTime entity {id} is not a timestamp")),
            },
            Some(Bson::Timestamp(t)) => Some(*t),
            _ => None,
        };
        options.default_timeout = o.get("defaultTimeoutMS").and_then(ms);
        options.causal_consistency = o.get_bool("causalConsistency").ok();
        options.snapshot = o.get_bool("snapshot").ok();
        if let Ok(t) = o.get_document("defaultTransactionOptions") {
            options.default_transaction_options = Some(transaction_options(t)?);
        }
    }
    Ok(options)
}

/// Transaction options (of `startTransaction`, `withTransaction` or a session's
/// `defaultTransactionOptions`), read with the client's own types.
pub(super) fn transaction_options(args: &Document) -> R<TransactionOptions> {
    let mut handle = Document::new();
    for k in ["readConcern", "writeConcern", "readPreference"] {
        if let Some(v) = args.get(k) {
            handle.insert(k, v.clone());
        }
    }
    let h = super::handle_options(Some(&handle))?;
    Ok(TransactionOptions {
        read_concern: h.read_concern,
        write_concern: h.write_concern,
        selection_criteria: h.selection_criteria,
        max_commit_time: args.get("maxCommitTimeMS").and_then(ms),
    })
}

fn ms(v: &Bson) -> Option<Duration> {
    let n = match v {
        Bson::Int32(i) => i64::from(*i),
        Bson::Int64(i) => *i,
        Bson::Double(d) => *d as i64,
        _ => return None,
    };
    u64::try_from(n).ok().map(Duration::from_millis)
}

/// Runs a session entity's operation `name` (`None`: not a session operation handled here).
pub(super) async fn session_op(ctx: &mut Ctx, sid: &str, name: &str, args: &Document) -> Option<R<OpResult>> {
    match name {
        "commitTransaction" | "abortTransaction" => {
            let Some(Entity::Session(Some(session))) = ctx.entities.get_mut(sid) else {
                return Some(Err(format!("session {sid} has ended")));
            };
            let options = EndTransactionOptions { timeout: timeout_ms(args) };
            let r = if name == "commitTransaction" {
                session.commit_transaction_with(options).await
            } else {
                session.abort_transaction_with(options).await
            };
            Some(Ok(r.map(|()| None)))
        }
        "startTransaction" => {
            let Some(Entity::Session(Some(session))) = ctx.entities.get_mut(sid) else {
                return Some(Err(format!("session {sid} has ended")));
            };
            Some(start_transaction(session, args).await)
        }
        "withTransaction" => Some(with_transaction(ctx, sid, args).await),
        "getSnapshotTime" => {
            let Some(Entity::Session(Some(session))) = ctx.entities.get(sid) else {
                return Some(Err(format!("session {sid} has ended")));
            };
            Some(Ok(Ok(session.snapshot_time().map(Bson::Timestamp))))
        }
        _ => None,
    }
}

async fn start_transaction(session: &mut ClientSession, args: &Document) -> R<OpResult> {
    let options = transaction_options(args)?;
    Ok(session.start_transaction().with_options(options).await.map(|()| None))
}

/// A session operation inside a `withTransaction` callback, on the callback's session.
async fn callback_session_op(session: &mut ClientSession, name: &str, args: &Document) -> R<OpResult> {
    let options = EndTransactionOptions { timeout: timeout_ms(args) };
    let r = match name {
        "startTransaction" => return start_transaction(session, args).await,
        "commitTransaction" => session.commit_transaction_with(options).await,
        "abortTransaction" => session.abort_transaction_with(options).await,
        other => return Err(format!("session operation {other} is not supported in a callback")),
    };
    Ok(r.map(|()| None))
}

/// What the callback needs: the runner's state, and the first runner failure (a result or
/// error that did not match), reported after `withTransaction` returns.
struct Callback<'a> {
    ctx: &'a mut Ctx,
    sid: String,
    operations: Vec<Document>,
    failure: Option<String>,
}

async fn with_transaction(ctx: &mut Ctx, sid: &str, args: &Document) -> R<OpResult> {
    let operations: Vec<Document> = args
        .get_array("callback")
        .map(|a| a.iter().filter_map(|o| o.as_document().cloned()).collect())
        .unwrap_or_default();
    let mut session = match ctx.entities.get_mut(sid) {
        Some(Entity::Session(slot)) => {
            slot.take().map(|s| *s).ok_or_else(|| format!("session {sid} has ended"))?
        }
        _ => return Err(format!("unknown session entity {sid}")),
    };
    let options = transaction_options(args)?;
    let mut state = Callback { ctx: &mut *ctx, sid: sid.to_string(), operations, failure: None };
    let mut start = session.start_transaction().with_options(options);
    if let Some(timeout) = timeout_ms(args) {
        start = start.timeout(timeout);
    }
    let result = start.and_run(&mut state, run_callback).await;
    let failure = state.failure.take();
    ctx.lsids.insert(sid.to_string(), session.id().clone());
    ctx.entities.insert(sid.to_string(), Entity::Session(Some(Box::new(session))));
    match failure {
        Some(f) => Err(format!("withTransaction callback: {f}")),
        None => Ok(result.map(|()| None)),
    }
}

fn run_callback<'b>(
    session: &'b mut ClientSession,
    state: &'b mut &mut Callback<'_>,
) -> BoxFuture<'b, actors::Result<()>> {
    Box::pin(async move {
        let operations = state.operations.clone();
        for op in &operations {
            let name = op.get_str("name").unwrap_or("");
            let object = op.get_str("object").unwrap_or("");
            let empty = Document::new();
            let args = op.get_document("arguments").unwrap_or(&empty);
            let with_session = args.get_str("session").is_ok_and(|s| s == state.sid);
            let result = if object == state.sid {
                callback_session_op(session, name, args).await
            } else {
                execute_inner(state.ctx, name, object, args, with_session.then_some(&mut *session)).await
            };
            let result = match result {
                Ok(r) => r,
                Err(f) => return Err(runner_failure(state, f)),
            };
            let error = result.as_ref().err().cloned();
            if let Err(f) = check_outcome(op, result) {
                return Err(runner_failure(state, format!("{name}: {f}")));
            }
            // Errors reach withTransaction whatever the operation expected.
            if let Some(e) = error {
                return Err(e);
            }
        }
        Ok(())
    })
}

/// Records a runner failure and stops the transaction with an error it does not retry.
fn runner_failure(state: &mut Callback<'_>, failure: String) -> actors::Error {
    state.failure.get_or_insert(failure.clone());
    actors::Error::custom(format!("test runner: {failure}"))
}

/// The `failPoint` operation sends `configureFailPoint` through its client, as the unified
/// format says, so the command's check-out and check-in are among the client's events (the
/// LB transaction and handshake-error tests count them). `None`: a client of several mongoses
/// (which one would get it is unknown; those tests use `targetedFailPoint`), set directly on
/// the first mongos.
pub(super) async fn fail_point_through_client(ctx: &Ctx, args: &Document, fp: &Document) -> Option<R<()>> {
    let Some(Entity::Client(c)) = args.get_str("client").ok().and_then(|id| ctx.entities.get(id)) else {
        return None;
    };
    let description = c.client.topology().snapshot().description.clone();
    if description.topology_type() == protocol::sdam::TopologyType::Sharded
        && description.servers().count() > 1
    {
        return None;
    }
    let result = c.client.database("admin").run_command(fp.clone()).await;
    Some(result.map(|_| ()).map_err(|e| format!("configureFailPoint: {e}")))
}
