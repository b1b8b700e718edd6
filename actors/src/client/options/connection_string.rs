//! The official driver's [`ConnectionString`]: a parsed URI whose options are typed fields, to
//! read or edit before [`ClientOptions::parse`] takes it, and [`HostInfo`], its seeds.

use std::str::FromStr;
use std::time::Duration;

use protocol::uri::{Credential, ServerMonitoringMode};
use protocol::ServerAddress;
use selection::ReadPreference;
use serde::{Deserialize, Deserializer};

use super::super::concern::{ReadConcern, WriteConcern};
use super::client::ClientOptions;
use super::compressor::Compressor;
use super::tls::Tls;
use crate::selection_criteria::SelectionCriteria;
use crate::{Error, Result};

/// Where the client finds its seeds.
#[derive(Debug, PartialEq, Clone, serde::Serialize)]
#[non_exhaustive]
pub enum HostInfo {
    /// The hosts a `mongodb://` string lists.
    HostIdentifiers(Vec<ServerAddress>),
    /// The host name a `mongodb+srv://` string names, whose SRV records list the seeds.
    DnsRecord(String),
}

impl Default for HostInfo {
    fn default() -> Self {
        HostInfo::HostIdentifiers(Vec::new())
    }
}

/// A parsed and validated connection string. Each field is one option of the string (`None`:
/// not given); [`ClientOptions::parse`] accepts it as it accepts a string, with any field
/// edited in between winning over what the string said.
///
/// ```
/// use mongo_actors::options::{ConnectionString, HostInfo};
///
/// let mut cs = ConnectionString::parse("mongodb://db1:27018/app?maxPoolSize=5&appName=svc").unwrap();
/// assert_eq!(cs.max_pool_size, Some(5));
/// assert_eq!(cs.app_name.as_deref(), Some("svc"));
/// assert_eq!(cs.default_database.as_deref(), Some("app"));
/// assert!(matches!(&cs.host_info, HostInfo::HostIdentifiers(h) if h.len() == 1));
/// cs.max_pool_size = Some(50);
/// assert!(ConnectionString::parse("db1:27017").is_err());
/// // A value the spec says to ignore is ignored with a warning, kept for the caller to see.
/// let cs = ConnectionString::parse("mongodb://db1/?maxPoolSize=-1").unwrap();
/// assert_eq!((cs.max_pool_size, cs.parsed().warnings.len()), (None, 1));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ConnectionString {
    /// The seeds: the hosts listed, or the SRV name to look them up under.
    pub host_info: HostInfo,
    /// `appName`.
    pub app_name: Option<String>,
    /// `tls`, `ssl` and the `tls*` options.
    pub tls: Option<Tls>,
    /// `heartbeatFrequencyMS`.
    pub heartbeat_frequency: Option<Duration>,
    /// `localThresholdMS`.
    pub local_threshold: Option<Duration>,
    /// `readConcernLevel`.
    pub read_concern: Option<ReadConcern>,
    /// `replicaSet`.
    pub replica_set: Option<String>,
    /// `w`, `wTimeoutMS` and `journal`.
    pub write_concern: Option<WriteConcern>,
    /// `serverSelectionTimeoutMS`.
    pub server_selection_timeout: Option<Duration>,
    /// `maxPoolSize`.
    pub max_pool_size: Option<u32>,
    /// `minPoolSize`.
    pub min_pool_size: Option<u32>,
    /// `maxConnecting`.
    pub max_connecting: Option<u32>,
    /// `maxIdleTimeMS`.
    pub max_idle_time: Option<Duration>,
    /// `compressors` and `zlibCompressionLevel`.
    pub compressors: Option<Vec<Compressor>>,
    /// `connectTimeoutMS`.
    pub connect_timeout: Option<Duration>,
    /// `retryReads`.
    pub retry_reads: Option<bool>,
    /// `retryWrites`.
    pub retry_writes: Option<bool>,
    /// `serverMonitoringMode`.
    pub server_monitoring_mode: Option<ServerMonitoringMode>,
    /// `directConnection`.
    pub direct_connection: Option<bool>,
    /// The user information and `authSource`, `authMechanism`, `authMechanismProperties`.
    pub credential: Option<Credential>,
    /// The database in the path.
    pub default_database: Option<String>,
    /// `loadBalanced`.
    pub load_balanced: Option<bool>,
    /// `socketTimeoutMS` (this client honours it: a read or write on a connection that takes
    /// longer fails).
    pub socket_timeout: Option<Duration>,
    /// `readPreference`, `readPreferenceTags` and `maxStalenessSeconds`.
    pub read_preference: Option<ReadPreference>,
    /// `srvMaxHosts`.
    pub srv_max_hosts: Option<u32>,
    /// `srvServiceName`.
    pub srv_service_name: Option<String>,
    /// `maxAdaptiveRetries`.
    pub max_adaptive_retries: Option<u32>,
    /// `enableOverloadRetargeting`.
    pub enable_overload_retargeting: Option<bool>,
    /// What the fields came from: the options without a field here (`timeoutMS`,
    /// `waitQueueTimeoutMS`...) are kept from it.
    parsed: protocol::uri::ConnectionString,
}

impl ConnectionString {
    /// Parses and validates a connection string. As the connection-string spec asks, an
    /// unknown option or an invalid value is ignored with a warning (logged, and kept in
    /// [`parsed().warnings`](Self::parsed)); a malformed string or an invalid combination is
    /// an error.
    ///
    /// Errors: [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument) for a
    /// malformed string or an invalid option value or combination.
    pub fn parse(s: impl AsRef<str>) -> Result<Self> {
        let parsed = protocol::uri::ConnectionString::parse(s.as_ref())
            .map_err(|e| Error::invalid_argument(e.to_string()))?;
        Ok(Self::from(parsed))
    }

    /// `waitQueueTimeoutMS`.
    pub fn wait_queue_timeout(&self) -> Option<Duration> {
        self.parsed.options.wait_queue_timeout_ms.map(Duration::from_millis)
    }

    /// `tlsInsecure`.
    pub fn tls_insecure(&self) -> Option<bool> {
        self.parsed.options.tls_insecure
    }

    /// (Ours.) The spec-level parse these fields came from (unedited).
    pub fn parsed(&self) -> &protocol::uri::ConnectionString {
        &self.parsed
    }

    /// The connection string with the fields written over what it was parsed from, checked
    /// as a URI would be.
    pub(crate) fn into_parsed(self) -> Result<protocol::uri::ConnectionString> {
        let mut parsed = self.parsed;
        match self.host_info {
            HostInfo::HostIdentifiers(hosts) => {
                parsed.hosts = hosts;
                parsed.srv_host = None;
            }
            HostInfo::DnsRecord(name) => {
                parsed.hosts.clear();
                parsed.srv_host = Some(name);
            }
        }
        parsed.options.socket_timeout_ms = self
            .socket_timeout
            .map(|d| u64::try_from(d.as_millis()))
            .transpose()
            .map_err(|_| Error::invalid_argument("socket_timeout is too long"))?;
        let mut o = ClientOptions { connection_string: parsed, ..ClientOptions::default() };
        o.spread_uri();
        o.app_name = self.app_name;
        o.tls = self.tls;
        o.heartbeat_freq = self.heartbeat_frequency;
        o.local_threshold = self.local_threshold;
        o.read_concern = self.read_concern;
        o.repl_set_name = self.replica_set;
        o.write_concern = self.write_concern;
        o.server_selection_timeout = self.server_selection_timeout;
        o.max_pool_size = self.max_pool_size;
        o.min_pool_size = self.min_pool_size;
        o.max_connecting = self.max_connecting;
        o.max_idle_time = self.max_idle_time;
        o.compressors = self.compressors;
        o.connect_timeout = self.connect_timeout;
        o.retry_reads = self.retry_reads;
        o.retry_writes = self.retry_writes;
        o.server_monitoring_mode = self.server_monitoring_mode;
        o.direct_connection = self.direct_connection;
        o.credential = self.credential;
        o.default_database = self.default_database;
        o.load_balanced = self.load_balanced;
        o.selection_criteria = self.read_preference.map(SelectionCriteria::ReadPreference);
        o.srv_max_hosts = self.srv_max_hosts;
        o.srv_service_name = self.srv_service_name;
        o.max_adaptive_retries = self.max_adaptive_retries;
        o.enable_overload_retargeting = self.enable_overload_retargeting;
        o.fold_into_uri()?;
        Ok(o.connection_string)
    }
}

/// (Ours.) The typed view of a spec-level parse.
impl From<protocol::uri::ConnectionString> for ConnectionString {
    fn from(parsed: protocol::uri::ConnectionString) -> Self {
        let mut o = ClientOptions { connection_string: parsed, ..ClientOptions::default() };
        o.spread_uri();
        let parsed = o.connection_string;
        let host_info = match &parsed.srv_host {
            Some(name) => HostInfo::DnsRecord(name.clone()),
            None => HostInfo::HostIdentifiers(parsed.hosts.clone()),
        };
        ConnectionString {
            host_info,
            app_name: o.app_name,
            tls: o.tls,
            heartbeat_frequency: o.heartbeat_freq,
            local_threshold: o.local_threshold,
            read_concern: o.read_concern,
            replica_set: o.repl_set_name,
            write_concern: o.write_concern,
            server_selection_timeout: o.server_selection_timeout,
            max_pool_size: o.max_pool_size,
            min_pool_size: o.min_pool_size,
            max_connecting: o.max_connecting,
            max_idle_time: o.max_idle_time,
            compressors: o.compressors,
            connect_timeout: o.connect_timeout,
            retry_reads: o.retry_reads,
            retry_writes: o.retry_writes,
            server_monitoring_mode: o.server_monitoring_mode,
            direct_connection: o.direct_connection,
            credential: o.credential,
            default_database: o.default_database,
            load_balanced: o.load_balanced,
            socket_timeout: parsed.options.socket_timeout_ms.map(Duration::from_millis),
            read_preference: o.selection_criteria.as_ref().and_then(SelectionCriteria::as_read_pref).cloned(),
            srv_max_hosts: o.srv_max_hosts,
            srv_service_name: o.srv_service_name,
            max_adaptive_retries: o.max_adaptive_retries,
            enable_overload_retargeting: o.enable_overload_retargeting,
            parsed,
        }
    }
}

impl TryFrom<&str> for ConnectionString {
    type Error = Error;

    fn try_from(value: &str) -> Result<Self> {
        Self::parse(value)
    }
}

impl TryFrom<&String> for ConnectionString {
    type Error = Error;

    fn try_from(value: &String) -> Result<Self> {
        Self::parse(value)
    }
}

impl TryFrom<String> for ConnectionString {
    type Error = Error;

    fn try_from(value: String) -> Result<Self> {
        Self::parse(value)
    }
}

impl FromStr for ConnectionString {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

/// From a string, parsed and validated (a configuration file's `uri`, say).
impl<'de> Deserialize<'de> for ConnectionString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}
