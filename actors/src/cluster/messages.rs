//! Messages the actors exchange, named for intent. Each has a typed result.
//!
//! - monitor → topology: [`ServerCheckCompleted`]
//! - topology → monitor: [`RequestImmediateCheck`], [`CancelCheck`], [`StopActor`]
//! - anyone → topology: [`ApplicationErrorOccurred`] (what a pool user saw on a connection)
//! - selection → topology: [`WatchPoolReadiness`]; topology → selection: [`PoolReadinessChanged`]

use std::time::Duration;

use actix::{Message, Recipient};
use protocol::address::ServerAddress;
use protocol::hello::reply::HelloReply;
use protocol::sdam::app_error::ApplicationError;

/// A monitor finished one check of its server (sent to the topology actor).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct ServerCheckCompleted {
    /// The server checked.
    pub address: ServerAddress,
    /// What the check found.
    pub outcome: CheckOutcome,
}

/// The result of one server check.
#[derive(Debug, Clone)]
pub enum CheckOutcome {
    /// The server answered `hello`.
    Succeeded {
        /// The reply.
        reply: Box<HelloReply>,
        /// The server's average RTT after this check's sample was added (streaming replies add
        /// no sample: the RTT pinger measures then), if there is any sample.
        average_rtt: Option<Duration>,
        /// True for a streamed (awaited) reply.
        awaited: bool,
    },
    /// The check failed after the monitor's retry rules ran out.
    Failed {
        /// Why. A network timeout (`pool::Error::Timeout`) makes the pool clear interrupt
        /// in-use connections.
        error: pool::Error,
    },
}

/// Ask a monitor to check its server now (selection found no suitable server, or an
/// application error said the server changed state). A request during a check is remembered
/// (at most one): a check starts as soon as that one ends, since it may have started before
/// what the requester waits for. Never makes checks closer than 500 ms apart.
#[derive(Debug, Clone, Copy, Default, Message)]
#[rtype(result = "()")]
pub struct RequestImmediateCheck;

/// Cancel a monitor's in-flight check and close its connection at once (an application
/// network error on the same server, per the server-monitoring spec). The monitor then
/// reconnects and checks again on its own schedule (after heartbeatFrequencyMS, or sooner on
/// [`RequestImmediateCheck`]). The cancelled check is not reported as a
/// [`ServerCheckCompleted`] (the sender already marked the server Unknown); its heartbeat
/// ends with a failed event. Sent while the monitor sleeps, it makes the next check reconnect.
#[derive(Debug, Clone, Copy, Default, Message)]
#[rtype(result = "()")]
pub struct CancelCheck;

/// Stop an actor and close every connection it owns, without waiting out maxAwaitTimeMS.
/// Answers once the actor has released its resources.
#[derive(Debug, Clone, Copy, Default, Message)]
#[rtype(result = "()")]
pub struct StopActor;

/// An operation on a pooled connection failed; the topology actor runs the SDAM
/// application-error rules (mark Unknown, clear the pool, cancel the monitor's check) with
/// generation checks.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct ApplicationErrorOccurred {
    /// The error, as the SDAM core classifies it (`protocol::sdam::app_error`).
    pub error: ApplicationError,
}

/// An SRV rescan found these hosts (sent by the [`SrvPoller`](crate::cluster::srv_poller::SrvPoller)
/// to the topology actor). The actor applies the SDAM rule
/// ([`TopologyDescription::apply_srv_hosts`](protocol::sdam::TopologyDescription::apply_srv_hosts)):
/// removed hosts lose their monitor and pool, new ones get them, and the events follow.
/// Answers whether the server list changed (false too when the topology is neither Unknown
/// nor Sharded, or closed).
#[derive(Debug, Clone, Message)]
#[rtype(result = "bool")]
pub struct UpdateSrvHosts {
    /// The valid hosts of the rescan, in random order (the order decides which new hosts a
    /// positive srvMaxHosts admits).
    pub hosts: Vec<ServerAddress>,
}

/// A server's pool became ready, or was cleared (paused) or closed (sent by the topology actor
/// to every selection actor that asked with [`WatchPoolReadiness`], after the snapshot that
/// goes with the change, if any, was published). A selection actor re-evaluates its waiters
/// at once, instead of at the next snapshot: a pool may become ready with no change of the
/// description (a check that finds what the previous one found).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct PoolReadinessChanged {
    /// The server whose pool changed.
    pub address: ServerAddress,
    /// True when the pool now serves check-outs.
    pub ready: bool,
    /// The sequence of the snapshot published with the change, when one was: a waiter already
    /// evaluated on it saw the pool in its new state. `None`: no snapshot shows the change.
    pub published_in: Option<u64>,
}

/// Subscribe to [`PoolReadinessChanged`] (sent by a selection actor to the topology actor when
/// it starts; a watcher that stopped is forgotten).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct WatchPoolReadiness {
    /// Where the changes go.
    pub watcher: Recipient<PoolReadinessChanged>,
}
