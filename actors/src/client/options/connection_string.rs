//! The official driver's [`ConnectionString`]: a parsed URI whose options are typed fields, to
//! read or edit before [`ClientOptions::parse`] takes it, and [`HostInfo`], its seeds.

use std::str::FromStr;
use std::time::Duration;

use bson::UuidRepresentation;
use protocol::uri::ServerMonitoringMode;

use super::credential::Credential;
use protocol::ServerAddress;
use selection::ReadPreference;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::super::concern::{ReadConcern, WriteConcern};
use super::compressor::Compressor;
use super::tls::Tls;
use crate::error::{Error, Result};

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
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConnectionString {
    /// The seeds: the hosts listed, or the SRV name to look them up under.
    pub host_info: HostInfo,
    /// `appName`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_name: Option<String>,
    /// `tls`, `ssl` and the `tls*` options.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<Tls>,
    /// `heartbeatFrequencyMS`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heartbeat_frequency: Option<Duration>,
    /// `localThresholdMS`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_threshold: Option<Duration>,
    /// `readConcernLevel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_concern: Option<ReadConcern>,
    /// `replicaSet`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica_set: Option<String>,
    /// `w`, `wTimeoutMS` and `journal`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_concern: Option<WriteConcern>,
    /// `serverSelectionTimeoutMS`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_selection_timeout: Option<Duration>,
    /// `maxPoolSize`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_pool_size: Option<u32>,
    /// `minPoolSize`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_pool_size: Option<u32>,
    /// `maxConnecting`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_connecting: Option<u32>,
    /// `maxIdleTimeMS`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_idle_time: Option<Duration>,
    /// `compressors` and `zlibCompressionLevel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compressors: Option<Vec<Compressor>>,
    /// `connectTimeoutMS`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_timeout: Option<Duration>,
    /// `retryReads`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_reads: Option<bool>,
    /// `retryWrites`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_writes: Option<bool>,
    /// `serverMonitoringMode`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_monitoring_mode: Option<ServerMonitoringMode>,
    /// `directConnection`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direct_connection: Option<bool>,
    /// The user information and `authSource`, `authMechanism`, `authMechanismProperties`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential: Option<Credential>,
    /// The database in the path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_database: Option<String>,
    /// `loadBalanced`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balanced: Option<bool>,
    /// `socketTimeoutMS` (this client honours it: a read or write on a connection that takes
    /// longer fails).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub socket_timeout: Option<Duration>,
    /// `readPreference`, `readPreferenceTags` and `maxStalenessSeconds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_preference: Option<ReadPreference>,
    /// `srvMaxHosts`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub srv_max_hosts: Option<u32>,
    /// `srvServiceName`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub srv_service_name: Option<String>,
    /// `maxAdaptiveRetries`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_adaptive_retries: Option<u32>,
    /// `enableOverloadRetargeting`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_overload_retargeting: Option<bool>,
    /// `uuidRepresentation`: how the application decodes legacy (subtype 3) UUIDs, with
    /// [`Binary::to_uuid_with_representation`](bson::Binary::to_uuid_with_representation);
    /// the client decodes nothing with it (as the official driver).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "uuid_representation_name")]
    pub uuid_representation: Option<UuidRepresentation>,
    /// What the fields came from: the options without a field here (`timeoutMS`,
    /// `waitQueueTimeoutMS`...) are kept from it.
    #[serde(skip)]
    pub(super) parsed: protocol::uri::ConnectionString,
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
}

/// The representation a URI value names (the parser accepts only these spellings).
pub(super) fn uuid_representation(name: &str) -> Option<UuidRepresentation> {
    Some(match name {
        "standard" => UuidRepresentation::Standard,
        "csharpLegacy" => UuidRepresentation::CSharpLegacy,
        "javaLegacy" => UuidRepresentation::JavaLegacy,
        "pythonLegacy" => UuidRepresentation::PythonLegacy,
        _ => return None,
    })
}

/// The URI value of a representation.
pub(super) fn uuid_representation_name_of(u: UuidRepresentation) -> &'static str {
    match u {
        UuidRepresentation::CSharpLegacy => "csharpLegacy",
        UuidRepresentation::JavaLegacy => "javaLegacy",
        UuidRepresentation::PythonLegacy => "pythonLegacy",
        _ => "standard",
    }
}

fn uuid_representation_name<S: Serializer>(
    u: &Option<UuidRepresentation>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    match u {
        Some(u) => s.serialize_str(uuid_representation_name_of(*u)),
        None => s.serialize_none(),
    }
}

impl ConnectionString {
    /// (Ours.) The connection string as a URI, edits included, with its secrets (the password,
    /// `proxyPassword`, `tlsCertificateKeyFilePassword`): [`ConnectionString::parse`] reads it
    /// back to the same value. Keep it out of logs; `Display` redacts them. An edit no URI can
    /// hold (one `ClientOptions::parse` refuses) is left out: the string then shows what was
    /// parsed.
    pub fn to_uri_with_secrets(&self) -> String {
        match self.to_parsed() {
            Ok(parsed) => parsed.to_uri_string(),
            Err(_) => self.parsed.to_uri_string(),
        }
    }
}

/// The connection string as a URI with its secrets redacted (`<redacted>`), so that
/// `info!("connecting to {cs}")` logs no password; [`ConnectionString::to_uri_with_secrets`]
/// writes them.
impl std::fmt::Display for ConnectionString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&protocol::uri::redact_uri(&self.to_uri_with_secrets()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_back_as_a_uri_with_its_edits() {
        let uri = "mongodb://al%40ice:p%26ss@db1:27018,db2/app?replicaSet=rs0&w=majority&appName=a%20b\
                   &readPreference=secondary&readPreferenceTags=dc:ny,rack:1&readPreferenceTags=\
                   &uuidRepresentation=javaLegacy&timeoutMS=300";
        let mut cs = ConnectionString::parse(uri).unwrap();
        assert_eq!(cs.uuid_representation, Some(UuidRepresentation::JavaLegacy));
        let again = ConnectionString::parse(cs.to_uri_with_secrets()).unwrap();
        assert_eq!(again, cs, "{cs}");
        assert!(cs.to_string().starts_with("mongodb://al%40ice:<redacted>@db1:27018"), "{cs}");
        cs.max_pool_size = Some(9);
        cs.uuid_representation = Some(UuidRepresentation::CSharpLegacy);
        let written = cs.to_uri_with_secrets();
        assert!(written.starts_with("mongodb://al%40ice:p%26ss@db1:27018,db2:27017/app?"), "{written}");
        let again = ConnectionString::parse(&written).unwrap();
        assert_eq!((again.max_pool_size, again.uuid_representation), (Some(9), cs.uuid_representation));
        assert_eq!(again.parsed().options.timeout_ms, Some(300));
        // An invalid value is ignored with a warning, as every option's.
        let cs = ConnectionString::parse("mongodb://h/?uuidRepresentation=nope").unwrap();
        assert_eq!((cs.uuid_representation, cs.parsed().warnings.len()), (None, 1));
        let srv = ConnectionString::parse("mongodb+srv://cluster0.example.com/?srvMaxHosts=2").unwrap();
        assert_eq!(srv.to_string(), "mongodb+srv://cluster0.example.com/?srvMaxHosts=2");
    }

    #[test]
    fn serializes_its_fields_by_their_names() {
        let cs =
            ConnectionString::parse("mongodb://h:1/?maxPoolSize=5&uuidRepresentation=pythonLegacy").unwrap();
        let v = serde_json::to_value(&cs).unwrap();
        assert_eq!(v["maxPoolSize"], 5);
        assert_eq!(v["uuidRepresentation"], "pythonLegacy");
        assert_eq!(v["hostInfo"]["HostIdentifiers"][0], "h:1");
        assert!(v.get("appName").is_none());
    }
}
