//! Observability: the events the cluster and the client emit and their delivery (`events/`,
//! `command_events`), the official event shapes as one adapter (`event/`), the log lines
//! derived from them (`command_log`, `sdam_log`), metrics and OpenTelemetry spans.

pub mod command_events;
pub mod command_log;
pub mod event;
pub mod events;
pub mod metrics;
#[cfg(feature = "opentelemetry")]
pub mod otel;
#[cfg(not(feature = "opentelemetry"))]
#[path = "otel_off.rs"]
pub(crate) mod otel;
pub mod sdam_log;
