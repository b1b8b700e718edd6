//! Metrics recorded through the `metrics` crate. STUB (contract): H4 fills it in.
//!
//! The client wraps the user's event handlers with these, so metrics come from the same
//! events subscribers see.

use std::sync::Arc;

use pool::cmap::CmapEventHandler;

use crate::command_events::CommandEventHandler;
use crate::events::SdamEventHandler;

/// An SDAM handler that records heartbeat and RTT metrics, then forwards to `inner`.
pub fn sdam_handler(inner: Option<Arc<dyn SdamEventHandler>>) -> Option<Arc<dyn SdamEventHandler>> {
    inner
}

/// A CMAP handler that records pool metrics, then forwards to `inner`.
pub fn cmap_handler(inner: Option<Arc<dyn CmapEventHandler>>) -> Option<Arc<dyn CmapEventHandler>> {
    inner
}

/// A command handler that records command metrics, then forwards to `inner`.
pub fn command_handler(inner: Option<Arc<dyn CommandEventHandler>>) -> Option<Arc<dyn CommandEventHandler>> {
    inner
}
