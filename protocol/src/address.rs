//! Server addresses: `host:port` pairs (IPv6 literals in brackets) and Unix domain sockets.

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};

/// The port used when an address names none.
pub const DEFAULT_PORT: u16 = 27017;

/// The address of one server.
///
/// The official driver's shape: a TCP port of `None` means the default, 27017, and compares
/// equal to `Some(27017)`. [`parse`](Self::parse) normalises host names to lower case, as SDAM
/// compares addresses case-insensitively. The string form is `host:port`, or `[v6]:port` for
/// an IPv6 literal, or the socket path.
///
/// ```
/// use protocol::ServerAddress;
/// let a: ServerAddress = "Example.COM".parse().unwrap();
/// assert_eq!(a.to_string(), "example.com:27017");
/// let b: ServerAddress = "[::1]:27018".parse().unwrap();
/// assert_eq!(b.to_string(), "[::1]:27018");
/// ```
#[derive(Debug, Clone, Eq)]
#[non_exhaustive]
pub enum ServerAddress {
    /// A TCP address; `host` holds an IPv6 literal without brackets.
    Tcp {
        /// Host name or IP literal.
        host: String,
        /// TCP port; `None` is the default port, 27017.
        port: Option<u16>,
    },
    /// A Unix domain socket path (already percent-decoded).
    Unix {
        /// Absolute or relative path of the socket.
        path: PathBuf,
    },
}

impl Default for ServerAddress {
    /// `localhost:27017`, as the official driver's.
    fn default() -> Self {
        ServerAddress::Tcp { host: "localhost".into(), port: None }
    }
}

impl PartialEq for ServerAddress {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ServerAddress::Tcp { host: a, .. }, ServerAddress::Tcp { host: b, .. }) => {
                a == b && self.tcp_port() == other.tcp_port()
            }
            (ServerAddress::Unix { path: a }, ServerAddress::Unix { path: b }) => a == b,
            _ => false,
        }
    }
}

impl Hash for ServerAddress {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            ServerAddress::Tcp { host, .. } => {
                host.hash(state);
                self.tcp_port().hash(state);
            }
            ServerAddress::Unix { path } => path.hash(state),
        }
    }
}

impl Ord for ServerAddress {
    /// TCP addresses by host then port (`None` as 27017), then socket paths: a stable order
    /// for logs and tests.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (self, other) {
            (ServerAddress::Tcp { host: a, .. }, ServerAddress::Tcp { host: b, .. }) => {
                a.cmp(b).then(self.tcp_port().cmp(&other.tcp_port()))
            }
            (ServerAddress::Unix { path: a }, ServerAddress::Unix { path: b }) => a.cmp(b),
            (ServerAddress::Tcp { .. }, ServerAddress::Unix { .. }) => std::cmp::Ordering::Less,
            (ServerAddress::Unix { .. }, ServerAddress::Tcp { .. }) => std::cmp::Ordering::Greater,
        }
    }
}

impl PartialOrd for ServerAddress {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl From<std::net::SocketAddr> for ServerAddress {
    fn from(a: std::net::SocketAddr) -> Self {
        ServerAddress::Tcp { host: a.ip().to_string(), port: Some(a.port()) }
    }
}

impl ServerAddress {
    /// A TCP address; `host` is lower-cased.
    pub fn tcp(host: impl AsRef<str>, port: u16) -> Self {
        ServerAddress::Tcp { host: host.as_ref().to_ascii_lowercase(), port: Some(port) }
    }

    /// Parses `host`, `host:port`, `[v6]` or `[v6]:port`. A string containing a `/` and ending
    /// in `.sock` is taken as a Unix socket path (a bare `mongodb-27017.sock` is a host name,
    /// as the connection-string spec tests require).
    ///
    /// The input must already be percent-decoded. Host names may not contain whitespace,
    /// control characters or any of `/ \ ? # @ [ ] , %`; IPv6 literals must be valid
    /// addresses (optionally with a `%zone` suffix).
    pub fn parse(address: impl AsRef<str>) -> Result<Self> {
        let s = address.as_ref();
        let invalid = |m: &str| Error::InvalidUri(format!("invalid host '{s}': {m}"));
        if s.is_empty() {
            return Err(invalid("empty host"));
        }
        if s.contains('/') {
            if s.ends_with(".sock") {
                return Ok(ServerAddress::Unix { path: PathBuf::from(s) });
            }
            return Err(invalid("unsupported host; Unix domain socket paths must end in '.sock'"));
        }
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let end = rest.find(']').ok_or_else(|| invalid("unterminated IPv6 literal"))?;
            let host = &rest[..end];
            let after = &rest[end + 1..];
            if host.is_empty() {
                return Err(invalid("empty IPv6 literal"));
            }
            // An optional zone index (`fe80::1%eth0`) follows the address proper.
            let addr = host.split_once('%').map_or(host, |(a, _)| a);
            if addr.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(invalid("invalid IPv6 literal"));
            }
            let port = match after {
                "" => None,
                p if p.starts_with(':') => Some(&p[1..]),
                _ => return Err(invalid("unexpected characters after IPv6 literal")),
            };
            (host, port)
        } else {
            match s.rfind(':') {
                Some(i) => {
                    if s[..i].contains(':') {
                        return Err(invalid("IPv6 literals must be enclosed in '[' and ']'"));
                    }
                    (&s[..i], Some(&s[i + 1..]))
                }
                None => (s, None),
            }
        };
        if host.is_empty() {
            return Err(invalid("empty host"));
        }
        if !s.starts_with('[') {
            if let Some(c) =
                host.chars().find(|c| c.is_whitespace() || c.is_control() || "/\\?#@[],%".contains(*c))
            {
                return Err(invalid(&format!("host names may not contain {c:?}")));
            }
        }
        let port = match port {
            None => DEFAULT_PORT,
            Some(p) => match p.parse::<u16>() {
                Ok(0) | Err(_) => return Err(invalid("port must be an integer between 1 and 65535")),
                Ok(p) => p,
            },
        };
        Ok(ServerAddress::tcp(host, port))
    }

    /// The host (or socket path).
    pub fn host(&self) -> Cow<'_, str> {
        match self {
            ServerAddress::Tcp { host, .. } => Cow::Borrowed(host),
            ServerAddress::Unix { path } => path.to_string_lossy(),
        }
    }

    /// The TCP port as given (`None`: the default, 27017), or `None` for a Unix socket.
    pub fn port(&self) -> Option<u16> {
        match self {
            ServerAddress::Tcp { port, .. } => *port,
            ServerAddress::Unix { .. } => None,
        }
    }

    /// The TCP port to connect to (the default, 27017, when none was given), or `None` for a
    /// Unix socket.
    pub fn tcp_port(&self) -> Option<u16> {
        match self {
            ServerAddress::Tcp { port, .. } => Some(port.unwrap_or(DEFAULT_PORT)),
            ServerAddress::Unix { .. } => None,
        }
    }
}

impl fmt::Display for ServerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerAddress::Tcp { host, port } if host.contains(':') => {
                write!(f, "[{host}]:{}", port.unwrap_or(DEFAULT_PORT))
            }
            ServerAddress::Tcp { host, port } => write!(f, "{host}:{}", port.unwrap_or(DEFAULT_PORT)),
            ServerAddress::Unix { path } => write!(f, "{}", path.display()),
        }
    }
}

impl FromStr for ServerAddress {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        ServerAddress::parse(s)
    }
}

impl Serialize for ServerAddress {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Either the string form or, as the official driver also reads, `{host, port}`.
#[derive(Deserialize)]
#[serde(untagged)]
enum AddressForm {
    String(String),
    Object { host: String, port: Option<u16> },
}

impl<'de> Deserialize<'de> for ServerAddress {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match AddressForm::deserialize(d)? {
            AddressForm::String(s) => ServerAddress::parse(&s).map_err(serde::de::Error::custom),
            AddressForm::Object { host, port: None } => {
                ServerAddress::parse(&host).map_err(serde::de::Error::custom)
            }
            AddressForm::Object { host, port: Some(port) } => {
                // The host alone must be a host (an IPv6 literal may come without brackets):
                // no port of its own, no socket path.
                let bare = host.trim_start_matches('[').trim_end_matches(']');
                let parsed = match bare.parse::<std::net::Ipv6Addr>() {
                    Ok(_) => Some(ServerAddress::tcp(bare, 1)),
                    Err(_) if host.contains(':') => None,
                    Err(_) => ServerAddress::parse(&host).ok(),
                };
                match parsed {
                    Some(ServerAddress::Tcp { host, .. }) if port != 0 => Ok(ServerAddress::tcp(host, port)),
                    _ => Err(serde::de::Error::custom(format!("invalid address {host:?} with port {port}"))),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_forms() {
        assert_eq!(ServerAddress::parse("a").unwrap(), ServerAddress::tcp("a", 27017));
        assert_eq!(ServerAddress::parse("A:1").unwrap(), ServerAddress::tcp("a", 1));
        assert_eq!(ServerAddress::parse("[::1]").unwrap().to_string(), "[::1]:27017");
        assert!(ServerAddress::parse("::1").is_err());
        assert!(ServerAddress::parse("a:0").is_err());
        assert!(ServerAddress::parse("a:65536").is_err());
        assert!(ServerAddress::parse("a:x").is_err());
        assert!(ServerAddress::parse("").is_err());
        assert_eq!(ServerAddress::parse("/tmp/m.sock").unwrap().port(), None);
        // Without a slash it is a host name that merely resembles a socket file.
        assert_eq!(ServerAddress::parse("m.sock").unwrap(), ServerAddress::tcp("m.sock", 27017));
        assert!(ServerAddress::parse("/tmp/m").is_err());
        assert!(ServerAddress::parse("[::1").is_err());
        assert!(ServerAddress::parse("[zz::1]").is_err());
        assert!(ServerAddress::parse("[fe80::1%eth0]:1").is_ok());
        assert!(ServerAddress::parse("a b").is_err());
        assert!(ServerAddress::parse("a@b").is_err());
    }

    #[test]
    fn deserializes_a_string_or_host_and_port() {
        let de = |j: &str| serde_json::from_str::<ServerAddress>(j);
        assert_eq!(de(r#""H:2""#).unwrap(), ServerAddress::tcp("h", 2));
        assert_eq!(de(r#"{"host": "H", "port": 2}"#).unwrap(), ServerAddress::tcp("h", 2));
        assert_eq!(de(r#"{"host": "h"}"#).unwrap(), ServerAddress::tcp("h", 27017));
        assert_eq!(de(r#"{"host": "::1", "port": 3}"#).unwrap().to_string(), "[::1]:3");
        for bad in [r#"{"host": "h:1", "port": 2}"#, r#"{"host": "h", "port": 0}"#, r#"{"host": ""}"#] {
            assert!(de(bad).is_err(), "{bad}");
        }
    }
}

#[cfg(test)]
mod default_port_tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn no_port_is_the_default_port() {
        let implicit = ServerAddress::Tcp { host: "a".into(), port: None };
        let explicit = ServerAddress::tcp("a", DEFAULT_PORT);
        assert_eq!(implicit, explicit);
        assert_eq!(implicit.to_string(), "a:27017");
        assert_eq!((implicit.port(), explicit.port()), (None, Some(27017)));
        assert_eq!(implicit.tcp_port(), Some(27017));
        let set: HashSet<_> = [implicit, explicit].into_iter().collect();
        assert_eq!(set.len(), 1);
        assert_ne!(ServerAddress::tcp("a", 1), ServerAddress::tcp("a", 2));
    }
}
