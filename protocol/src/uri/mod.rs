//! Connection strings (`mongodb://` and `mongodb+srv://`) and their options.
//!
//! TEMPORARY STUB: the uri work replaces this with the full parser. The public names below
//! (`ConnectionString::parse`, `hosts`, `options.replica_set`, `options.direct_connection`,
//! `options.load_balanced`, `options.heartbeat_frequency_ms`) are relied on elsewhere.

use crate::address::ServerAddress;
use crate::error::{Error, Result};

/// A parsed connection string.
#[derive(Debug, Clone, Default)]
pub struct ConnectionString {
    /// The seed list (for `mongodb+srv`, empty until resolution).
    pub hosts: Vec<ServerAddress>,
    /// The options.
    pub options: UriOptions,
}

/// Options from the query string.
#[derive(Debug, Clone, Default)]
pub struct UriOptions {
    /// `replicaSet`.
    pub replica_set: Option<String>,
    /// `directConnection`.
    pub direct_connection: Option<bool>,
    /// `loadBalanced`.
    pub load_balanced: Option<bool>,
    /// `heartbeatFrequencyMS`.
    pub heartbeat_frequency_ms: Option<u64>,
}

impl ConnectionString {
    /// Parses a connection string.
    pub fn parse(s: &str) -> Result<Self> {
        let rest = s
            .strip_prefix("mongodb://")
            .ok_or_else(|| Error::InvalidUri("scheme must be mongodb://".into()))?;
        let (hosts_part, query) = match rest.split_once('?') {
            Some((h, q)) => (h, q),
            None => (rest, ""),
        };
        let hosts_part = hosts_part.split('/').next().unwrap_or_default();
        let hosts = hosts_part.split(',').map(ServerAddress::parse).collect::<Result<Vec<_>>>()?;
        let mut options = UriOptions::default();
        for kv in query.split('&').filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            match k.to_ascii_lowercase().as_str() {
                "replicaset" => options.replica_set = Some(v.to_string()),
                "directconnection" => options.direct_connection = Some(v == "true"),
                "loadbalanced" => options.load_balanced = Some(v == "true"),
                "heartbeatfrequencyms" => options.heartbeat_frequency_ms = v.parse().ok(),
                _ => {}
            }
        }
        Ok(ConnectionString { hosts, options })
    }
}
