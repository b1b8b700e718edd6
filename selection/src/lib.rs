//! Pure server selection for mongo-actors: read preferences, staleness, tag sets, the latency
//! window, RTT statistics and operation-count choice. No actix, no I/O.

#![warn(missing_docs)]

pub mod rtt;
