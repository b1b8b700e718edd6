//! MONGODB-OIDC (auth spec): the client sends an access token (a JWT) it got from a callback:
//! the user's, or a built-in environment's ([`environment`]). Machine callbacks use the
//! one-step conversation (`saslStart` with `{jwt}`); a human callback first asks the server for
//! its identity provider (`saslStart` with `{n: user}`, answered with `IdpInfo`), then sends the
//! token in `saslContinue`. Tokens are cached per client (`cache.rs`), sent speculatively in
//! hello when one is cached, and a connection is authenticated again when the server says the
//! token expired (code 391, [`crate::connection::Connection::reauthenticate`]).

mod cache;
pub(crate) mod callback;
pub mod environment;
#[cfg(any(feature = "azure-oidc", feature = "gcp-oidc"))]
mod http;

use std::sync::Arc;

use bson::{doc, Bson, Document};
use protocol::hello::command::ServerApi;
use protocol::oidc::{host_allowed, IdpServerInfo};
use tokio::time::Instant;

use self::callback::MACHINE_TIMEOUT;
pub use self::callback::{ConnectionOidc, OidcAuthenticator, OidcFlow, TokenFunction, TokenFuture};
use super::{binary, run_auth_command};
use crate::connection::conn::Connection;
use crate::{Error, Result};

const MECHANISM: &str = "MONGODB-OIDC";

/// `AuthenticationFailed`: the server refused the token.
const AUTHENTICATION_FAILED: i32 = 18;

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
    binary(crate::bson_compat::document_to_vec(&d).unwrap_or_default())
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
    // The callback (a user's, or a metadata service's GET) is bounded by the deadline and by
    // the check-out that asked for this connection.
    let fetch = async { auth.machine_token(callback_deadline).await.map_err(|e| fail(conn, e)) };
    let (token, cached) = conn.wait_outside(callback_deadline, fetch).await?;
    match one_step(conn, &token, deadline).await {
        Err(e) if cached && refused(&e) => {
            auth.cache.invalidate(&token);
            let fetch = async { auth.machine_token(callback_deadline).await.map_err(|e| fail(conn, e)) };
            let (token, _) = conn.wait_outside(callback_deadline, fetch).await?;
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
        if let (Some(_), Some(idp)) = (cached.refresh_token, cached.idp_info) {
            let token = human_token(conn, auth, cached.generation, true, idp).await?;
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
    // Decided now: a token another connection gets while this one talks to the server is
    // used instead of calling the callback again.
    let seen = auth.cache.snapshot().generation;
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
            .and_then(|d| crate::bson_compat::deserialize_from_document::<IdpServerInfo>(d).ok()),
        _ => None,
    }
    .ok_or_else(|| fail(conn, "the server's IdpInfo is missing or malformed"))?;
    let token = human_token(conn, auth, seen, false, idp).await?;
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

/// The human callback's token for `conn` (see [`OidcAuthenticator::human_token`]), bounded by
/// the callback's five minutes and by the check-out that asked for the connection.
async fn human_token(
    conn: &Connection,
    auth: &OidcAuthenticator,
    seen: u64,
    refresh: bool,
    idp: IdpServerInfo,
) -> Result<String> {
    let fetch = async { auth.human_token(seen, refresh, idp).await.map_err(|e| fail(conn, e)) };
    conn.wait_outside(OidcAuthenticator::human_deadline(), fetch).await
}

impl Connection {
    /// Authenticates again after the server answered `ReauthenticationRequired` (391): the
    /// connection's token is invalidated in the client's cache and the MONGODB-OIDC
    /// conversation runs anew (auth spec, "Reauthentication": no hello, no speculative
    /// attempt). The connection keeps its OIDC state until that succeeds, so a
    /// reauthentication dropped midway (before anything reached the wire) leaves it able to try
    /// again; one cut off mid-exchange is closed as any connection left so. Fails on a
    /// connection that did not authenticate with MONGODB-OIDC.
    pub async fn reauthenticate(&mut self, deadline: Option<Instant>) -> Result<()> {
        let Some(state) = self.oidc_state().cloned() else {
            return Err(fail(
                self,
                "the connection did not authenticate with MONGODB-OIDC: it cannot reauthenticate",
            ));
        };
        if let Some(token) = &state.token {
            state.authenticator.cache.invalidate(token);
        }
        authenticate(self, state.authenticator, state.username, deadline).await
    }
}
