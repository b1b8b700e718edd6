//! MONGODB-OIDC (auth spec): the client sends an access token (a JWT) it got from a callback:
//! the user's, or a built-in environment's ([`environment`]). Machine callbacks use the
//! one-step conversation (`saslStart` with `{jwt}`); a human callback first asks the server for
//! its identity provider (`saslStart` with `{n: user}`, answered with `IdpInfo`), then sends the
//! token in `saslContinue`. Tokens are cached per client (`cache.rs`), sent speculatively in
//! hello when one is cached, and a connection is authenticated again when the server says the
//! token expired (code 391, [`crate::connection::Connection::reauthenticate`]).

mod cache;
pub mod environment;
#[cfg(any(feature = "azure-oidc", feature = "gcp-oidc"))]
mod http;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bson::{doc, Bson, Document};
use futures_util::future::BoxFuture;
use protocol::hello::command::ServerApi;
use protocol::oidc::{host_allowed, CallbackContext, IdpServerInfo, IdpServerResponse, CALLBACK_API_VERSION};
use tokio::time::Instant;

use self::cache::TokenCache;
use super::{binary, run_auth_command};
use crate::connection::conn::Connection;
use crate::{Error, Result};

const MECHANISM: &str = "MONGODB-OIDC";

/// A machine callback's time when nothing else bounds it (auth spec: one minute).
const MACHINE_TIMEOUT: Duration = Duration::from_secs(60);

/// A human callback's time (auth spec: five minutes, whatever the operation's timeout).
const HUMAN_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// `AuthenticationFailed`: the server refused the token.
const AUTHENTICATION_FAILED: i32 = 18;

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
    flow: OidcFlow,
    allowed_hosts: Vec<String>,
    cache: TokenCache,
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
            Ok(Err(e)) => Err(format!("the OIDC callback failed: {e}")),
            Ok(Ok(r)) if r.access_token.is_empty() => {
                Err("the OIDC callback returned an empty access token".into())
            }
            Ok(Ok(r)) => Ok(r),
        }
    }

    /// The cached token (`true`), or a new one from the machine callback (`false`).
    async fn machine_token(&self, deadline: Instant) -> std::result::Result<(String, bool), String> {
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

    /// A human callback's answer, cached with the identity provider it was for.
    async fn human_token(
        &self,
        refresh_token: Option<String>,
        idp: IdpServerInfo,
    ) -> std::result::Result<String, String> {
        let _one_call = self.cache.calling.lock().await;
        let r = self.call(refresh_token, Some(idp.clone()), Instant::now() + HUMAN_TIMEOUT).await?;
        self.cache.store(r.access_token.clone(), r.refresh_token, Some(idp));
        Ok(r.access_token)
    }
}

/// The connection's own OIDC state (the auth spec's "Connection Cache").
#[derive(Debug, Clone)]
pub(crate) struct ConnectionOidc {
    pub(crate) authenticator: Arc<OidcAuthenticator>,
    pub(crate) username: Option<String>,
    /// The token this connection authenticated with.
    pub(crate) token: Option<String>,
}

fn fail(conn: &Connection, message: impl Into<String>) -> Error {
    Error::Authentication {
        address: conn.address().clone(),
        mechanism: MECHANISM.into(),
        code: None,
        message: message.into(),
    }
}

fn refused(e: &Error) -> bool {
    matches!(e, Error::Authentication { code: Some(AUTHENTICATION_FAILED), .. })
}

fn payload(d: Document) -> Bson {
    binary(d.to_vec().unwrap_or_default())
}

/// The speculative `saslStart` for hello: the cached token, if there is one.
pub(crate) fn speculative_start(
    authenticator: &OidcAuthenticator,
    server_api: Option<&ServerApi>,
) -> Option<(Document, String)> {
    let token = authenticator.cached_access_token()?;
    let mut start = jwt_start(&token, server_api);
    start.insert("db", "$external");
    Some((start, token))
}

fn jwt_start(token: &str, server_api: Option<&ServerApi>) -> Document {
    let mut d = doc! { "saslStart": 1, "mechanism": MECHANISM, "payload": payload(doc! { "jwt": token }) };
    if let Some(api) = server_api {
        api.append_to(&mut d);
    }
    d
}

/// One-step: `saslStart` with the token, which the server must accept at once.
async fn one_step(conn: &mut Connection, token: &str, deadline: Option<Instant>) -> Result<()> {
    let body = jwt_start(token, conn.server_api());
    let reply = run_auth_command(conn, MECHANISM, "$external", body, deadline).await?;
    if !reply.get_bool("done").unwrap_or(false) {
        return Err(fail(conn, "the server did not accept the token in one step"));
    }
    Ok(())
}

/// Authenticates `conn` with the client's callback (after a speculative attempt failed, or
/// when reauthenticating); records the token on the connection.
pub(crate) async fn authenticate(
    conn: &mut Connection,
    authenticator: Arc<OidcAuthenticator>,
    username: Option<String>,
    deadline: Option<Instant>,
) -> Result<()> {
    let token = match authenticator.flow {
        OidcFlow::Machine => machine(conn, &authenticator, deadline).await?,
        OidcFlow::Human => human(conn, &authenticator, username.as_deref(), deadline).await?,
    };
    conn.set_oidc(ConnectionOidc { authenticator, username, token: Some(token) });
    tracing::debug!(address = %conn.address(), id = conn.id(), mechanism = MECHANISM, "authenticated");
    Ok(())
}

/// The machine flow: the cached token, else a new one; a refused cached token is replaced once.
async fn machine(
    conn: &mut Connection,
    auth: &OidcAuthenticator,
    deadline: Option<Instant>,
) -> Result<String> {
    let callback_deadline = deadline.unwrap_or_else(|| Instant::now() + MACHINE_TIMEOUT);
    let (token, cached) = auth.machine_token(callback_deadline).await.map_err(|e| fail(conn, e))?;
    match one_step(conn, &token, deadline).await {
        Err(e) if cached && refused(&e) => {
            auth.cache.invalidate(&token);
            let (token, _) = auth.machine_token(callback_deadline).await.map_err(|e| fail(conn, e))?;
            one_step(conn, &token, deadline).await.map(|()| token)
        }
        result => result.map(|()| token),
    }
}

/// The human flow: the cached token, else the refresh token, else a two-step conversation.
async fn human(
    conn: &mut Connection,
    auth: &OidcAuthenticator,
    username: Option<&str>,
    deadline: Option<Instant>,
) -> Result<String> {
    let host = conn.address().host().into_owned();
    if !host_allowed(&auth.allowed_hosts, &host) {
        return Err(fail(
            conn,
            format!("{host} is not in ALLOWED_HOSTS: the human OIDC callback is not called for it"),
        ));
    }
    // Each refused token is forgotten, so this ends with the two-step conversation.
    for _ in 0..3 {
        let cached = auth.cache.snapshot();
        if let Some(token) = cached.access_token {
            match one_step(conn, &token, deadline).await {
                Err(e) if refused(&e) => auth.cache.invalidate(&token),
                result => return result.map(|()| token),
            }
            continue;
        }
        if let (Some(refresh), Some(idp)) = (cached.refresh_token, cached.idp_info) {
            let token = auth.human_token(Some(refresh), idp).await.map_err(|e| fail(conn, e))?;
            match one_step(conn, &token, deadline).await {
                Err(e) if refused(&e) => {
                    auth.cache.clear_refresh_token();
                    auth.cache.invalidate(&token);
                }
                result => return result.map(|()| token),
            }
            continue;
        }
        return two_step(conn, auth, username, deadline).await;
    }
    two_step(conn, auth, username, deadline).await
}

/// Asks the server for its identity provider, calls the human callback, sends the token.
async fn two_step(
    conn: &mut Connection,
    auth: &OidcAuthenticator,
    username: Option<&str>,
    deadline: Option<Instant>,
) -> Result<String> {
    let mut principal = Document::new();
    if let Some(user) = username {
        principal.insert("n", user);
    }
    let mut start = doc! { "saslStart": 1, "mechanism": MECHANISM, "payload": payload(principal) };
    if let Some(api) = conn.server_api() {
        api.append_to(&mut start);
    }
    let reply = run_auth_command(conn, MECHANISM, "$external", start, deadline).await?;
    let conversation_id =
        reply.get("conversationId").cloned().ok_or_else(|| fail(conn, "the reply has no conversationId"))?;
    let idp = match reply.get("payload") {
        Some(Bson::Binary(b)) => Document::from_reader(b.bytes.as_slice())
            .ok()
            .and_then(|d| bson::deserialize_from_document::<IdpServerInfo>(d).ok()),
        _ => None,
    }
    .ok_or_else(|| fail(conn, "the server's IdpInfo is missing or malformed"))?;
    let token = auth.human_token(None, idp).await.map_err(|e| fail(conn, e))?;
    let mut cont = doc! { "saslContinue": 1, "conversationId": conversation_id, "payload": payload(doc! { "jwt": &token }) };
    if let Some(api) = conn.server_api() {
        api.append_to(&mut cont);
    }
    let reply = run_auth_command(conn, MECHANISM, "$external", cont, deadline).await?;
    if !reply.get_bool("done").unwrap_or(false) {
        return Err(fail(conn, "the server did not end the conversation after the token"));
    }
    Ok(token)
}

/// Authenticates `conn` again after the server said its token expired (391): invalidates the
/// connection's token in the client cache and runs the conversation anew (no hello, no
/// speculative attempt).
pub(crate) async fn reauthenticate(conn: &mut Connection, deadline: Option<Instant>) -> Result<()> {
    let Some(state) = conn.take_oidc() else {
        return Err(fail(
            conn,
            "the connection did not authenticate with MONGODB-OIDC: it cannot reauthenticate",
        ));
    };
    if let Some(token) = &state.token {
        state.authenticator.cache.invalidate(token);
    }
    authenticate(conn, state.authenticator, state.username, deadline).await
}
