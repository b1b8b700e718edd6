//! Test infrastructure for mongo-actors: the spec conformance runner, the chaos engine and
//! helpers for end-to-end tests ([`deployment`] picks the simulator or a real deployment). The
//! simulator, its raw wire client and the cloud stubs are the `mongo-sim` crate
//! (`integration-tests/sim`).

#![warn(missing_docs)]

// `bson::` names the bson this crate's features select, the one the crates below use.
protocol::select_bson!();

pub mod chaos;
pub mod child_process;
pub mod deployment;
pub mod ports;
pub mod sim_binary;
pub mod spec;
