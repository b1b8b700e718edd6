//! The seam between the pool and whatever opens connections: real ones
//! (`connection::ConnectionEstablisher`) or the mock of the CMAP spec runner.

use bson::oid::ObjectId;
use futures_util::future::BoxFuture;
use protocol::address::ServerAddress;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::Result;

/// What the pool asks for when it opens a connection.
#[derive(Debug, Clone)]
pub struct EstablishRequest {
    /// The server.
    pub address: ServerAddress,
    /// The connection id the pool assigned (CMAP `connectionId`, 1-based, per pool).
    pub id: u32,
    /// The pool generation at the time the attempt began.
    pub generation: u32,
    /// Establishment (TCP, TLS, hello, auth) must finish before this instant
    /// (connectTimeoutMS, or less when a timeoutMS deadline is shorter). `None`: no limit.
    pub deadline: Option<Instant>,
    /// Cancelled when the pool is cleared with `interruptInUseConnections` or closed; the
    /// attempt, and later every round trip on the connection, must stop at once.
    pub cancel: CancellationToken,
    /// Set by the establisher to the handshake's `serviceId` (load balanced) once the
    /// handshake completed, so a later establishment error (authentication) is attributed
    /// to that service.
    pub service_id: std::sync::Arc<std::sync::OnceLock<ObjectId>>,
}

/// A freshly established connection and what its handshake told the pool.
#[derive(Debug)]
pub struct Established<C> {
    /// The connection.
    pub connection: C,
    /// The `serviceId` from the handshake reply (load-balanced mode).
    pub service_id: Option<ObjectId>,
}

/// A connection the pool can manage.
pub trait PoolConnection: Send + 'static {
    /// True once the connection has failed or been closed: it is discarded at check-in
    /// (CMAP reason `error`) instead of going back to the idle list.
    fn is_closed(&self) -> bool;
}

/// Opens connections for a pool. Implemented by the real establisher (TCP, TLS, handshake,
/// SCRAM) and by mocks, so the pool can be tested without a server.
pub trait Establisher: Send + Sync + 'static {
    /// The connection type.
    type Connection: PoolConnection;

    /// Opens and handshakes one connection.
    fn establish(
        &self,
        request: EstablishRequest,
    ) -> BoxFuture<'static, Result<Established<Self::Connection>>>;
}
