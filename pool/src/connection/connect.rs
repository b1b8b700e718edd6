//! Establishing a connection: TCP (and TLS), the handshake, then authentication (a pool's
//! connections) or not (a monitor's).

use protocol::ServerAddress;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::auth;
use super::conn::Connection;
use super::handshake;
use super::options::ConnectionOptions;
use crate::cmap::establish::EstablishRequest;
use crate::Result;

impl Connection {
    /// Opens, handshakes and authenticates a connection for a pool: the attempt must finish
    /// before the earlier of `request.deadline` and connectTimeoutMS, and stops with
    /// [`Error::Interrupted`](crate::Error::Interrupted) when `request.cancel` fires (as does every later round trip).
    pub async fn connect(options: &ConnectionOptions, request: EstablishRequest) -> Result<Connection> {
        let deadline = crate::earliest(
            request.deadline,
            options.connect_timeout.and_then(|t| Instant::now().checked_add(t)),
        );
        let service_slot = request.service_id.clone();
        let mut conn = Connection::open(
            options,
            request.address,
            request.id,
            request.generation,
            request.cancel,
            deadline,
            false,
        )
        .await?;
        let reply = handshake::handshake(&mut conn, options, deadline).await?;
        if let Some(sid) = conn.service_id() {
            let _ = service_slot.set(sid);
        }
        if let Some(pending) = reply {
            auth::authenticate(&mut conn, options, pending, deadline).await?;
        }
        Ok(conn)
    }

    /// Opens and handshakes a monitoring connection: never authenticates, id 0, generation 0,
    /// its own cancellation token ([`Connection::cancel_token`]). Bounded by connectTimeoutMS.
    pub async fn connect_monitoring(
        options: &ConnectionOptions,
        address: ServerAddress,
    ) -> Result<Connection> {
        let deadline = options.connect_timeout.and_then(|t| Instant::now().checked_add(t));
        let mut conn =
            Connection::open(options, address, 0, 0, CancellationToken::new(), deadline, true).await?;
        handshake::handshake(&mut conn, options, deadline).await?;
        Ok(conn)
    }
}
