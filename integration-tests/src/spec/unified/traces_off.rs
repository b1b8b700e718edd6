//! Built without the `otel` feature (to measure the client without OpenTelemetry): a file
//! that observes or expects spans fails with the reason.

use bson::Document;

type R<T> = Result<T, String>;

const WHY: &str = "the runner was built without the otel feature (cargo's --no-default-features)";

/// Nothing: spans are not collected.
pub(super) struct TraceObserver;

/// An error for a client entity with `observeTracingMessages`.
pub(super) fn observe(spec: &Document, _: &mut actors::ClientOptions) -> R<Option<TraceObserver>> {
    match spec.get_document("observeTracingMessages") {
        Ok(_) => Err(WHY.to_string()),
        Err(_) => Ok(None),
    }
}

/// Always an error.
pub(super) fn check(_: Option<&TraceObserver>, _: &Document) -> R<()> {
    Err(WHY.to_string())
}
