//! Server Discovery and Monitoring: server and topology descriptions, the update algorithm,
//! application error handling and SDAM events. Everything here is pure: callers pass in
//! replies, times and pool generations, and carry out the returned decisions.

pub mod app_error;
mod emit;
pub mod events;
pub mod server_description;
pub mod topology_description;
pub mod topology_version;

pub use app_error::{
    classify_state_change, decide, ApplicationError, ApplicationErrorKind, ClearPool, ErrorDecision,
    ErrorPhase, IgnoredBecause, StateChange,
};
pub use events::*;
pub use server_description::{ServerDescription, ServerType};
pub use topology_description::{
    SrvHostsUpdate, TopologyDescription, TopologySettings, TopologyType, TopologyUpdate, UpdateOutcome,
    CLIENT_MAX_WIRE_VERSION, CLIENT_MIN_WIRE_VERSION, DEFAULT_HEARTBEAT_FREQUENCY, DEFAULT_LOCAL_THRESHOLD,
};
pub use topology_version::{compare_topology_versions, TopologyVersion};
