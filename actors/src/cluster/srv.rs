//! `mongodb+srv` resolution (Initial DNS Seedlist Discovery spec) with hickory-resolver.
//!
//! [`resolve`] turns a `mongodb+srv` [`ConnectionString`] into a seed list: it looks up
//! `_<srvServiceName>._tcp.<host>` SRV records and the host's TXT record, applies the spec's
//! rules, and validates the result again. The pure rules live in
//! [`protocol::uri::seedlist`] (re-exported here): [`validate_srv_hosts`],
//! [`parse_txt_record`], [`choose_hosts`], [`apply_txt`].
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
pub use protocol::uri::seedlist::{
    apply_txt, choose_hosts, parse_txt_record, validate_srv_hosts, DomainMismatch, TxtOptions,
};
use protocol::uri::ConnectionString;

use crate::error::{Error, Result};

/// Which DNS servers answer `mongodb+srv` lookups (and, once set, the host lookups of every
/// connection: see [`SrvResolver`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolverConfig {
    name_servers: Vec<SocketAddr>,
    timeout: Option<Duration>,
}

impl ResolverConfig {
    /// The system's configuration (`/etc/resolv.conf` on Unix).
    ///
    /// ```
    /// use mongo_actors::options::ResolverConfig;
    /// assert_eq!(ResolverConfig::cloudflare().name_servers().len(), 4);
    /// assert!(ResolverConfig::system().is_system());
    /// ```
    pub fn system() -> Self {
        Self::default()
    }

    /// Cloudflare's public resolvers: 1.1.1.1, 1.0.0.1, 2606:4700:4700::1111 and
    /// 2606:4700:4700::1001.
    pub fn cloudflare() -> Self {
        Self::public(&["1.1.1.1", "1.0.0.1", "2606:4700:4700::1111", "2606:4700:4700::1001"])
    }

    /// Google's public resolvers: 8.8.8.8, 8.8.4.4, 2001:4860:4860::8888 and
    /// 2001:4860:4860::8844.
    pub fn google() -> Self {
        Self::public(&["8.8.8.8", "8.8.4.4", "2001:4860:4860::8888", "2001:4860:4860::8844"])
    }

    /// Quad9's secure resolvers: 9.9.9.9, 149.112.112.112, 2620:fe::fe and 2620:fe::9.
    pub fn quad9() -> Self {
        Self::public(&["9.9.9.9", "149.112.112.112", "2620:fe::fe", "2620:fe::9"])
    }

    /// Name servers on port 53, by address (literals that always parse).
    fn public(addresses: &[&str]) -> Self {
        let servers = addresses.iter().filter_map(|a| a.parse::<std::net::IpAddr>().ok());
        Self::with_name_servers(servers.map(|ip| SocketAddr::new(ip, 53)))
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
/// returned through the same name servers (see [`ClientOptions`](crate::ClientOptions)).
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

/// A broken seed list rule as the client's DNS error.
fn seedlist_error(e: protocol::Error) -> Error {
    match e {
        protocol::Error::Seedlist { host, message } => Error::dns(&host, message),
        other => Error::dns("", other),
    }
}

fn dns_error(host: &str, message: impl Into<String>) -> Error {
    Error::dns(host, message.into())
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
                hosts.push(ServerAddress::Tcp { host: target.to_ascii_lowercase(), port: Some(srv.port) });
                min_ttl = min_ttl.min(record.ttl);
            }
        }
        let hosts = validate_srv_hosts(srv_host, hosts, mismatch).map_err(seedlist_error)?;
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
            [one] => parse_txt_record(srv_host, one).map_err(seedlist_error),
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

/// What a `mongodb+srv` lookup found: the seeds (`srvMaxHosts` applied), the TXT record's
/// options, and what the SRV poller needs.
#[derive(Debug, Clone)]
pub struct SrvSeeds {
    /// The seeds, at most `srvMaxHosts` of them (drawn at random when there are more).
    pub hosts: Vec<ServerAddress>,
    /// The TXT record's options (`authSource`, `replicaSet`, `loadBalanced`).
    pub txt: TxtOptions,
    /// The SRV host, service name, maximum and the records' smallest TTL.
    pub info: SrvInfo,
}

/// Looks up the SRV and TXT records of `srv_host` (in parallel) and picks the seeds.
///
/// Errors: [`ErrorKind::DnsResolve`](crate::error::ErrorKind::DnsResolve) when a lookup fails
/// or breaks the DNS seed list spec's rules.
pub async fn resolve_seeds(
    srv_host: &str,
    service_name: &str,
    srv_max_hosts: Option<u32>,
    resolver: &SrvResolver,
) -> Result<SrvSeeds> {
    let (lookup, txt) = futures_util::future::join(
        resolver.lookup_srv(srv_host, service_name, DomainMismatch::Error),
        resolver.lookup_txt(srv_host),
    )
    .await;
    let lookup = lookup?;
    let txt = txt?;
    let hosts = selection::with_thread_rng(|rng| choose_hosts(lookup.hosts, srv_max_hosts, rng));
    let info = SrvInfo {
        host: srv_host.to_string(),
        service_name: service_name.to_string(),
        max_hosts: srv_max_hosts.unwrap_or(0),
        min_ttl: lookup.min_ttl,
    };
    Ok(SrvSeeds { hosts, txt, info })
}

/// Resolves a spec-level `mongodb+srv` connection string in place: its hosts, the TXT
/// record's options merged (the URI's own win), checked again. `None` for `mongodb://`.
pub async fn resolve(cs: &mut ConnectionString, resolver: &SrvResolver) -> Result<Option<SrvInfo>> {
    let Some(srv_host) = cs.srv_host.clone() else { return Ok(None) };
    let service_name = cs.srv_service_name().to_string();
    let found = resolve_seeds(&srv_host, &service_name, cs.options.srv_max_hosts, resolver).await?;
    apply_txt(cs, found.txt);
    cs.hosts = found.hosts;
    cs.validate().map_err(|e| Error::invalid_argument(format!("after SRV resolution: {e}")))?;
    Ok(Some(found.info))
}

/// The [`HostResolver`] to install on connections when `config` is not the system's.
pub fn host_resolver(resolver: &SrvResolver) -> Option<Arc<dyn HostResolver>> {
    (!resolver.config().is_system()).then(|| Arc::new(resolver.clone()) as Arc<dyn HostResolver>)
}
