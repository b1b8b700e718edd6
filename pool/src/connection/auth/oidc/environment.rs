//! The built-in OIDC environments (`authMechanismProperties=ENVIRONMENT:...`): machine callbacks
//! that get a token where the platform keeps one. `test` reads `OIDC_TOKEN_FILE`; `k8s` reads
//! the service account token (`AZURE_FEDERATED_TOKEN_FILE`, `AWS_WEB_IDENTITY_TOKEN_FILE`, else
//! the default path); `azure` asks the Azure instance metadata service for a token for
//! `TOKEN_RESOURCE` (feature `azure-oidc`); `gcp` asks the GCP metadata server for an identity
//! token with that audience (feature `gcp-oidc`). They never cache: the client's cache does.
//!
//! Tests and proxies point the metadata requests elsewhere as the clouds' own SDKs allow:
//! `AZURE_POD_IDENTITY_AUTHORITY_HOST` (Azure) and `GCE_METADATA_HOST` (GCP).

use std::sync::Arc;

use protocol::oidc::IdpServerResponse;

use super::callback::{TokenFunction, TokenFuture};

/// The Kubernetes service account token's default path.
const K8S_TOKEN: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// The machine callback of `environment`, or why there is none. `username` is Azure's client
/// id; `token_resource` the Azure resource or the GCP audience.
#[cfg_attr(not(all(feature = "azure-oidc", feature = "gcp-oidc")), allow(unused_variables))]
pub fn builtin(
    environment: &str,
    username: Option<&str>,
    token_resource: Option<&str>,
) -> Result<Arc<TokenFunction>, String> {
    match environment {
        "test" => Ok(Arc::new(|_| from_file(std::env::var("OIDC_TOKEN_FILE").ok(), "OIDC_TOKEN_FILE"))),
        "k8s" => Ok(Arc::new(|_| {
            let path = std::env::var("AZURE_FEDERATED_TOKEN_FILE")
                .or_else(|_| std::env::var("AWS_WEB_IDENTITY_TOKEN_FILE"))
                .unwrap_or_else(|_| K8S_TOKEN.to_string());
            from_file(Some(path), "the service account token")
        })),
        #[cfg(feature = "azure-oidc")]
        "azure" => Ok(azure(username, token_resource.unwrap_or_default())),
        #[cfg(not(feature = "azure-oidc"))]
        "azure" => Err("ENVIRONMENT:azure needs the `azure-oidc` feature".into()),
        #[cfg(feature = "gcp-oidc")]
        "gcp" => Ok(gcp(token_resource.unwrap_or_default())),
        #[cfg(not(feature = "gcp-oidc"))]
        "gcp" => Err("ENVIRONMENT:gcp needs the `gcp-oidc` feature".into()),
        other => Err(format!("unknown OIDC ENVIRONMENT '{other}'")),
    }
}

/// A token read from `path` (surrounding whitespace dropped).
fn from_file(path: Option<String>, what: &'static str) -> TokenFuture {
    Box::pin(async move {
        let path = path.ok_or_else(|| format!("{what} is not set"))?;
        let token = tokio::fs::read_to_string(&path).await.map_err(|e| format!("cannot read {path}: {e}"))?;
        Ok(IdpServerResponse::builder().access_token(token.trim().to_owned()).build())
    })
}

/// Percent-encodes a query value: RFC 3986's unreserved characters stay as they are.
#[cfg(any(feature = "azure-oidc", feature = "gcp-oidc"))]
fn encode(value: &str) -> String {
    use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
    const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');
    utf8_percent_encode(value, QUERY_VALUE).to_string()
}

/// `host:port` of a metadata service: the override variable (with or without `http://`), else
/// the platform's address.
#[cfg(any(feature = "azure-oidc", feature = "gcp-oidc"))]
fn authority(variable: &str, default: &str) -> String {
    std::env::var(variable)
        .ok()
        .filter(|v| !v.is_empty())
        .map(|v| v.trim_start_matches("http://").trim_end_matches('/').to_string())
        .map(|v| if v.contains(':') { v } else { format!("{v}:80") })
        .unwrap_or_else(|| default.to_string())
}

/// A GET to a metadata service (its authority from `variable`, else `default`), within the
/// callback's deadline: the body of a 200, else an error naming `service` and its answer.
#[cfg(any(feature = "azure-oidc", feature = "gcp-oidc"))]
async fn metadata_get(
    context: &protocol::oidc::CallbackContext,
    (variable, default, service): (&str, &str, &str),
    path: &str,
    headers: &[(&str, &str)],
) -> Result<String, String> {
    let deadline = context
        .timeout
        .map_or_else(|| tokio::time::Instant::now() + super::callback::MACHINE_TIMEOUT, Into::into);
    let (status, body) = super::http::get(&authority(variable, default), path, headers, deadline).await?;
    if status != 200 {
        // Up to a mebibyte of body: only an excerpt becomes the message (and then the server
        // description's error, and the status page).
        return Err(format!("the {service} answered {status}: {}", protocol::excerpt::short(&body)));
    }
    Ok(body)
}

#[cfg(feature = "azure-oidc")]
fn azure(username: Option<&str>, resource: &str) -> Arc<TokenFunction> {
    let mut path =
        format!("/metadata/identity/oauth2/token?api-version=2018-02-01&resource={}", encode(resource));
    if let Some(client_id) = username {
        path.push_str(&format!("&client_id={}", encode(client_id)));
    }
    Arc::new(move |ctx| {
        let path = path.clone();
        Box::pin(async move {
            let service =
                ("AZURE_POD_IDENTITY_AUTHORITY_HOST", "169.254.169.254:80", "Azure metadata service");
            let headers = [("Accept", "application/json"), ("Metadata", "true")];
            let body = metadata_get(&ctx, service, &path, &headers).await?;
            let json: serde_json::Value = serde_json::from_str(&body)
                .map_err(|e| format!("the Azure token response is not JSON: {e}"))?;
            let token =
                json["access_token"].as_str().ok_or("the Azure token response has no access_token")?;
            let expires = json["expires_in"].as_str().and_then(|s| s.parse::<u64>().ok()).and_then(|s| {
                protocol::duration::instant_after(
                    std::time::Instant::now(),
                    protocol::duration::from_secs_u64(s),
                )
            });
            Ok(IdpServerResponse::builder().access_token(token.to_owned()).expires(expires).build())
        })
    })
}

#[cfg(feature = "gcp-oidc")]
fn gcp(resource: &str) -> Arc<TokenFunction> {
    let path = format!(
        "/computeMetadata/v1/instance/service-accounts/default/identity?audience={}",
        encode(resource)
    );
    Arc::new(move |ctx| {
        let path = path.clone();
        Box::pin(async move {
            let service = ("GCE_METADATA_HOST", "metadata:80", "GCP metadata server");
            let body = metadata_get(&ctx, service, &path, &[("Metadata-Flavor", "Google")]).await?;
            Ok(IdpServerResponse::builder().access_token(body.trim().to_owned()).build())
        })
    })
}
