//! A client's MONGODB-OIDC callback and its token cache ([`OidcAuthenticator`]), and what a
//! connection remembers of its authentication ([`ConnectionOidc`]): the pieces the options,
//! the built-in environments and the connections share, with no conversation in them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use protocol::oidc::{CallbackContext, IdpServerInfo, IdpServerResponse, CALLBACK_API_VERSION};
use tokio::time::Instant;

use super::cache::TokenCache;

/// A machine callback's time when nothing else bounds it (auth spec: one minute).
pub(crate) const MACHINE_TIMEOUT: Duration = Duration::from_secs(60);

/// A human callback's time (auth spec: five minutes, whatever the operation's timeout).
const HUMAN_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// What a token callback returns, its error as text.
pub type TokenFuture = BoxFuture<'static, std::result::Result<IdpServerResponse, String>>;

/// A token callback.
pub type TokenFunction = dyn Fn(CallbackContext) -> TokenFuture + Send + Sync;

/// Which flow a callback serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OidcFlow {
    /// Workload identity: a token without a person (one-step conversation).
    Machine,
    /// A person signs in with the identity provider the server names (two-step conversation,
    /// refresh tokens, `ALLOWED_HOSTS`).
    Human,
}

/// A client's MONGODB-OIDC callback and token cache, shared by its pools.
pub struct OidcAuthenticator {
    function: Arc<TokenFunction>,
    pub(crate) flow: OidcFlow,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) cache: TokenCache,
}

impl fmt::Debug for OidcAuthenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcAuthenticator")
            .field("flow", &self.flow)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("token_cached", &self.cache.access_token().is_some())
            .finish()
    }
}

impl OidcAuthenticator {
    /// An authenticator calling `function`, with the default `ALLOWED_HOSTS`.
    pub fn new(function: Arc<TokenFunction>, flow: OidcFlow) -> Self {
        let allowed_hosts = protocol::oidc::DEFAULT_ALLOWED_HOSTS.iter().map(|h| h.to_string()).collect();
        OidcAuthenticator { function, flow, allowed_hosts, cache: TokenCache::default() }
    }

    /// The hosts a human callback may be called for (`ALLOWED_HOSTS`).
    pub fn with_allowed_hosts(mut self, hosts: Vec<String>) -> Self {
        self.allowed_hosts = hosts;
        self
    }

    /// The flow the callback serves.
    pub fn flow(&self) -> OidcFlow {
        self.flow
    }

    /// The cached access token, if any.
    pub fn cached_access_token(&self) -> Option<String> {
        self.cache.access_token()
    }

    /// Calls the callback (spaced from the previous call, bounded by `deadline`).
    async fn call(
        &self,
        refresh_token: Option<String>,
        idp_info: Option<IdpServerInfo>,
        deadline: Instant,
    ) -> std::result::Result<IdpServerResponse, String> {
        tokio::time::sleep(self.cache.next_call_delay(std::time::Instant::now())).await;
        let context = CallbackContext::builder()
            .timeout(Some(deadline.into_std()))
            .version(CALLBACK_API_VERSION)
            .refresh_token(refresh_token)
            .idp_info(idp_info)
            .build();
        match tokio::time::timeout_at(deadline, (self.function)(context)).await {
            Err(_) => Err("the OIDC callback did not return in time".into()),
            Ok(Err(e)) => Err(format!("the OIDC callback failed: {}", protocol::excerpt::short(&e))),
            Ok(Ok(r)) if r.access_token.is_empty() => {
                Err("the OIDC callback returned an empty access token".into())
            }
            Ok(Ok(r)) => Ok(r),
        }
    }

    /// The cached token (`true`), or a new one from the machine callback (`false`).
    pub(crate) async fn machine_token(
        &self,
        deadline: Instant,
    ) -> std::result::Result<(String, bool), String> {
        if let Some(t) = self.cache.access_token() {
            return Ok((t, true));
        }
        let _one_call = self.cache.calling.lock().await;
        // Another connection may have fetched one while this waited.
        if let Some(t) = self.cache.access_token() {
            return Ok((t, true));
        }
        let r = self.call(None, None, deadline).await?;
        self.cache.store(r.access_token.clone(), None, None);
        Ok((r.access_token, false))
    }

    /// A human callback's answer, cached with the identity provider it was for. Single
    /// flight: `seen` is the cache's generation the caller decided on; when another caller
    /// stored a token while this one waited for the lock, that token is returned and the
    /// callback is not called (no second login, no refresh token sent twice). With
    /// `refresh`, the refresh token cached now is sent (a rotated one, not the one seen).
    pub(crate) async fn human_token(
        &self,
        seen: u64,
        refresh: bool,
        idp: IdpServerInfo,
    ) -> std::result::Result<String, String> {
        let _one_call = self.cache.calling.lock().await;
        let now = self.cache.snapshot();
        if now.generation != seen {
            if let Some(token) = now.access_token {
                return Ok(token);
            }
        }
        let refresh_token = now.refresh_token.filter(|_| refresh);
        let r = self.call(refresh_token, Some(idp.clone()), Instant::now() + HUMAN_TIMEOUT).await?;
        self.cache.store(r.access_token.clone(), r.refresh_token, Some(idp));
        Ok(r.access_token)
    }

    /// The human callback's bound (auth spec: five minutes, whatever the operation's timeout).
    pub(crate) fn human_deadline() -> Instant {
        Instant::now() + HUMAN_TIMEOUT
    }
}

/// The connection's own OIDC state (the auth spec's "Connection Cache").
#[derive(Clone)]
pub struct ConnectionOidc {
    pub(crate) authenticator: Arc<OidcAuthenticator>,
    pub(crate) username: Option<String>,
    /// The token this connection authenticated with.
    pub(crate) token: Option<String>,
}

impl fmt::Debug for ConnectionOidc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionOidc")
            .field("authenticator", &self.authenticator)
            .field("username", &self.username)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}
