//! `mongodb+srv` resolution (Initial DNS Seedlist Discovery spec) with hickory-resolver.
//!
//! [`resolve`] turns a `mongodb+srv` [`ConnectionString`] into a seed list: it looks up
//! `_<srvServiceName>._tcp.<host>` SRV records and the host's TXT record, applies the spec's
//! rules, and validates the result again. The pure rules are public for tests and the SRV
//! poller: [`validate_srv_hosts`], [`parse_txt_record`], [`choose_hosts`].
//!
//! Rules:
//! - every returned host must end with the SRV host's parent domain (the SRV host minus its
//!   first label); when the SRV host has fewer than three labels, returned hosts must end with
//!   the whole SRV host and have at least one more label. Matching ignores case and a trailing
//!   dot. At start-up a mismatch is an error; while polling, mismatching hosts are skipped.
//! - no SRV record, or none valid, is an error;
//! - at most one TXT record; it may carry only `authSource`, `replicaSet` and `loadBalanced`;
//!   options in the URI win over those of the TXT record;
//! - TLS is on unless the URI says `tls=false` ([`ConnectionString::tls_enabled`]);
//! - a positive `srvMaxHosts` keeps that many hosts, chosen at random.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig as HickoryConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::{Name, RData};
use hickory_resolver::TokioResolver;
use pool::connection::HostResolver;
use protocol::address::ServerAddress;
use protocol::uri::ConnectionString;

use crate::{Error, Result};

/// Which DNS servers answer `mongodb+srv` lookups (and, once set, the host lookups of every
/// connection: see [`SrvResolver`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolverConfig {
    name_servers: Vec<SocketAddr>,
    timeout: Option<Duration>,
}

impl ResolverConfig {
    /// The system's configuration (`/etc/resolv.conf` on Unix).
    pub fn system() -> Self {
        Self::default()
    }

    /// Queries these name servers over UDP, in order (for example a test DNS stub on
    /// `127.0.0.1:port`).
    pub fn with_name_servers(name_servers: impl IntoIterator<Item = SocketAddr>) -> Self {
        ResolverConfig { name_servers: name_servers.into_iter().collect(), timeout: None }
    }

    /// The timeout of one DNS query (hickory's default is 5 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The configured name servers; empty means the system's.
    pub fn name_servers(&self) -> &[SocketAddr] {
        &self.name_servers
    }

    /// Whether this is the system configuration.
    pub fn is_system(&self) -> bool {
        self.name_servers.is_empty()
    }
}

/// A DNS resolver for SRV, TXT and address lookups. Cheap to clone.
///
/// It also implements [`HostResolver`], so connections can resolve the hosts an SRV lookup
/// returned through the same name servers (see [`ClientOptions`](super::ClientOptions)).
#[derive(Clone)]
pub struct SrvResolver {
    inner: TokioResolver,
    config: ResolverConfig,
}

impl std::fmt::Debug for SrvResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SrvResolver").field("config", &self.config).finish_non_exhaustive()
    }
}

/// The hosts of one SRV lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SrvLookup {
    /// The hosts, in the order of the answer.
    pub hosts: Vec<ServerAddress>,
    /// The smallest TTL of the records.
    pub min_ttl: Duration,
}

/// The options a TXT record may carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxtOptions {
    /// `authSource`.
    pub auth_source: Option<String>,
    /// `replicaSet`.
    pub replica_set: Option<String>,
    /// `loadBalanced`.
    pub load_balanced: Option<bool>,
}

/// What to do with an SRV target outside the SRV host's domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DomainMismatch {
    /// Fail (initial resolution).
    Error,
    /// Skip the host with a warning (polling).
    Skip,
}

/// What the SRV poller needs to know about the original `mongodb+srv` URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SrvInfo {
    /// The SRV host of the URI (lower case).
    pub host: String,
    /// `srvServiceName` (default `mongodb`).
    pub service_name: String,
    /// `srvMaxHosts` (0: no maximum).
    pub max_hosts: u32,
    /// The smallest TTL of the initial SRV records.
    pub min_ttl: Duration,
}

fn dns_error(host: &str, message: impl Into<String>) -> Error {
    Error::Dns { host: host.to_string(), message: message.into() }
}

impl SrvResolver {
    /// A resolver with this configuration. Fails when the system configuration cannot be
    /// read. Must run inside a tokio runtime.
    pub fn new(config: &ResolverConfig) -> Result<Self> {
        let provider = TokioRuntimeProvider::default();
        let mut builder = if config.is_system() {
            TokioResolver::builder_tokio()
                .map_err(|e| dns_error("", format!("system DNS configuration: {e}")))?
        } else {
            let servers = config
                .name_servers
                .iter()
                .map(|s| {
                    let mut udp = ConnectionConfig::udp();
                    udp.port = s.port();
                    NameServerConfig::new(s.ip(), true, vec![udp])
                })
                .collect();
            TokioResolver::builder_with_config(HickoryConfig::from_name_servers(servers), provider)
        };
        if let Some(t) = config.timeout {
            builder.options_mut().timeout = t;
        }
        let inner =
            builder.build().map_err(|e| dns_error("", format!("cannot create a DNS resolver: {e}")))?;
        Ok(SrvResolver { inner, config: config.clone() })
    }

    /// The configuration.
    pub fn config(&self) -> &ResolverConfig {
        &self.config
    }

    /// Forgets cached answers (the poller wants fresh records every rescan).
    pub fn clear_cache(&self) {
        self.inner.clear_cache();
    }

    /// Looks up `_<service_name>._tcp.<srv_host>` and validates the hosts
    /// ([`validate_srv_hosts`]).
    pub async fn lookup_srv(
        &self,
        srv_host: &str,
        service_name: &str,
        mismatch: DomainMismatch,
    ) -> Result<SrvLookup> {
        let query = format!("_{service_name}._tcp.{srv_host}.");
        let name = Name::from_str_relaxed(&query).map_err(|e| dns_error(srv_host, e.to_string()))?;
        let lookup = match self.inner.srv_lookup(name).await {
            Ok(l) => l,
            Err(e) if e.is_no_records_found() => {
                return Err(dns_error(srv_host, format!("no SRV records found for {query}")))
            }
            Err(e) => return Err(dns_error(srv_host, format!("SRV lookup of {query} failed: {e}"))),
        };
        let mut hosts = Vec::new();
        let mut min_ttl = u32::MAX;
        for record in lookup.answers() {
            if let RData::SRV(srv) = &record.data {
                let target = srv.target.to_utf8();
                let target = target.trim_end_matches('.');
                hosts.push(ServerAddress::Tcp { host: target.to_ascii_lowercase(), port: srv.port });
                min_ttl = min_ttl.min(record.ttl);
            }
        }
        let hosts = validate_srv_hosts(srv_host, hosts, mismatch)?;
        Ok(SrvLookup { hosts, min_ttl: Duration::from_secs(min_ttl.into()) })
    }

    /// Looks up the TXT record of `srv_host` and parses it ([`parse_txt_record`]); no record
    /// gives empty options.
    pub async fn lookup_txt(&self, srv_host: &str) -> Result<TxtOptions> {
        let name =
            Name::from_str_relaxed(format!("{srv_host}.")).map_err(|e| dns_error(srv_host, e.to_string()))?;
        let lookup = match self.inner.txt_lookup(name).await {
            Ok(l) => l,
            Err(e) if e.is_no_records_found() => return Ok(TxtOptions::default()),
            Err(e) => return Err(dns_error(srv_host, format!("TXT lookup failed: {e}"))),
        };
        let records: Vec<String> = lookup
            .answers()
            .iter()
            .filter_map(|r| match &r.data {
                // A record's strings are concatenated (spec: "TXT records can be split").
                RData::TXT(txt) => {
                    Some(txt.txt_data.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect())
                }
                _ => None,
            })
            .collect();
        match records.as_slice() {
            [] => Ok(TxtOptions::default()),
            [one] => parse_txt_record(srv_host, one),
            _ => Err(dns_error(srv_host, "more than one TXT record; mongodb+srv allows at most one")),
        }
    }
}

impl HostResolver for SrvResolver {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, std::io::Result<Vec<SocketAddr>>> {
        Box::pin(async move {
            // IP literals need no lookup; names are taken as fully qualified.
            if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>() {
                return Ok(vec![SocketAddr::new(ip, port)]);
            }
            let fqdn = if host.ends_with('.') { host.to_string() } else { format!("{host}.") };
            let ips = self.inner.lookup_ip(fqdn.as_str()).await.map_err(std::io::Error::other)?;
            Ok(ips.iter().map(|ip| SocketAddr::new(ip, port)).collect())
        })
    }
}

/// Checks SRV targets against the SRV host's domain (see the module docs). With
/// [`DomainMismatch::Skip`] invalid hosts are dropped with a warning. Fails when no valid host
/// remains.
pub fn validate_srv_hosts(
    srv_host: &str,
    hosts: Vec<ServerAddress>,
    mismatch: DomainMismatch,
) -> Result<Vec<ServerAddress>> {
    let srv = srv_host.trim_end_matches('.').to_ascii_lowercase();
    let labels = srv.split('.').count();
    let suffix = if labels >= 3 {
        // The parent domain, with its leading dot.
        srv[srv.find('.').unwrap_or(0)..].to_string()
    } else {
        format!(".{srv}")
    };
    let mut valid = Vec::with_capacity(hosts.len());
    for addr in hosts {
        let host = match &addr {
            ServerAddress::Tcp { host, .. } => host.trim_end_matches('.').to_ascii_lowercase(),
            ServerAddress::Unix { path } => path.clone(),
        };
        // `ends_with(".parent")` also guarantees at least one more label than the suffix.
        if host.ends_with(&suffix) && host.len() > suffix.len() {
            valid.push(addr);
            continue;
        }
        let message = format!("SRV target {host} is not in the domain of {srv} (expected *{suffix})");
        match mismatch {
            DomainMismatch::Error => return Err(dns_error(srv_host, message)),
            DomainMismatch::Skip => tracing::warn!(target: "mongo_actors::srv", "{message}; skipped"),
        }
    }
    if valid.is_empty() {
        return Err(dns_error(srv_host, "the SRV lookup returned no valid host"));
    }
    Ok(valid)
}

/// Parses one TXT record (its strings already concatenated): `key=value` pairs joined by
/// `&`, only `authSource`, `replicaSet` and `loadBalanced` allowed (keys case-insensitive).
pub fn parse_txt_record(srv_host: &str, record: &str) -> Result<TxtOptions> {
    let mut out = TxtOptions::default();
    for pair in record.split('&').filter(|p| !p.is_empty()) {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(dns_error(srv_host, format!("TXT option '{pair}' is not key=value")));
        };
        let value = percent_decode(value);
        match key.to_ascii_lowercase().as_str() {
            "authsource" => out.auth_source = Some(value),
            "replicaset" => out.replica_set = Some(value),
            "loadbalanced" => {
                out.load_balanced = Some(match value.as_str() {
                    "true" => true,
                    "false" => false,
                    v => {
                        return Err(dns_error(
                            srv_host,
                            format!("TXT option loadBalanced={v} is not a boolean"),
                        ))
                    }
                })
            }
            other => {
                return Err(dns_error(
                    srv_host,
                    format!(
                        "TXT option '{other}' is not allowed (only authSource, replicaSet and loadBalanced)"
                    ),
                ))
            }
        }
    }
    Ok(out)
}

/// TXT values are URI-encoded like query-string values.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Shuffles `hosts` in place (Fisher-Yates, seeded by the standard library's random hasher
/// keys: good enough to spread clients over mongoses, not for cryptography).
pub fn shuffle(hosts: &mut [ServerAddress]) {
    let mut state = {
        let mut h = RandomState::new().build_hasher();
        h.write_usize(hosts.len());
        h.finish() | 1
    };
    for i in (1..hosts.len()).rev() {
        // xorshift64
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let j = (state % (i as u64 + 1)) as usize;
        hosts.swap(i, j);
    }
}

/// Applies `srvMaxHosts`: with a positive maximum below the number of hosts, a random subset
/// of that size; otherwise every host, in order.
pub fn choose_hosts(mut hosts: Vec<ServerAddress>, srv_max_hosts: Option<u32>) -> Vec<ServerAddress> {
    match srv_max_hosts.map(|m| m as usize) {
        Some(max) if max > 0 && max < hosts.len() => {
            shuffle(&mut hosts);
            hosts.truncate(max);
            hosts
        }
        _ => hosts,
    }
}

/// Resolves a `mongodb+srv` connection string in place: fills `hosts` from the SRV records
/// (after `srvMaxHosts`), merges the TXT options the URI did not set, and validates again.
/// Returns what the SRV poller needs. A plain `mongodb://` string is left alone (`None`).
pub async fn resolve(cs: &mut ConnectionString, resolver: &SrvResolver) -> Result<Option<SrvInfo>> {
    let Some(srv_host) = cs.srv_host.clone() else { return Ok(None) };
    let service_name = cs.srv_service_name().to_string();
    let (lookup, txt) = futures_util::future::join(
        resolver.lookup_srv(&srv_host, &service_name, DomainMismatch::Error),
        resolver.lookup_txt(&srv_host),
    )
    .await;
    let lookup = lookup?;
    let txt = txt?;
    apply_txt(cs, txt)?;
    cs.hosts = choose_hosts(lookup.hosts, cs.options.srv_max_hosts);
    cs.validate().map_err(|e| Error::InvalidOptions { message: format!("after SRV resolution: {e}") })?;
    Ok(Some(SrvInfo {
        host: srv_host,
        service_name,
        max_hosts: cs.options.srv_max_hosts.unwrap_or(0),
        min_ttl: lookup.min_ttl,
    }))
}

/// Merges TXT options into the connection string; the URI's own values win.
pub fn apply_txt(cs: &mut ConnectionString, txt: TxtOptions) -> Result<()> {
    let o = &mut cs.options;
    if o.replica_set.is_none() {
        o.replica_set = txt.replica_set;
    }
    if o.load_balanced.is_none() {
        o.load_balanced = txt.load_balanced;
    }
    if o.auth_source.is_none() {
        if let Some(source) = txt.auth_source {
            o.auth_source = Some(source.clone());
            // authSource alone does not ask for authentication; it only names the database
            // of a credential the URI gave.
            if let Some(c) = cs.credential.as_mut() {
                c.source = Some(source);
            }
        }
    }
    Ok(())
}

/// The [`HostResolver`] to install on connections when `config` is not the system's.
pub fn host_resolver(resolver: &SrvResolver) -> Option<Arc<dyn HostResolver>> {
    (!resolver.config().is_system()).then(|| Arc::new(resolver.clone()) as Arc<dyn HostResolver>)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(names: &[&str]) -> Vec<ServerAddress> {
        names.iter().map(|n| ServerAddress::Tcp { host: n.to_string(), port: 27017 }).collect()
    }

    #[test]
    fn parent_domain_rule() {
        let ok = validate_srv_hosts(
            "cluster.example.com",
            hosts(&["a.example.com", "B.EXAMPLE.COM."]),
            DomainMismatch::Error,
        );
        assert_eq!(ok.unwrap().len(), 2);
        for bad in ["a.evil.com", "example.com", "aexample.com", "a.example.com.evil"] {
            let e =
                validate_srv_hosts("cluster.example.com", hosts(&[bad]), DomainMismatch::Error).unwrap_err();
            assert!(matches!(e, Error::Dns { .. }), "{bad}: {e}");
        }
        // Skip keeps the valid ones.
        let kept = validate_srv_hosts(
            "cluster.example.com",
            hosts(&["a.evil.com", "b.example.com"]),
            DomainMismatch::Skip,
        )
        .unwrap();
        assert_eq!(kept, hosts(&["b.example.com"]));
        // None valid: an error even when skipping.
        assert!(
            validate_srv_hosts("cluster.example.com", hosts(&["a.evil.com"]), DomainMismatch::Skip).is_err()
        );
        assert!(validate_srv_hosts("cluster.example.com", vec![], DomainMismatch::Error).is_err());
    }

    #[test]
    fn fewer_than_three_labels() {
        // The hosts must end with the whole SRV host and have one more label.
        assert!(validate_srv_hosts("localhost", hosts(&["test1.localhost"]), DomainMismatch::Error).is_ok());
        assert!(validate_srv_hosts("localhost", hosts(&["localhost"]), DomainMismatch::Error).is_err());
        assert!(validate_srv_hosts("mongo.local", hosts(&["a.mongo.local"]), DomainMismatch::Error).is_ok());
        assert!(validate_srv_hosts("mongo.local", hosts(&["mongo.local"]), DomainMismatch::Error).is_err());
        assert!(validate_srv_hosts("mongo.local", hosts(&["a.other.local"]), DomainMismatch::Error).is_err());
    }

    #[test]
    fn txt_rules() {
        let t = parse_txt_record("h", "replicaSet=rs0&authSource=admin&loadBalanced=false").unwrap();
        assert_eq!(t.replica_set.as_deref(), Some("rs0"));
        assert_eq!(t.auth_source.as_deref(), Some("admin"));
        assert_eq!(t.load_balanced, Some(false));
        assert_eq!(
            parse_txt_record("h", "authSource=thisDB%2Ffoo").unwrap().auth_source.as_deref(),
            Some("thisDB/foo")
        );
        for bad in ["ssl=true", "replicaSet", "loadBalanced=yes", "connectTimeoutMS=300"] {
            assert!(matches!(parse_txt_record("h", bad), Err(Error::Dns { .. })), "{bad}");
        }
        assert_eq!(parse_txt_record("h", "").unwrap(), TxtOptions::default());
    }

    #[test]
    fn uri_options_win_over_txt() {
        let mut cs = ConnectionString::parse("mongodb+srv://u:p@c.example.com/?replicaSet=uri").unwrap();
        apply_txt(
            &mut cs,
            TxtOptions {
                replica_set: Some("txt".into()),
                auth_source: Some("thisDB".into()),
                load_balanced: None,
            },
        )
        .unwrap();
        assert_eq!(cs.options.replica_set.as_deref(), Some("uri"));
        assert_eq!(cs.credential.as_ref().and_then(|c| c.source.as_deref()), Some("thisDB"));
        assert!(cs.tls_enabled(), "tls defaults to true for mongodb+srv");
    }

    #[test]
    fn srv_max_hosts_subset() {
        let all = hosts(&["a.x.y", "b.x.y", "c.x.y", "d.x.y"]);
        for _ in 0..20 {
            let chosen = choose_hosts(all.clone(), Some(2));
            assert_eq!(chosen.len(), 2);
            assert!(chosen.iter().all(|h| all.contains(h)));
            assert_ne!(chosen[0], chosen[1]);
        }
        assert_eq!(choose_hosts(all.clone(), Some(0)), all);
        assert_eq!(choose_hosts(all.clone(), Some(10)), all);
        assert_eq!(choose_hosts(all.clone(), None), all);
        // Random: over many draws, every host is picked at least once.
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            seen.extend(choose_hosts(all.clone(), Some(1)));
        }
        assert_eq!(seen.len(), 4);
    }
}
