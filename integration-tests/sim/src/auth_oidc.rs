//! MONGODB-OIDC on the simulator's side, as mongod 7+ does it: a token (an ES256 JWT) is
//! checked against the JWKS the cluster trusts (signature, `iss`, `aud`, `exp`), the user is
//! `<prefix>/<sub>` in `$external`, and once the token expires every command on that connection
//! fails with `ReauthenticationRequired` (391) until it authenticates again. The two-step
//! conversation answers a principal request with the identity provider's info.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine as _;
use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, Document, RawDocument};
use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};
use serde_json::Value;

use crate::commands::reply::CmdError;
use crate::error::SimError;

/// The identity provider a simulated cluster trusts for MONGODB-OIDC.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOidc {
    /// The issuer tokens must name (`iss`).
    pub issuer: String,
    /// The audience tokens must name (`aud`).
    pub audience: String,
    /// The JWKS with the issuer's public keys (EC P-256, ES256).
    pub jwks: Value,
    /// The client id the two-step conversation hands out.
    pub client_id: Option<String>,
    /// The scopes the two-step conversation asks for.
    pub request_scopes: Option<Vec<String>>,
    /// Users are named `<prefix>/<sub>` (mongod's `authNamePrefix`).
    pub auth_name_prefix: String,
}

/// [`SimOidc`] with its keys decoded.
#[derive(Clone, Debug)]
pub(crate) struct OidcConfig {
    keys: Vec<(String, Vec<u8>)>,
    issuer: String,
    audience: String,
    idp_info: Document,
    prefix: String,
}

impl OidcConfig {
    pub(crate) fn new(o: &SimOidc) -> Result<Self, SimError> {
        let bad = |why: &str| SimError::InvalidConfig(format!("OIDC JWKS: {why}"));
        let mut keys = Vec::new();
        for k in o.jwks["keys"].as_array().ok_or_else(|| bad("no 'keys' array"))? {
            if k["kty"] != "EC" || k["crv"] != "P-256" {
                return Err(bad("only EC P-256 keys are supported"));
            }
            let coordinate = |name: &str| {
                k[name]
                    .as_str()
                    .and_then(|v| B64URL.decode(v).ok())
                    .filter(|v| v.len() == 32)
                    .ok_or_else(|| bad("bad x or y"))
            };
            let mut point = vec![4u8];
            point.extend(coordinate("x")?);
            point.extend(coordinate("y")?);
            keys.push((k["kid"].as_str().unwrap_or_default().to_owned(), point));
        }
        let mut idp_info = doc! { "issuer": &o.issuer };
        if let Some(c) = &o.client_id {
            idp_info.insert("clientId", c);
        }
        if let Some(s) = &o.request_scopes {
            idp_info.insert("requestScopes", s.clone());
        }
        Ok(OidcConfig {
            keys,
            issuer: o.issuer.clone(),
            audience: o.audience.clone(),
            idp_info,
            prefix: o.auth_name_prefix.clone(),
        })
    }
}

fn failed(why: &str) -> CmdError {
    tracing::debug!(why, "MONGODB-OIDC refused");
    CmdError::new(18, "AuthenticationFailed", "Authentication failed.")
}

/// What `saslStart` did: authenticated `(user, token expiry)`, or answered a principal request.
pub(crate) enum Start {
    /// One step: the token was good.
    Done(String, u64),
    /// Two steps: the identity provider's info, waiting for the token.
    Principal(Document),
}

/// `saslStart`: `{jwt}` (one step) or `{n?}` (the principal step of two).
pub(crate) fn start(config: &OidcConfig, body: &RawDocument) -> Result<Start, CmdError> {
    let p = super::sasl::payload_document(body)?;
    if let Ok(jwt) = p.get_str("jwt") {
        let (user, exp) = verify(config, jwt)?;
        return Ok(Start::Done(user, exp));
    }
    let info = crate::bson_compat::document_to_vec(&config.idp_info).map_err(|_| CmdError::bad("IdpInfo"))?;
    Ok(Start::Principal(doc! {
        "conversationId": 1,
        "done": false,
        "payload": Bson::Binary(Binary { subtype: BinarySubtype::Generic, bytes: info }),
        "ok": 1.0,
    }))
}

/// `saslContinue` after a principal step: `{jwt}`.
pub(crate) fn finish(config: &OidcConfig, body: &RawDocument) -> Result<(String, u64), CmdError> {
    let p = super::sasl::payload_document(body)?;
    let jwt = p.get_str("jwt").map_err(|_| failed("no jwt in the second step"))?;
    verify(config, jwt)
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Whether a token that expires at `exp` (seconds since the epoch) has expired.
pub(crate) fn expired(exp: u64) -> bool {
    now() >= exp
}

/// Checks a compact JWT: ES256 under a trusted key, our issuer and audience, not expired.
fn verify(config: &OidcConfig, jwt: &str) -> Result<(String, u64), CmdError> {
    let mut parts = jwt.split('.');
    let (Some(h), Some(c), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(failed("not a compact JWT"));
    };
    let json = |part: &str| -> Result<Value, CmdError> {
        let bytes = B64URL.decode(part).map_err(|_| failed("bad base64url"))?;
        serde_json::from_slice(&bytes).map_err(|_| failed("bad JSON"))
    };
    let (header, claims) = (json(h)?, json(c)?);
    if header["alg"] != "ES256" {
        return Err(failed("only ES256 tokens are accepted"));
    }
    let kid = header["kid"].as_str().unwrap_or_default();
    let (_, key) = config.keys.iter().find(|(k, _)| k == kid).ok_or_else(|| failed("unknown key id"))?;
    let signature = B64URL.decode(s).map_err(|_| failed("bad signature encoding"))?;
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key)
        .verify(format!("{h}.{c}").as_bytes(), &signature)
        .map_err(|_| failed("bad signature"))?;
    if claims["iss"] != config.issuer.as_str() {
        return Err(failed("wrong issuer"));
    }
    let audience_ok = match &claims["aud"] {
        Value::String(a) => *a == config.audience,
        Value::Array(a) => a.iter().any(|v| v == config.audience.as_str()),
        _ => false,
    };
    if !audience_ok {
        return Err(failed("wrong audience"));
    }
    let exp = claims["exp"].as_u64().ok_or_else(|| failed("no exp"))?;
    if expired(exp) {
        return Err(failed("the token expired"));
    }
    let sub = claims["sub"].as_str().filter(|s| !s.is_empty()).ok_or_else(|| failed("no sub"))?;
    Ok((format!("{}/{sub}", config.prefix), exp))
}
