//! Everything one connection needs to know: timeouts, TLS, handshake and credential.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use protocol::hello::command::ServerApi;
use protocol::hello::metadata::{ClientMetadata, DriverInfo};
use protocol::uri::{AuthMechanism, Compressor, ConnectionString, Credential, Secret};
use protocol::wire::WireCompressor;
use serde::Serialize;

use super::auth::oidc::callback::{OidcAuthenticator, OidcFlow};
use super::auth::oidc::environment;
use super::resolver::HostResolver;
use super::tls::{self, TlsOptions};
use crate::{Error, Result};

/// The default `connectTimeoutMS`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The mechanisms this build authenticates with, for the error that refuses another.
#[cfg(feature = "aws-auth")]
const SUPPORTED_MECHANISMS: &str = "SCRAM-SHA-1, SCRAM-SHA-256, MONGODB-X509, PLAIN and MONGODB-AWS";
#[cfg(not(feature = "aws-auth"))]
const SUPPORTED_MECHANISMS: &str =
    "SCRAM-SHA-1, SCRAM-SHA-256, MONGODB-X509 and PLAIN; MONGODB-AWS needs the `aws-auth` feature";

/// Options for opening connections, validated and with the TLS configuration loaded.
///
/// Built with [`ConnectionOptions::builder`] or [`ConnectionOptions::from_connection_string`].
/// Serialises the plain settings (never the credential or key password); `Debug` redacts
/// secrets.
#[derive(Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionOptions {
    /// `connectTimeoutMS`; `None` means no limit (the option set to 0).
    pub(crate) connect_timeout: Option<Duration>,
    /// `socketTimeoutMS`; `None` means no limit.
    pub(crate) socket_timeout: Option<Duration>,
    /// TLS settings, when TLS is on.
    pub(crate) tls: Option<TlsOptions>,
    /// `appname`.
    pub(crate) app_name: Option<String>,
    /// Information appended to the driver metadata.
    pub(crate) driver_info: Option<DriverInfo>,
    /// `loadBalanced`.
    pub(crate) load_balanced: bool,
    /// The declared Stable API version.
    pub(crate) server_api: Option<ServerApi>,
    /// `compressors` (with `zlibCompressionLevel`), in order of preference.
    #[serde(skip)]
    pub(crate) compressors: Vec<WireCompressor>,
    #[serde(skip)]
    pub(crate) credential: Option<Credential>,
    #[serde(skip)]
    pub(crate) tls_config: Option<Arc<rustls::ClientConfig>>,
    /// Shared by every clone, so [`ConnectionOptions::append_metadata`] reaches every pool.
    #[serde(skip)]
    pub(crate) metadata: Arc<parking_lot::RwLock<ClientMetadata>>,
    /// Resolves host names; `None` = the system resolver.
    #[serde(skip)]
    pub(crate) host_resolver: Option<Arc<dyn HostResolver>>,
    /// The client's MONGODB-OIDC callback and token cache, shared by every clone.
    #[serde(skip)]
    pub(crate) oidc: Option<Arc<OidcAuthenticator>>,
    /// The client's MONGODB-AWS credentials, shared by every clone (every pool).
    #[cfg(feature = "aws-auth")]
    #[serde(skip)]
    pub(crate) aws_credentials: Arc<crate::connection::auth::aws::credentials::AwsCredentialCache>,
}

impl fmt::Debug for ConnectionOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Credential's and TlsOptions' Debug redact their passwords.
        f.debug_struct("ConnectionOptions")
            .field("connect_timeout", &self.connect_timeout)
            .field("socket_timeout", &self.socket_timeout)
            .field("tls", &self.tls)
            .field("app_name", &self.app_name)
            .field("driver_info", &self.driver_info)
            .field("load_balanced", &self.load_balanced)
            .field("server_api", &self.server_api)
            .field("compressors", &self.compressors)
            .field("credential", &self.credential)
            .field("host_resolver", &self.host_resolver)
            .finish_non_exhaustive()
    }
}

impl ConnectionOptions {
    /// A builder with the defaults: 10 s connect timeout, no socket timeout, no TLS, no
    /// credential.
    pub fn builder() -> ConnectionOptionsBuilder {
        ConnectionOptionsBuilder {
            connect_timeout: Some(DEFAULT_CONNECT_TIMEOUT),
            socket_timeout: None,
            tls: None,
            app_name: None,
            driver_info: None,
            platform: None,
            load_balanced: false,
            server_api: None,
            compressors: Vec::new(),
            zlib_compression_level: None,
            zstd_compression_level: None,
            credential: None,
            host_resolver: None,
            oidc: None,
            #[cfg(feature = "aws-auth")]
            aws_provider: None,
        }
    }

    /// The options a connection string gives (`connectTimeoutMS`, `socketTimeoutMS`, `tls`/`ssl`
    /// and the `tls*` options, `appname`, `loadBalanced`, `compressors` with
    /// `zlibCompressionLevel`, the credential).
    ///
    /// ```
    /// use pool::connection::ConnectionOptions;
    /// use protocol::uri::ConnectionString;
    /// use std::time::Duration;
    ///
    /// let cs = ConnectionString::parse("mongodb://ann:secret@db.example.com/?connectTimeoutMS=2500&appname=svc")
    ///     .expect("valid URI");
    /// let options = ConnectionOptions::from_connection_string(&cs).expect("valid options");
    /// assert_eq!(options.connect_timeout(), Some(Duration::from_millis(2500)));
    /// assert!(options.tls().is_none());
    /// // The password never shows in Debug output.
    /// assert!(!format!("{options:?}").contains("secret"));
    ///
    /// // A CA file that does not exist is caught when the options are built.
    /// let cs = ConnectionString::parse("mongodb://h/?tls=true&tlsCAFile=/nonexistent/ca.pem").expect("valid URI");
    /// assert!(matches!(
    ///     ConnectionOptions::from_connection_string(&cs),
    ///     Err(pool::Error::InvalidOptions { .. })
    /// ));
    /// ```
    pub fn from_connection_string(cs: &ConnectionString) -> Result<Self> {
        Self::builder_from_connection_string(cs).build()
    }

    /// Like [`ConnectionOptions::from_connection_string`], but returns the builder so code can
    /// add what a string cannot carry (driver info, a server API, a password).
    pub fn builder_from_connection_string(cs: &ConnectionString) -> ConnectionOptionsBuilder {
        let o = &cs.options;
        let ms = |v: Option<u64>| v.filter(|v| *v > 0).map(Duration::from_millis);
        let mut b = ConnectionOptions::builder();
        if let Some(v) = o.connect_timeout_ms {
            b = b.connect_timeout(ms(Some(v)));
        }
        b = b.socket_timeout(ms(o.socket_timeout_ms));
        if cs.tls_enabled() {
            let insecure = o.tls_insecure == Some(true);
            b = b.tls(TlsOptions {
                ca_file: o.tls_ca_file.clone(),
                certificate_key_file: o.tls_certificate_key_file.clone(),
                certificate_key_file_password: o.tls_certificate_key_file_password.clone(),
                allow_invalid_certificates: insecure || o.tls_allow_invalid_certificates == Some(true),
                allow_invalid_hostnames: insecure || o.tls_allow_invalid_hostnames == Some(true),
            });
        }
        b.app_name = o.app_name.clone();
        b.load_balanced = o.load_balanced == Some(true);
        b.compressors = o.compressors.clone().unwrap_or_default();
        b.zlib_compression_level = o.zlib_compression_level;
        b.credential = cs.credential.clone();
        b
    }

    /// `connectTimeoutMS` (`None`: no limit).
    pub fn connect_timeout(&self) -> Option<Duration> {
        self.connect_timeout
    }

    /// `socketTimeoutMS` (`None`: no limit).
    pub fn socket_timeout(&self) -> Option<Duration> {
        self.socket_timeout
    }

    /// The TLS settings, when TLS is on.
    pub fn tls(&self) -> Option<&TlsOptions> {
        self.tls.as_ref()
    }

    /// Whether connections are made in load-balanced mode.
    pub fn load_balanced(&self) -> bool {
        self.load_balanced
    }

    /// The declared Stable API version.
    pub fn server_api(&self) -> Option<&ServerApi> {
        self.server_api.as_ref()
    }

    /// The compressors offered in the handshake, in order of preference.
    pub fn compressors(&self) -> &[WireCompressor] {
        &self.compressors
    }

    /// The credential, if any (its `Debug` redacts the password).
    pub fn credential(&self) -> Option<&Credential> {
        self.credential.as_ref()
    }

    /// The client metadata sent in every handshake (a copy).
    pub fn metadata(&self) -> ClientMetadata {
        self.metadata.read().clone()
    }

    /// Appends a wrapping library's driver information to the metadata of connections
    /// opened from now on, by these options and every clone of them (handshake spec:
    /// established connections keep theirs, and none is opened or closed for it). Appending
    /// the same information twice changes nothing; a `|` in it is an error.
    pub fn append_metadata(&self, info: DriverInfo) -> Result<()> {
        self.metadata.write().append(info).map_err(|e| Error::InvalidOptions { message: e.to_string() })
    }

    /// The host-name resolver, when not the system's.
    pub fn host_resolver(&self) -> Option<&Arc<dyn HostResolver>> {
        self.host_resolver.as_ref()
    }

    /// Replaces the host-name resolver (`None`: the system's); nothing else needs
    /// validating, so no builder round trip.
    pub fn set_host_resolver(&mut self, resolver: Option<Arc<dyn HostResolver>>) {
        self.host_resolver = resolver;
    }
}

/// Builder for [`ConnectionOptions`]; [`ConnectionOptionsBuilder::build`] validates and loads
/// the TLS files.
#[must_use]
#[derive(Clone)]
pub struct ConnectionOptionsBuilder {
    connect_timeout: Option<Duration>,
    socket_timeout: Option<Duration>,
    tls: Option<TlsOptions>,
    app_name: Option<String>,
    driver_info: Option<DriverInfo>,
    platform: Option<String>,
    load_balanced: bool,
    server_api: Option<ServerApi>,
    compressors: Vec<Compressor>,
    zlib_compression_level: Option<i32>,
    zstd_compression_level: Option<i32>,
    credential: Option<Credential>,
    host_resolver: Option<Arc<dyn HostResolver>>,
    oidc: Option<Arc<OidcAuthenticator>>,
    #[cfg(feature = "aws-auth")]
    aws_provider: Option<aws_credential_types::provider::SharedCredentialsProvider>,
}

impl fmt::Debug for ConnectionOptionsBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionOptionsBuilder")
            .field("connect_timeout", &self.connect_timeout)
            .field("socket_timeout", &self.socket_timeout)
            .field("tls", &self.tls)
            .field("app_name", &self.app_name)
            .field("load_balanced", &self.load_balanced)
            .field("compressors", &self.compressors)
            .field("credential", &self.credential)
            .finish_non_exhaustive()
    }
}

impl ConnectionOptionsBuilder {
    /// `connectTimeoutMS`: bounds TCP connect, TLS, handshake and authentication together.
    /// `None` (or zero) means no limit.
    pub fn connect_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.connect_timeout = timeout.filter(|t| !t.is_zero());
        self
    }

    /// `socketTimeoutMS`: bounds each socket read or write when the caller gives no deadline.
    pub fn socket_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.socket_timeout = timeout.filter(|t| !t.is_zero());
        self
    }

    /// Turns TLS on with these settings.
    pub fn tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self
    }

    /// `appname`, at most 128 bytes.
    pub fn app_name(mut self, name: impl Into<String>) -> Self {
        self.app_name = Some(name.into());
        self
    }

    /// The handshake's `platform` (default: the language, `Rust (unix)`): a client adds the
    /// runtime it runs on.
    pub fn platform(mut self, platform: impl Into<String>) -> Self {
        self.platform = Some(platform.into());
        self
    }

    /// Information a wrapping library appends to the driver metadata.
    pub fn driver_info(mut self, info: DriverInfo) -> Self {
        self.driver_info = Some(info);
        self
    }

    /// `loadBalanced`.
    pub fn load_balanced(mut self, on: bool) -> Self {
        self.load_balanced = on;
        self
    }

    /// A Stable API version (the handshake then uses `hello` over OP_MSG).
    pub fn server_api(mut self, api: ServerApi) -> Self {
        self.server_api = Some(api);
        self
    }

    /// The compressors to offer (`compressors`), most preferred first; the first the server
    /// also lists compresses every message but the handshake and authentication.
    pub fn compressors(mut self, compressors: impl IntoIterator<Item = Compressor>) -> Self {
        self.compressors = compressors.into_iter().collect();
        self
    }

    /// `zlibCompressionLevel`: -1 (zlib's default) to 9; checked by `build`.
    pub fn zlib_compression_level(mut self, level: Option<i32>) -> Self {
        self.zlib_compression_level = level;
        self
    }

    /// The zstd level (`None`: the library's default); checked by `build` against
    /// [`protocol::wire::zstd_levels`]. No URI option names it.
    pub fn zstd_compression_level(mut self, level: Option<i32>) -> Self {
        self.zstd_compression_level = level;
        self
    }

    /// The credential to authenticate with.
    pub fn credential(mut self, credential: Credential) -> Self {
        self.credential = Some(credential);
        self
    }

    /// A SCRAM credential for `username`/`password` against `source` (default `admin`), the
    /// mechanism negotiated with the server.
    pub fn scram(self, username: &str, password: &str, source: Option<&str>) -> Self {
        self.credential(Credential {
            username: Some(username.to_string()),
            password: Some(password.to_string()),
            source: source.map(str::to_string),
            mechanism: None,
            mechanism_properties: None,
        })
    }

    /// Sets or replaces the password of the credential (keeps the rest).
    pub fn password(mut self, password: Secret) -> Self {
        let mut c = self.credential.take().unwrap_or_default();
        c.password = Some(password.expose().to_string());
        self.credential = Some(c);
        self
    }

    /// Resolves host names with `resolver` instead of the system resolver (used for
    /// `mongodb+srv` with a custom DNS resolver).
    pub fn host_resolver(mut self, resolver: Arc<dyn HostResolver>) -> Self {
        self.host_resolver = Some(resolver);
        self
    }

    /// An AWS credential provider MONGODB-AWS asks before any other source.
    #[cfg(feature = "aws-auth")]
    pub fn aws_credential_provider(
        mut self,
        provider: aws_credential_types::provider::SharedCredentialsProvider,
    ) -> Self {
        self.aws_provider = Some(provider);
        self
    }

    /// The MONGODB-OIDC callback (a user's, or a built-in environment's) and its token cache.
    /// Without one, a credential with `ENVIRONMENT` gets that environment's callback.
    pub fn oidc(mut self, authenticator: Arc<OidcAuthenticator>) -> Self {
        self.oidc = Some(authenticator);
        self
    }

    /// The MONGODB-OIDC authenticator: the one given, else the credential's `ENVIRONMENT`'s;
    /// none for other mechanisms.
    fn oidc_authenticator(&self) -> std::result::Result<Option<Arc<OidcAuthenticator>>, String> {
        let Some(c) = self.credential.as_ref().filter(|c| c.mechanism == Some(AuthMechanism::MongoDbOidc))
        else {
            return Ok(None);
        };
        let property = |k: &str| {
            c.mechanism_properties.as_ref().and_then(|p| p.get(k)).map(protocol::uri::property_text)
        };
        match (&self.oidc, property("ENVIRONMENT")) {
            (Some(_), Some(_)) => Err("MONGODB-OIDC takes ENVIRONMENT or a callback, not both".into()),
            (Some(given), None) => Ok(Some(given.clone())),
            (None, Some(env)) => {
                let f =
                    environment::builtin(&env, c.username.as_deref(), property("TOKEN_RESOURCE").as_deref())?;
                Ok(Some(Arc::new(OidcAuthenticator::new(f, OidcFlow::Machine))))
            }
            (None, None) => {
                Err("MONGODB-OIDC needs ENVIRONMENT in authMechanismProperties or a callback".into())
            }
        }
    }

    /// Validates the options and loads the TLS files.
    pub fn build(self) -> Result<ConnectionOptions> {
        let invalid = |message: String| Error::InvalidOptions { message };
        let mut metadata = ClientMetadata::new(self.app_name.clone()).map_err(|e| invalid(e.to_string()))?;
        if let Some(p) = &self.platform {
            metadata.platform = Some(p.clone());
        }
        if let Some(info) = &self.driver_info {
            metadata.append(info.clone()).map_err(|e| invalid(e.to_string()))?;
        }
        if let Some(c) = &self.credential {
            let needs_password = match c.mechanism {
                None | Some(AuthMechanism::ScramSha1 | AuthMechanism::ScramSha256) => "SCRAM",
                Some(AuthMechanism::Plain) => "PLAIN",
                Some(AuthMechanism::MongoDbX509) => {
                    if c.password.is_some() {
                        return Err(invalid("MONGODB-X509 does not take a password".into()));
                    }
                    if self.tls.as_ref().is_none_or(|t| t.certificate_key_file.is_none()) {
                        return Err(invalid(
                            "MONGODB-X509 needs TLS with a client certificate (tls=true and tlsCertificateKeyFile)"
                                .into(),
                        ));
                    }
                    ""
                }
                Some(AuthMechanism::MongoDbOidc) => {
                    if c.password.is_some() {
                        return Err(invalid("MONGODB-OIDC does not take a password".into()));
                    }
                    ""
                }
                #[cfg(feature = "aws-auth")]
                Some(AuthMechanism::MongoDbAws) => {
                    if c.username.is_some() || c.password.is_some() {
                        return Err(invalid(
                            "MONGODB-AWS takes its credentials from the environment or the AWS SDK's chain, never from the client's options".into(),
                        ));
                    }
                    if c.source.as_deref().is_some_and(|s| s != "$external") {
                        return Err(invalid(
                            "the authentication source of MONGODB-AWS must be $external".into(),
                        ));
                    }
                    ""
                }
                Some(m) => {
                    return Err(invalid(format!(
                        "authentication mechanism {m} is not supported (this client has {})",
                        SUPPORTED_MECHANISMS
                    )))
                }
            };
            if !needs_password.is_empty() {
                if c.username.as_deref().is_none_or(str::is_empty) {
                    return Err(invalid(format!("{needs_password} authentication requires a username")));
                }
                if c.password.is_none() {
                    return Err(invalid(format!("{needs_password} authentication requires a password")));
                }
            }
        }
        let oidc = self.oidc_authenticator().map_err(invalid)?;
        // Every ServerApiVersion is one this client speaks: the type checks the version.
        if let Some(level) = self.zlib_compression_level.filter(|l| !(-1..=9).contains(l)) {
            return Err(invalid(format!("zlibCompressionLevel must be between -1 and 9, got {level}")));
        }
        let zstd_levels = protocol::wire::zstd_levels();
        if let Some(level) = self.zstd_compression_level.filter(|l| !zstd_levels.contains(l)) {
            return Err(invalid(format!("the zstd level must be within {zstd_levels:?}, got {level}")));
        }
        let mut compressors = Vec::new();
        for c in &self.compressors {
            let w = WireCompressor::negotiable(*c, self.zlib_compression_level, self.zstd_compression_level)
                .ok_or_else(|| invalid(format!("compressor {} is not supported", c.as_str())))?;
            if !compressors.contains(&w) {
                compressors.push(w);
            }
        }
        let tls_config = self.tls.as_ref().map(tls::client_config).transpose()?;
        Ok(ConnectionOptions {
            connect_timeout: self.connect_timeout,
            socket_timeout: self.socket_timeout,
            tls: self.tls,
            app_name: self.app_name,
            driver_info: self.driver_info,
            load_balanced: self.load_balanced,
            server_api: self.server_api,
            compressors,
            credential: self.credential,
            tls_config,
            metadata: Arc::new(parking_lot::RwLock::new(metadata)),
            host_resolver: self.host_resolver,
            oidc,
            #[cfg(feature = "aws-auth")]
            aws_credentials: Arc::new(
                crate::connection::auth::aws::credentials::AwsCredentialCache::with_provider(
                    self.aws_provider,
                ),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_validates() {
        let o = ConnectionOptions::builder().build().expect("defaults");
        assert_eq!(o.connect_timeout(), Some(DEFAULT_CONNECT_TIMEOUT));
        assert_eq!(o.socket_timeout(), None);
        let o = ConnectionOptions::builder().connect_timeout(Some(Duration::ZERO)).build().expect("zero");
        assert_eq!(o.connect_timeout(), None);

        let too_long = "x".repeat(129);
        let e = ConnectionOptions::builder().app_name(too_long).build().expect_err("appname");
        assert!(matches!(e, Error::InvalidOptions { .. }));
        let e = ConnectionOptions::builder()
            .credential(Credential { mechanism: Some(AuthMechanism::Gssapi), ..Default::default() })
            .build()
            .expect_err("mechanism");
        assert!(e.to_string().contains("GSSAPI"), "{e}");
        let e = ConnectionOptions::builder()
            .credential(Credential { mechanism: Some(AuthMechanism::Plain), ..Default::default() })
            .build()
            .expect_err("PLAIN without a user");
        assert!(e.to_string().contains("PLAIN authentication requires a username"), "{e}");
        let e = ConnectionOptions::builder()
            .credential(Credential { mechanism: Some(AuthMechanism::MongoDbX509), ..Default::default() })
            .build()
            .expect_err("X.509 without a certificate");
        assert!(e.to_string().contains("tlsCertificateKeyFile"), "{e}");
        let e = ConnectionOptions::builder()
            .credential(Credential { username: Some("u".into()), ..Default::default() })
            .build()
            .expect_err("password");
        assert!(e.to_string().contains("password"), "{e}");
        let e = ConnectionOptions::builder()
            .tls(TlsOptions { ca_file: Some("/nonexistent/ca.pem".into()), ..Default::default() })
            .build()
            .expect_err("CA file");
        assert!(
            matches!(e, Error::InvalidOptions { ref message } if message.contains("/nonexistent/ca.pem"))
        );
        // System roots (or the webpki fallback) load without any file.
        let o = ConnectionOptions::builder().tls(TlsOptions::default()).build().expect("tls");
        assert!(o.tls_config.is_some());
    }

    #[test]
    fn debug_and_serde_hide_secrets() {
        let o = ConnectionOptions::builder()
            .scram("alice", "hunter2-secret", None)
            .tls(TlsOptions {
                certificate_key_file_password: Some(Secret::new("key-secret")),
                allow_invalid_certificates: true,
                ..Default::default()
            })
            .build()
            .expect("options");
        for text in [
            format!("{o:?}"),
            format!("{o:#?}"),
            serde_json::to_string(&o).unwrap_or_default(),
            format!("{:?}", ConnectionOptions::builder().scram("alice", "hunter2-secret", None)),
        ] {
            assert!(!text.contains("hunter2-secret"), "{text}");
            assert!(!text.contains("key-secret"), "{text}");
        }
        assert!(format!("{o:?}").contains("alice"));
    }
}
