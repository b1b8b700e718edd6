//! What an operation tells the outside: its OpenTelemetry span ([`crate::observe::otel`]), its
//! `db.client.operation.duration` ([`crate::observe::metrics`]) and the status page's counts, all from before the operation is
//! serialized until its reply is read. Its commands' spans and durations come from
//! [`super::monitoring`]. Nothing here reads a clock or allocates when neither tracing nor a
//! metrics recorder is on.

use std::time::Instant;

use protocol::ServerAddress;

use super::super::inner::ClientInner;
use super::operation::Op;
use crate::error::{Error, Result};
use crate::observe::metrics::OperationKey;
use crate::observe::otel::{Clock, OperationSpan, TransactionSpan};

/// Taken when an operation is called, before it is prepared.
pub(crate) struct Watch {
    clock: Clock,
    started: Option<Instant>,
}

/// What the duration is recorded into: the metrics recorder, the status page's counts.
struct Metric {
    started: Instant,
    key: OperationKey,
    write: bool,
}

impl Watch {
    /// Reads the clocks that are wanted.
    #[inline]
    pub(crate) fn start(client: &ClientInner) -> Watch {
        let timed = client.command_metrics.enabled() || client.status.get().is_some();
        Watch { clock: client.tracing.clock(), started: timed.then(Instant::now) }
    }

    /// Once `op` is prepared: its span, set on `op` for its commands' spans to nest under
    /// (inside `transaction` for a transaction's statement), and what its duration needs.
    #[inline]
    pub(crate) fn begin(
        self,
        client: &ClientInner,
        op: &mut Op,
        transaction: Option<&TransactionSpan>,
    ) -> Watched {
        if !client.tracing.is_on() && self.started.is_none() {
            return Watched { span: OperationSpan::default(), metric: None };
        }
        let collection = op.collection();
        let name = operation_name(&op.name);
        let span = client.tracing.operation(self.clock, name, &op.db, collection.as_deref(), transaction);
        op.span = span.clone();
        let metric = self.started.map(|started| {
            let key = OperationKey { name: name.to_string(), db: op.db.clone(), collection, address: None };
            Box::new(Metric {
                started,
                key,
                write: op.criteria == crate::cluster::selection::Criteria::Write,
            })
        });
        Watched { span, metric }
    }
}

/// A prepared operation's span and duration, ended with its result.
pub(crate) struct Watched {
    span: OperationSpan,
    metric: Option<Box<Metric>>,
}

impl Watched {
    /// Whether anything is watched (else the caller skips [`end`](Self::end)). The three
    /// callers spell this fast path out themselves: a shared `finish(out, read)` taking the
    /// reply's reader as a closure cost 180 more instructions per `find_one` (callgrind).
    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        self.span.is_on() || self.metric.is_some()
    }

    /// Ends the span and records the duration; `address` is the server that answered, else
    /// the error's.
    pub(crate) fn end<T>(self, client: &ClientInner, address: Option<ServerAddress>, result: &Result<T>) {
        self.span.end(result);
        if let Some(metric) = self.metric {
            let Metric { started, mut key, write } = *metric;
            let elapsed = started.elapsed();
            let error: Option<&Error> = result.as_ref().err();
            if let Some(feed) = client.status.get() {
                feed.operations.record(elapsed, error.is_none(), write);
            }
            key.address = address.or_else(|| error.and_then(Error::address).cloned());
            client.command_metrics.record_operation(&key, elapsed, error);
        }
    }
}

/// The operation's name: the command's, but for the two operations the OpenTelemetry
/// specification names after their API.
fn operation_name(command: &str) -> &str {
    match command {
        "create" => "createCollection",
        "drop" => "dropCollection",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn operation_names() {
        assert_eq!(super::operation_name("create"), "createCollection");
        assert_eq!(super::operation_name("drop"), "dropCollection");
        assert_eq!(super::operation_name("find"), "find");
    }
}
