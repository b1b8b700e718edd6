//! Client options from a configuration file and environment variables, through the `config`
//! crate.
//!
//! [`ClientOptions::from_config`] merges, from lowest to highest precedence:
//! 1. the connection string: the `uri` argument if given, else the `uri` of the file or the
//!    environment (`MONGO_ACTORS_URI`), with the options in its query string;
//! 2. the options in the file (TOML, YAML or JSON, chosen by the extension: `.toml`, `.yaml` /
//!    `.yml`, `.json`);
//! 3. environment variables `MONGO_ACTORS_<OPTION>` (e.g. `MONGO_ACTORS_MAX_POOL_SIZE=20`).
//!
//! Option names are the snake_case forms of the URI option names (see [`ClientConfig`]).
//! Values are checked with the URI rules, but an invalid value, an unknown key in the file or
//! an unknown `MONGO_ACTORS_*` variable is an [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument), never ignored.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::options::ClientOptions;
use crate::cluster::srv::ResolverConfig;
use crate::error::{Error, Result};

/// The environment variable prefix.
pub const ENV_PREFIX: &str = "MONGO_ACTORS";

/// What a configuration file or the environment can set: `uri` plus URI options under their
/// snake_case names. `None` = not set.
///
/// `Debug` and `Serialize` show the connection string with its password redacted.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClientConfig {
    /// The connection string.
    #[serde(serialize_with = "redacted_uri")]
    pub uri: Option<String>,
    /// `appname`.
    pub app_name: Option<String>,
    /// `maxPoolSize`.
    pub max_pool_size: Option<u32>,
    /// `minPoolSize`.
    pub min_pool_size: Option<u32>,
    /// `maxConnecting`.
    pub max_connecting: Option<u32>,
    /// `maxIdleTimeMS`.
    pub max_idle_time_ms: Option<u64>,
    /// `waitQueueTimeoutMS`.
    pub wait_queue_timeout_ms: Option<u64>,
    /// `serverSelectionTimeoutMS`.
    pub server_selection_timeout_ms: Option<u64>,
    /// `heartbeatFrequencyMS`.
    pub heartbeat_frequency_ms: Option<u64>,
    /// `localThresholdMS`.
    pub local_threshold_ms: Option<u64>,
    /// `connectTimeoutMS`.
    pub connect_timeout_ms: Option<u64>,
    /// `socketTimeoutMS`.
    pub socket_timeout_ms: Option<u64>,
    /// `timeoutMS`.
    pub timeout_ms: Option<u64>,
    /// `retryReads`.
    pub retry_reads: Option<bool>,
    /// `retryWrites`.
    pub retry_writes: Option<bool>,
    /// `readPreference` (`primary`, `primaryPreferred`, `secondary`, ...).
    pub read_preference: Option<String>,
    /// `maxStalenessSeconds`.
    pub max_staleness_seconds: Option<i64>,
    /// `readConcernLevel`.
    pub read_concern_level: Option<String>,
    /// `w` (a number, `majority` or a tag set name).
    pub w: Option<String>,
    /// `wTimeoutMS`.
    pub w_timeout_ms: Option<u64>,
    /// `journal`.
    pub journal: Option<bool>,
    /// `replicaSet`.
    pub replica_set: Option<String>,
    /// `directConnection`.
    pub direct_connection: Option<bool>,
    /// `loadBalanced`.
    pub load_balanced: Option<bool>,
    /// `serverMonitoringMode` (`stream`, `poll`, `auto`).
    pub server_monitoring_mode: Option<String>,
    /// `compressors` (comma-separated).
    pub compressors: Option<String>,
    /// `authSource`.
    pub auth_source: Option<String>,
    /// `tls`.
    pub tls: Option<bool>,
    /// `tlsCAFile`.
    pub tls_ca_file: Option<String>,
    /// `tlsCertificateKeyFile`.
    pub tls_certificate_key_file: Option<String>,
    /// `tlsAllowInvalidCertificates`.
    pub tls_allow_invalid_certificates: Option<bool>,
    /// `tlsAllowInvalidHostnames`.
    pub tls_allow_invalid_hostnames: Option<bool>,
    /// `tlsInsecure`.
    pub tls_insecure: Option<bool>,
    /// `srvMaxHosts`.
    pub srv_max_hosts: Option<u32>,
    /// `srvServiceName`.
    pub srv_service_name: Option<String>,
    /// DNS name servers for `mongodb+srv` (`ip:port` strings); empty: the system's.
    pub dns_name_servers: Option<Vec<String>>,
    /// Admission control (not a URI option): see
    /// [`ClientOptions::max_selection_waiters`](super::ClientOptions::max_selection_waiters).
    pub max_selection_waiters: Option<usize>,
    /// Admission control (not a URI option): see
    /// [`ClientOptions::max_wait_queue_size`](super::ClientOptions::max_wait_queue_size).
    pub max_wait_queue_size: Option<u32>,
    /// Each event subscriber's queue (not a URI option): see
    /// [`ClientOptions::event_queue_capacity`](super::ClientOptions::event_queue_capacity).
    pub event_queue_capacity: Option<usize>,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("uri", &self.uri.as_deref().map(protocol::uri::redact_uri))
            .field("app_name", &self.app_name)
            .field("max_pool_size", &self.max_pool_size)
            .field("min_pool_size", &self.min_pool_size)
            .field("max_connecting", &self.max_connecting)
            .field("max_idle_time_ms", &self.max_idle_time_ms)
            .field("wait_queue_timeout_ms", &self.wait_queue_timeout_ms)
            .field("server_selection_timeout_ms", &self.server_selection_timeout_ms)
            .field("heartbeat_frequency_ms", &self.heartbeat_frequency_ms)
            .field("local_threshold_ms", &self.local_threshold_ms)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .field("socket_timeout_ms", &self.socket_timeout_ms)
            .field("timeout_ms", &self.timeout_ms)
            .field("retry_reads", &self.retry_reads)
            .field("retry_writes", &self.retry_writes)
            .field("read_preference", &self.read_preference)
            .field("max_staleness_seconds", &self.max_staleness_seconds)
            .field("read_concern_level", &self.read_concern_level)
            .field("w", &self.w)
            .field("w_timeout_ms", &self.w_timeout_ms)
            .field("journal", &self.journal)
            .field("replica_set", &self.replica_set)
            .field("direct_connection", &self.direct_connection)
            .field("load_balanced", &self.load_balanced)
            .field("server_monitoring_mode", &self.server_monitoring_mode)
            .field("compressors", &self.compressors)
            .field("auth_source", &self.auth_source)
            .field("tls", &self.tls)
            .field("tls_ca_file", &self.tls_ca_file)
            .field("tls_certificate_key_file", &self.tls_certificate_key_file)
            .field("tls_allow_invalid_certificates", &self.tls_allow_invalid_certificates)
            .field("tls_allow_invalid_hostnames", &self.tls_allow_invalid_hostnames)
            .field("tls_insecure", &self.tls_insecure)
            .field("srv_max_hosts", &self.srv_max_hosts)
            .field("srv_service_name", &self.srv_service_name)
            .field("dns_name_servers", &self.dns_name_servers)
            .field("max_selection_waiters", &self.max_selection_waiters)
            .field("max_wait_queue_size", &self.max_wait_queue_size)
            .field("event_queue_capacity", &self.event_queue_capacity)
            .finish()
    }
}

fn redacted_uri<S: serde::Serializer>(uri: &Option<String>, s: S) -> std::result::Result<S::Ok, S::Error> {
    match uri {
        Some(u) => s.serialize_some(&protocol::uri::redact_uri(u)),
        None => s.serialize_none(),
    }
}

/// The URI spelling of each [`ClientConfig`] option field.
const URI_NAMES: [(&str, &str); 34] = [
    ("app_name", "appname"),
    ("max_pool_size", "maxPoolSize"),
    ("min_pool_size", "minPoolSize"),
    ("max_connecting", "maxConnecting"),
    ("max_idle_time_ms", "maxIdleTimeMS"),
    ("wait_queue_timeout_ms", "waitQueueTimeoutMS"),
    ("server_selection_timeout_ms", "serverSelectionTimeoutMS"),
    ("heartbeat_frequency_ms", "heartbeatFrequencyMS"),
    ("local_threshold_ms", "localThresholdMS"),
    ("connect_timeout_ms", "connectTimeoutMS"),
    ("socket_timeout_ms", "socketTimeoutMS"),
    ("timeout_ms", "timeoutMS"),
    ("retry_reads", "retryReads"),
    ("retry_writes", "retryWrites"),
    ("read_preference", "readPreference"),
    ("max_staleness_seconds", "maxStalenessSeconds"),
    ("read_concern_level", "readConcernLevel"),
    ("w", "w"),
    ("w_timeout_ms", "wTimeoutMS"),
    ("journal", "journal"),
    ("replica_set", "replicaSet"),
    ("direct_connection", "directConnection"),
    ("load_balanced", "loadBalanced"),
    ("server_monitoring_mode", "serverMonitoringMode"),
    ("compressors", "compressors"),
    ("auth_source", "authSource"),
    ("tls", "tls"),
    ("tls_ca_file", "tlsCAFile"),
    ("tls_certificate_key_file", "tlsCertificateKeyFile"),
    ("tls_allow_invalid_certificates", "tlsAllowInvalidCertificates"),
    ("tls_allow_invalid_hostnames", "tlsAllowInvalidHostnames"),
    ("tls_insecure", "tlsInsecure"),
    ("srv_max_hosts", "srvMaxHosts"),
    ("srv_service_name", "srvServiceName"),
];

fn invalid(message: impl Into<String>) -> Error {
    Error::invalid_argument(message.into())
}

impl ClientConfig {
    /// Loads the file (if any) and the process environment (`MONGO_ACTORS_*`), the
    /// environment winning.
    pub fn load(file: Option<&Path>) -> Result<ClientConfig> {
        Self::load_with_env(file, None)
    }

    /// Like [`load`](Self::load), with `env` (variable name to value) standing in for the
    /// process environment when given (for tests).
    pub fn load_with_env(file: Option<&Path>, env: Option<HashMap<String, String>>) -> Result<ClientConfig> {
        let mut builder = config::Config::builder();
        if let Some(path) = file {
            // The format comes from the extension; an unknown one is an error.
            builder = builder.add_source(config::File::from(path).required(true));
        }
        let environment = config::Environment::with_prefix(ENV_PREFIX)
            .prefix_separator("_")
            .try_parsing(true)
            .list_separator(",")
            .with_list_parse_key("dns_name_servers")
            .source(env);
        builder = builder.add_source(environment);
        let loaded = builder.build().map_err(|e| invalid(format!("cannot load the configuration: {e}")))?;
        loaded.try_deserialize().map_err(|e| invalid(format!("invalid configuration: {e}")))
    }

    /// The options as `(URI name, value)` pairs, in a fixed order.
    pub fn uri_options(&self) -> Result<Vec<(String, String)>> {
        let value = serde_json::to_value(self).map_err(|e| invalid(e.to_string()))?;
        let serde_json::Value::Object(map) = value else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        for (field, uri_name) in URI_NAMES {
            let rendered = match map.get(field) {
                None | Some(serde_json::Value::Null) => continue,
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            out.push((uri_name.to_string(), rendered));
        }
        Ok(out)
    }

    /// The resolver configuration from `dns_name_servers`.
    pub fn resolver_config(&self) -> Result<Option<ResolverConfig>> {
        let Some(servers) = &self.dns_name_servers else { return Ok(None) };
        let addrs = servers
            .iter()
            .map(|s| s.trim().parse().map_err(|_| invalid(format!("dns_name_servers: '{s}' is not ip:port"))))
            .collect::<Result<Vec<std::net::SocketAddr>>>()?;
        Ok(Some(ResolverConfig::with_name_servers(addrs)))
    }
}

impl ClientOptions {
    /// Options from a connection string, a configuration file and the environment.
    ///
    /// Precedence, lowest first: the URI's own options < the file < the environment
    /// (`MONGO_ACTORS_*`). The `uri` argument, when given, replaces the `uri` of the file and
    /// of `MONGO_ACTORS_URI`; without any URI this fails. `mongodb+srv` is resolved as in
    /// [`ClientOptions::parse`] (with `dns_name_servers` if configured).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use mongo_actors::client::ClientOptions;
    ///
    /// let dir = std::env::temp_dir().join(format!("mongo-actors-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let file = dir.join("client.toml");
    /// std::fs::write(&file, "uri = \"mongodb://db1:27017/?maxPoolSize=5\"\nmax_pool_size = 20\napp_name = \"svc\"\n").unwrap();
    ///
    /// let o = ClientOptions::from_config(None, Some(&file)).await.unwrap();
    /// assert_eq!(o.max_pool_size, Some(20)); // the file wins over the URI
    /// assert_eq!(o.app_name.as_deref(), Some("svc"));
    ///
    /// // An explicit URI replaces the file's; the file's options still apply.
    /// let o = ClientOptions::from_config(Some("mongodb://other:1"), Some(&file)).await.unwrap();
    /// assert_eq!(o.hosts[0].to_string(), "other:1");
    /// assert_eq!(o.max_pool_size, Some(20));
    ///
    /// std::fs::write(&file, "uri = \"mongodb://db1\"\nmax_pool_size = -3\n").unwrap();
    /// let r = ClientOptions::from_config(None, Some(&file)).await;
    /// assert!(r.is_err_and(|e| matches!(*e.kind, mongo_actors::error::ErrorKind::InvalidArgument { .. })));
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # });
    /// ```
    pub async fn from_config(uri: Option<&str>, file: Option<&Path>) -> Result<ClientOptions> {
        Self::from_client_config(uri, ClientConfig::load(file)?).await
    }

    /// [`from_config`](Self::from_config) with an already loaded [`ClientConfig`].
    pub async fn from_client_config(uri: Option<&str>, config: ClientConfig) -> Result<ClientOptions> {
        let uri = uri.map(str::to_string).or_else(|| config.uri.clone()).ok_or_else(|| {
            invalid("no connection string: pass a uri, or set `uri` in the file or MONGO_ACTORS_URI")
        })?;
        let mut parse = ClientOptions::parse(uri.as_str());
        for (name, value) in config.uri_options()? {
            parse = parse.option(&name, value);
        }
        if let Some(r) = config.resolver_config()? {
            parse = parse.resolver_config(r);
        }
        let mut options = parse.await?;
        options.max_selection_waiters = config.max_selection_waiters;
        options.max_wait_queue_size = config.max_wait_queue_size;
        if config.event_queue_capacity == Some(0) {
            return Err(invalid("event_queue_capacity must be at least 1"));
        }
        options.event_queue_capacity = config.event_queue_capacity;
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, contents: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("mongo-actors-config-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }

    fn env(pairs: &[(&str, &str)]) -> Option<HashMap<String, String>> {
        Some(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    #[tokio::test]
    async fn negative_timeout_ms_is_an_error() {
        let toml = temp_file("neg.toml", "uri = \"mongodb://db1/\"\ntimeout_ms = -5\n");
        assert!(ClientConfig::load_with_env(Some(&toml), env(&[])).is_err(), "file");
        let e = env(&[("MONGO_ACTORS_URI", "mongodb://db1/"), ("MONGO_ACTORS_TIMEOUT_MS", "-5")]);
        assert!(ClientConfig::load_with_env(None, e).is_err(), "environment");
        // The URI parser warns (URI options spec); the client refuses it.
        let e = crate::client::inner::Client::with_uri_str("mongodb://127.0.0.1:1/?timeoutMS=-5")
            .await
            .unwrap_err();
        assert!(matches!(*e.kind, crate::error::ErrorKind::InvalidArgument { .. }), "URI: {e}");
        let o = ClientOptions::parse("mongodb://db1/?timeoutMS=0").await.unwrap();
        assert_eq!(o.timeout, Some(std::time::Duration::ZERO));
    }

    #[tokio::test]
    async fn overload_limits_from_the_file_and_the_environment() {
        let toml = temp_file(
            "overload.toml",
            "uri = \"mongodb://db1/\"\nmax_selection_waiters = 100\nmax_wait_queue_size = 50\nevent_queue_capacity = 64\n",
        );
        let config =
            ClientConfig::load_with_env(Some(&toml), env(&[("MONGO_ACTORS_MAX_WAIT_QUEUE_SIZE", "7")]))
                .unwrap();
        let o = ClientOptions::from_client_config(None, config).await.unwrap();
        assert_eq!(
            (o.max_selection_waiters, o.max_wait_queue_size, o.event_queue_capacity),
            (Some(100), Some(7), Some(64))
        );
        let bad = temp_file("overload-bad.toml", "uri = \"mongodb://db1/\"\nevent_queue_capacity = 0\n");
        let config = ClientConfig::load_with_env(Some(&bad), env(&[])).unwrap();
        assert!(ClientOptions::from_client_config(None, config).await.is_err());
    }

    #[tokio::test]
    async fn timeout_ms_from_the_file_and_the_environment_applies() {
        // timeoutMS is not in the uri-options table; the override list must still accept it.
        let toml = temp_file("csot.toml", "uri = \"mongodb://db1/?timeoutMS=100\"\ntimeout_ms = 2000\n");
        let config = ClientConfig::load_with_env(Some(&toml), env(&[])).unwrap();
        let o = ClientOptions::from_client_config(None, config).await.unwrap();
        assert_eq!(o.timeout, Some(std::time::Duration::from_millis(2000)));
        let config =
            ClientConfig::load_with_env(Some(&toml), env(&[("MONGO_ACTORS_TIMEOUT_MS", "0")])).unwrap();
        let o = ClientOptions::from_client_config(None, config).await.unwrap();
        assert_eq!(o.timeout, Some(std::time::Duration::ZERO));
    }

    #[tokio::test]
    async fn yaml_and_json_files() {
        let yaml = temp_file(
            "c.yaml",
            "uri: mongodb://db1/\napp_name: fromYaml\nretry_writes: false\nread_preference: secondaryPreferred\n",
        );
        let json = temp_file(
            "c.json",
            r#"{"uri": "mongodb://db2/", "max_connecting": 4, "heartbeat_frequency_ms": 700}"#,
        );
        let c = ClientConfig::load_with_env(Some(&yaml), env(&[])).unwrap();
        let o = ClientOptions::from_client_config(None, c).await.unwrap();
        assert_eq!(o.app_name.as_deref(), Some("fromYaml"));
        assert_eq!(o.retry_writes, Some(false));
        let mode = o.selection_criteria.as_ref().and_then(|c| c.as_read_pref()).map(|rp| rp.mode());
        assert_eq!(mode, Some(protocol::uri::ReadPreferenceMode::SecondaryPreferred));
        let c = ClientConfig::load_with_env(Some(&json), env(&[])).unwrap();
        let o = ClientOptions::from_client_config(None, c).await.unwrap();
        assert_eq!(o.max_connecting, Some(4));
        assert_eq!(o.heartbeat_freq, Some(std::time::Duration::from_millis(700)));
        assert_eq!(o.hosts[0].to_string(), "db2:27017");
    }

    #[tokio::test]
    async fn environment_wins_over_file() {
        let toml = temp_file(
            "p.toml",
            "uri = \"mongodb://db1/?appname=uri\"\napp_name = \"file\"\nmax_pool_size = 10\n",
        );
        let c = ClientConfig::load_with_env(
            Some(&toml),
            env(&[
                ("MONGO_ACTORS_APP_NAME", "env"),
                ("MONGO_ACTORS_DNS_NAME_SERVERS", "127.0.0.1:53,127.0.0.1:54"),
            ]),
        )
        .unwrap();
        assert_eq!(c.app_name.as_deref(), Some("env"));
        assert_eq!(c.max_pool_size, Some(10));
        let r = c.resolver_config().unwrap().unwrap();
        assert_eq!(r.name_servers().len(), 2);
    }

    #[tokio::test]
    async fn bad_values_are_typed_errors() {
        let cases: [(&str, &str); 6] = [
            ("a.toml", "uri = \"mongodb://h\"\nmax_pool_size = \"many\"\n"),
            ("b.toml", "uri = \"mongodb://h\"\nunknown_option = 1\n"),
            ("c.toml", "uri = \"mongodb://h\"\nheartbeat_frequency_ms = 10\n"),
            ("d.toml", "uri = \"mongodb://h\"\nread_preference = \"closest\"\n"),
            ("e.toml", "uri = \"nope://h\"\n"),
            ("f.toml", "not toml at all ==="),
        ];
        for (name, contents) in cases {
            let path = temp_file(name, contents);
            let r = match ClientConfig::load_with_env(Some(&path), env(&[])) {
                Ok(c) => ClientOptions::from_client_config(None, c).await.map(|_| ()),
                Err(e) => Err(e),
            };
            assert!(
                r.as_ref().is_err_and(|e| matches!(*e.kind, crate::error::ErrorKind::InvalidArgument { .. })),
                "{name}: {r:?}"
            );
        }
        let unknown_ext = temp_file("g.ini2", "x=1");
        let r = ClientConfig::load_with_env(Some(&unknown_ext), env(&[]));
        assert!(r.is_err_and(|e| matches!(*e.kind, crate::error::ErrorKind::InvalidArgument { .. })));
        let missing = std::env::temp_dir().join("mongo-actors-no-such-file.toml");
        let r = ClientConfig::load_with_env(Some(&missing), env(&[]));
        assert!(r.is_err_and(|e| matches!(*e.kind, crate::error::ErrorKind::InvalidArgument { .. })));
        // No URI anywhere.
        let r = ClientOptions::from_client_config(None, ClientConfig::default()).await;
        assert!(r
            .as_ref()
            .is_err_and(|e| matches!(*e.kind, crate::error::ErrorKind::InvalidArgument { .. })));
        // Bad environment value.
        let r = ClientConfig::load_with_env(None, env(&[("MONGO_ACTORS_MAX_POOL_SIZE", "lots")]));
        assert!(r
            .as_ref()
            .is_err_and(|e| matches!(*e.kind, crate::error::ErrorKind::InvalidArgument { .. })));
        let c = ClientConfig { dns_name_servers: Some(vec!["localhost".into()]), ..Default::default() };
        assert!(c.resolver_config().is_err());
    }
}
