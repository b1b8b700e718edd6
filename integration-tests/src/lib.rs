//! Test infrastructure for mongo-actors: the spec conformance runner and the cluster
//! simulator.

pub mod sim;
pub mod spec;
