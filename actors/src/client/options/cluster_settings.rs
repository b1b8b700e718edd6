//! What the cluster's actors are built from, read from [`ClientOptions`]' typed fields only:
//! the SDAM settings, the options of every connection and pool, the selection actor's and the
//! SRV poller's options.

use pool::cmap::PoolOptions;
use pool::connection::{ConnectionOptions, ConnectionOptionsBuilder, TlsOptions as ConnectionTls};
use protocol::sdam::{TopologySettings, DEFAULT_HEARTBEAT_FREQUENCY, DEFAULT_LOCAL_THRESHOLD};
use protocol::uri::{AuthMechanism, CredentialFields};
use protocol::ServerAddress;

use super::client::ClientOptions;
use super::compressor::{zlib_level_of, zstd_level_of};
use super::credential::Credential;
use super::tls::Tls;
use crate::cluster::selection::SelectorOptions;
use crate::cluster::srv_poller::{SrvPollerOptions, DEFAULT_RESCAN_INTERVAL};
use crate::cluster::topology::{platform, TopologyBuilder};
use crate::error::{Error, Result};

impl ClientOptions {
    /// The seeds: the hosts (for `mongodb+srv`, what resolution found); `localhost:27017`
    /// when none is given.
    fn seeds(&self) -> Vec<ServerAddress> {
        if self.hosts.is_empty() {
            vec![ServerAddress::default()]
        } else {
            self.hosts.clone()
        }
    }

    /// The SDAM settings: seeds, `replicaSet`, `directConnection`, `loadBalanced`, the
    /// heartbeat, the latency window, `srvMaxHosts`.
    pub(crate) fn topology_settings(&self) -> TopologySettings {
        TopologySettings {
            seeds: self.seeds(),
            set_name: self.repl_set_name.clone(),
            direct_connection: self.direct_connection,
            load_balanced: self.load_balanced.unwrap_or(false),
            heartbeat_frequency: self.heartbeat_freq.unwrap_or(DEFAULT_HEARTBEAT_FREQUENCY),
            local_threshold: self.local_threshold.unwrap_or(DEFAULT_LOCAL_THRESHOLD),
            srv_max_hosts: self.srv_max_hosts,
        }
    }

    /// TLS as connections see it: on when asked, and by default for `mongodb+srv`.
    fn connection_tls(&self) -> Result<Option<ConnectionTls>> {
        let options = match &self.tls {
            Some(Tls::Enabled(t)) => t.clone(),
            Some(Tls::Disabled) => return Ok(None),
            None if self.srv.is_some() || self.uri_notes.srv_host.is_some() => Default::default(),
            None => return Ok(None),
        };
        let path = |p: Option<std::path::PathBuf>| p.map(|p| p.to_string_lossy().into_owned());
        let password = options
            .tls_certificate_key_file_password
            .map(String::from_utf8)
            .transpose()
            .map_err(|_| Error::invalid_argument("tlsCertificateKeyFilePassword is not UTF-8"))?;
        Ok(Some(ConnectionTls {
            ca_file: path(options.ca_file_path),
            certificate_key_file: path(options.cert_key_file_path),
            certificate_key_file_password: password.map(protocol::uri::Secret::new),
            allow_invalid_certificates: options.allow_invalid_certificates == Some(true),
            allow_invalid_hostnames: options.allow_invalid_hostnames == Some(true),
        }))
    }

    /// The options of every connection, pooled and monitoring (validated, TLS files loaded).
    pub(crate) fn connection_options(&self) -> Result<ConnectionOptions> {
        let mut b = ConnectionOptions::builder()
            .platform(platform())
            .socket_timeout(self.socket_timeout)
            .load_balanced(self.load_balanced == Some(true));
        // Unset keeps the default (10 s); zero is no limit.
        if let Some(t) = self.connect_timeout {
            b = b.connect_timeout(Some(t));
        }
        if let Some(tls) = self.connection_tls()? {
            b = b.tls(tls);
        }
        if let Some(name) = &self.app_name {
            b = b.app_name(name.clone());
        }
        if let Some(compressors) = &self.compressors {
            b = b.compressors(compressors.iter().map(|c| c.wire_name()));
            b = b.zlib_compression_level(zlib_level_of(compressors));
            b = b.zstd_compression_level(zstd_level_of(compressors));
        }
        if let Some(api) = &self.server_api {
            b = b.server_api(api.clone());
        }
        if let Some(info) = &self.driver_info {
            b = b.driver_info(info.clone());
        }
        if let Some(c) = &self.credential {
            b = b.credential(c.to_uri_credential().finish(self.default_database.as_deref())?);
            b = credential_hooks(b, c)?;
        }
        let mut connection = b.build()?;
        connection.set_host_resolver(self.host_resolver.clone());
        Ok(connection)
    }

    /// The options of every server's pool.
    pub(crate) fn pool_options(&self) -> Result<PoolOptions> {
        let mut b = PoolOptions::builder().load_balanced(self.load_balanced == Some(true));
        if let Some(n) = self.max_pool_size {
            b = b.max_pool_size(n);
        }
        if let Some(n) = self.min_pool_size {
            b = b.min_pool_size(n);
        }
        if let Some(n) = self.max_connecting {
            b = b.max_connecting(n);
        }
        if let Some(d) = self.max_idle_time {
            b = b.max_idle_time(d);
        }
        if let Some(d) = self.wait_queue_timeout {
            b = b.wait_queue_timeout(d);
        }
        if let Some(d) = self.connect_timeout {
            b = b.connect_timeout(d);
        }
        if let Some(n) = self.max_wait_queue_size {
            b = b.max_wait_queue_size(n);
        }
        Ok(b.build()?)
    }

    /// The selection actor's options: `serverSelectionTimeoutMS`, the custom selector, the
    /// admission limit.
    pub(crate) fn selector_options(&self) -> SelectorOptions {
        SelectorOptions {
            server_selection_timeout: self
                .server_selection_timeout
                .unwrap_or(SelectorOptions::default().server_selection_timeout),
            custom_selector: self.custom_selector.clone(),
            max_waiters: self.max_selection_waiters,
        }
    }

    /// The SRV poller's options, or `None` when polling does not apply (not `mongodb+srv`, or
    /// `loadBalanced=true`).
    pub fn srv_poller_options(&self) -> Option<SrvPollerOptions> {
        let srv = self.srv.clone()?;
        if self.load_balanced == Some(true) {
            return None;
        }
        Some(SrvPollerOptions {
            srv,
            resolver_config: self.resolver_config.clone().unwrap_or_default(),
            rescan_interval: self.srv_rescan_interval.unwrap_or(DEFAULT_RESCAN_INTERVAL),
            heartbeat_frequency: self.heartbeat_freq.unwrap_or(DEFAULT_HEARTBEAT_FREQUENCY),
        })
    }

    /// The topology builder for these options: SDAM settings, pool options and connection
    /// options with the [`host_resolver`](Self::host_resolver). Event handlers are not set:
    /// the Client adds them (through `mongo_actors::metrics`).
    pub fn topology_builder(&self) -> Result<TopologyBuilder> {
        let mut topology = TopologyBuilder::new()
            .settings(self.topology_settings())
            .connection_options(self.connection_options()?)
            .pool_options(self.pool_options()?)
            .monitoring_mode(self.server_monitoring_mode.unwrap_or_default());
        if let Some(capacity) = self.event_queue_capacity {
            topology = topology.event_queue_capacity(capacity);
        }
        Ok(topology)
    }
}

/// What a credential gives the connections besides its values: the MONGODB-OIDC callback (with
/// `ALLOWED_HOSTS`) and the AWS credential provider.
fn credential_hooks(
    mut builder: ConnectionOptionsBuilder,
    c: &Credential,
) -> Result<ConnectionOptionsBuilder> {
    let allowed_hosts = c.allowed_hosts()?;
    let is_oidc = c.mechanism == Some(AuthMechanism::MongoDbOidc);
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
        if c.mechanism != Some(AuthMechanism::MongoDbAws) {
            return Err(Error::invalid_argument(
                "an AWS credential provider is set but the mechanism is not MONGODB-AWS",
            ));
        }
        builder = builder.aws_credential_provider(p.clone());
    }
    Ok(builder)
}
