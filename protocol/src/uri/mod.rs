//! Connection strings (`mongodb://` and `mongodb+srv://`) and their options.
//!
//! [`ConnectionString::parse`] implements the connection-string spec (syntax, percent-decoding,
//! hosts, userinfo, database) and the uri-options spec (every option, typed, in
//! [`UriOptions`]), plus the URI validation rules of the SDAM, load-balancer, max-staleness,
//! server-selection, SOCKS5, DNS seed list and auth specs.
//!
//! Error or warning? The specs draw the line, and this module follows them:
//! - malformed syntax, invalid hosts or userinfo, an invalid database name, an option without
//!   `=`, conflicting or forbidden option combinations, and inconsistent credentials fail with
//!   [`Error::InvalidUri`], [`Error::InvalidOption`] or [`Error::InvalidCredential`];
//! - an unknown option, an invalid value for a known option (wrong type, out of range, empty
//!   integer or boolean), a repeated key or a deprecated key is ignored and reported in
//!   [`ConnectionString::warnings`] (each warning is also logged with `tracing::warn!`).
//!
//! `mongodb+srv` strings are parsed and validated only: the SRV host is kept in
//! [`ConnectionString::srv_host`] and [`ConnectionString::hosts`] stays empty until resolution.

mod credential;
mod options;
mod read_preference;
pub mod seedlist;
mod writer;

use percent_encoding::percent_decode_str;
use serde::{Deserialize, Serialize};

pub use credential::{
    properties_document, property_text, redact_password, AuthMechanism, Credential, CredentialFields,
    MechanismProperties, REDACTED,
};
pub use options::{Acknowledgment, Compressor, Secret, ServerMonitoringMode, UriOptions};
pub use read_preference::{ReadPreferenceMode, TagSet};

use crate::address::ServerAddress;
use crate::error::{Error, Result};
use options::OptionParser;

/// The SRV service name used when `srvServiceName` is not given.
pub const DEFAULT_SRV_SERVICE_NAME: &str = "mongodb";

/// A parsed and validated connection string.
///
/// `Debug` does not print passwords (see [`Credential`] and [`Secret`]). Deserializing does
/// not validate; call [`validate`](Self::validate) on a value built that way.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnectionString {
    /// The seed list, in the order given. Empty for `mongodb+srv` until the SRV host is
    /// resolved.
    pub hosts: Vec<ServerAddress>,
    /// For `mongodb+srv`: the (lower-cased) host name to look up SRV and TXT records for.
    pub srv_host: Option<String>,
    /// The credential, when the string asks for authentication.
    pub credential: Option<Credential>,
    /// The database in the path (percent-decoded); it may be a dotted namespace.
    pub default_database: Option<String>,
    /// The options from the query string.
    pub options: UriOptions,
    /// Warnings raised while parsing (unknown options, ignored values, repeated keys, ...).
    pub warnings: Vec<String>,
}

impl ConnectionString {
    /// Parses and validates a connection string.
    ///
    /// ```
    /// use protocol::uri::{ConnectionString, ReadPreferenceMode};
    ///
    /// let cs = ConnectionString::parse(
    ///     "mongodb://alice:s%40cret@db1.example.com,db2.example.com:27018/app\
    ///      ?replicaSet=rs0&readPreference=secondary&heartbeatFrequencyMS=5000",
    /// )
    /// .unwrap();
    /// assert_eq!(cs.hosts.len(), 2);
    /// assert_eq!(cs.hosts[1].to_string(), "db2.example.com:27018");
    /// assert_eq!(cs.options.replica_set.as_deref(), Some("rs0"));
    /// assert_eq!(cs.options.read_preference, Some(ReadPreferenceMode::Secondary));
    /// assert_eq!(cs.options.heartbeat_frequency_ms, Some(5000));
    /// let cred = cs.credential.as_ref().unwrap();
    /// assert_eq!(cred.password.as_deref(), Some("s@cret"));
    /// assert_eq!(cred.source.as_deref(), Some("app"));
    /// assert!(cs.warnings.is_empty());
    ///
    /// // Invalid values are ignored with a warning; invalid combinations are errors.
    /// let cs = ConnectionString::parse("mongodb://h/?heartbeatFrequencyMS=10").unwrap();
    /// assert_eq!(cs.options.heartbeat_frequency_ms, None);
    /// assert_eq!(cs.warnings.len(), 1);
    /// assert!(ConnectionString::parse("mongodb://a,b/?directConnection=true").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<Self> {
        let (srv, rest) = split_scheme(s)?;

        // The host information ends at the first '/' or '?' (the slash before the options
        // is optional); userinfo must percent-encode both, so neither can occur before it.
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let (db_raw, query) = if let Some(t) = tail.strip_prefix('/') {
            match t.split_once('?') {
                Some((d, q)) => (d, Some(q)),
                None => (t, None),
            }
        } else if let Some(q) = tail.strip_prefix('?') {
            ("", Some(q))
        } else {
            ("", None)
        };

        // The userinfo ends at the last '@'; any other '@' in it is an unescaped one.
        let (userinfo, hosts_raw) = match authority.rfind('@') {
            Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
            None => (None, authority),
        };
        let user_pass = userinfo.map(parse_userinfo).transpose()?;

        let misplaced = userinfo.is_none() && tail.contains('@');
        let (hosts, srv_host) =
            parse_hosts(hosts_raw, srv, authority.is_empty() && tail.starts_with('/'), misplaced)?;

        let default_database = parse_database(db_raw)?;

        let (options, warnings) = parse_options(query.unwrap_or_default())?;

        let credential = credential_of(user_pass, &options, default_database.as_deref())?;

        let cs = ConnectionString { hosts, srv_host, credential, default_database, options, warnings };
        cs.validate()?;
        for w in &cs.warnings {
            tracing::warn!(target: "mongo_actors::uri", "connection string: {w}");
        }
        Ok(cs)
    }

    /// Whether this is a `mongodb+srv` connection string.
    pub fn is_srv(&self) -> bool {
        self.srv_host.is_some()
    }

    /// Whether TLS is on: `tls`/`ssl` if given, else on exactly for `mongodb+srv`.
    pub fn tls_enabled(&self) -> bool {
        self.options.tls.unwrap_or(self.is_srv())
    }

    /// The SRV service name to query (`srvServiceName`, default `mongodb`).
    pub fn srv_service_name(&self) -> &str {
        self.options.srv_service_name.as_deref().unwrap_or(DEFAULT_SRV_SERVICE_NAME)
    }

    /// Checks the rules that combine options with each other and with the host list.
    ///
    /// [`parse`](Self::parse) calls it; call it again after filling `hosts` from an SRV lookup
    /// (and merging TXT options), as the load-balancer spec requires validation after
    /// resolution. Host-count rules are skipped while `hosts` is empty.
    pub fn validate(&self) -> Result<()> {
        let o = &self.options;
        let err = |name: &str, message: &str| {
            Err(Error::InvalidOption { name: name.into(), message: message.into() })
        };
        // SDAM "Allowed configuration combinations" and uri-options.
        if o.direct_connection == Some(true) {
            if self.is_srv() && self.hosts.is_empty() {
                return err("directConnection", "directConnection=true is not allowed with mongodb+srv");
            }
            if self.hosts.len() > 1 {
                return err("directConnection", "directConnection=true is not allowed with multiple hosts");
            }
        }
        // Load-balancer spec, "URI Validation".
        if o.load_balanced == Some(true) {
            if self.hosts.len() > 1 {
                return err("loadBalanced", "loadBalanced=true is not allowed with multiple hosts");
            }
            if o.replica_set.is_some() {
                return err("loadBalanced", "loadBalanced=true is not allowed with replicaSet");
            }
            if o.direct_connection == Some(true) {
                return err("loadBalanced", "loadBalanced=true is not allowed with directConnection=true");
            }
            if o.srv_max_hosts.is_some_and(|n| n > 0) {
                return err("loadBalanced", "loadBalanced=true is not allowed with a positive srvMaxHosts");
            }
        }
        // DNS seed list discovery spec, "URI Validation".
        if !self.is_srv() {
            if o.srv_max_hosts.is_some() {
                return err("srvMaxHosts", "srvMaxHosts requires the mongodb+srv scheme");
            }
            if o.srv_service_name.is_some() {
                return err("srvServiceName", "srvServiceName requires the mongodb+srv scheme");
            }
        }
        if o.srv_max_hosts.is_some_and(|n| n > 0) && o.replica_set.is_some() {
            return err("srvMaxHosts", "a positive srvMaxHosts is not allowed with replicaSet");
        }
        // Max-staleness and server-selection specs: no staleness or tags with mode primary
        // (which is also the mode when none is given).
        if o.read_preference.unwrap_or(ReadPreferenceMode::Primary) == ReadPreferenceMode::Primary {
            if o.max_staleness_seconds.is_some() {
                return err(
                    "maxStalenessSeconds",
                    "maxStalenessSeconds is not allowed with read preference primary",
                );
            }
            if o.read_preference_tags.as_ref().is_some_and(|t| t.iter().any(|s| !s.is_empty())) {
                return err("readPreferenceTags", "tag sets are not allowed with read preference primary");
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for ConnectionString {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        ConnectionString::parse(s)
    }
}

/// Strips the scheme; returns whether it is `mongodb+srv`.
/// The host list of a connection string: the hosts (none for `mongodb+srv`) and the SRV name.
/// `socket_hint`: the string looks like an unencoded Unix socket path; `misplaced`: a password
/// with an unescaped '/' or '?' ended the authority early, and the rest of it would be read as
/// a host: the error must not echo it.
fn parse_hosts(
    hosts_raw: &str,
    srv: bool,
    socket_hint: bool,
    misplaced: bool,
) -> Result<(Vec<ServerAddress>, Option<String>)> {
    if hosts_raw.is_empty() {
        let hint = if socket_hint {
            " (Unix domain socket paths must be percent-encoded, e.g. %2Ftmp%2Fmongodb-27017.sock)"
        } else {
            ""
        };
        return Err(Error::InvalidUri(format!("missing host{hint}")));
    }
    let mut hosts = Vec::new();
    let mut srv_host = None;
    for raw in hosts_raw.split(',') {
        if raw.is_empty() {
            return Err(Error::InvalidUri("empty host in the host list".into()));
        }
        let hide = |e: Error| if misplaced { unescaped_userinfo() } else { e };
        let decoded = decode(raw, "host").map_err(hide)?;
        let addr = ServerAddress::parse(&decoded).map_err(hide)?;
        if !srv {
            hosts.push(addr);
            continue;
        }
        if hosts_raw.contains(',') {
            return Err(Error::InvalidUri("mongodb+srv requires exactly one host".into()));
        }
        srv_host = Some(srv_host_of(addr, &decoded)?);
    }
    Ok((hosts, srv_host))
}

/// The one host of a `mongodb+srv` string: a name, without a port.
fn srv_host_of(addr: ServerAddress, decoded: &str) -> Result<String> {
    match addr {
        ServerAddress::Tcp { host, .. } if !decoded.contains(':') => Ok(host),
        ServerAddress::Tcp { .. } => {
            Err(Error::InvalidUri("a mongodb+srv host must not have a port (nor be an IP literal)".into()))
        }
        ServerAddress::Unix { .. } => {
            Err(Error::InvalidUri("a mongodb+srv host cannot be a Unix domain socket".into()))
        }
    }
}

/// The default database (after the host list's '/'), checked for the characters a database
/// name cannot have.
fn parse_database(db_raw: &str) -> Result<Option<String>> {
    if db_raw.is_empty() {
        return Ok(None);
    }
    let db = decode(db_raw, "database name")?;
    if let Some(c) = db.chars().find(|c| "/\\ \"$".contains(*c)) {
        return Err(Error::InvalidUri(format!("database name '{db}' must not contain {c:?}")));
    }
    Ok(Some(db))
}

/// The options of the query string, and the warnings of those ignored.
fn parse_options(query: &str) -> Result<(UriOptions, Vec<String>)> {
    let mut parser = OptionParser::default();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let Some((k, v)) = pair.split_once('=') else {
            return Err(Error::InvalidOption {
                name: pair.to_string(),
                message: "expected key=value".into(),
            });
        };
        if k.is_empty() {
            return Err(Error::InvalidUri(format!("option '{pair}' has an empty key")));
        }
        let key = decode(k, "option key")?;
        let value = decode(v, "option value")?;
        parser.apply(&key, &value)?;
    }
    parser.finish()
}

/// The credential: userinfo or a mechanism asks for authentication; a database or an
/// authSource alone does not (auth spec), though an empty authSource is still an error.
fn credential_of(
    user_pass: Option<(Option<String>, Option<String>)>,
    options: &UriOptions,
    default_database: Option<&str>,
) -> Result<Option<Credential>> {
    if options.auth_source.as_deref() == Some("") {
        return Err(Error::InvalidCredential("authSource must not be empty".into()));
    }
    let wants_auth = user_pass.is_some()
        || options.auth_mechanism.is_some()
        || options.auth_mechanism_properties.is_some();
    if !wants_auth {
        return Ok(None);
    }
    let (username, password) = user_pass.unwrap_or_default();
    let cred = Credential {
        username,
        password,
        source: options.auth_source.clone(),
        mechanism: options.auth_mechanism,
        mechanism_properties: options.auth_mechanism_properties.as_ref().map(credential::properties_document),
    };
    Ok(Some(cred.finish(default_database)?))
}

fn split_scheme(s: &str) -> Result<(bool, &str)> {
    for (scheme, srv) in [("mongodb://", false), ("mongodb+srv://", true)] {
        // `get` rather than slicing: the prefix length may not fall on a char boundary.
        if s.get(..scheme.len()).is_some_and(|p| p.eq_ignore_ascii_case(scheme)) {
            return Ok((srv, &s[scheme.len()..]));
        }
    }
    Err(Error::InvalidUri("the scheme must be mongodb:// or mongodb+srv://".into()))
}

/// Checks that every `%` starts a `%XX` escape, then percent-decodes to UTF-8.
/// `+` stays a plus sign (connection-string spec, Q&A on spaces).
fn decode(s: &str, what: &str) -> Result<String> {
    let b = s.as_bytes();
    for (i, _) in s.match_indices('%') {
        let hex = |j: usize| b.get(j).is_some_and(u8::is_ascii_hexdigit);
        if !(hex(i + 1) && hex(i + 2)) {
            return Err(Error::InvalidUri(format!(
                "invalid percent-encoding in {what}; '%' must be followed by two hex digits"
            )));
        }
    }
    percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| Error::InvalidUri(format!("{what} is not valid UTF-8 once percent-decoded")))
}

/// Splits and decodes `user[:password]`, rejecting what the spec says must be encoded.
/// `uri` with its password replaced by `<redacted>`, for `Debug` output, logs and errors:
/// whatever lies between the first ':' after the scheme and the last '@' (a password with
/// unescaped characters included). A string without a userinfo comes back unchanged; one
/// that only looks like it may lose more than its password, never less.
///
/// The values of the options that are secrets (`tlsCertificateKeyFilePassword`,
/// `proxyPassword`) are redacted too.
pub fn redact_uri(uri: &str) -> String {
    let Some(scheme_end) = uri.find("://").map(|i| i + 3) else { return uri.to_string() };
    let rest = &uri[scheme_end..];
    let redacted = match (rest.find(':'), rest.rfind('@')) {
        (Some(colon), Some(at)) if colon < at => {
            format!("{}{}:{}{}", &uri[..scheme_end], &rest[..colon], credential::REDACTED, &rest[at..])
        }
        _ => uri.to_string(),
    };
    let Some((head, query)) = redacted.split_once('?') else { return redacted };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if SECRET_OPTIONS.iter().any(|s| s.eq_ignore_ascii_case(key)) => {
                format!("{key}={}", credential::REDACTED)
            }
            _ => pair.to_string(),
        })
        .collect();
    format!("{head}?{}", pairs.join("&"))
}

/// The URI options whose values are secrets.
const SECRET_OPTIONS: [&str; 2] = ["tlsCertificateKeyFilePassword", "proxyPassword"];

/// The error for a host list that is really the start of a userinfo (a password with an
/// unescaped '/' or '?'): it names no part of the string.
fn unescaped_userinfo() -> Error {
    Error::InvalidUri(
        "the host list cannot be read: the userinfo appears to contain an unescaped '/' or '?' \
         (percent-encode them)"
            .into(),
    )
}

fn parse_userinfo(u: &str) -> Result<(Option<String>, Option<String>)> {
    let must_encode = |m: &str| {
        Err(Error::InvalidUri(format!("{m}; the username and password must be percent-encoded (RFC 3986)")))
    };
    if u.contains('@') {
        return must_encode("the userinfo contains an unescaped '@'");
    }
    if u.matches(':').count() > 1 {
        return must_encode("the userinfo contains more than one unescaped ':'");
    }
    if let Some(c) = u.chars().find(|c| c.is_whitespace() || c.is_control() || "#[]".contains(*c)) {
        return must_encode(&format!("the userinfo contains {c:?}"));
    }
    let (user, pass) = match u.split_once(':') {
        Some((user, pass)) => (user, Some(pass)),
        None => (u, None),
    };
    let user = decode(user, "username").map_err(|_| {
        Error::InvalidUri(
            "invalid percent-encoding in the username; the username and password must be percent-encoded"
                .into(),
        )
    })?;
    let pass = pass.map(|p| decode(p, "password")).transpose().map_err(|_| {
        Error::InvalidUri(
            "invalid percent-encoding in the password; the username and password must be percent-encoded"
                .into(),
        )
    })?;
    Ok((Some(user), pass))
}

#[cfg(test)]
mod tests;
