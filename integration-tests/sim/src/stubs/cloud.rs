//! The cloud endpoints a client asks for credentials, as [`HttpStub`](crate::stubs::http::HttpStub) handlers on 127.0.0.1:
//! EC2 instance metadata (IMDSv2), an ECS credentials endpoint, the Azure instance metadata
//! service's token endpoint and the GCP metadata server's identity endpoint. Clients reach them
//! through the variables the clouds' SDKs honour: `AWS_EC2_METADATA_SERVICE_ENDPOINT`,
//! `AWS_CONTAINER_CREDENTIALS_FULL_URI`, `AZURE_POD_IDENTITY_AUTHORITY_HOST`, `GCE_METADATA_HOST`
//! (never a link-local address).

use crate::stubs::http::{Request, Response};

/// Temporary AWS credentials a stub hands out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwsTemporaryCredentials {
    /// `AccessKeyId`.
    pub access_key_id: String,
    /// `SecretAccessKey`.
    pub secret_access_key: String,
    /// `Token` (the session token).
    pub token: String,
    /// `Expiration` (RFC 3339).
    pub expiration: String,
}

impl AwsTemporaryCredentials {
    fn json(&self, with_code: bool) -> String {
        let mut v = serde_json::json!({
            "AccessKeyId": self.access_key_id,
            "SecretAccessKey": self.secret_access_key,
            "Token": self.token,
            "Expiration": self.expiration,
        });
        if with_code {
            v["Code"] = "Success".into();
            v["Type"] = "AWS-HMAC".into();
            v["LastUpdated"] = "2026-01-01T00:00:00Z".into();
        }
        v.to_string()
    }
}

/// EC2 instance metadata over IMDSv2: a session token by `PUT /latest/api/token`, then, with
/// it, the role name and the role's credentials. Requests without the session token get 401.
pub fn ec2_imds(role: &str, credentials: AwsTemporaryCredentials) -> impl Fn(&Request) -> Response {
    const SESSION: &str = "imds-session-token";
    let role = role.to_owned();
    move |r: &Request| {
        let authorized = r.headers.get("x-aws-ec2-metadata-token").map(String::as_str) == Some(SESSION);
        let role_path = format!("/latest/meta-data/iam/security-credentials/{role}");
        match (r.method.as_str(), r.path.as_str()) {
            ("PUT", "/latest/api/token")
                if r.headers.contains_key("x-aws-ec2-metadata-token-ttl-seconds") =>
            {
                Response::new(200, "text/plain", SESSION)
                    .header("x-aws-ec2-metadata-token-ttl-seconds", "21600")
            }
            (_, _) if !authorized => Response::new(401, "text/plain", ""),
            ("GET", "/latest/meta-data/iam/security-credentials/") => {
                Response::new(200, "text/plain", role.clone())
            }
            ("GET", p) if p == role_path => Response::new(200, "application/json", credentials.json(true)),
            _ => Response::new(404, "text/plain", ""),
        }
    }
}

/// An ECS task's credentials endpoint at `path`.
pub fn ecs(path: &str, credentials: AwsTemporaryCredentials) -> impl Fn(&Request) -> Response {
    let path = path.to_owned();
    move |r: &Request| {
        if r.method == "GET" && r.path == path {
            Response::new(200, "application/json", credentials.json(false))
        } else {
            Response::new(404, "text/plain", "")
        }
    }
}

/// The Azure instance metadata service's token endpoint: `token` for requests naming
/// `resource` (already percent-encoded as the client sends it) with `Metadata: true`.
pub fn azure_imds(resource_encoded: &str, token: String) -> impl Fn(&Request) -> Response {
    let prefix =
        format!("/metadata/identity/oauth2/token?api-version=2018-02-01&resource={resource_encoded}");
    move |r: &Request| {
        let good = r.method == "GET"
            && r.path.starts_with(&prefix)
            && r.headers.get("metadata").map(String::as_str) == Some("true");
        if !good {
            return Response::new(400, "application/json", r#"{"error":"invalid_request"}"#);
        }
        let body = serde_json::json!({ "access_token": token, "expires_in": "3599", "token_type": "Bearer" });
        Response::new(200, "application/json", body.to_string())
    }
}

/// The GCP metadata server's identity endpoint: `token` for `audience` with
/// `Metadata-Flavor: Google`.
pub fn gcp_metadata(audience: &str, token: String) -> impl Fn(&Request) -> Response {
    let path = format!("/computeMetadata/v1/instance/service-accounts/default/identity?audience={audience}");
    move |r: &Request| {
        let good = r.path == path && r.headers.get("metadata-flavor").map(String::as_str) == Some("Google");
        if good {
            Response::new(200, "text/plain", token.clone())
        } else {
            Response::new(403, "text/plain", "forbidden")
        }
    }
}

/// STS's `AssumeRoleWithWebIdentity` (the Query protocol: a form body, an XML answer): the
/// credentials for a request carrying `web_identity_token` and `role_arn`, an error otherwise.
pub fn sts_web_identity(
    web_identity_token: &str,
    role_arn: &str,
    credentials: AwsTemporaryCredentials,
) -> impl Fn(&Request) -> Response {
    let (token, role) = (web_identity_token.to_owned(), role_arn.to_owned());
    move |r: &Request| {
        let form: Vec<(String, String)> = r
            .body
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (decode(k), decode(v)))
            .collect();
        let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let good = r.method == "POST"
            && field("Action") == Some("AssumeRoleWithWebIdentity")
            && field("WebIdentityToken") == Some(token.as_str())
            && field("RoleArn") == Some(role.as_str());
        if !good {
            return Response::new(
                400,
                "text/xml",
                "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code><Message>bad token</Message></Error><RequestId>1</RequestId></ErrorResponse>",
            );
        }
        let c = &credentials;
        let body = format!(
            "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\
             <AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>{}</AccessKeyId>\
             <SecretAccessKey>{}</SecretAccessKey><SessionToken>{}</SessionToken>\
             <Expiration>{}</Expiration></Credentials><AssumedRoleUser><Arn>{role}/session</Arn>\
             <AssumedRoleId>AROAEXAMPLE:session</AssumedRoleId></AssumedRoleUser>\
             </AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>1</RequestId>\
             </ResponseMetadata></AssumeRoleWithWebIdentityResponse>",
            c.access_key_id, c.secret_access_key, c.token, c.expiration
        );
        Response::new(200, "text/xml", body)
    }
}

/// Decodes a form value (`+` is a space, `%XX` a byte).
fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned()
}
