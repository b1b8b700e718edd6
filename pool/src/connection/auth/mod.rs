//! Authentication over an established connection: SCRAM-SHA-1 and SCRAM-SHA-256 (with
//! mechanism negotiation), MONGODB-X509 (speculative or not), PLAIN, MONGODB-OIDC ([`oidc`])
//! and, with the `aws-auth` feature, MONGODB-AWS (`aws`); speculative authentication in the
//! handshake for SCRAM, X.509 and OIDC.
//!
//! Every failure is [`Error::Authentication`]: with the server's code when it answered `ok: 0`
//! (e.g. 18 `AuthenticationFailed`), without one when the client detected it (a bad server
//! signature, a malformed message). Passwords never reach a log line or an error message.

#[cfg(feature = "aws-auth")]
pub mod aws;
pub mod oidc;
mod salted;
pub mod scram;

use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, Document};
use protocol::uri::{AuthMechanism, Credential};
use tokio::time::Instant;

use self::scram::{new_nonce, ClientFirst, ScramVersion};
use super::conn::Connection;
use super::options::ConnectionOptions;
use crate::{Error, Phase, Result};

/// The longest wait on something outside the process (a credential provider, a metadata
/// service) when neither connectTimeoutMS nor timeoutMS bounds the establishment.
#[cfg_attr(not(feature = "aws-auth"), allow(dead_code))]
pub(crate) const OUTSIDE_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// What the handshake left for authentication.
pub(crate) struct PendingAuth {
    pub(crate) credential: Credential,
    /// `saslSupportedMechs` from the handshake reply.
    pub(crate) supported_mechanisms: Option<Vec<String>>,
    /// The speculative client-first message and the server's answer to it.
    pub(crate) speculative: Option<(ClientFirst, Document)>,
    /// The server's answer to a speculative MONGODB-X509 `authenticate`: nothing left to do.
    pub(crate) x509_done: bool,
    /// The cached MONGODB-OIDC token hello carried, when the server accepted it.
    pub(crate) oidc_done: Option<String>,
}

/// The MONGODB-X509 `authenticate` command (without `$db`, which is `$external`). Without a
/// user the server takes the subject of the client certificate.
pub(crate) fn x509_authenticate(c: &Credential, options: &ConnectionOptions) -> Document {
    let mut d = doc! { "authenticate": 1, "mechanism": "MONGODB-X509" };
    if let Some(user) = c.username.as_deref().filter(|u| !u.is_empty()) {
        d.insert("user", user);
    }
    if let Some(api) = &options.server_api {
        api.append_to(&mut d);
    }
    d
}

/// The authentication database: `authSource`, else `admin`.
pub(crate) fn source(c: &Credential) -> &str {
    c.source.as_deref().unwrap_or("admin")
}

/// The mechanism to use: the credential's, else SCRAM-SHA-256 when the server lists it (or
/// lists nothing), else SCRAM-SHA-1.
pub fn negotiate(explicit: Option<AuthMechanism>, supported: Option<&[String]>) -> ScramVersion {
    match explicit {
        Some(AuthMechanism::ScramSha1) => ScramVersion::Sha1,
        Some(_) => ScramVersion::Sha256,
        None => match supported {
            Some(list) if !list.iter().any(|m| m == "SCRAM-SHA-256") => ScramVersion::Sha1,
            _ => ScramVersion::Sha256,
        },
    }
}

fn binary(bytes: Vec<u8>) -> Bson {
    Bson::Binary(Binary { subtype: BinarySubtype::Generic, bytes })
}

/// The `saslStart` command (without `$db`).
pub(crate) fn sasl_start(first: &ClientFirst, options: &ConnectionOptions) -> Document {
    let mut d = doc! {
        "saslStart": 1,
        "mechanism": first.version().mechanism(),
        "payload": binary(first.message().into_bytes()),
        "autoAuthorize": 1,
        "options": { "skipEmptyExchange": true },
    };
    if let Some(api) = &options.server_api {
        api.append_to(&mut d);
    }
    d
}

fn sasl_continue(conversation_id: &Bson, payload: Vec<u8>, options: &ConnectionOptions) -> Document {
    let mut d =
        doc! { "saslContinue": 1, "conversationId": conversation_id.clone(), "payload": binary(payload) };
    if let Some(api) = &options.server_api {
        api.append_to(&mut d);
    }
    d
}

/// One server step: `conversationId`, the payload as text, `done`.
fn server_step(conn: &Connection, version: ScramVersion, reply: &Document) -> Result<(Bson, String, bool)> {
    let fail = |message: &str| Error::Authentication {
        address: conn.address().clone(),
        mechanism: version.mechanism().to_string(),
        code: None,
        message: message.to_string(),
    };
    let id = reply.get("conversationId").cloned().ok_or_else(|| fail("reply has no conversationId"))?;
    let payload = match reply.get("payload") {
        Some(Bson::Binary(b)) => b.bytes.clone(),
        Some(Bson::String(s)) => s.clone().into_bytes(),
        _ => return Err(fail("reply has no payload")),
    };
    let payload = String::from_utf8(payload).map_err(|_| fail("payload is not UTF-8"))?;
    let done = reply.get_bool("done").unwrap_or(false);
    Ok((id, payload, done))
}

async fn command(
    conn: &mut Connection,
    version: ScramVersion,
    db: &str,
    body: Document,
    deadline: Option<Instant>,
) -> Result<Document> {
    run_auth_command(conn, version.mechanism(), db, body, deadline).await
}

async fn run_auth_command(
    conn: &mut Connection,
    mechanism: &str,
    db: &str,
    body: Document,
    deadline: Option<Instant>,
) -> Result<Document> {
    let raw = conn.run(db, body, false, deadline, Phase::Authentication).await?;
    let mechanism = mechanism.to_string();
    let raw = conn.check_ok(raw).map_err(|e| match e {
        Error::Command { address, error } => Error::Authentication {
            address,
            mechanism: mechanism.clone(),
            code: error.code,
            message: error.message,
        },
        other => other,
    })?;
    Document::try_from(&*raw).map_err(|e| Error::Authentication {
        address: conn.address().clone(),
        mechanism,
        code: None,
        message: format!("invalid reply: {e}"),
    })
}

/// Authenticates `conn`: X.509 or PLAIN, or the SCRAM conversation the handshake started or
/// negotiated.
pub(crate) async fn authenticate(
    conn: &mut Connection,
    options: &ConnectionOptions,
    pending: PendingAuth,
    deadline: Option<Instant>,
) -> Result<()> {
    match pending.credential.mechanism {
        Some(AuthMechanism::MongoDbX509) => {
            if !pending.x509_done {
                let body = x509_authenticate(&pending.credential, options);
                run_auth_command(conn, "MONGODB-X509", "$external", body, deadline).await?;
            }
            tracing::debug!(address = %conn.address(), id = conn.id(), mechanism = "MONGODB-X509", "authenticated");
            Ok(())
        }
        Some(AuthMechanism::Plain) => plain(conn, options, &pending.credential, deadline).await,
        #[cfg(feature = "aws-auth")]
        Some(AuthMechanism::MongoDbAws) => {
            aws::authenticate(conn, options, &pending.credential, deadline).await
        }
        Some(AuthMechanism::MongoDbOidc) => {
            let authenticator = options.oidc.clone().ok_or_else(|| Error::Authentication {
                address: conn.address().clone(),
                mechanism: "MONGODB-OIDC".into(),
                code: None,
                message: "no OIDC callback or ENVIRONMENT is configured".into(),
            })?;
            let username = pending.credential.username.clone();
            match pending.oidc_done {
                // hello's speculative attempt with the cached token succeeded.
                Some(token) => {
                    conn.set_oidc(oidc::ConnectionOidc { authenticator, username, token: Some(token) });
                    Ok(())
                }
                None => oidc::authenticate(conn, authenticator, username, deadline).await,
            }
        }
        _ => scram(conn, options, pending, deadline).await,
    }
}

/// PLAIN (RFC 4616): one `saslStart` carrying `\0user\0password`, which the server must end.
async fn plain(
    conn: &mut Connection,
    options: &ConnectionOptions,
    c: &Credential,
    deadline: Option<Instant>,
) -> Result<()> {
    let user = c.username.as_deref().unwrap_or_default();
    let mut payload = Vec::with_capacity(user.len() + 2 + c.password.as_ref().map_or(0, String::len));
    payload.push(0);
    payload.extend_from_slice(user.as_bytes());
    payload.push(0);
    payload.extend_from_slice(c.password.as_deref().unwrap_or_default().as_bytes());
    let mut body =
        doc! { "saslStart": 1, "mechanism": "PLAIN", "payload": binary(payload), "autoAuthorize": 1 };
    if let Some(api) = &options.server_api {
        api.append_to(&mut body);
    }
    let reply = run_auth_command(conn, "PLAIN", source(c), body, deadline).await?;
    if !reply.get_bool("done").unwrap_or(false) {
        return Err(Error::Authentication {
            address: conn.address().clone(),
            mechanism: "PLAIN".into(),
            code: None,
            message: "the server did not end the PLAIN conversation".into(),
        });
    }
    tracing::debug!(address = %conn.address(), id = conn.id(), mechanism = "PLAIN", "authenticated");
    Ok(())
}

/// SCRAM-SHA-1 or SCRAM-SHA-256, continuing a speculative conversation when there is one.
async fn scram(
    conn: &mut Connection,
    options: &ConnectionOptions,
    pending: PendingAuth,
    deadline: Option<Instant>,
) -> Result<()> {
    let c = &pending.credential;
    let user = c.username.as_deref().unwrap_or_default();
    let db = source(c).to_string();
    let (first, server_first_reply) = match pending.speculative {
        // The server accepted the speculative saslStart: continue that conversation.
        Some((first, reply)) => (first, reply),
        None => {
            let version = negotiate(c.mechanism, pending.supported_mechanisms.as_deref());
            let first = ClientFirst::new(version, user, new_nonce());
            let reply = command(conn, version, &db, sasl_start(&first, options), deadline).await?;
            (first, reply)
        }
    };
    let version = first.version();
    let address = conn.address().clone();
    let fail = |message: String| Error::Authentication {
        address: address.clone(),
        mechanism: version.mechanism().to_string(),
        code: None,
        message,
    };
    let (conversation_id, server_first, _) = server_step(conn, version, &server_first_reply)?;
    let password =
        version.prepare_password(user, c.password.as_deref().unwrap_or_default()).map_err(|e| fail(e.0))?;
    let parsed = first.parse(&server_first).map_err(|e| fail(e.0))?;
    let salted = salted::salted_password(conn, version, password, &parsed, deadline).await?;
    let fin = first.finish(&parsed, &salted).map_err(|e| fail(e.0))?;
    drop(salted);
    let reply = command(
        conn,
        version,
        &db,
        sasl_continue(&conversation_id, fin.message.clone().into_bytes(), options),
        deadline,
    )
    .await?;
    let (conversation_id, server_final, mut done) = server_step(conn, version, &reply)?;
    fin.verify(&server_final).map_err(|e| fail(e.0))?;
    // Servers that ignore skipEmptyExchange want one more, empty, round.
    let mut rounds = 0;
    while !done {
        rounds += 1;
        if rounds > 2 {
            return Err(fail("the server did not finish the conversation".into()));
        }
        let reply =
            command(conn, version, &db, sasl_continue(&conversation_id, Vec::new(), options), deadline)
                .await?;
        done = server_step(conn, version, &reply)?.2;
    }
    tracing::debug!(address = %conn.address(), id = conn.id(), mechanism = version.mechanism(), "authenticated");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation() {
        let both = vec!["SCRAM-SHA-1".to_string(), "SCRAM-SHA-256".to_string()];
        let sha1 = vec!["SCRAM-SHA-1".to_string()];
        assert_eq!(negotiate(None, Some(&both)), ScramVersion::Sha256);
        assert_eq!(negotiate(None, Some(&sha1)), ScramVersion::Sha1);
        assert_eq!(negotiate(None, None), ScramVersion::Sha256);
        assert_eq!(negotiate(Some(AuthMechanism::ScramSha1), Some(&both)), ScramVersion::Sha1);
        assert_eq!(negotiate(Some(AuthMechanism::ScramSha256), Some(&sha1)), ScramVersion::Sha256);
    }
}
