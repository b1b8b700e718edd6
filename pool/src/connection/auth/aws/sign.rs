//! The client's second MONGODB-AWS message: the STS `GetCallerIdentity` request the server will
//! forward, signed with AWS Signature Version 4 (`aws-sigv4`), as the auth spec's table lists
//! its headers. Only the signature, the date and the session token leave this file; the secret
//! key never does.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4::SigningParams;
use base64::Engine as _;
use bson::{doc, Document};

/// The body of the request the server forwards to STS.
const BODY: &str = "Action=GetCallerIdentity&Version=2011-06-15";

/// The client-second payload `{a: authorization, d: date[, t: token]}` for `host` (the
/// server's STS host, in `region`) and the server's nonce, signed at `now`.
pub(crate) fn client_second(
    credentials: &Credentials,
    host: &str,
    region: &str,
    server_nonce: &[u8],
    now: SystemTime,
) -> Result<Document, String> {
    let nonce = base64::engine::general_purpose::STANDARD.encode(server_nonce);
    let length = BODY.len().to_string();
    let headers = [
        ("content-length", length.as_str()),
        ("content-type", "application/x-www-form-urlencoded"),
        ("host", host),
        ("x-mongodb-gs2-cb-flag", "n"),
        ("x-mongodb-server-nonce", nonce.as_str()),
    ];
    let url = format!("https://{host}/");
    let request =
        SignableRequest::new("POST", &url, headers.into_iter(), SignableBody::Bytes(BODY.as_bytes()))
            .map_err(|e| format!("cannot build the request to sign: {e}"))?;
    let identity = credentials.clone().into();
    let params = SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("sts")
        .time(now)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| format!("signing parameters: {e}"))?
        .into();
    let (instructions, _) = sign(request, &params).map_err(|e| format!("signing failed: {e}"))?.into_parts();
    let header =
        |name: &str| instructions.headers().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v);
    let authorization = header("authorization").ok_or("the signer gave no authorization header")?;
    let date = header("x-amz-date").ok_or("the signer gave no x-amz-date header")?;
    let mut payload = doc! { "a": authorization, "d": date };
    if let Some(token) = credentials.session_token() {
        payload.insert("t", token);
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn credentials(token: Option<&str>) -> Credentials {
        Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            token.map(str::to_owned),
            None,
            "test",
        )
    }

    #[test]
    fn signs_the_spec_headers_with_a_scope_for_sts() {
        // 2019-11-07T00:26:07Z, the spec's example date.
        let now = UNIX_EPOCH + Duration::from_secs(1_573_086_367);
        let p = client_second(&credentials(None), "sts.amazonaws.com", "us-east-1", &[7u8; 64], now).unwrap();
        let a = p.get_str("a").unwrap();
        assert!(
            a.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20191107/us-east-1/sts/aws4_request, "),
            "{a}"
        );
        assert!(
            a.contains("SignedHeaders=content-length;content-type;host;x-amz-date;x-mongodb-gs2-cb-flag;x-mongodb-server-nonce, "),
            "{a}"
        );
        assert_eq!(p.get_str("d").unwrap(), "20191107T002607Z");
        assert!(p.get("t").is_none(), "no token without temporary credentials");
        assert!(!format!("{p:?}").contains("EXAMPLEKEY"), "the secret never leaves");
    }

    #[test]
    fn a_session_token_is_signed_and_sent() {
        let now = UNIX_EPOCH + Duration::from_secs(1_573_086_367);
        let p = client_second(
            &credentials(Some("tok")),
            "sts.us-west-2.amazonaws.com",
            "us-west-2",
            &[1u8; 64],
            now,
        )
        .unwrap();
        assert_eq!(p.get_str("t").unwrap(), "tok");
        let a = p.get_str("a").unwrap();
        assert!(a.contains("/us-west-2/sts/aws4_request") && a.contains("x-amz-security-token"), "{a}");
    }
}
