//! Client options: typed fields (the official driver's, and ours beside them) plus what a URI
//! cannot carry (custom selector, event handlers, DNS resolver). A URI is read into the fields
//! once; the client is built from the fields alone.
//!
//! - [`ClientOptions::parse`]: a URI (or a [`ConnectionString`](super::ConnectionString));
//!   `mongodb+srv` is resolved through the system's DNS or the resolver given.
//! - [`ClientOptions::builder`]: the official typed builder, field by field (no URI).
//! - [`ClientOptions::from_config`](super::super::config): a file and environment variables.

use std::sync::Arc;
use std::time::Duration;

use pool::connection::HostResolver;
use protocol::hello::command::ServerApi;
use protocol::uri::{ServerMonitoringMode, DEFAULT_SRV_SERVICE_NAME};

use super::super::concern::{ReadConcern, WriteConcern};

use super::compressor::Compressor;
use super::credential::Credential;
use super::tls::Tls;
pub use super::uri_notes::options_without_effect;
use crate::cluster::selection::CustomSelector;
use crate::cluster::selection_criteria::SelectionCriteria;
use crate::cluster::srv::{self, ResolverConfig, SrvInfo, SrvResolver, TxtOptions};
use crate::error::{Error, Result};
use crate::observe::official::EventHandler;
use protocol::hello::metadata::DriverInfo;
use protocol::ServerAddress;
use typed_builder::TypedBuilder;

/// Everything a [`Client`](crate::Client) is built from: the official driver's option
/// fields (filled from the URI by [`ClientOptions::parse`], with `mongodb+srv` already resolved
/// into hosts, then edited at will: `opts.app_name = Some("app".into())`), and what only this
/// client has.
///
/// The fields are the one source: [`Client::with_options`](crate::Client::with_options)
/// checks them as a URI's options would be checked and builds the actors, connections and
/// pools from them (a field set to `None` takes the default).
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
    /// (Ours.) The default time limit of every operation, retries included (`timeoutMS`,
    /// client-side operation timeouts; `Duration::ZERO`: none). When set, it replaces
    /// `socket_timeout`, `wait_queue_timeout` and the write concern's `w_timeout`.
    pub timeout: Option<Duration>,
    /// (Ours.) How long one read or write on a connection may take (`socketTimeoutMS`;
    /// `Duration::ZERO` or `None`: no limit).
    pub socket_timeout: Option<Duration>,
    /// (Ours.) How long a check-out may wait for a pooled connection (`waitQueueTimeoutMS`;
    /// `None`: until the operation's own deadline).
    pub wait_queue_timeout: Option<Duration>,
    /// What parsing the connection string had to say: options it ignored, options this client
    /// does not act on (logged once when the client starts), and what it refuses.
    #[builder(setter(skip))]
    #[serde(skip)]
    pub(crate) uri_notes: super::uri_notes::UriNotes,
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
            timeout,
            socket_timeout,
            wait_queue_timeout,
            uri_notes: _,
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
            && timeout == &other.timeout
            && socket_timeout == &other.socket_timeout
            && wait_queue_timeout == &other.wait_queue_timeout
            && srv_rescan_interval == &other.srv_rescan_interval
            && server_api == &other.server_api
            && max_selection_waiters == &other.max_selection_waiters
            && max_wait_queue_size == &other.max_wait_queue_size
            && event_queue_capacity == &other.event_queue_capacity
    }
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Credential's and TlsOptions' Debug redact their passwords.
        let mut d = f.debug_struct("ClientOptions");
        d.field("hosts", &self.hosts)
            .field("credential", &self.credential)
            .field("tls", &self.tls)
            .field("compressors", &self.compressors)
            .field("driver_info", &self.driver_info)
            .field("srv_service_name", &self.srv_service_name)
            .field("srv_max_hosts", &self.srv_max_hosts)
            .field("app_name", &self.app_name)
            .field("connect_timeout", &self.connect_timeout)
            .field("direct_connection", &self.direct_connection)
            .field("heartbeat_freq", &self.heartbeat_freq)
            .field("load_balanced", &self.load_balanced)
            .field("local_threshold", &self.local_threshold)
            .field("max_idle_time", &self.max_idle_time)
            .field("max_pool_size", &self.max_pool_size)
            .field("min_pool_size", &self.min_pool_size)
            .field("max_connecting", &self.max_connecting)
            .field("read_concern", &self.read_concern)
            .field("repl_set_name", &self.repl_set_name)
            .field("retry_reads", &self.retry_reads)
            .field("retry_writes", &self.retry_writes)
            .field("server_monitoring_mode", &self.server_monitoring_mode)
            .field("server_selection_timeout", &self.server_selection_timeout)
            .field("selection_criteria", &self.selection_criteria)
            .field("default_database", &self.default_database)
            .field("write_concern", &self.write_concern)
            .field("max_adaptive_retries", &self.max_adaptive_retries)
            .field("enable_overload_retargeting", &self.enable_overload_retargeting)
            .field("timeout", &self.timeout)
            .field("socket_timeout", &self.socket_timeout)
            .field("wait_queue_timeout", &self.wait_queue_timeout)
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
    /// The options a connection string gives, `mongodb+srv` resolved (SRV and TXT records),
    /// checked; a resolver with name servers of its own resolves every host name.
    ///
    /// Errors: [`ErrorKind::DnsResolve`](crate::error::ErrorKind::DnsResolve) when `mongodb+srv`
    /// resolution fails or breaks the spec's rules;
    /// [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument) for options a
    /// URI could not combine.
    pub(crate) async fn resolve(
        cs: super::ConnectionString,
        resolver_config: Option<ResolverConfig>,
    ) -> Result<ClientOptions> {
        let mut options = ClientOptions::from_connection_string(cs)?;
        if let Some(srv_host) = options.uri_notes.srv_host.clone() {
            let config = resolver_config.clone().unwrap_or_default();
            let resolver = SrvResolver::new(&config)?;
            let service_name =
                options.srv_service_name.clone().unwrap_or_else(|| DEFAULT_SRV_SERVICE_NAME.into());
            let found =
                srv::resolve_seeds(&srv_host, &service_name, options.srv_max_hosts, &resolver).await?;
            options.apply_txt(found.txt);
            options.hosts = found.hosts;
            options.srv = Some(found.info);
            options.host_resolver = srv::host_resolver(&resolver);
        } else if let Some(config) = resolver_config.as_ref().filter(|c| !c.is_system()) {
            options.host_resolver = srv::host_resolver(&SrvResolver::new(config)?);
        }
        options.resolver_config = resolver_config;
        options.validate()?;
        Ok(options)
    }

    /// Merges a TXT record's options; what the connection string says wins. `authSource` alone
    /// does not ask for authentication: it names the database of a credential the string gave.
    fn apply_txt(&mut self, txt: TxtOptions) {
        if self.repl_set_name.is_none() {
            self.repl_set_name = txt.replica_set;
        }
        if self.load_balanced.is_none() {
            self.load_balanced = txt.load_balanced;
        }
        if let (Some(source), Some(c)) = (txt.auth_source, self.credential.as_mut()) {
            if !self.uri_notes.auth_source_given {
                c.source = Some(source);
            }
        }
    }

    /// The client's write concern (`None`: none is set, the server's default); an error for a
    /// combination the spec forbids (`w=0&journal=true`), and for a `w`, `wtimeoutMS` or
    /// `journal` the URI parser ignored: a write concern must not silently become weaker than
    /// asked (read-write-concern spec).
    pub fn write_concern(&self) -> Result<Option<WriteConcern>> {
        let bad = ["'w'", "'wtimeoutms'", "'journal'"];
        if let Some(w) = self.uri_notes.warnings.iter().find(|w| {
            let w = w.to_ascii_lowercase();
            bad.iter().any(|key| w.contains(key))
        }) {
            return Err(Error::invalid_argument(w.clone()));
        }
        let Some(wc) = self.write_concern.clone() else { return Ok(None) };
        wc.validate()?;
        Ok((!wc.is_server_default()).then_some(wc))
    }

    /// The client's read concern (`readConcernLevel`; `None`: the server's default).
    pub fn read_concern(&self) -> Option<ReadConcern> {
        self.read_concern.clone()
    }
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
        assert_eq!((o.max_pool_size, o.retry_writes), (Some(7), Some(false)));
        assert_eq!(o.app_name.as_deref(), Some("a b&c"));
        let mode = o.selection_criteria.as_ref().and_then(|c| c.as_read_pref()).map(|rp| rp.mode());
        assert_eq!(mode, Some(protocol::uri::ReadPreferenceMode::Nearest));

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
        assert_eq!(o.timeout, Some(Duration::from_millis(300)));
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
        // A proxy is refused (connections would go around it), without the password.
        let e = ClientOptions::parse(cs).await.unwrap_err();
        assert!(e.to_string().contains("SOCKS5") && !e.to_string().contains("hunter2"), "{e}");
        let uri = "mongodb://u:hunter2@h/?tls=true&tlsCertificateKeyFilePassword=hunter2";
        let o = ClientOptions::parse(uri).await.unwrap();
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
