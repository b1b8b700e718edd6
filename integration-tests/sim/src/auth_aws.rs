//! MONGODB-AWS on the simulator's side. mongod forwards the client's signed STS
//! `GetCallerIdentity` request to AWS and takes the caller's ARN from the answer; the simulator
//! never calls AWS: it knows its AWS users' keys and checks the SigV4 signature itself, with its
//! own implementation (not the client's), over the headers the auth spec lists.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, Document, RawDocument};
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use crate::commands::reply::CmdError;

/// The body of the request the client signs.
const BODY: &str = "Action=GetCallerIdentity&Version=2011-06-15";

/// The headers the spec requires in `SignedHeaders`, besides `x-amz-security-token` (required
/// when a token is sent).
const REQUIRED: &[&str] = &[
    "content-length",
    "content-type",
    "host",
    "x-amz-date",
    "x-mongodb-gs2-cb-flag",
    "x-mongodb-server-nonce",
];

/// How far the signed date may be from the simulator's clock (STS allows 15 minutes).
const CLOCK_SKEW_SECS: i64 = 15 * 60;

/// An AWS identity the simulator accepts, as STS would describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwsUser {
    /// The caller's ARN: the user's name in `$external`.
    pub arn: String,
    /// The access key id the client signs with.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
    /// For temporary credentials, the session token the client must send.
    pub session_token: Option<String>,
}

/// A conversation waiting for the signed request.
#[derive(Clone, Debug)]
pub(crate) struct AwsPending {
    server_nonce: Vec<u8>,
    host: String,
}

fn failed(why: &str) -> CmdError {
    tracing::debug!(why, "MONGODB-AWS refused");
    CmdError::new(18, "AuthenticationFailed", "Authentication failed.")
}

fn binary(bytes: Vec<u8>) -> Bson {
    Bson::Binary(Binary { subtype: BinarySubtype::Generic, bytes })
}

/// `saslStart`: checks the client's nonce and channel-binding flag, answers with the server
/// nonce and `sts_host`.
pub(crate) fn start(body: &RawDocument, sts_host: &str) -> Result<(Document, AwsPending), CmdError> {
    let first = super::sasl::payload_document(body)?;
    let nonce = match first.get("r") {
        Some(Bson::Binary(b)) if b.bytes.len() == 32 => b.bytes.clone(),
        _ => return Err(failed("the client nonce is not 32 bytes")),
    };
    if first.get_i32("p").ok() != Some(110) {
        return Err(failed("the gs2-cb-flag is not 'n'"));
    }
    let mut server_nonce = nonce;
    let mut ours = [0u8; 32];
    super::sasl::random(&mut ours);
    server_nonce.extend_from_slice(&ours);
    let answer = doc! { "s": binary(server_nonce.clone()), "h": sts_host };
    let reply = doc! {
        "conversationId": 1,
        "done": false,
        "payload": binary(crate::bson_compat::document_to_vec(&answer).map_err(|_| CmdError::bad("payload"))?),
        "ok": 1.0,
    };
    Ok((reply, AwsPending { server_nonce, host: sts_host.to_owned() }))
}

/// `saslContinue`: verifies the signed request; the caller's ARN when it holds.
pub(crate) fn finish(
    users: &[AwsUser],
    pending: &AwsPending,
    body: &RawDocument,
) -> Result<String, CmdError> {
    let second = super::sasl::payload_document(body)?;
    let authorization = second.get_str("a").map_err(|_| failed("no authorization header"))?;
    let date = second.get_str("d").map_err(|_| failed("no date"))?;
    let token = second.get_str("t").ok();
    let auth = Authorization::parse(authorization).ok_or_else(|| failed("malformed authorization header"))?;
    let user = users
        .iter()
        .find(|u| u.access_key_id == auth.access_key_id)
        .ok_or_else(|| failed("unknown access key id"))?;
    if user.session_token.as_deref() != token {
        return Err(failed("the session token does not match"));
    }
    check_date(date)?;
    let region = region(&pending.host).ok_or_else(|| failed("bad STS host"))?;
    if auth.scope != format!("{}/{region}/sts/aws4_request", &date[..8]) {
        return Err(failed("the credential scope does not match the date, region and service"));
    }
    let canonical = canonical_request(&auth.signed_headers, pending, date, token)?;
    let expected = signature(&user.secret_access_key, date, &auth.scope, &canonical);
    if expected != auth.signature {
        return Err(failed("signature mismatch"));
    }
    Ok(user.arn.clone())
}

/// The parts of `AWS4-HMAC-SHA256 Credential=ID/SCOPE, SignedHeaders=a;b, Signature=HEX`.
struct Authorization {
    access_key_id: String,
    scope: String,
    signed_headers: Vec<String>,
    signature: String,
}

impl Authorization {
    fn parse(header: &str) -> Option<Self> {
        let rest = header.strip_prefix("AWS4-HMAC-SHA256 ")?;
        let mut credential = None;
        let mut signed = None;
        let mut signature = None;
        for part in rest.split(',').map(str::trim) {
            let (k, v) = part.split_once('=')?;
            match k {
                "Credential" => credential = Some(v),
                "SignedHeaders" => signed = Some(v),
                "Signature" => signature = Some(v),
                _ => return None,
            }
        }
        let (id, scope) = credential?.split_once('/')?;
        Some(Authorization {
            access_key_id: id.to_owned(),
            scope: scope.to_owned(),
            signed_headers: signed?.split(';').map(str::to_owned).collect(),
            signature: signature?.to_owned(),
        })
    }
}

/// `YYYYMMDDTHHMMSSZ` within the allowed skew of now.
fn check_date(date: &str) -> Result<(), CmdError> {
    let bad = || failed("bad x-amz-date");
    let part = |r: std::ops::Range<usize>| date.get(r).ok_or_else(bad);
    if date.len() != 16 || part(8..9)? != "T" || part(15..16)? != "Z" {
        return Err(bad());
    }
    let rfc3339 = format!(
        "{}-{}-{}T{}:{}:{}Z",
        part(0..4)?,
        part(4..6)?,
        part(6..8)?,
        part(9..11)?,
        part(11..13)?,
        part(13..15)?
    );
    let signed_at = bson::DateTime::parse_rfc3339_str(&rfc3339).map_err(|_| bad())?;
    if (bson::DateTime::now().timestamp_millis() - signed_at.timestamp_millis()).abs()
        > CLOCK_SKEW_SECS * 1000
    {
        return Err(failed("the signature is too old or from the future"));
    }
    Ok(())
}

/// The signing region of the STS host (auth spec, "Region Calculation").
fn region(host: &str) -> Option<&str> {
    if host.is_empty() || host.len() > 255 || host.split('.').any(str::is_empty) {
        return None;
    }
    match host.split('.').nth(1) {
        _ if host == "sts.amazonaws.com" => Some("us-east-1"),
        Some(second) => Some(second),
        None => Some("us-east-1"),
    }
}

/// The canonical request over the signed headers, each with the value the server knows.
fn canonical_request(
    signed: &[String],
    pending: &AwsPending,
    date: &str,
    token: Option<&str>,
) -> Result<String, CmdError> {
    let mut required: Vec<&str> = REQUIRED.to_vec();
    if token.is_some() {
        required.push("x-amz-security-token");
    }
    if let Some(missing) = required.iter().find(|h| !signed.iter().any(|s| s == *h)) {
        return Err(failed(&format!("{missing} is not signed")));
    }
    let nonce = B64.encode(&pending.server_nonce);
    let mut headers = String::new();
    for name in signed {
        let value = match name.as_str() {
            "content-length" => BODY.len().to_string(),
            "content-type" => "application/x-www-form-urlencoded".to_owned(),
            "host" => pending.host.clone(),
            "x-amz-date" => date.to_owned(),
            "x-amz-security-token" => {
                token.ok_or_else(|| failed("a token is signed but not sent"))?.to_owned()
            }
            "x-mongodb-gs2-cb-flag" => "n".to_owned(),
            "x-mongodb-server-nonce" => nonce.clone(),
            other => return Err(failed(&format!("unexpected signed header {other}"))),
        };
        headers.push_str(&format!("{name}:{value}\n"));
    }
    let body_hash = hex::encode(Sha256::digest(BODY.as_bytes()));
    Ok(format!("POST\n/\n\n{headers}\n{}\n{body_hash}", signed.join(";")))
}

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// The SigV4 signature (hex) of `canonical` under `secret`, at `date`, for `scope`.
fn signature(secret: &str, date: &str, scope: &str, canonical: &str) -> String {
    let to_sign =
        format!("AWS4-HMAC-SHA256\n{date}\n{scope}\n{}", hex::encode(Sha256::digest(canonical.as_bytes())));
    let mut key = format!("AWS4{secret}").into_bytes();
    for part in scope.split('/') {
        key = hmac(&key, part);
    }
    hex::encode(hmac(&key, &to_sign))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AWS's published SigV4 example ("get-vanilla" of the signature test suite): the same key
    /// derivation and string to sign, so the simulator's check is right independently of the
    /// client's signer.
    #[test]
    fn the_aws_get_vanilla_example() {
        let canonical = "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let sig = signature(
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            "20150830T123600Z",
            "20150830/us-east-1/service/aws4_request",
            canonical,
        );
        assert_eq!(sig, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
    }

    #[test]
    fn regions_and_headers() {
        assert_eq!(region("sts.amazonaws.com"), Some("us-east-1"));
        assert_eq!(region("sts.eu-west-1.amazonaws.com"), Some("eu-west-1"));
        assert_eq!(region("localhost"), Some("us-east-1"));
        assert_eq!(region("sts..com"), None);
        let a = Authorization::parse(
            "AWS4-HMAC-SHA256 Credential=AKID/20191107/us-east-1/sts/aws4_request, SignedHeaders=host;x-amz-date, Signature=ab",
        )
        .unwrap();
        assert_eq!(
            (a.access_key_id.as_str(), a.scope.as_str()),
            ("AKID", "20191107/us-east-1/sts/aws4_request")
        );
        assert_eq!(a.signed_headers, vec!["host", "x-amz-date"]);
        assert!(Authorization::parse("Basic abc").is_none());
    }
}
