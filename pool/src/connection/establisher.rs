//! The real [`Establisher`]: TCP, TLS, handshake and authentication.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use super::conn::Connection;
use super::options::ConnectionOptions;
use crate::cmap::{EstablishRequest, Established, Establisher};
use crate::Result;

/// Opens real connections for a pool with fixed [`ConnectionOptions`].
#[derive(Debug, Clone)]
pub struct ConnectionEstablisher {
    options: Arc<ConnectionOptions>,
}

impl ConnectionEstablisher {
    /// An establisher using `options` for every connection.
    pub fn new(options: ConnectionOptions) -> Self {
        ConnectionEstablisher { options: Arc::new(options) }
    }

    /// The options in use.
    pub fn options(&self) -> &ConnectionOptions {
        &self.options
    }
}

impl Establisher for ConnectionEstablisher {
    type Connection = Connection;

    fn establish(&self, request: EstablishRequest) -> BoxFuture<'static, Result<Established<Connection>>> {
        let options = self.options.clone();
        async move {
            let connection = Connection::connect(&options, request).await?;
            let service_id = connection.service_id();
            Ok(Established { connection, service_id })
        }
        .boxed()
    }
}
