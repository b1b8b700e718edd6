//! Test infrastructure for mongo-actors: the spec conformance runner, the cluster simulator,
//! and helpers for end-to-end tests ([`deployment`] picks the simulator or a real deployment;
//! [`raw_client`] is a minimal raw wire-protocol client).

#![warn(missing_docs)]

pub mod chaos;
pub mod child_process;
pub mod cloud_stubs;
pub mod deployment;
pub mod dns_stub;
pub mod http_stub;
pub mod oidc_issuer;
pub mod ports;
pub mod raw_client;
pub mod sim;
pub mod spec;
