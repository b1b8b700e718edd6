//! Server reply parsing on arbitrary BSON: `HelloReply::parse`, the server description built from
//! it, the SDAM state machine applying that description to a replica-set topology, and the SDAM
//! error classification of a command reply. No input may panic; a malformed hello reply must
//! become an Unknown server with an error.
#![no_main]

use std::time::Duration;

use protocol::bson::Document;
use libfuzzer_sys::fuzz_target;
use protocol::hello::reply::HelloReply;
use protocol::sdam::{
    ApplicationErrorKind, ServerDescription, ServerType, TopologyDescription, TopologySettings,
};
use protocol::uri::ConnectionString;
use protocol::ServerAddress;

fuzz_target!(|data: &[u8]| {
    // Only what the wire decoder would hand out: a fully validated document.
    if protocol::wire::validate_document(data).is_err() {
        return;
    }
    let Ok(doc) = Document::from_reader(data) else { return };

    // The same bytes as any command's reply: what SDAM reads from an error response.
    let _ = ApplicationErrorKind::from_response(&doc);

    let parsed = HelloReply::parse(&doc);
    let address = ServerAddress::parse("a:27017").expect("valid address");
    let sd =
        ServerDescription::from_hello_document(address.clone(), &doc, Some(Duration::from_millis(5)), None);
    if parsed.is_err() {
        assert_eq!(sd.server_type, ServerType::Unknown, "malformed reply gave a known server");
        assert!(sd.error.is_some(), "malformed reply left no error");
    }

    // Both a replica-set topology and an unknown one, so every SDAM branch is reachable.
    for uri in ["mongodb://a:27017,b:27017/?replicaSet=rs", "mongodb://a:27017,b:27017/"] {
        let cs = ConnectionString::parse(uri).expect("valid seed URI");
        let mut topology = TopologyDescription::new(TopologySettings::from_connection_string(&cs));
        let _ = topology.apply(sd.clone());
    }
});
