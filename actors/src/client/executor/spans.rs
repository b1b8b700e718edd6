//! An operation's OpenTelemetry span ([`crate::otel`]): started by the executor's entry
//! points before the operation is serialized, ended once its reply is read. Its commands'
//! spans come from [`super::monitoring`]. Everything here is free when tracing is off.

use super::super::inner::ClientInner;
use super::operation::Op;
use crate::otel::{Clock, OperationSpan, TransactionSpan};

/// The span of `op`, started at `clock`, inside `transaction` when it is a transaction's
/// statement.
#[inline]
pub(crate) fn operation(
    client: &ClientInner,
    clock: Clock,
    op: &Op,
    transaction: Option<&TransactionSpan>,
) -> OperationSpan {
    if !client.tracing.is_on() {
        return OperationSpan::default();
    }
    let collection = op.collection();
    client.tracing.operation(clock, &op.name, &op.db, collection.as_deref(), transaction)
}
