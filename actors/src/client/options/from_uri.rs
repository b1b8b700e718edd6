//! The one way options flow: a spec-level parse becomes the official [`ConnectionString`]'s
//! typed fields, and a `ConnectionString` becomes [`ClientOptions`]. Nothing writes them back
//! into a URI (the URI writer, [`super::uri_writer`], serves `Display` only): the actors are
//! built from the typed fields ([`super::cluster_settings`]).

use std::time::Duration;

use protocol::uri::UriOptions;
use selection::ReadPreference;

use super::super::concern::{ReadConcern, ReadConcernLevel, WriteConcern};
use super::client::ClientOptions;
use super::compressor::compressors_of;
use super::connection_string::{uuid_representation, ConnectionString, HostInfo};
use super::credential::Credential;
use super::tls::tls_of;
use super::uri_notes::{uri_only_options_without_effect, UriNotes};
use crate::cluster::selection_criteria::SelectionCriteria;
use crate::error::{Error, Result};

/// (Ours.) The typed view of a spec-level parse.
impl From<protocol::uri::ConnectionString> for ConnectionString {
    fn from(mut parsed: protocol::uri::ConnectionString) -> Self {
        let o = &parsed.options;
        let ms = |v: Option<u64>| v.map(Duration::from_millis);
        let host_info = match &parsed.srv_host {
            Some(name) => HostInfo::DnsRecord(name.clone()),
            None => HostInfo::HostIdentifiers(parsed.hosts.clone()),
        };
        let read_preference = match uri_read_preference(o) {
            Ok(rp) => rp,
            Err(e) => {
                // Ignored with a warning, as the parser ignores every invalid value.
                parsed.warnings.push(format!("the read preference is ignored: {e}"));
                None
            }
        };
        let o = &parsed.options;
        ConnectionString {
            host_info,
            app_name: o.app_name.clone(),
            tls: tls_of(o),
            heartbeat_frequency: ms(o.heartbeat_frequency_ms),
            local_threshold: ms(o.local_threshold_ms),
            read_concern: o
                .read_concern_level
                .as_deref()
                .map(|l| ReadConcern { level: Some(ReadConcernLevel::from_name(l)) }),
            replica_set: o.replica_set.clone(),
            write_concern: write_concern_of(o),
            server_selection_timeout: ms(o.server_selection_timeout_ms),
            max_pool_size: o.max_pool_size,
            min_pool_size: o.min_pool_size,
            max_connecting: o.max_connecting,
            max_idle_time: ms(o.max_idle_time_ms),
            compressors: compressors_of(o),
            connect_timeout: ms(o.connect_timeout_ms),
            retry_reads: o.retry_reads,
            retry_writes: o.retry_writes,
            server_monitoring_mode: o.server_monitoring_mode,
            direct_connection: o.direct_connection,
            credential: parsed.credential.clone().map(Credential::from),
            default_database: parsed.default_database.clone(),
            load_balanced: o.load_balanced,
            socket_timeout: ms(o.socket_timeout_ms),
            read_preference,
            srv_max_hosts: o.srv_max_hosts,
            srv_service_name: o.srv_service_name.clone(),
            max_adaptive_retries: o.max_adaptive_retries,
            enable_overload_retargeting: o.enable_overload_retargeting,
            uuid_representation: o.uuid_representation.as_deref().and_then(uuid_representation),
            parsed,
        }
    }
}

impl ClientOptions {
    /// The options a connection string gives: its fields, and from what it was parsed the
    /// options that have no field there (`timeoutMS`, `waitQueueTimeoutMS`, the warnings).
    /// `mongodb+srv` is not resolved yet (see [`ClientOptions::resolve`]).
    ///
    /// Errors: a proxy (connections would go around it: SOCKS5 is not supported).
    pub(crate) fn from_connection_string(cs: ConnectionString) -> Result<ClientOptions> {
        let parsed = &cs.parsed;
        let ms = |v: Option<u64>| v.map(Duration::from_millis);
        let without_effect = uri_only_options_without_effect(&parsed.options)?;
        let (hosts, srv_host) = match cs.host_info {
            HostInfo::HostIdentifiers(hosts) => (hosts, None),
            HostInfo::DnsRecord(name) => (Vec::new(), Some(name)),
        };
        Ok(ClientOptions {
            hosts,
            credential: cs.credential,
            tls: cs.tls,
            compressors: cs.compressors,
            srv_service_name: cs.srv_service_name,
            srv_max_hosts: cs.srv_max_hosts,
            app_name: cs.app_name,
            connect_timeout: cs.connect_timeout,
            direct_connection: cs.direct_connection,
            heartbeat_freq: cs.heartbeat_frequency,
            load_balanced: cs.load_balanced,
            local_threshold: cs.local_threshold,
            max_idle_time: cs.max_idle_time,
            max_pool_size: cs.max_pool_size,
            min_pool_size: cs.min_pool_size,
            max_connecting: cs.max_connecting,
            read_concern: cs.read_concern,
            repl_set_name: cs.replica_set,
            retry_reads: cs.retry_reads,
            retry_writes: cs.retry_writes,
            server_monitoring_mode: cs.server_monitoring_mode,
            server_selection_timeout: cs.server_selection_timeout,
            selection_criteria: cs.read_preference.map(SelectionCriteria::ReadPreference),
            default_database: cs.default_database,
            write_concern: cs.write_concern,
            max_adaptive_retries: cs.max_adaptive_retries,
            enable_overload_retargeting: cs.enable_overload_retargeting,
            timeout: ms(parsed.options.timeout_ms),
            socket_timeout: cs.socket_timeout,
            wait_queue_timeout: ms(parsed.options.wait_queue_timeout_ms),
            uri_notes: UriNotes {
                warnings: parsed.warnings.clone(),
                without_effect,
                srv_host,
                auth_source_given: parsed.options.auth_source.is_some(),
            },
            ..ClientOptions::default()
        })
    }
}

/// The URI's write concern, if it sets any part of one.
fn write_concern_of(o: &UriOptions) -> Option<WriteConcern> {
    let wc = WriteConcern {
        w: o.w.clone(),
        journal: o.journal,
        w_timeout: o.w_timeout_ms.map(Duration::from_millis),
    };
    (!wc.is_server_default()).then_some(wc)
}

/// The read preference a connection string names, if it names one.
fn uri_read_preference(o: &UriOptions) -> Result<Option<ReadPreference>> {
    if o.read_preference.is_none() && o.read_preference_tags.is_none() && o.max_staleness_seconds.is_none() {
        return Ok(None);
    }
    ReadPreference::from_uri_options(o).map(Some).map_err(|e| Error::invalid_argument(e.to_string()))
}
