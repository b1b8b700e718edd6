//! What surrounds a simulated Atlas deployment on 127.0.0.1: an HTTP server for the clouds'
//! credential and token endpoints, those endpoints' answers, a DNS server for `mongodb+srv`
//! records, and an OIDC identity provider whose tokens the simulator accepts.

pub mod cloud;
pub mod dns;
pub mod http;
pub mod oidc_issuer;
