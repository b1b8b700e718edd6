//! The checked-out connection guard.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use bson::oid::ObjectId;
use protocol::address::ServerAddress;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::establish::PoolConnection;

/// What a connection is checked out for; the load-balancers spec requires counts of each in
/// the wait-queue timeout message, and they appear in [`super::PoolStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum CheckoutPurpose {
    /// Pinned to a cursor (load-balanced mode).
    Cursor,
    /// Pinned to a transaction (load-balanced mode).
    Transaction,
    /// Any other operation.
    #[default]
    Other,
}

/// What the pool knows about a connection besides the connection itself: shared by the
/// pool's in-use list, the checked-out guard and the idle list, so that a check-out and a
/// check-in copy a pointer (a [`CancellationToken`]'s own clone takes a lock).
pub(crate) type ConnMeta = Arc<ConnInfo>;

/// The fields of a [`ConnMeta`], fixed when the connection is established.
#[derive(Debug)]
pub(crate) struct ConnInfo {
    pub id: u32,
    /// The pool generation when the connection was created.
    pub generation: u32,
    pub service_id: Option<ObjectId>,
    /// The service's generation when the handshake finished (load-balanced mode).
    pub service_generation: u32,
    /// Cancelled when the pool interrupts or closes the connection.
    pub cancel: CancellationToken,
    /// The caller's runtime the connection was established on (its socket is registered with
    /// that runtime's I/O driver); `None`: the pool's own runtime.
    pub runtime: Option<Arc<super::runtime::RuntimeTag>>,
}

/// The pool side of a checked-out connection: where it goes back to.
pub(crate) trait ReturnTo<C>: Send + Sync {
    /// Gives the connection back. `announced`: a `CheckedOut` event was emitted for it, so a
    /// `CheckedIn` event must be too.
    fn return_connection(&self, meta: ConnMeta, conn: Box<C>, announced: bool);
    /// Records a new purpose for an in-use connection.
    fn set_purpose(&self, id: u32, purpose: CheckoutPurpose);
    /// The pool's server (read through the pool: a check-out copies no address).
    fn address(&self) -> &ServerAddress;
}

/// A connection checked out of a pool. Derefs to the connection; checked back in when dropped
/// (or by [`PooledConnection::check_in`]). A connection that reports
/// [`PoolConnection::is_closed`], or whose pool was cleared or closed meanwhile, is closed
/// instead of going back to the idle list.
pub struct PooledConnection<C: PoolConnection> {
    /// Boxed from establishment to close: check-out and check-in move a pointer, and the
    /// futures that hold a checked-out connection stay small.
    conn: Option<Box<C>>,
    meta: ConnMeta,
    purpose: CheckoutPurpose,
    pool: Arc<dyn ReturnTo<C>>,
    pub(crate) announced: bool,
}

impl<C: PoolConnection> PooledConnection<C> {
    pub(crate) fn new(
        conn: Box<C>,
        meta: ConnMeta,
        purpose: CheckoutPurpose,
        pool: Arc<dyn ReturnTo<C>>,
        announced: bool,
    ) -> Self {
        PooledConnection { conn: Some(conn), meta, purpose, pool, announced }
    }

    /// The connection id (CMAP `connectionId`, 1-based, per pool).
    pub fn id(&self) -> u32 {
        self.meta.id
    }

    /// The caller's runtime the connection was established on (`None`: the pool's own).
    #[cfg(test)]
    pub(crate) fn runtime_id(&self) -> Option<tokio::runtime::Id> {
        self.meta.runtime.as_ref().map(|r| r.id)
    }

    /// The generation to compare with [`super::Pool::generation`] before clearing the pool
    /// after an error on this connection: the service's generation for a connection to a
    /// load-balanced service, the pool's otherwise.
    pub fn generation(&self) -> u32 {
        if self.meta.service_id.is_some() {
            self.meta.service_generation
        } else {
            self.meta.generation
        }
    }

    /// The `serviceId` from the handshake (load-balanced mode).
    pub fn service_id(&self) -> Option<ObjectId> {
        self.meta.service_id
    }

    /// The server.
    pub fn address(&self) -> &ServerAddress {
        self.pool.address()
    }

    /// What the connection is checked out for.
    pub fn purpose(&self) -> CheckoutPurpose {
        self.purpose
    }

    /// Changes what the connection is checked out for, for example when it gets pinned to a
    /// cursor or a transaction.
    pub fn set_purpose(&mut self, purpose: CheckoutPurpose) {
        if purpose != self.purpose {
            self.purpose = purpose;
            self.pool.set_purpose(self.meta.id, purpose);
        }
    }

    /// Cancelled when the pool interrupts the connection (clear with
    /// `interruptInUseConnections`); the connection's I/O watches the same token.
    pub fn cancellation_token(&self) -> &CancellationToken {
        &self.meta.cancel
    }

    /// True once the pool has interrupted the connection.
    pub fn is_interrupted(&self) -> bool {
        self.meta.cancel.is_cancelled()
    }

    /// Takes the connection out without checking it in (the pool holds its lock).
    pub(crate) fn detach(mut self) -> Option<Box<C>> {
        self.conn.take()
    }

    /// Checks the connection back in (the same as dropping it).
    pub fn check_in(self) {
        drop(self)
    }
}

impl<C: PoolConnection> Deref for PooledConnection<C> {
    type Target = C;
    fn deref(&self) -> &C {
        // Only `Drop` takes the connection out.
        self.conn.as_ref().expect("connection present until dropped")
    }
}

impl<C: PoolConnection> DerefMut for PooledConnection<C> {
    fn deref_mut(&mut self) -> &mut C {
        self.conn.as_mut().expect("connection present until dropped")
    }
}

impl<C: PoolConnection> Drop for PooledConnection<C> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.return_connection(self.meta.clone(), conn, self.announced);
        }
    }
}

impl<C: PoolConnection> std::fmt::Debug for PooledConnection<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PooledConnection")
            .field("address", self.address())
            .field("id", &self.meta.id)
            .field("generation", &self.generation())
            .field("service_id", &self.meta.service_id)
            .field("purpose", &self.purpose)
            .finish()
    }
}
