//! The typed options of a connection string (uri-options spec) and their parser.
//!
//! Parsing follows the connection-string spec: keys are case-insensitive; an invalid value
//! (wrong type, out of range, empty) is ignored with a warning; unknown keys are ignored with
//! a warning; a repeated non-list key warns and the last value wins. Only combinations the
//! specs call errors (TLS conflicts, proxy rules, ...) fail the parse; those checks live in
//! [`super::ConnectionString::validate`] and [`OptionParser::finish`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::credential::{AuthMechanism, MechanismProperties, REDACTED};
use super::read_preference::{parse_tag_set, ReadPreferenceMode, TagSet};
use crate::error::{Error, Result};

/// A secret string (a password). `Debug` prints `<redacted>`; serde and [`Secret::expose`]
/// give the real value.
#[derive(Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

/// Serialized as `"<redacted>"`: a configuration dump or a logged options value must not
/// carry the secret.
impl Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(REDACTED)
    }
}

impl Secret {
    /// Wraps a secret.
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }

    /// The secret itself.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A wire-protocol compressor (`compressors` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compressor {
    /// Snappy.
    Snappy,
    /// zlib (level from `zlibCompressionLevel`).
    Zlib,
    /// Zstandard.
    Zstd,
}

impl Compressor {
    /// The name used in connection strings and the handshake.
    pub fn as_str(self) -> &'static str {
        match self {
            Compressor::Snappy => "snappy",
            Compressor::Zlib => "zlib",
            Compressor::Zstd => "zstd",
        }
    }

    /// Parses a compressor name (ASCII case-insensitive).
    pub fn parse(s: &str) -> Option<Self> {
        [Compressor::Snappy, Compressor::Zlib, Compressor::Zstd]
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(s))
    }
}

/// `serverMonitoringMode` (server-monitoring spec).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerMonitoringMode {
    /// Use the streaming protocol when the server supports it.
    Stream,
    /// Always poll.
    Poll,
    /// Poll on FaaS platforms, stream elsewhere (the default).
    #[default]
    Auto,
}

impl ServerMonitoringMode {
    /// The connection-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerMonitoringMode::Stream => "stream",
            ServerMonitoringMode::Poll => "poll",
            ServerMonitoringMode::Auto => "auto",
        }
    }

    /// Parses `stream`, `poll` or `auto` (ASCII case-insensitive).
    pub fn parse(s: &str) -> Option<Self> {
        [ServerMonitoringMode::Stream, ServerMonitoringMode::Poll, ServerMonitoringMode::Auto]
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(s))
    }
}

/// The write concern `w` value: a number of nodes, `majority`, or a custom tag set name.
///
/// Serialises as a number or a string, as the server expects.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Acknowledgment {
    /// Acknowledgment by this many nodes (0 = unacknowledged).
    Nodes(u32),
    /// `majority`.
    Majority,
    /// A custom write concern name defined in the replica set configuration.
    Custom(String),
}

impl Acknowledgment {
    /// Parses a `w` value: a non-negative integer, `majority`, or any other string.
    /// `None` for a negative integer.
    pub fn parse(s: &str) -> Option<Self> {
        if let Ok(n) = s.parse::<i64>() {
            return u32::try_from(n).ok().filter(|n| i32::try_from(*n).is_ok()).map(Acknowledgment::Nodes);
        }
        Some(if s == "majority" { Acknowledgment::Majority } else { Acknowledgment::Custom(s.to_string()) })
    }
}

/// `w: n`.
impl From<u32> for Acknowledgment {
    fn from(n: u32) -> Self {
        Acknowledgment::Nodes(n)
    }
}

/// `"majority"`, or the name of a custom write concern.
impl From<&str> for Acknowledgment {
    fn from(s: &str) -> Self {
        if s == "majority" {
            Acknowledgment::Majority
        } else {
            Acknowledgment::Custom(s.to_string())
        }
    }
}

/// `"majority"`, or the name of a custom write concern.
impl From<String> for Acknowledgment {
    fn from(s: String) -> Self {
        if s == "majority" {
            Acknowledgment::Majority
        } else {
            Acknowledgment::Custom(s)
        }
    }
}

impl Serialize for Acknowledgment {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Acknowledgment::Nodes(n) => s.serialize_u32(*n),
            Acknowledgment::Majority => s.serialize_str("majority"),
            Acknowledgment::Custom(c) => s.serialize_str(c),
        }
    }
}

impl<'de> Deserialize<'de> for Acknowledgment {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u32),
            S(String),
        }
        Ok(match Raw::deserialize(d)? {
            Raw::N(n) => Acknowledgment::Nodes(n),
            Raw::S(s) if s == "majority" => Acknowledgment::Majority,
            Raw::S(s) => Acknowledgment::Custom(s),
        })
    }
}

/// Every option of the uri-options spec, typed. `None` means "not given in the string".
///
/// Durations are raw milliseconds (or seconds where the name says so) as the spec defines
/// them; `0` keeps the spec's meaning for each option (for example "no timeout").
/// Passwords are [`Secret`]s so that `Debug` does not print them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UriOptions {
    /// `appname`: sent in the handshake; at most 128 bytes.
    pub app_name: Option<String>,
    /// `authMechanism`.
    pub auth_mechanism: Option<AuthMechanism>,
    /// `authMechanismProperties`: `key:value` pairs.
    pub auth_mechanism_properties: Option<MechanismProperties>,
    /// `authSource`.
    pub auth_source: Option<String>,
    /// `compressors`, in preference order; unknown names are dropped with a warning.
    pub compressors: Option<Vec<Compressor>>,
    /// `connectTimeoutMS`; 0 means no timeout.
    pub connect_timeout_ms: Option<u64>,
    /// `directConnection`.
    pub direct_connection: Option<bool>,
    /// `enableOverloadRetargeting`.
    pub enable_overload_retargeting: Option<bool>,
    /// `heartbeatFrequencyMS`; at least 500.
    pub heartbeat_frequency_ms: Option<u64>,
    /// `journal`.
    pub journal: Option<bool>,
    /// `loadBalanced`.
    pub load_balanced: Option<bool>,
    /// `localThresholdMS`.
    pub local_threshold_ms: Option<u64>,
    /// `maxAdaptiveRetries`.
    pub max_adaptive_retries: Option<u32>,
    /// `maxConnecting`; positive.
    pub max_connecting: Option<u32>,
    /// `maxIdleTimeMS`; 0 means no limit.
    pub max_idle_time_ms: Option<u64>,
    /// `maxPoolSize`; 0 means no maximum.
    pub max_pool_size: Option<u32>,
    /// `maxStalenessSeconds`; `-1` in the string ("no maximum") is stored as `None`.
    /// Values below 90 are kept: the server-selection spec rejects them at selection time.
    pub max_staleness_seconds: Option<u64>,
    /// `minPoolSize`.
    pub min_pool_size: Option<u32>,
    /// `proxyHost`: a SOCKS5 proxy.
    pub proxy_host: Option<String>,
    /// `proxyPort` (default 1080 when a proxy host is set).
    pub proxy_port: Option<u16>,
    /// `proxyUsername`.
    pub proxy_username: Option<String>,
    /// `proxyPassword`.
    pub proxy_password: Option<Secret>,
    /// `readConcernLevel`: any string, for forward compatibility.
    pub read_concern_level: Option<String>,
    /// `readPreference`.
    pub read_preference: Option<ReadPreferenceMode>,
    /// `readPreferenceTags`, one tag set per occurrence, in order.
    pub read_preference_tags: Option<Vec<TagSet>>,
    /// `replicaSet`.
    pub replica_set: Option<String>,
    /// `retryReads`.
    pub retry_reads: Option<bool>,
    /// `retryWrites`.
    pub retry_writes: Option<bool>,
    /// `serverMonitoringMode`.
    pub server_monitoring_mode: Option<ServerMonitoringMode>,
    /// `serverSelectionTimeoutMS`; positive.
    pub server_selection_timeout_ms: Option<u64>,
    /// `serverSelectionTryOnce`: parsed and validated like every option in the uri-options
    /// table, but never acted on. The server-selection spec defines "try once" mode only for
    /// single-threaded drivers; this driver is multi-threaded (asynchronous), so selection
    /// always loops until `serverSelectionTimeoutMS` whatever this says.
    pub server_selection_try_once: Option<bool>,
    /// `socketTimeoutMS`; 0 means no timeout.
    pub socket_timeout_ms: Option<u64>,
    /// `srvMaxHosts`; 0 means no maximum. Only with `mongodb+srv`.
    pub srv_max_hosts: Option<u32>,
    /// `srvServiceName` (default `mongodb`). Only with `mongodb+srv`.
    pub srv_service_name: Option<String>,
    /// `timeoutMS` (client-side operations timeout); 0 means no timeout.
    pub timeout_ms: Option<u64>,
    /// `tls` (or its alias `ssl`). `None` means not given: TLS is then on for `mongodb+srv`
    /// and off otherwise (see [`super::ConnectionString::tls_enabled`]).
    pub tls: Option<bool>,
    /// `tlsAllowInvalidCertificates`.
    pub tls_allow_invalid_certificates: Option<bool>,
    /// `tlsAllowInvalidHostnames`.
    pub tls_allow_invalid_hostnames: Option<bool>,
    /// `tlsCAFile`.
    pub tls_ca_file: Option<String>,
    /// `tlsCertificateKeyFile`.
    pub tls_certificate_key_file: Option<String>,
    /// `tlsCertificateKeyFilePassword`.
    pub tls_certificate_key_file_password: Option<Secret>,
    /// `tlsDisableCertificateRevocationCheck`.
    pub tls_disable_certificate_revocation_check: Option<bool>,
    /// `tlsDisableOCSPEndpointCheck`.
    pub tls_disable_ocsp_endpoint_check: Option<bool>,
    /// `tlsInsecure`.
    pub tls_insecure: Option<bool>,
    /// `uuidRepresentation` (read as the official Rust driver reads it, and `standard`):
    /// `standard`, `csharpLegacy`, `javaLegacy` or `pythonLegacy`, in that spelling. For the application's own decoding of
    /// legacy (subtype 3) UUIDs; the client itself decodes nothing with it.
    pub uuid_representation: Option<String>,
    /// `w`.
    pub w: Option<Acknowledgment>,
    /// `wTimeoutMS` (deprecated alias `wtimeout`); 0 means no timeout.
    pub w_timeout_ms: Option<u64>,
    /// `waitQueueTimeoutMS`; positive.
    pub wait_queue_timeout_ms: Option<u64>,
    /// `zlibCompressionLevel`, -1 to 9.
    pub zlib_compression_level: Option<i32>,
}

impl UriOptions {
    /// Every option name of the uri-options table (plus CSOT's `timeoutMS`), spelled as the
    /// spec spells it: the names of `OPTIONS`, the table `apply` reads values with. Each has
    /// a field here (`ssl` shares `tls`); keys are matched ASCII case-insensitively.
    pub const NAMES: [&'static str; OPTIONS.len()] = names();

    /// These options with `pairs` (an option's name, its value as a URI would carry it,
    /// decoded) set over them: each value read as the URI parser reads it, then the rules
    /// between options the parser checks (conflicting TLS options, pool sizes, ...) among
    /// the pairs. Returns the options and the parser's warnings (values it would ignore).
    /// A configuration file's and the environment's overrides take this path.
    pub fn with_overrides(&self, pairs: &[(String, String)]) -> Result<(UriOptions, Vec<String>)> {
        let mut parser = OptionParser { options: self.clone(), ..OptionParser::default() };
        for (name, value) in pairs {
            parser.apply(name, value)?;
        }
        parser.finish()
    }
}

const fn names<const N: usize>() -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = OPTIONS[i].name;
        i += 1;
    }
    out
}

/// How one option's value is read, and where it goes.
enum Kind {
    /// `true` or `false` (case-insensitive).
    Bool(fn(&mut UriOptions, bool)),
    /// An integer in `min..=max` (the field's own type holds every value of the range).
    Int { min: i64, max: i64, set: fn(&mut UriOptions, i64) },
    /// Any string.
    Text(fn(&mut UriOptions, &str)),
    /// Read by a function of its own (lists, enumerations, checked strings).
    Custom(fn(&mut OptionParser, &str, &str) -> Result<()>),
}

/// One URI option: its name as the spec spells it, and how it is read.
struct OptionSpec {
    name: &'static str,
    kind: Kind,
}

/// The largest value a 32-bit integer option accepts.
const I32_MAX: i64 = i32::MAX as i64;

/// A field set from an integer (the range checked first makes the conversion exact).
macro_rules! int {
    ($field:ident, $min:expr, $max:expr) => {
        Kind::Int { min: $min, max: $max, set: |o, n| o.$field = n.try_into().ok() }
    };
}

/// A boolean field.
macro_rules! boolean {
    ($field:ident) => {
        Kind::Bool(|o, b| o.$field = Some(b))
    };
}

/// A string field.
macro_rules! text {
    ($field:ident) => {
        Kind::Text(|o, v| o.$field = Some(v.into()))
    };
}

/// Every option the client reads: the uri-options table, in its order.
const OPTIONS: [OptionSpec; 50] = [
    OptionSpec { name: "appname", kind: Kind::Custom(OptionParser::app_name) },
    OptionSpec { name: "authMechanism", kind: Kind::Custom(OptionParser::auth_mechanism) },
    OptionSpec {
        name: "authMechanismProperties",
        kind: Kind::Custom(OptionParser::auth_mechanism_properties),
    },
    OptionSpec { name: "authSource", kind: text!(auth_source) },
    OptionSpec { name: "compressors", kind: Kind::Custom(OptionParser::compressors) },
    OptionSpec { name: "connectTimeoutMS", kind: int!(connect_timeout_ms, 0, I32_MAX) },
    OptionSpec { name: "directConnection", kind: boolean!(direct_connection) },
    OptionSpec { name: "enableOverloadRetargeting", kind: boolean!(enable_overload_retargeting) },
    OptionSpec { name: "heartbeatFrequencyMS", kind: int!(heartbeat_frequency_ms, 500, I32_MAX) },
    OptionSpec { name: "journal", kind: boolean!(journal) },
    OptionSpec { name: "loadBalanced", kind: boolean!(load_balanced) },
    OptionSpec { name: "localThresholdMS", kind: int!(local_threshold_ms, 0, I32_MAX) },
    OptionSpec { name: "maxAdaptiveRetries", kind: int!(max_adaptive_retries, 0, I32_MAX) },
    OptionSpec { name: "maxConnecting", kind: int!(max_connecting, 1, I32_MAX) },
    OptionSpec { name: "maxIdleTimeMS", kind: int!(max_idle_time_ms, 0, I32_MAX) },
    OptionSpec { name: "maxPoolSize", kind: int!(max_pool_size, 0, I32_MAX) },
    OptionSpec { name: "maxStalenessSeconds", kind: Kind::Custom(OptionParser::max_staleness) },
    OptionSpec { name: "minPoolSize", kind: int!(min_pool_size, 0, I32_MAX) },
    OptionSpec { name: "proxyHost", kind: text!(proxy_host) },
    OptionSpec { name: "proxyPort", kind: int!(proxy_port, 0, u16::MAX as i64) },
    OptionSpec { name: "proxyUsername", kind: text!(proxy_username) },
    OptionSpec { name: "proxyPassword", kind: Kind::Text(|o, v| o.proxy_password = Some(Secret::new(v))) },
    OptionSpec { name: "readConcernLevel", kind: text!(read_concern_level) },
    OptionSpec { name: "readPreference", kind: Kind::Custom(OptionParser::read_preference) },
    OptionSpec { name: "readPreferenceTags", kind: Kind::Custom(OptionParser::read_preference_tags) },
    OptionSpec { name: "replicaSet", kind: text!(replica_set) },
    OptionSpec { name: "retryReads", kind: boolean!(retry_reads) },
    OptionSpec { name: "retryWrites", kind: boolean!(retry_writes) },
    OptionSpec { name: "serverMonitoringMode", kind: Kind::Custom(OptionParser::server_monitoring_mode) },
    OptionSpec { name: "serverSelectionTimeoutMS", kind: int!(server_selection_timeout_ms, 1, I32_MAX) },
    // Stored for completeness only: see `UriOptions::server_selection_try_once`.
    OptionSpec { name: "serverSelectionTryOnce", kind: boolean!(server_selection_try_once) },
    OptionSpec { name: "socketTimeoutMS", kind: int!(socket_timeout_ms, 0, I32_MAX) },
    OptionSpec { name: "srvMaxHosts", kind: int!(srv_max_hosts, 0, I32_MAX) },
    OptionSpec { name: "srvServiceName", kind: Kind::Custom(OptionParser::srv_service_name) },
    OptionSpec { name: "ssl", kind: Kind::Custom(OptionParser::tls) },
    OptionSpec { name: "timeoutMS", kind: int!(timeout_ms, 0, i64::MAX) },
    OptionSpec { name: "tls", kind: Kind::Custom(OptionParser::tls) },
    OptionSpec { name: "tlsAllowInvalidCertificates", kind: boolean!(tls_allow_invalid_certificates) },
    OptionSpec { name: "tlsAllowInvalidHostnames", kind: boolean!(tls_allow_invalid_hostnames) },
    OptionSpec { name: "tlsCAFile", kind: text!(tls_ca_file) },
    OptionSpec { name: "tlsCertificateKeyFile", kind: text!(tls_certificate_key_file) },
    OptionSpec {
        name: "tlsCertificateKeyFilePassword",
        kind: Kind::Text(|o, v| o.tls_certificate_key_file_password = Some(Secret::new(v))),
    },
    OptionSpec {
        name: "tlsDisableCertificateRevocationCheck",
        kind: boolean!(tls_disable_certificate_revocation_check),
    },
    OptionSpec { name: "tlsDisableOCSPEndpointCheck", kind: boolean!(tls_disable_ocsp_endpoint_check) },
    OptionSpec { name: "tlsInsecure", kind: boolean!(tls_insecure) },
    OptionSpec { name: "uuidRepresentation", kind: Kind::Custom(OptionParser::uuid_representation) },
    OptionSpec { name: "w", kind: Kind::Custom(OptionParser::w) },
    OptionSpec { name: "waitQueueTimeoutMS", kind: int!(wait_queue_timeout_ms, 1, I32_MAX) },
    OptionSpec { name: "wTimeoutMS", kind: int!(w_timeout_ms, 0, i64::MAX) },
    OptionSpec { name: "zlibCompressionLevel", kind: int!(zlib_compression_level, -1, 9) },
];

/// The deprecated spelling of `wTimeoutMS`, read only when `wTimeoutMS` is absent.
const DEPRECATED_WTIMEOUT: &str = "wtimeout";

/// Collects options from key/value pairs: typed values, warnings, and which keys appeared
/// (some rules depend on presence, not value).
#[derive(Debug, Default)]
pub(crate) struct OptionParser {
    pub(crate) options: UriOptions,
    pub(crate) warnings: Vec<String>,
    /// Lower-cased keys seen, with how often.
    seen: BTreeMap<String, usize>,
    /// Every `tls`/`ssl` value given, to detect a mismatch.
    tls_values: BTreeSet<String>,
    /// A `wtimeout` value waiting to see whether `wTimeoutMS` also appears.
    deprecated_wtimeout: Option<String>,
}

impl OptionParser {
    fn warn(&mut self, msg: String) {
        self.warnings.push(msg);
    }

    fn invalid(&mut self, key: &str, value: &str, expected: &str) {
        // authMechanismProperties may carry a secret (AWS_SESSION_TOKEN): never echo it.
        let shown = if key.eq_ignore_ascii_case("authMechanismProperties") { "<redacted>" } else { value };
        self.warn(format!("unsupported value for '{key}': '{shown}' ({expected}); option ignored"));
    }

    fn bool(&mut self, key: &str, v: &str) -> Option<bool> {
        if v.eq_ignore_ascii_case("true") {
            Some(true)
        } else if v.eq_ignore_ascii_case("false") {
            Some(false)
        } else {
            self.invalid(key, v, "expected \"true\" or \"false\"");
            None
        }
    }

    /// An integer in `min..=max`, or `None` with a warning.
    fn int(&mut self, key: &str, v: &str, min: i64, max: i64) -> Option<i64> {
        match v.parse::<i64>() {
            Ok(n) if (min..=max).contains(&n) => Some(n),
            Ok(_) => {
                self.invalid(key, v, &format!("expected an integer from {min} to {max}"));
                None
            }
            Err(_) => {
                self.invalid(key, v, "expected an integer");
                None
            }
        }
    }

    fn uint<T: TryFrom<i64>>(&mut self, key: &str, v: &str, min: i64, max: i64) -> Option<T> {
        self.int(key, v, min, max).and_then(|n| T::try_from(n).ok())
    }

    /// Applies one `key=value` pair; `key` as written, `value` percent-decoded. Errors for an
    /// unknown `authMechanism` and for a repeated proxy option (the SOCKS5 spec forbids it).
    pub(crate) fn apply(&mut self, key: &str, value: &str) -> Result<()> {
        let lower = key.to_ascii_lowercase();
        let count = {
            let c = self.seen.entry(lower.clone()).or_insert(0);
            *c += 1;
            *c
        };
        if count > 1 && lower.starts_with("proxy") {
            return Err(Error::InvalidOption { name: key.into(), message: "repeated proxy option".into() });
        }
        // Repetition is only meaningful for lists; tls/ssl repetitions are compared instead.
        if count == 2 && !matches!(lower.as_str(), "readpreferencetags" | "tls" | "ssl") {
            self.warn(format!("option '{key}' given more than once; the last value is used"));
        }
        if lower == DEPRECATED_WTIMEOUT {
            if value.is_empty() {
                self.warn(format!("empty value for '{key}' ignored"));
            } else {
                self.warn("deprecated option 'wtimeout': use 'wTimeoutMS'".into());
                self.deprecated_wtimeout = Some(value.to_string());
            }
            return Ok(());
        }
        let Some(spec) = OPTIONS.iter().find(|o| o.name.eq_ignore_ascii_case(key)) else {
            self.warn(format!("unsupported option '{key}' ignored"));
            return Ok(());
        };
        match &spec.kind {
            // Empty integers and booleans are ignored (connection-string spec, "Values").
            Kind::Bool(_) | Kind::Int { .. } if value.is_empty() => {
                self.warn(format!("empty value for '{key}' ignored"));
            }
            Kind::Bool(set) => {
                if let Some(b) = self.bool(key, value) {
                    set(&mut self.options, b);
                }
            }
            Kind::Int { min, max, set } => {
                if let Some(n) = self.int(key, value, *min, *max) {
                    set(&mut self.options, n);
                }
            }
            Kind::Text(set) => set(&mut self.options, value),
            Kind::Custom(read) => read(self, key, value)?,
        }
        Ok(())
    }

    fn app_name(&mut self, key: &str, value: &str) -> Result<()> {
        if value.len() > 128 {
            self.invalid(key, value, "at most 128 bytes");
        } else {
            self.options.app_name = Some(value.to_string());
        }
        Ok(())
    }

    fn auth_mechanism(&mut self, key: &str, value: &str) -> Result<()> {
        match AuthMechanism::parse(value) {
            Some(m) => self.options.auth_mechanism = Some(m),
            // An unknown mechanism would silently change how we authenticate: refuse it.
            None => {
                return Err(Error::InvalidOption {
                    name: key.into(),
                    message: format!("unsupported authentication mechanism '{value}'"),
                })
            }
        }
        Ok(())
    }

    fn auth_mechanism_properties(&mut self, key: &str, value: &str) -> Result<()> {
        match parse_pairs(value) {
            Some(p) => self.options.auth_mechanism_properties = Some(p),
            None => self.invalid(
                key,
                value,
                "expected comma-separated key:value pairs; values must not contain commas",
            ),
        }
        Ok(())
    }

    fn compressors(&mut self, _key: &str, value: &str) -> Result<()> {
        let mut list = Vec::new();
        for name in value.split(',') {
            match Compressor::parse(name) {
                Some(c) if !list.contains(&c) => list.push(c),
                Some(_) => {}
                None => self.warn(format!("unsupported compressor '{name}' ignored")),
            }
        }
        self.options.compressors = (!list.is_empty()).then_some(list);
        Ok(())
    }

    fn max_staleness(&mut self, key: &str, value: &str) -> Result<()> {
        if value.is_empty() {
            self.warn(format!("empty value for '{key}' ignored"));
        } else if value == "-1" {
            // -1: no maximum.
            self.options.max_staleness_seconds = None;
        } else if let Some(v) = self.uint(key, value, 1, I32_MAX) {
            self.options.max_staleness_seconds = Some(v);
        }
        Ok(())
    }

    fn read_preference(&mut self, key: &str, value: &str) -> Result<()> {
        match ReadPreferenceMode::parse(value) {
            Some(m) => self.options.read_preference = Some(m),
            None => self.invalid(key, value, "expected a read preference mode"),
        }
        Ok(())
    }

    fn read_preference_tags(&mut self, key: &str, value: &str) -> Result<()> {
        match parse_tag_set(value) {
            Some(t) => self.options.read_preference_tags.get_or_insert_with(Vec::new).push(t),
            None => self.invalid(key, value, "expected comma-separated key:value pairs"),
        }
        Ok(())
    }

    fn server_monitoring_mode(&mut self, key: &str, value: &str) -> Result<()> {
        match ServerMonitoringMode::parse(value) {
            Some(m) => self.options.server_monitoring_mode = Some(m),
            None => self.invalid(key, value, "expected stream, poll or auto"),
        }
        Ok(())
    }

    fn uuid_representation(&mut self, key: &str, value: &str) -> Result<()> {
        let known = ["standard", "csharpLegacy", "javaLegacy", "pythonLegacy"];
        match known.iter().find(|k| k.eq_ignore_ascii_case(value)) {
            Some(k) => self.options.uuid_representation = Some(k.to_string()),
            None => self.invalid(key, value, "expected standard, csharpLegacy, javaLegacy or pythonLegacy"),
        }
        Ok(())
    }

    fn srv_service_name(&mut self, key: &str, value: &str) -> Result<()> {
        if is_valid_service_name(value) {
            self.options.srv_service_name = Some(value.to_string());
        } else {
            self.invalid(key, value, "expected an RFC 6335 service name");
        }
        Ok(())
    }

    /// `tls` and its alias `ssl`: every value is kept to detect a mismatch.
    fn tls(&mut self, key: &str, value: &str) -> Result<()> {
        if value.is_empty() {
            self.warn(format!("empty value for '{key}' ignored"));
        } else if let Some(b) = self.bool(key, value) {
            self.tls_values.insert(b.to_string());
            self.options.tls = Some(b);
        }
        Ok(())
    }

    fn w(&mut self, key: &str, value: &str) -> Result<()> {
        match Acknowledgment::parse(value) {
            Some(w) if !value.is_empty() => self.options.w = Some(w),
            _ => self.invalid(key, value, "expected a non-negative integer or a string"),
        }
        Ok(())
    }

    /// Whether a (lower-cased) key appeared.
    pub(crate) fn has(&self, lower: &str) -> bool {
        self.seen.contains_key(lower)
    }

    /// Resolves deprecated keys and checks the option-only rules: TLS conflicts, tls/ssl
    /// mismatch, proxy dependencies, pool sizes.
    pub(crate) fn finish(mut self) -> Result<(UriOptions, Vec<String>)> {
        if let Some(v) = self.deprecated_wtimeout.take() {
            if self.has("wtimeoutms") {
                self.warn("deprecated 'wtimeout' ignored: 'wTimeoutMS' is also present".into());
            } else {
                if let Some(v) = self.uint("wtimeout", &v, 0, i64::MAX) {
                    self.options.w_timeout_ms = Some(v);
                }
            }
        }
        let conflict = |a: &str, b: &str| Error::InvalidOption {
            name: a.to_string(),
            message: format!("'{a}' and '{b}' must not both be given"),
        };
        // uri-options spec, "Conflicting TLS options": presence alone is an error.
        const TLS_CONFLICTS: [(&str, &str); 7] = [
            ("tlsInsecure", "tlsAllowInvalidCertificates"),
            ("tlsInsecure", "tlsAllowInvalidHostnames"),
            ("tlsInsecure", "tlsDisableOCSPEndpointCheck"),
            ("tlsInsecure", "tlsDisableCertificateRevocationCheck"),
            ("tlsAllowInvalidCertificates", "tlsDisableOCSPEndpointCheck"),
            ("tlsAllowInvalidCertificates", "tlsDisableCertificateRevocationCheck"),
            ("tlsDisableOCSPEndpointCheck", "tlsDisableCertificateRevocationCheck"),
        ];
        for (a, b) in TLS_CONFLICTS {
            if self.has(&a.to_ascii_lowercase()) && self.has(&b.to_ascii_lowercase()) {
                return Err(conflict(a, b));
            }
        }
        if self.tls_values.len() > 1 {
            return Err(Error::InvalidOption {
                name: "tls".into(),
                message: "all 'tls' and 'ssl' options must have the same value".into(),
            });
        }
        let o = &self.options;
        // SOCKS5 spec: the other proxy options need a host; credentials come in pairs.
        if o.proxy_host.is_none() {
            for k in ["proxyPort", "proxyUsername", "proxyPassword"] {
                if self.has(&k.to_ascii_lowercase()) {
                    return Err(Error::InvalidOption {
                        name: k.into(),
                        message: "requires proxyHost".into(),
                    });
                }
            }
        }
        if self.has("proxyusername") != self.has("proxypassword") {
            return Err(Error::InvalidOption {
                name: "proxyUsername".into(),
                message: "proxyUsername and proxyPassword must be given together".into(),
            });
        }
        let too_long = |s: &str| s.is_empty() || s.len() > 255;
        if o.proxy_username.as_deref().is_some_and(too_long)
            || o.proxy_password.as_ref().is_some_and(|p| too_long(p.expose()))
        {
            return Err(Error::InvalidOption {
                name: "proxyUsername".into(),
                message: "proxy credentials must be 1 to 255 bytes long".into(),
            });
        }
        if let (Some(min), Some(max)) = (o.min_pool_size, o.max_pool_size) {
            if max > 0 && min > max {
                return Err(Error::InvalidOption {
                    name: "minPoolSize".into(),
                    message: format!("minPoolSize ({min}) exceeds maxPoolSize ({max})"),
                });
            }
        }
        Ok((self.options, self.warnings))
    }
}

/// Parses `k:v,k2:v2` (the value may itself contain colons). `None` when a pair has no colon
/// or an empty key, which is how a value containing a comma shows up.
fn parse_pairs(value: &str) -> Option<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    for pair in value.split(',') {
        let (k, v) = pair.split_once(':')?;
        if k.is_empty() {
            return None;
        }
        map.insert(k.to_string(), v.to_string());
    }
    Some(map)
}

/// RFC 6335 section 5.1: 1 to 15 characters, letters, digits and hyphens, at least one
/// letter, no hyphen at either end and no two hyphens in a row.
fn is_valid_service_name(s: &str) -> bool {
    (1..=15).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && s.bytes().any(|b| b.is_ascii_alphabetic())
        && !s.starts_with('-')
        && !s.ends_with('-')
        && !s.contains("--")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_debug_is_redacted() {
        let o = UriOptions { proxy_password: Some(Secret::new("pw-123")), ..Default::default() };
        assert!(!format!("{o:?}").contains("pw-123"));
    }

    #[test]
    fn warnings_do_not_echo_mechanism_properties() {
        let mut p = OptionParser::default();
        p.apply("authMechanismProperties", "AWS_SESSION_TOKEN:tok-secret,oops").unwrap();
        assert_eq!(p.warnings.len(), 1);
        assert!(!p.warnings[0].contains("tok-secret"));
    }

    #[test]
    fn every_table_option_is_recognised() {
        for name in UriOptions::NAMES {
            let mut p = OptionParser::default();
            // The value does not matter: only the unknown-key arm must not be reached.
            let _ = p.apply(name, "x");
            assert!(
                !p.warnings.iter().any(|w| w.starts_with("unsupported option")),
                "{name}: {:?}",
                p.warnings
            );
        }
    }

    #[test]
    fn acknowledgment() {
        assert_eq!(Acknowledgment::parse("2"), Some(Acknowledgment::Nodes(2)));
        assert_eq!(Acknowledgment::parse("majority"), Some(Acknowledgment::Majority));
        assert_eq!(Acknowledgment::parse("-1"), None);
        let j = serde_json::to_string(&Acknowledgment::Nodes(1)).unwrap();
        assert_eq!(j, "1");
        let back: Acknowledgment = serde_json::from_str("\"majority\"").unwrap();
        assert_eq!(back, Acknowledgment::Majority);
    }

    #[test]
    fn service_names() {
        assert!(is_valid_service_name("mongodb"));
        assert!(is_valid_service_name("custom-name1"));
        assert!(!is_valid_service_name("-x"));
        assert!(!is_valid_service_name("a--b"));
        assert!(!is_valid_service_name("123"));
        assert!(!is_valid_service_name("abcdefghijklmnop"));
    }
}
