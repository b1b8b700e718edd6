//! Load-balanced pinning's messages: connections a cursor or a transaction keeps, held by the
//! selection actor (its handlers are in `actor.rs`) under a [`PinId`] until taken back or
//! unpinned.

use actix::prelude::*;
use pool::cmap::PooledConnection;
use pool::connection::Connection;

use crate::error::Result;

/// Identifies a pinned connection (a load-balanced cursor or transaction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PinId(pub u64);

/// Pins (or returns after use) a connection under `pin`.
#[derive(Debug, Message)]
#[rtype(result = "Result<()>")]
pub struct PinConnection {
    /// The pin.
    pub pin: PinId,
    /// The connection to keep.
    pub connection: PooledConnection<Connection>,
}

/// Takes a pinned connection for one command; give it back with [`PinConnection`].
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Result<Option<PooledConnection<Connection>>>")]
pub struct TakePinned {
    /// The pin.
    pub pin: PinId,
}

/// Unpins: the connection goes back to its pool.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct Unpin {
    /// The pin.
    pub pin: PinId,
}
