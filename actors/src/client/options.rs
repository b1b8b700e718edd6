//! Client options. STUB (contract): H2 extends this file (config files, environment, SRV).

use std::sync::Arc;

use pool::cmap::CmapEventHandler;
use protocol::uri::ConnectionString;

use crate::command_events::CommandEventHandler;
use crate::events::SdamEventHandler;
use crate::selection_actor::CustomSelector;
use crate::{Error, Result};

/// Everything a [`Client`](super::Client) is built from: a parsed connection string (with
/// `mongodb+srv` already resolved into hosts), plus what a URI cannot carry.
#[derive(Clone, Default)]
pub struct ClientOptions {
    /// The connection string; its hosts are the seeds.
    pub connection_string: ConnectionString,
    /// The application's server selector.
    pub custom_selector: Option<CustomSelector>,
    /// Receives SDAM events.
    pub sdam_event_handler: Option<Arc<dyn SdamEventHandler>>,
    /// Receives CMAP events.
    pub cmap_event_handler: Option<Arc<dyn CmapEventHandler>>,
    /// Receives command events.
    pub command_event_handler: Option<Arc<dyn CommandEventHandler>>,
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions").field("connection_string", &self.connection_string).finish_non_exhaustive()
    }
}

impl ClientOptions {
    /// Parses a URI (a `mongodb+srv` URI is resolved through DNS).
    pub async fn parse(uri: &str) -> Result<ClientOptions> {
        let connection_string =
            ConnectionString::parse(uri).map_err(|e| Error::InvalidOptions { message: e.to_string() })?;
        Ok(ClientOptions { connection_string, ..Default::default() })
    }
}
