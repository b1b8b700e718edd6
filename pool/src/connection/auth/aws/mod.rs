//! MONGODB-AWS (auth spec): a two-step SASL conversation in BSON payloads. The client sends a
//! 32-byte nonce; the server answers with its 64-byte nonce (starting with the client's) and
//! the STS host; the client answers with a SigV4-signed STS `GetCallerIdentity` request
//! (`sign.rs`), which the server forwards to STS to learn who the caller is. Credentials come from
//! `credentials.rs` ([`AwsCredentialCache`]); the source is always `$external`.

pub(crate) mod credentials;
mod region;
mod sign;

use std::time::SystemTime;

use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, Document};
use protocol::uri::Credential;
use tokio::time::Instant;

pub use self::credentials::AwsCredentialCache;
use super::{binary, run_auth_command};
use crate::connection::conn::Connection;
use crate::connection::options::ConnectionOptions;
use crate::{Error, Result};

const MECHANISM: &str = "MONGODB-AWS";

/// `gs2-cb-flag`: the ASCII code of `n` (no channel binding).
const NO_CHANNEL_BINDING: i32 = 110;

/// The server's first answer.
#[derive(Debug)]
struct ServerFirst {
    conversation_id: Bson,
    nonce: Vec<u8>,
    host: String,
}

/// Authenticates `conn` with MONGODB-AWS. A failure clears the client's credential cache.
pub(crate) async fn authenticate(
    conn: &mut Connection,
    options: &ConnectionOptions,
    credential: &Credential,
    deadline: Option<Instant>,
) -> Result<()> {
    let result = conversation(conn, options, credential, deadline).await;
    if result.is_err() {
        options.aws_credentials.clear();
    }
    result
}

async fn conversation(
    conn: &mut Connection,
    options: &ConnectionOptions,
    credential: &Credential,
    deadline: Option<Instant>,
) -> Result<()> {
    let address = conn.address().clone();
    let fail = |message: String| Error::Authentication {
        address: address.clone(),
        mechanism: MECHANISM.into(),
        code: None,
        message,
    };
    if credential.source.as_deref().is_some_and(|s| s != "$external") {
        return Err(fail("the authentication source of MONGODB-AWS must be $external".into()));
    }
    let mut nonce = [0u8; 32];
    rustls::crypto::ring::default_provider()
        .secure_random
        .fill(&mut nonce)
        .map_err(|_| fail("no secure random numbers for the nonce".into()))?;
    let first = doc! { "r": Binary { subtype: BinarySubtype::Generic, bytes: nonce.to_vec() }, "p": NO_CHANNEL_BINDING };
    let mut start = doc! {
        "saslStart": 1,
        "mechanism": MECHANISM,
        "payload": binary(to_bytes(&first)),
        "autoAuthorize": 1,
    };
    if let Some(api) = &options.server_api {
        api.append_to(&mut start);
    }
    let reply = run_auth_command(conn, MECHANISM, "$external", start, deadline).await?;
    let server = server_first(&reply, &nonce).map_err(fail)?;
    let region = region::sts_region(&server.host).map_err(fail)?;
    // A provider or metadata service that never answers must not hold the establishment:
    // bounded by the connection's deadline (connectTimeoutMS, or timeoutMS where smaller).
    let bound = deadline.unwrap_or_else(|| Instant::now() + super::OUTSIDE_LIMIT);
    let fetch = async { options.aws_credentials.get().await.map_err(|e| fail(protocol::excerpt::short(&e))) };
    let credentials = conn.wait_outside(bound, fetch).await?;
    let second = sign::client_second(&credentials, &server.host, region, &server.nonce, SystemTime::now())
        .map_err(fail)?;
    let mut cont = doc! {
        "saslContinue": 1,
        "conversationId": server.conversation_id.clone(),
        "payload": binary(to_bytes(&second)),
    };
    if let Some(api) = &options.server_api {
        api.append_to(&mut cont);
    }
    let reply = run_auth_command(conn, MECHANISM, "$external", cont, deadline).await?;
    if reply.get("conversationId") != Some(&server.conversation_id) {
        return Err(fail("the server changed the conversation id".into()));
    }
    if !reply.get_bool("done").unwrap_or(false) {
        return Err(fail("the server did not end the conversation after the signed request".into()));
    }
    tracing::debug!(address = %conn.address(), id = conn.id(), mechanism = MECHANISM, "authenticated");
    Ok(())
}

fn to_bytes(d: &Document) -> Vec<u8> {
    // Writing a document to a Vec cannot fail.
    crate::bson_compat::document_to_vec(d).unwrap_or_default()
}

/// Parses and checks the server's first message: a 64-byte nonce extending ours, a host.
fn server_first(reply: &Document, client_nonce: &[u8]) -> std::result::Result<ServerFirst, String> {
    if reply.get_bool("done").unwrap_or(false) {
        return Err("the server ended the conversation early".into());
    }
    let conversation_id = reply.get("conversationId").cloned().ok_or("the reply has no conversationId")?;
    let payload = match reply.get("payload") {
        Some(Bson::Binary(b)) => b.bytes.as_slice(),
        _ => return Err("the reply has no binary payload".into()),
    };
    let payload =
        Document::from_reader(payload).map_err(|e| format!("the server's payload is not BSON: {e}"))?;
    let nonce = match payload.get("s") {
        Some(Bson::Binary(b)) => b.bytes.clone(),
        _ => return Err("the server's payload has no nonce".into()),
    };
    if nonce.len() != 64 {
        return Err(format!("the server nonce has {} bytes, not 64", nonce.len()));
    }
    if !nonce.starts_with(client_nonce) {
        return Err("the server nonce does not start with the client's".into());
    }
    let host = payload.get_str("h").map_err(|_| "the server's payload has no STS host")?.to_owned();
    Ok(ServerFirst { conversation_id, nonce, host })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(nonce: &[u8], host: &str, done: bool) -> Document {
        let payload =
            doc! { "s": Binary { subtype: BinarySubtype::Generic, bytes: nonce.to_vec() }, "h": host };
        doc! { "conversationId": 1, "done": done, "payload": binary(to_bytes(&payload)), "ok": 1 }
    }

    #[test]
    fn the_server_nonce_and_host_are_checked() {
        let ours = [3u8; 32];
        let mut good = ours.to_vec();
        good.extend([9u8; 32]);
        let s = server_first(&reply(&good, "sts.amazonaws.com", false), &ours).unwrap();
        assert_eq!((s.nonce.len(), s.host.as_str()), (64, "sts.amazonaws.com"));
        assert!(server_first(&reply(&good[..63], "h", false), &ours).unwrap_err().contains("63 bytes"));
        let mut other = vec![4u8; 32];
        other.extend([9u8; 32]);
        assert!(server_first(&reply(&other, "h", false), &ours).unwrap_err().contains("does not start"));
        assert!(server_first(&reply(&good, "h", true), &ours).unwrap_err().contains("early"));
        let no_payload = doc! { "conversationId": 1, "done": false, "payload": binary(b"junk".to_vec()) };
        assert!(server_first(&no_payload, &ours).unwrap_err().contains("not BSON"));
    }
}
