//! Server selection as pure, spec-exact logic (server-selection and max-staleness specs):
//! no I/O, no actors, no clock. Callers pass a [`TopologyDescription`] snapshot, the criteria
//! and the servers' operation counts, and get a server, "nothing suitable yet" or an error.
//!
//! The steps of one selection ([`select_server`]):
//! 1. [`validate`]: the topology is compatible and the read preference fits it;
//! 2. [`suitable_servers`]: the rules per topology type and operation (mode, staleness, then
//!    tag sets in replica sets), leaving deprioritized servers out unless that leaves none,
//!    then the application's [`ServerSelector`];
//! 3. [`in_latency_window`];
//! 4. [`choose_in_window`]: the power of two choices by `operationCount`.
//!
//! [`read_preference_for_command`] says what to tell the chosen server, [`rtt`] keeps the
//! round-trip statistics the latency window and CSOT use, and [`log`] has the
//! spec's log messages.
//!
//! ```
//! use protocol::sdam::{ServerDescription, TopologyDescription, TopologySettings, TopologyType};
//! use protocol::ServerAddress;
//! use selection::{select_server, ReadPreference, SelectionQuery};
//!
//! let mongos = |host: &str, rtt_ms: u64| ServerDescription {
//!     server_type: protocol::sdam::ServerType::Mongos,
//!     round_trip_time: Some(std::time::Duration::from_millis(rtt_ms)),
//!     max_wire_version: Some(21),
//!     ..ServerDescription::new_unknown(ServerAddress::tcp(host, 27017))
//! };
//! let settings = TopologySettings { local_threshold: std::time::Duration::from_millis(15), ..Default::default() };
//! let td = TopologyDescription::from_parts(TopologyType::Sharded, [mongos("a", 5), mongos("b", 50)], settings);
//! let rp = ReadPreference::NEAREST;
//! let chosen = select_server(&td, &SelectionQuery::read(&rp), &|_: &ServerAddress| 0).unwrap();
//! // b is outside the latency window.
//! assert_eq!(chosen.map(|s| s.address.to_string()), Some("a:27017".to_string()));
//! ```
//!
//! [`TopologyDescription`]: protocol::sdam::TopologyDescription

#![warn(missing_docs)]

// `bson::` names the bson this crate's features select, the one the crates below use.
protocol::select_bson!();

mod bson_compat;
mod command;
mod error;
pub mod log;
mod no_suitable;
mod read_preference;
pub mod rtt;
mod select;
mod selector;
mod suitability;
mod window;

use std::sync::Arc;

use protocol::sdam::ServerDescription;

pub use command::{read_preference_for_command, read_preference_for_op_query, OpQueryReadPreference};
pub use error::{Error, Result};
pub use log::TopologySummary;
pub use no_suitable::no_suitable_server_message;
pub use read_preference::{
    HedgedReadOptions, ReadPreference, ReadPreferenceBuilder, ReadPreferenceOptions, IDLE_WRITE_PERIOD,
    MAX_STALENESS_MIN_WIRE_VERSION, SMALLEST_MAX_STALENESS,
};
pub use select::{
    in_latency_window, select_server, select_server_with_rng, suitable_servers, validate, SelectionQuery,
};
pub use selector::{selector_fn, ServerSelector};
pub use suitability::{estimated_staleness_ms, matches_tag_set, Operation};
pub use window::{
    choose_in_window, choose_of_two, retain_in_latency_window, with_thread_rng, OperationCounts,
};

/// Re-exported so callers can name the list types and random sources.
pub use rand;
pub use smallvec;

/// A list of servers borrowed from a topology description; inline up to 8 (no allocation
/// for typical deployments).
pub type Servers<'a> = smallvec::SmallVec<[&'a Arc<ServerDescription>; 8]>;

#[cfg(test)]
mod tests;
