//! Observability: the events the cluster and the client emit and their delivery
//! (`delivery/`, `command_events`), the official event shapes as one adapter (`official/`),
//! the log lines derived from them (`command_log`, `sdam_log`), metrics and OpenTelemetry
//! spans. The public paths are `mongo_actors::events` (delivery) and `mongo_actors::event`
//! (the official shapes, as `mongodb::event`).

pub mod command_events;
pub mod command_log;
pub mod delivery;
pub mod metrics;
pub mod official;
#[cfg(feature = "opentelemetry")]
pub mod otel;
#[cfg(not(feature = "opentelemetry"))]
#[path = "otel_off.rs"]
pub(crate) mod otel;
pub mod sdam_log;
