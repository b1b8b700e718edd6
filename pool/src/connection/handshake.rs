//! The connection handshake (handshake spec): legacy hello over OP_QUERY, or `hello` over
//! OP_MSG in load-balanced mode or with a Stable API version; client metadata; mechanism
//! negotiation and speculative authentication when there is a credential.

use bson::Document;
use protocol::hello::command::{HandshakeOptions, HelloCommand};
use protocol::hello::reply::HelloReply;
use protocol::uri::AuthMechanism;
use tokio::time::Instant;

use super::auth::scram::{new_nonce, ClientFirst, ScramVersion};
use super::auth::{self, PendingAuth};
use super::conn::Connection;
use super::options::ConnectionOptions;
use crate::{Error, Phase, Result};

/// The load-balancers spec's exact message for a handshake reply without `serviceId`.
pub const LB_NOT_SUPPORTED: &str =
    "Driver attempted to initialize in load balancing mode, but the server does not support this mode.";

/// Runs the handshake on `conn` and records the reply. Returns what authentication needs when
/// the options carry a credential and this is not a monitoring connection.
pub(crate) async fn handshake(
    conn: &mut Connection,
    options: &ConnectionOptions,
    deadline: Option<Instant>,
) -> Result<Option<PendingAuth>> {
    let mut hs = HandshakeOptions {
        load_balanced: options.load_balanced,
        server_api: options.server_api.clone(),
        compressors: options.compressors.iter().filter_map(|c| c.name()).map(str::to_string).collect(),
        ..Default::default()
    };
    let credential = options.credential.as_ref().filter(|_| !conn.is_monitoring());
    let mut speculative = None;
    let mut oidc_token = None;
    let x509 = credential.filter(|c| c.mechanism == Some(AuthMechanism::MongoDbX509));
    let oidc = credential.filter(|c| c.mechanism == Some(AuthMechanism::MongoDbOidc));
    if let (Some(_), Some(authenticator)) = (oidc, options.oidc.as_deref()) {
        // Only with a cached token (auth spec); a refusal is not an invalidation.
        if let Some((start, token)) =
            auth::oidc::speculative_start(authenticator, options.server_api.as_ref())
        {
            hs.speculative_authenticate = Some(start);
            oidc_token = Some(token);
        }
    } else if let Some(c) = x509 {
        let mut start = auth::x509_authenticate(c, options);
        start.insert("db", "$external");
        hs.speculative_authenticate = Some(start);
    } else if let Some(c) = credential
        .filter(|c| matches!(c.mechanism, None | Some(AuthMechanism::ScramSha1 | AuthMechanism::ScramSha256)))
    {
        let user = c.username.as_deref().unwrap_or_default();
        let source = auth::source(c);
        if c.mechanism.is_none() {
            hs.sasl_supported_mechs = Some(format!("{source}.{user}"));
        }
        // Without an explicit mechanism the speculative attempt is SCRAM-SHA-256 (auth spec).
        let version = match c.mechanism {
            Some(AuthMechanism::ScramSha1) => ScramVersion::Sha1,
            _ => ScramVersion::Sha256,
        };
        let first = ClientFirst::new(version, user, new_nonce());
        let mut start = auth::sasl_start(&first, options);
        start.insert("db", source);
        hs.speculative_authenticate = Some(start);
        speculative = Some(first);
    }
    let cmd = HelloCommand::handshake(&hs, &options.metadata.read());
    let raw = conn.run("admin", cmd.body, cmd.legacy, deadline, Phase::Hello).await?;
    let address = conn.address().clone();
    let handshake_error = |message: String| Error::Handshake { address: address.clone(), message };
    // Without `ok` this is not a hello reply at all, not a failed command (code 0, no message).
    if !matches!(raw.get("ok"), Ok(Some(_))) {
        conn.close();
        return Err(handshake_error("the hello reply has no 'ok' field".into()));
    }
    let raw = conn.check_ok(raw)?;
    let doc = Document::try_from(&*raw).map_err(|e| handshake_error(e.to_string()))?;
    let reply = HelloReply::parse(&doc).map_err(|e| handshake_error(e.to_string()))?;
    if options.load_balanced && reply.service_id.is_none() {
        conn.close();
        return Err(handshake_error(LB_NOT_SUPPORTED.to_string()));
    }
    let pending = credential.map(|c| PendingAuth {
        credential: c.clone(),
        supported_mechanisms: reply.sasl_supported_mechs.clone(),
        speculative: speculative.zip(reply.speculative_authenticate.clone()),
        x509_done: x509.is_some() && reply.speculative_authenticate.is_some(),
        oidc_done: oidc_token.filter(|_| {
            reply.speculative_authenticate.as_ref().is_some_and(|d| d.get_bool("done").unwrap_or(false))
        }),
    });
    tracing::debug!(
        address = %conn.address(),
        id = conn.id(),
        max_wire_version = reply.max_wire_version,
        service_id = ?reply.service_id,
        "handshake complete"
    );
    // The first compressor of ours the server also agreed to (OP_COMPRESSED spec).
    let compressor = options
        .compressors
        .iter()
        .copied()
        .find(|c| c.name().is_some_and(|n| reply.compression.iter().any(|s| s == n)));
    conn.set_compressor(compressor);
    conn.set_handshake(reply);
    Ok(pending)
}
