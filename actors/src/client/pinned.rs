//! Load-balanced pinning as cursors and transactions use it. Behind a load balancer a cursor's
//! `getMore`s and a transaction's statements must reuse one connection; between commands the
//! selection actor keeps it, so that pinning goes through the same mailbox as waiters,
//! immediate checks and pool readiness. This type is the one place the client reaches that
//! part of the actor.

use pool::cmap::PooledConnection;
use pool::connection::Connection;

use crate::cluster::selection::{PinConnection, PinId, Selector, TakePinned, Unpin};
use crate::error::Result;

/// The selection actor's pinned connections, as the client sees them.
pub(crate) struct Pins<'a> {
    selector: &'a Selector,
}

impl<'a> Pins<'a> {
    /// The pins of `selector`'s actor.
    pub(crate) fn new(selector: &'a Selector) -> Self {
        Pins { selector }
    }

    /// A pin nothing holds yet.
    pub(crate) fn new_id(&self) -> PinId {
        self.selector.new_pin_id()
    }

    /// Keeps `connection` under `pin` until it is taken again or released.
    pub(crate) async fn keep(&self, pin: PinId, connection: PooledConnection<Connection>) -> Result<()> {
        self.selector.actor().send(PinConnection { pin, connection }).await?
    }

    /// Takes the connection of `pin` out for one command (`None`: it is gone).
    pub(crate) async fn take(&self, pin: PinId) -> Result<Option<PooledConnection<Connection>>> {
        self.selector.actor().send(TakePinned { pin }).await?
    }

    /// Releases `pin` (its connection goes back to the pool) once the actor has done it.
    pub(crate) async fn release(&self, pin: PinId) -> Result<()> {
        Ok(self.selector.actor().send(Unpin { pin }).await?)
    }

    /// Releases `pin` without waiting (from a `Drop`).
    pub(crate) fn release_later(&self, pin: PinId) {
        self.selector.actor().do_send(Unpin { pin });
    }
}
