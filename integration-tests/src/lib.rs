//! Test infrastructure for mongo-actors: the spec conformance runner, the cluster simulator,
//! and helpers for end-to-end tests ([`deployment`] picks the simulator or a real deployment;
//! [`wire_client`] is a minimal raw wire-protocol client).

pub mod deployment;
pub mod sim;
pub mod spec;
pub mod wire_client;
