//! `ClientOptions::parse` as an action: `.await` parses the connection string, applies the
//! overrides, resolves `mongodb+srv` and gives the [`ClientOptions`].

use futures_util::future::BoxFuture;

use super::super::options::{ClientOptions, ConnectionString};
use crate::cluster::srv::ResolverConfig;
use crate::error::{Error, Result};

impl ClientOptions {
    /// Parses a connection string (a `&str`, a `String` or a [`ConnectionString`]) into
    /// options; awaiting resolves a `mongodb+srv` string's SRV and TXT records (through the
    /// system's DNS unless [`resolver_config`](ParseConnectionString::resolver_config) says
    /// otherwise).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use mongo_actors::options::ClientOptions;
    ///
    /// let o = ClientOptions::parse("mongodb://alice:s3cret@db1:27017,db2:27017/?appname=svc").await.unwrap();
    /// assert_eq!(o.hosts.len(), 2);
    /// assert_eq!(o.app_name.as_deref(), Some("svc"));
    /// assert!(!format!("{o:?}").contains("s3cret"));
    /// let bad = ClientOptions::parse("http://x").await;
    /// assert!(bad.is_err_and(|e| matches!(*e.kind, mongo_actors::error::ErrorKind::InvalidArgument { .. })));
    ///
    /// // Ours: an option by its URI name, checked as a URI's value but refused instead of ignored.
    /// let o = ClientOptions::parse("mongodb://db1/?maxPoolSize=5").option("maxPoolSize", 50).await.unwrap();
    /// assert_eq!(o.max_pool_size, Some(50));
    /// assert!(ClientOptions::parse("mongodb://db1").option("heartbeatFrequencyMS", 10).await.is_err());
    /// # });
    /// ```
    pub fn parse<C, E>(conn_str: C) -> ParseConnectionString
    where
        C: TryInto<ConnectionString, Error = E>,
        E: Into<Error>,
    {
        ParseConnectionString {
            conn_str: conn_str.try_into().map_err(Into::into),
            resolver_config: None,
            overrides: Vec::new(),
        }
    }
}

/// Options to parse: see [`ClientOptions::parse`].
#[must_use = "the string is parsed only when this is awaited"]
pub struct ParseConnectionString {
    conn_str: Result<ConnectionString>,
    resolver_config: Option<ResolverConfig>,
    overrides: Vec<(String, String)>,
}

impl ParseConnectionString {
    /// The DNS servers for `mongodb+srv`. With name servers set, connections also resolve
    /// host names through them (so SRV targets need no system DNS entry).
    pub fn resolver_config(mut self, value: ResolverConfig) -> Self {
        self.resolver_config = Some(value);
        self
    }

    /// (Ours.) Overrides one option by its connection-string name (case-insensitive, e.g.
    /// `maxPoolSize`). The value is checked as a URI's would be, but an invalid one fails the
    /// parse instead of being ignored with a warning.
    pub fn option(mut self, name: &str, value: impl ToString) -> Self {
        self.overrides.push((name.to_string(), value.to_string()));
        self
    }

    async fn execute(self) -> Result<ClientOptions> {
        let mut cs = self.conn_str?;
        super::super::options::overrides::apply_overrides(&mut cs, &self.overrides)?;
        ClientOptions::resolve(cs, self.resolver_config).await
    }
}

impl std::future::IntoFuture for ParseConnectionString {
    type Output = Result<ClientOptions>;
    type IntoFuture = BoxFuture<'static, Result<ClientOptions>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

impl super::private::Sealed for ParseConnectionString {}
impl super::Action for ParseConnectionString {}

#[cfg(feature = "sync")]
impl ParseConnectionString {
    /// Parses, blocking (the sync API).
    pub fn run(self) -> Result<ClientOptions> {
        crate::client::sync::runtime::block_on(std::future::IntoFuture::into_future(self))
    }
}
