//! The official driver's typed fields of [`ClientOptions`] and the connection string's options:
//! filled from it when the options are built, written back over it when the client is.

use std::time::Duration;

use protocol::uri::{CredentialFields, UriOptions};
use selection::ReadPreference;

use super::super::concern::{ReadConcern, ReadConcernLevel, WriteConcern};
use super::client::ClientOptions;
use super::compressor::{compressors_of, fold_compressors};
use super::tls::{fold_tls, tls_of};
use crate::cluster::selection_criteria::SelectionCriteria;
use crate::error::{Error, Result};

impl ClientOptions {
    /// Fills the typed fields from the connection string.
    pub(crate) fn spread_uri(&mut self) {
        let o = &self.connection_string.options;
        let ms = |v: Option<u64>| v.map(Duration::from_millis);
        self.hosts = self.connection_string.hosts.clone();
        // What was set in code (callbacks, providers) survives: the string carries only values.
        let before = self.credential.take();
        self.credential = self
            .connection_string
            .credential
            .clone()
            .map(|c| super::credential::Credential::from(c).with_code_of(before.as_ref()));
        self.tls = tls_of(o);
        self.compressors = compressors_of(o);
        self.srv_service_name = o.srv_service_name.clone();
        self.srv_max_hosts = o.srv_max_hosts;
        self.app_name = o.app_name.clone();
        self.connect_timeout = ms(o.connect_timeout_ms);
        self.direct_connection = o.direct_connection;
        self.heartbeat_freq = ms(o.heartbeat_frequency_ms);
        self.load_balanced = o.load_balanced;
        self.local_threshold = ms(o.local_threshold_ms);
        self.max_idle_time = ms(o.max_idle_time_ms);
        self.max_pool_size = o.max_pool_size;
        self.min_pool_size = o.min_pool_size;
        self.max_connecting = o.max_connecting;
        self.read_concern = o
            .read_concern_level
            .as_deref()
            .map(|l| ReadConcern { level: Some(ReadConcernLevel::from_name(l)) });
        self.repl_set_name = o.replica_set.clone();
        self.retry_reads = o.retry_reads;
        self.retry_writes = o.retry_writes;
        self.server_monitoring_mode = o.server_monitoring_mode;
        self.server_selection_timeout = ms(o.server_selection_timeout_ms);
        self.selection_criteria = uri_read_preference(o);
        self.default_database = self.connection_string.default_database.clone();
        self.write_concern = write_concern_of(o);
        self.max_adaptive_retries = o.max_adaptive_retries;
        self.enable_overload_retargeting = o.enable_overload_retargeting;
    }

    /// Writes the typed fields over the connection string's options and checks the result
    /// (a combination a URI could not have is refused as it would be there).
    pub(crate) fn fold_into_uri(&mut self) -> Result<()> {
        let ms = |d: Option<Duration>, name: &str| -> Result<Option<u64>> {
            d.map(|d| {
                u64::try_from(d.as_millis())
                    .map_err(|_| Error::invalid_argument(format!("{name} is too long")))
            })
            .transpose()
        };
        let cs = &mut self.connection_string;
        if !self.hosts.is_empty() {
            cs.hosts = self.hosts.clone();
        } else if cs.hosts.is_empty() && cs.srv_host.is_none() {
            cs.hosts = vec![protocol::ServerAddress::default()];
        }
        let db = self.default_database.as_deref().or(cs.default_database.as_deref());
        cs.credential = self.credential.as_ref().map(|c| c.to_uri_credential().finish(db)).transpose()?;
        let o = &mut cs.options;
        fold_tls(self.tls.as_ref(), o);
        fold_compressors(self.compressors.as_deref(), o)?;
        o.srv_service_name = self.srv_service_name.clone();
        o.srv_max_hosts = self.srv_max_hosts;
        o.app_name = self.app_name.clone();
        o.connect_timeout_ms = ms(self.connect_timeout, "connect_timeout")?;
        o.direct_connection = self.direct_connection;
        o.heartbeat_frequency_ms = ms(self.heartbeat_freq, "heartbeat_freq")?;
        o.load_balanced = self.load_balanced;
        o.local_threshold_ms = ms(self.local_threshold, "local_threshold")?;
        o.max_idle_time_ms = ms(self.max_idle_time, "max_idle_time")?;
        o.max_pool_size = self.max_pool_size;
        o.min_pool_size = self.min_pool_size;
        o.max_connecting = self.max_connecting;
        o.read_concern_level =
            self.read_concern.as_ref().and_then(|r| r.level.as_ref()).map(|l| l.as_str().to_owned());
        o.replica_set = self.repl_set_name.clone();
        o.retry_reads = self.retry_reads;
        o.retry_writes = self.retry_writes;
        o.server_monitoring_mode = self.server_monitoring_mode;
        o.server_selection_timeout_ms = ms(self.server_selection_timeout, "server_selection_timeout")?;
        fold_read_preference(self.selection_criteria.as_ref(), o)?;
        let wc = self.write_concern.clone().unwrap_or_default();
        o.w = wc.w;
        o.journal = wc.journal;
        o.w_timeout_ms = ms(wc.w_timeout, "write_concern.w_timeout")?;
        o.max_adaptive_retries = self.max_adaptive_retries;
        o.enable_overload_retargeting = self.enable_overload_retargeting;
        self.connection_string.default_database = self.default_database.clone();
        self.connection_string.validate().map_err(|e| Error::invalid_argument(e.to_string()))
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
fn uri_read_preference(o: &UriOptions) -> Option<SelectionCriteria> {
    if o.read_preference.is_none() && o.read_preference_tags.is_none() && o.max_staleness_seconds.is_none() {
        return None;
    }
    ReadPreference::from_uri_options(o).ok().map(SelectionCriteria::ReadPreference)
}

/// Writes a read preference over the URI's options (a predicate leaves them empty: it lives in
/// the field). The spec's rules are checked as a URI's would be.
fn fold_read_preference(criteria: Option<&SelectionCriteria>, o: &mut UriOptions) -> Result<()> {
    let rp = criteria.and_then(SelectionCriteria::as_read_pref);
    rp.map(ReadPreference::validate).transpose().map_err(|e| Error::invalid_argument(e.to_string()))?;
    o.read_preference = rp.map(ReadPreference::mode);
    o.read_preference_tags = rp.filter(|rp| !rp.tag_sets().is_empty()).map(|rp| rp.tag_sets().to_vec());
    o.max_staleness_seconds = rp.and_then(ReadPreference::max_staleness_seconds).map(u64::from);
    Ok(())
}
