//! Connection-string parsing on arbitrary text: `ConnectionString::parse` and `validate` never
//! panic, and a string that parses yields settings the topology can be opened with.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::sdam::{TopologyDescription, TopologySettings};
use protocol::uri::ConnectionString;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let Ok(cs) = ConnectionString::parse(s) else { return };
    let _ = cs.validate();
    let _ = cs.is_srv();
    let _ = cs.tls_enabled();
    let _ = cs.srv_service_name();
    let settings = TopologySettings::from_connection_string(&cs);
    let _ = settings.validate();
    let _ = settings.initial_topology_type();
    let _ = TopologyDescription::new(settings);
});
