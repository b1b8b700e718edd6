//! The actor core, the card's actors and what they share: the topology actor (SDAM, its
//! snapshots), per server a monitor, an RTT pinger and a pool actor, the selection actor
//! (`selection/`), the messages between them, and SRV polling.
//!
//! Data flows one way: monitors report [`messages::ServerCheckCompleted`] to the topology
//! actor, which applies it through the `protocol` SDAM core and publishes an immutable
//! snapshot; readers never wait on its mailbox.

pub mod messages;
pub mod monitor;
pub mod pool_actor;
pub(crate) mod pool_readiness;
pub mod rtt_pinger;
pub mod rtt_stats;
pub mod selection;
pub mod selection_criteria;
pub(crate) mod server_info;
pub mod snapshot;
pub mod srv;
pub mod srv_poller;
pub mod topology;
