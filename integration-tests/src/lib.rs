//! Test infrastructure for mongo-actors: the spec conformance runner, the chaos engine and
//! helpers for end-to-end tests ([`deployment`] picks the simulator or a real deployment). The
//! simulator, its raw wire client and the cloud stubs are the `mongo-sim` crate
//! (`integration-tests/sim`).

#![warn(missing_docs)]

// `bson::` is the bson the crate was built with (its bson-2 or bson-3 feature).
#[cfg(all(feature = "bson-2", not(feature = "bson-3")))]
extern crate bson2 as bson;
#[cfg(feature = "bson-3")]
extern crate bson3 as bson;

pub mod chaos;
pub mod child_process;
pub mod deployment;
pub mod ports;
pub mod sim_binary;
pub mod spec;
