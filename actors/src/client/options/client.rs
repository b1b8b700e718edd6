//! Client options: a connection string plus what a URI cannot carry (custom selector, event
//! handlers, DNS resolver).
//!
//! - [`ClientOptions::parse`]: a URI (or a [`ConnectionString`](super::ConnectionString));
//!   `mongodb+srv` is resolved through the system's DNS or the resolver given.
//! - [`ClientOptions::builder`]: the official typed builder, field by field (no URI).
//! - [`ClientOptions::from_config`](super::super::config): a file and environment variables.

use std::sync::Arc;
use std::time::Duration;

use pool::connection::{ConnectionOptions, HostResolver};
use protocol::hello::command::ServerApi;
use protocol::uri::{ConnectionString, ServerMonitoringMode, UriOptions};

use super::super::concern::{ReadConcern, WriteConcern};

use super::compressor::Compressor;
use super::credential::Credential;
use super::tls::Tls;
use crate::cluster::selection::CustomSelector;
use crate::cluster::selection_criteria::SelectionCriteria;
use crate::cluster::srv::{self, ResolverConfig, SrvInfo, SrvResolver};
use crate::cluster::srv_poller::{SrvPollerOptions, DEFAULT_RESCAN_INTERVAL};
use crate::cluster::topology::TopologyBuilder;
use crate::error::{Error, Result};
use crate::observe::official::EventHandler;
use protocol::hello::metadata::DriverInfo;
use protocol::ServerAddress;
use typed_builder::TypedBuilder;

/// Everything a [`Client`](crate::Client) is built from: the official driver's option
/// fields (filled from the URI by [`ClientOptions::parse`], then edited at will:
/// `opts.app_name = Some("app".into())`), the parsed connection string they came from (with
/// `mongodb+srv` already resolved into hosts), and what only this client has.
///
/// The typed fields win: [`Client::with_options`](crate::Client::with_options) writes them
/// over the connection string's options (a field set to `None` clears that option).
///
/// [`ClientOptions::builder`] is the official typed builder: each setter takes what converts
/// into its field, `build()` cannot fail (the options are checked when the client is built).
///
/// ```
/// use mongo_actors::options::{ClientOptions, ServerAddress};
///
/// let o = ClientOptions::builder()
///     .hosts(vec![ServerAddress::Tcp { host: "db1".into(), port: Some(27018) }])
///     .app_name("svc".to_string())
///     .max_pool_size(20)
///     .build();
/// assert_eq!(o.max_pool_size, Some(20));
/// assert_eq!(ClientOptions::builder().build().hosts, vec![ServerAddress::default()]);
/// ```
#[derive(Clone, TypedBuilder, serde::Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientOptions {
    /// The seed list: the connection string's hosts (for `mongodb+srv`, what SRV resolution
    /// found); the builder's default is `localhost:27017`. Empty: the connection string's,
    /// else `localhost:27017`.
    #[builder(default = vec![ServerAddress::default()])]
    #[serde(default = "default_hosts")]
    pub hosts: Vec<ServerAddress>,
    /// How to authenticate (userinfo, `authSource`, `authMechanism`,
    /// `authMechanismProperties`); `None`: no authentication.
    pub credential: Option<Credential>,
    /// TLS (`tls`, `tlsCAFile`, `tlsCertificateKeyFile`, `tlsAllowInvalidCertificates`,
    /// `tlsAllowInvalidHostnames`); `None`: plain TCP unless the scheme is `mongodb+srv`.
    pub tls: Option<Tls>,
    /// The wire compressors to offer, in order of preference (`compressors`,
    /// `zlibCompressionLevel`).
    pub compressors: Option<Vec<Compressor>>,
    /// A wrapping library's name, version and platform, appended to the handshake's metadata.
    pub driver_info: Option<DriverInfo>,
    /// The SRV service name for `mongodb+srv` (`srvServiceName`; default `mongodb`).
    pub srv_service_name: Option<String>,
    /// The most hosts taken from SRV resolution (`srvMaxHosts`; `None` or 0: all).
    pub srv_max_hosts: Option<u32>,
    /// The application's name, sent in the handshake and logged by the server (`appName`).
    pub app_name: Option<String>,
    /// How long opening a connection may take (`connectTimeoutMS`; `Duration::ZERO`: no limit).
    pub connect_timeout: Option<Duration>,
    /// Connect to the one seed only, whatever its type (`directConnection`).
    pub direct_connection: Option<bool>,
    /// How often each server is checked (`heartbeatFrequencyMS`; at least 500 ms).
    pub heartbeat_freq: Option<Duration>,
    /// The deployment is behind a load balancer (`loadBalanced`).
    pub load_balanced: Option<bool>,
    /// The latency window of server selection (`localThresholdMS`).
    pub local_threshold: Option<Duration>,
    /// How long a connection may stay idle in the pool before it is closed (`maxIdleTimeMS`).
    pub max_idle_time: Option<Duration>,
    /// The most connections of each server's pool (`maxPoolSize`; 0: no limit).
    pub max_pool_size: Option<u32>,
    /// The connections each server's pool keeps open (`minPoolSize`).
    pub min_pool_size: Option<u32>,
    /// The most connections each pool opens at once (`maxConnecting`).
    pub max_connecting: Option<u32>,
    /// The client's default read concern (`readConcernLevel`).
    pub read_concern: Option<ReadConcern>,
    /// The replica set's name: members of another set are ignored (`replicaSet`).
    pub repl_set_name: Option<String>,
    /// Retry a read once on a retryable error (`retryReads`; default on).
    pub retry_reads: Option<bool>,
    /// Retry a write once on a retryable error (`retryWrites`; default on).
    pub retry_writes: Option<bool>,
    /// How monitors learn of changes: streaming, polling, or decided by the platform
    /// (`serverMonitoringMode`).
    pub server_monitoring_mode: Option<ServerMonitoringMode>,
    /// How long server selection waits for a suitable server (`serverSelectionTimeoutMS`).
    pub server_selection_timeout: Option<Duration>,
    /// How reads choose their server by default (`readPreference`, `readPreferenceTags`,
    /// `maxStalenessSeconds`; or a predicate, which no URI can carry). `None`: primary.
    pub selection_criteria: Option<SelectionCriteria>,
    /// The database the URI names, for [`Client::default_database`](crate::Client::default_database).
    pub default_database: Option<String>,
    /// The client's default write concern (`w`, `journal`, `wTimeoutMS`).
    pub write_concern: Option<WriteConcern>,
    /// The most retries of an overloaded server's errors (`maxAdaptiveRetries`).
    pub max_adaptive_retries: Option<u32>,
    /// Send the retry of an overloaded server's error to another server
    /// (`enableOverloadRetargeting`).
    pub enable_overload_retargeting: Option<bool>,
    /// (Ours.) The parsed connection string; its hosts are the seeds. The fields above are
    /// written over its options when the client is built.
    #[serde(default)]
    pub connection_string: ConnectionString,
    /// The application's server selector.
    #[builder(setter(!into, strip_option))]
    #[serde(skip)]
    pub custom_selector: Option<CustomSelector>,
    /// Receives SDAM events: in the official shape, or in the spec's through
    /// [`EventHandler::Subscriber`] (behind a bounded queue, as every handler: see
    /// [`crate::observe::delivery`]).
    #[builder(setter(strip_option))]
    #[serde(skip)]
    pub sdam_event_handler: Option<EventHandler<crate::observe::official::sdam::SdamEvent>>,
    /// Receives CMAP events (in the official shape, or in the spec's through
    /// [`EventHandler::Subscriber`]).
    #[builder(setter(strip_option))]
    #[serde(skip)]
    pub cmap_event_handler: Option<EventHandler<crate::observe::official::cmap::CmapEvent>>,
    /// Receives command events (in the official shape, or in the spec's through
    /// [`EventHandler::Subscriber`]).
    #[builder(setter(strip_option))]
    #[serde(skip)]
    pub command_event_handler: Option<EventHandler<crate::observe::official::command::CommandEvent>>,
    /// The DNS servers for `mongodb+srv` (`None`: the system's).
    #[serde(skip)]
    pub resolver_config: Option<ResolverConfig>,
    /// Resolves host names for every connection (`None`: the system resolver). Set by
    /// resolution with a custom [`ResolverConfig`], so SRV targets resolve through it too.
    #[builder(setter(!into, strip_option))]
    #[serde(skip)]
    pub host_resolver: Option<Arc<dyn HostResolver>>,
    /// For `mongodb+srv`: the SRV host and lookup results the SRV poller needs.
    #[builder(setter(skip))]
    #[serde(skip)]
    pub srv: Option<SrvInfo>,
    /// The SRV rescan interval (rescanSRVIntervalMS; `None`: 60 s). See
    /// [`SrvPollerOptions`].
    pub srv_rescan_interval: Option<Duration>,
    /// A declared Stable API version (`apiVersion`, `apiStrict`, `apiDeprecationErrors`),
    /// sent with every command, the handshake's `hello` included (`None`: nothing is sent).
    pub server_api: Option<ServerApi>,
    /// Admission control: the most operations waiting for a suitable server at once; past it
    /// an operation fails at once with [`ErrorKind::Overloaded`](crate::error::ErrorKind::Overloaded). `None` (the default, as in the
    /// official drivers): no limit.
    pub max_selection_waiters: Option<usize>,
    /// Admission control: the most check-outs waiting for a connection of one server's pool;
    /// past it an operation fails at once with [`ErrorKind::Overloaded`](crate::error::ErrorKind::Overloaded). `None` (the default):
    /// no limit.
    pub max_wait_queue_size: Option<u32>,
    /// How many events each subscriber's queue holds (`None`:
    /// [`DEFAULT_EVENT_QUEUE_CAPACITY`](crate::observe::delivery::DEFAULT_EVENT_QUEUE_CAPACITY)); see
    /// [`crate::observe::delivery`].
    pub event_queue_capacity: Option<usize>,
    /// OpenTelemetry tracing (feature `opentelemetry`; see [`crate::observe::otel`]). `None`: as the
    /// `OTEL_RUST_INSTRUMENTATION_MONGODB_*` environment variables say (off when unset).
    #[cfg(feature = "opentelemetry")]
    pub tracing: Option<crate::observe::otel::OpentelemetryOptions>,
}

fn default_hosts() -> Vec<ServerAddress> {
    vec![ServerAddress::default()]
}

/// Compares the options' values; the handlers, subscribers, custom selector and host resolver
/// (code, not values) and what an SRV lookup found are left out, as the official crate does.
impl PartialEq for ClientOptions {
    fn eq(&self, other: &Self) -> bool {
        // Destructured, so a new field cannot be forgotten here.
        let ClientOptions {
            hosts,
            credential,
            tls,
            compressors,
            driver_info,
            srv_service_name,
            srv_max_hosts,
            app_name,
            connect_timeout,
            direct_connection,
            heartbeat_freq,
            load_balanced,
            local_threshold,
            max_idle_time,
            max_pool_size,
            min_pool_size,
            max_connecting,
            read_concern,
            repl_set_name,
            retry_reads,
            retry_writes,
            server_monitoring_mode,
            server_selection_timeout,
            selection_criteria,
            default_database,
            write_concern,
            max_adaptive_retries,
            enable_overload_retargeting,
            connection_string,
            custom_selector: _,
            sdam_event_handler: _,
            cmap_event_handler: _,
            command_event_handler: _,
            resolver_config: _,
            host_resolver: _,
            srv: _,
            srv_rescan_interval,
            server_api,
            max_selection_waiters,
            max_wait_queue_size,
            event_queue_capacity,
            #[cfg(feature = "opentelemetry")]
            tracing,
        } = self;
        #[cfg(feature = "opentelemetry")]
        if tracing != &other.tracing {
            return false;
        }
        hosts == &other.hosts
            && credential == &other.credential
            && tls == &other.tls
            && compressors == &other.compressors
            && driver_info == &other.driver_info
            && srv_service_name == &other.srv_service_name
            && srv_max_hosts == &other.srv_max_hosts
            && app_name == &other.app_name
            && connect_timeout == &other.connect_timeout
            && direct_connection == &other.direct_connection
            && heartbeat_freq == &other.heartbeat_freq
            && load_balanced == &other.load_balanced
            && local_threshold == &other.local_threshold
            && max_idle_time == &other.max_idle_time
            && max_pool_size == &other.max_pool_size
            && min_pool_size == &other.min_pool_size
            && max_connecting == &other.max_connecting
            && read_concern == &other.read_concern
            && repl_set_name == &other.repl_set_name
            && retry_reads == &other.retry_reads
            && retry_writes == &other.retry_writes
            && server_monitoring_mode == &other.server_monitoring_mode
            && server_selection_timeout == &other.server_selection_timeout
            && selection_criteria == &other.selection_criteria
            && default_database == &other.default_database
            && write_concern == &other.write_concern
            && max_adaptive_retries == &other.max_adaptive_retries
            && enable_overload_retargeting == &other.enable_overload_retargeting
            && connection_string == &other.connection_string
            && srv_rescan_interval == &other.srv_rescan_interval
            && server_api == &other.server_api
            && max_selection_waiters == &other.max_selection_waiters
            && max_wait_queue_size == &other.max_wait_queue_size
            && event_queue_capacity == &other.event_queue_capacity
    }
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // ConnectionString's Debug redacts passwords (Credential and Secret).
        let mut d = f.debug_struct("ClientOptions");
        d.field("connection_string", &self.connection_string)
            .field("custom_selector", &self.custom_selector.is_some())
            .field("sdam_event_handler", &self.sdam_event_handler.is_some())
            .field("cmap_event_handler", &self.cmap_event_handler.is_some())
            .field("command_event_handler", &self.command_event_handler.is_some())
            .field("resolver_config", &self.resolver_config)
            .field("srv", &self.srv)
            .field("srv_rescan_interval", &self.srv_rescan_interval)
            .field("server_api", &self.server_api)
            .field("max_selection_waiters", &self.max_selection_waiters)
            .field("max_wait_queue_size", &self.max_wait_queue_size)
            .field("event_queue_capacity", &self.event_queue_capacity);
        #[cfg(feature = "opentelemetry")]
        d.field("tracing", &self.tracing);
        d.finish()
    }
}

impl Default for ClientOptions {
    /// What [`ClientOptions::builder`] builds with nothing set.
    fn default() -> Self {
        ClientOptions::builder().build()
    }
}

impl ClientOptions {
    /// Resolves a parsed connection string into options: `mongodb+srv` is looked up (SRV and
    /// TXT records), and a resolver with name servers of its own resolves every host name.
    ///
    /// Errors: [`ErrorKind::DnsResolve`](crate::error::ErrorKind::DnsResolve) when `mongodb+srv`
    /// resolution fails or breaks the spec's rules.
    pub(crate) async fn resolve(
        mut cs: ConnectionString,
        resolver_config: Option<ResolverConfig>,
    ) -> Result<ClientOptions> {
        let mut host_resolver = None;
        let mut srv_info = None;
        if cs.is_srv() {
            let config = resolver_config.clone().unwrap_or_default();
            let resolver = SrvResolver::new(&config)?;
            srv_info = srv::resolve(&mut cs, &resolver).await?;
            host_resolver = srv::host_resolver(&resolver);
        } else if let Some(config) = resolver_config.as_ref().filter(|c| !c.is_system()) {
            let resolver = SrvResolver::new(config)?;
            host_resolver = srv::host_resolver(&resolver);
        }
        let mut options = ClientOptions {
            connection_string: cs,
            resolver_config,
            host_resolver,
            srv: srv_info,
            ..ClientOptions::default()
        };
        options.spread_uri();
        Ok(options)
    }

    /// The client's write concern from `w`, `wtimeoutMS` and `journal` (`None`: none is set,
    /// the server's default); an error for a combination the spec forbids (`w=0&journal=true`).
    pub fn write_concern(&self) -> Result<Option<super::super::concern::WriteConcern>> {
        // The URI parser ignores a bad `w`, `wtimeoutMS` or `journal` with a warning; a write
        // concern must not silently become weaker than asked (read-write-concern spec).
        let bad = ["'w'", "'wtimeoutms'", "'journal'"];
        if let Some(w) = self.connection_string.warnings.iter().find(|w| {
            let w = w.to_ascii_lowercase();
            bad.iter().any(|key| w.contains(key))
        }) {
            return Err(Error::invalid_argument(w.clone()));
        }
        let o = &self.connection_string.options;
        let wc = super::super::concern::WriteConcern {
            w: o.w.clone(),
            w_timeout: o.w_timeout_ms.map(Duration::from_millis),
            journal: o.journal,
        };
        wc.validate()?;
        Ok((!wc.is_server_default()).then_some(wc))
    }

    /// The client's read concern from `readConcernLevel` (`None`: the server's default).
    pub fn read_concern(&self) -> Option<super::super::concern::ReadConcern> {
        let level = self.connection_string.options.read_concern_level.as_deref()?;
        Some(super::super::concern::ReadConcernLevel::from_name(level).into())
    }

    /// The SRV poller's options, or `None` when polling does not apply (not `mongodb+srv`, or
    /// `loadBalanced=true`).
    pub fn srv_poller_options(&self) -> Option<SrvPollerOptions> {
        let srv = self.srv.clone()?;
        let cs = &self.connection_string;
        if cs.options.load_balanced == Some(true) {
            return None;
        }
        Some(SrvPollerOptions {
            srv,
            resolver_config: self.resolver_config.clone().unwrap_or_default(),
            rescan_interval: self.srv_rescan_interval.unwrap_or(DEFAULT_RESCAN_INTERVAL),
            heartbeat_frequency: cs
                .options
                .heartbeat_frequency_ms
                .map(std::time::Duration::from_millis)
                .unwrap_or(protocol::sdam::DEFAULT_HEARTBEAT_FREQUENCY),
        })
    }

    /// The topology builder for these options: SDAM settings (seeds, replicaSet, srvMaxHosts,
    /// ...), pool options and connection options with the [`host_resolver`](Self::host_resolver).
    /// Event handlers are not set: the Client adds them (through `mongo_actors::metrics`).
    pub fn topology_builder(&self) -> Result<TopologyBuilder> {
        let cs = &self.connection_string;
        let mut builder = ConnectionOptions::builder_from_connection_string(cs)
            .platform(crate::cluster::topology::platform());
        if let Some(api) = &self.server_api {
            builder = builder.server_api(api.clone());
        }
        if let Some(info) = &self.driver_info {
            builder = builder.driver_info(info.clone());
        }
        if let Some(c) = &self.credential {
            builder = credential_hooks(builder, c)?;
        }
        let mut connection = builder.build()?;
        connection.set_host_resolver(self.host_resolver.clone());
        let mut topology = TopologyBuilder::from_connection_string(cs).connection_options(connection);
        if let Some(n) = self.max_wait_queue_size {
            let pool = pool::cmap::PoolOptions::from_uri_options(&cs.options)?;
            topology = topology.pool_options(pool.given().clone().max_wait_queue_size(n).build()?);
        }
        if let Some(capacity) = self.event_queue_capacity {
            topology = topology.event_queue_capacity(capacity);
        }
        Ok(topology)
    }
}

/// What a credential gives the connections besides its values: the MONGODB-OIDC callback (with
/// `ALLOWED_HOSTS`) and the AWS credential provider.
fn credential_hooks(
    mut builder: pool::connection::ConnectionOptionsBuilder,
    c: &Credential,
) -> Result<pool::connection::ConnectionOptionsBuilder> {
    let allowed_hosts = c.allowed_hosts()?;
    let is_oidc = c.mechanism == Some(protocol::uri::AuthMechanism::MongoDbOidc);
    if c.oidc_callback.is_set() && !is_oidc {
        return Err(Error::invalid_argument("an OIDC callback is set but the mechanism is not MONGODB-OIDC"));
    }
    match c.oidc_callback.authenticator(allowed_hosts.clone()) {
        Some(a) if a.flow() == pool::connection::OidcFlow::Machine && allowed_hosts.is_some() => {
            return Err(Error::invalid_argument("ALLOWED_HOSTS applies to a human OIDC callback only"));
        }
        Some(a) => builder = builder.oidc(a),
        None if allowed_hosts.is_some() => {
            return Err(Error::invalid_argument("ALLOWED_HOSTS applies to a human OIDC callback only"));
        }
        None => {}
    }
    #[cfg(feature = "aws-auth")]
    if let Some(p) = &c.aws_credential_provider {
        if c.mechanism != Some(protocol::uri::AuthMechanism::MongoDbAws) {
            return Err(Error::invalid_argument(
                "an AWS credential provider is set but the mechanism is not MONGODB-AWS",
            ));
        }
        builder = builder.aws_credential_provider(p.clone());
    }
    Ok(builder)
}

/// Applies `name=value` overrides to a connection string's options, each value read with the
/// URI parser's rules ([`UriOptions::with_overrides`]), failing on anything it would only warn
/// about; the result is validated (combinations) again.
pub(crate) fn apply_overrides(cs: &mut ConnectionString, overrides: &[(String, String)]) -> Result<()> {
    if overrides.is_empty() {
        return Ok(());
    }
    let invalid = |message: String| Error::invalid_argument(message);
    if let Some((name, _)) =
        overrides.iter().find(|(n, _)| !UriOptions::NAMES.iter().any(|k| k.eq_ignore_ascii_case(n)))
    {
        return Err(invalid(format!("unknown option '{name}'")));
    }
    let (options, warnings) = cs.options.with_overrides(overrides).map_err(|e| invalid(e.to_string()))?;
    if let Some(w) = warnings.first() {
        return Err(invalid(w.clone()));
    }
    let source = overrides.iter().any(|(n, _)| n.eq_ignore_ascii_case("authSource"));
    if let (true, Some(source), Some(c)) = (source, &options.auth_source, cs.credential.as_mut()) {
        c.source = Some(source.clone());
    }
    cs.options = options;
    cs.validate().map_err(|e| invalid(e.to_string()))
}

/// Options the URI may carry that this client parses but does not act on, each with what
/// happens instead; the client logs each as a warning once, when it starts. `Err` for options
/// whose silent fallback would do something else than the user asked: an authentication
/// mechanism this build does not have, and a proxy (connections would go around it).
pub fn options_without_effect(cs: &ConnectionString) -> Result<Vec<String>> {
    use protocol::uri::AuthMechanism;
    let o = &cs.options;
    let invalid = |message: String| Error::invalid_argument(message);
    if let Some(m) = cs.credential.as_ref().and_then(|c| c.mechanism) {
        let aws = cfg!(feature = "aws-auth") && m == AuthMechanism::MongoDbAws;
        if !aws
            && !matches!(
                m,
                AuthMechanism::ScramSha1
                    | AuthMechanism::ScramSha256
                    | AuthMechanism::MongoDbX509
                    | AuthMechanism::Plain
                    | AuthMechanism::MongoDbOidc
            )
        {
            let more = if m == AuthMechanism::MongoDbAws {
                " (MONGODB-AWS needs the `aws-auth` feature)"
            } else {
                ""
            };
            return Err(invalid(format!(
                "authMechanism {}: this client authenticates with SCRAM-SHA-1, SCRAM-SHA-256, MONGODB-X509, PLAIN, MONGODB-OIDC and, with the `aws-auth` feature, MONGODB-AWS only{more}",
                m.as_str()
            )));
        }
    }
    if o.proxy_host.is_some()
        || o.proxy_port.is_some()
        || o.proxy_username.is_some()
        || o.proxy_password.is_some()
    {
        return Err(invalid(
            "proxyHost, proxyPort, proxyUsername, proxyPassword: SOCKS5 proxies are not supported by this client"
                .into(),
        ));
    }
    let table: [(bool, &str); 2] = [
        (
            o.server_selection_try_once.is_some(),
            "serverSelectionTryOnce: only single-threaded drivers use it; selection waits up to serverSelectionTimeoutMS",
        ),
        (
            o.tls_disable_certificate_revocation_check.is_some() || o.tls_disable_ocsp_endpoint_check.is_some(),
            "tlsDisableCertificateRevocationCheck, tlsDisableOCSPEndpointCheck: this client never checks certificate revocation (OCSP or CRL)",
        ),
    ];
    let out = table.into_iter().filter(|(set, _)| *set).map(|(_, what)| what.to_string()).collect();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn overrides_win_and_are_checked() {
        let o = ClientOptions::parse("mongodb://h/?maxPoolSize=5&retryWrites=false&readPreference=secondary")
            .option("MAXPOOLSIZE", 7)
            .option("readPreference", "nearest")
            .option("appname", "a b&c")
            .await
            .unwrap();
        let opts = &o.connection_string.options;
        assert_eq!(opts.max_pool_size, Some(7));
        assert_eq!(opts.retry_writes, Some(false));
        assert_eq!(opts.app_name.as_deref(), Some("a b&c"));
        assert_eq!(opts.read_preference, Some(protocol::uri::ReadPreferenceMode::Nearest));
        assert_eq!((o.max_pool_size, o.retry_writes), (Some(7), Some(false)));

        for (k, v) in
            [("maxPoolSize", "-1"), ("nope", "1"), ("retryReads", "maybe"), ("directConnection", "x")]
        {
            let e = ClientOptions::parse("mongodb://h").option(k, v).await.unwrap_err();
            assert!(matches!(*e.kind, crate::error::ErrorKind::InvalidArgument { .. }), "{k}: {e}");
        }
        // Combinations are checked after the overlay.
        let e = ClientOptions::parse("mongodb://a,b").option("directConnection", true).await;
        assert!(e
            .as_ref()
            .is_err_and(|e| matches!(*e.kind, crate::error::ErrorKind::InvalidArgument { .. })));
        let e = ClientOptions::parse("mongodb://a").option("minPoolSize", 9).option("maxPoolSize", 3).await;
        assert!(e
            .as_ref()
            .is_err_and(|e| matches!(*e.kind, crate::error::ErrorKind::InvalidArgument { .. })));
        assert!(ClientOptions::parse("")
            .await
            .as_ref()
            .is_err_and(|e| matches!(*e.kind, crate::error::ErrorKind::InvalidArgument { .. })));
    }

    #[tokio::test]
    async fn an_edited_connection_string_wins_over_what_it_was_parsed_from() {
        let mut cs =
            super::super::ConnectionString::parse("mongodb://h1,h2/db?maxPoolSize=5&timeoutMS=300").unwrap();
        cs.max_pool_size = Some(9);
        cs.host_info = super::super::HostInfo::HostIdentifiers(vec![ServerAddress::parse("h3:1").unwrap()]);
        cs.app_name = Some("edited".into());
        let o = ClientOptions::parse(cs).await.unwrap();
        assert_eq!(o.max_pool_size, Some(9));
        assert_eq!(o.hosts, vec![ServerAddress::parse("h3:1").unwrap()]);
        assert_eq!(o.app_name.as_deref(), Some("edited"));
        assert_eq!(o.default_database.as_deref(), Some("db"));
        // What has no field is kept from the string.
        assert_eq!(o.connection_string.options.timeout_ms, Some(300));
        // An edit a URI could not hold is refused as the URI would be.
        let mut cs = super::super::ConnectionString::parse("mongodb://h1,h2").unwrap();
        cs.direct_connection = Some(true);
        let e = ClientOptions::parse(cs).await.unwrap_err();
        assert!(matches!(*e.kind, crate::error::ErrorKind::InvalidArgument { .. }), "{e}");
    }

    #[test]
    fn options_deserialize_by_their_camel_case_names_and_compare_by_value() {
        let json = r#"{"appName": "svc", "maxPoolSize": 7, "retryWrites": false,
                       "hosts": [{"host": "h", "port": 1}]}"#;
        let o: ClientOptions = serde_json::from_str(json).unwrap();
        let built = ClientOptions::builder()
            .app_name("svc".to_string())
            .max_pool_size(7)
            .retry_writes(false)
            .hosts(vec![ServerAddress::parse("h:1").unwrap()])
            .build();
        assert!(o == built);
        assert!(serde_json::from_str::<ClientOptions>("{}").unwrap() == ClientOptions::default());
        // A handler is code, not a value: it does not make two options differ.
        let handled = ClientOptions::builder()
            .command_event_handler(crate::observe::official::EventHandler::callback(|_| {}))
            .build();
        assert!(handled == ClientOptions::default());
        assert!(built != ClientOptions::default());
        // An unknown key is refused, not ignored.
        assert!(serde_json::from_str::<ClientOptions>(r#"{"maxPoolSise": 1}"#).is_err());
    }

    #[test]
    fn the_typed_builder_sets_fields_and_the_client_checks_them() {
        let o = ClientOptions::builder()
            .hosts(vec![ServerAddress::parse("h:1").unwrap()])
            .max_pool_size(4)
            .server_selection_timeout(Duration::from_millis(250))
            .build();
        assert_eq!(
            (o.max_pool_size, o.server_selection_timeout),
            (Some(4), Some(Duration::from_millis(250)))
        );
        let bad = ClientOptions::builder().min_pool_size(9).max_pool_size(3).build();
        let e = crate::client::inner::Client::with_options(bad).unwrap_err();
        assert!(matches!(*e.kind, crate::error::ErrorKind::InvalidArgument { .. }), "{e}");
    }

    #[tokio::test]
    async fn debug_hides_passwords() {
        let cs = super::super::ConnectionString::parse("mongodb://u:hunter2@h/?proxyHost=p").unwrap();
        assert!(!format!("{cs:?}").contains("hunter2"));
        let o = ClientOptions::parse(cs).await.unwrap();
        assert!(!format!("{o:?}").contains("hunter2"));
        assert!(!format!("{o:#?}").contains("hunter2"));
    }

    #[tokio::test]
    async fn topology_builder_from_options() {
        let o = ClientOptions::parse("mongodb://h1:1,h2:2/?heartbeatFrequencyMS=600").await.unwrap();
        let actor = o.topology_builder().unwrap().build().unwrap();
        assert_eq!(actor.description().addresses().count(), 2);
        assert_eq!(actor.description().settings().heartbeat_frequency, Duration::from_millis(600));
    }
}
