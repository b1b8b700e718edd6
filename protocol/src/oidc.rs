//! MONGODB-OIDC's data (auth spec): what the server says about its identity provider, what a
//! token callback is given and returns, and the human flow's `ALLOWED_HOSTS` rule. The official
//! crate's `options::oidc` types; the callback itself is the client's.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use typed_builder::TypedBuilder;

/// The callback API version the client passes (auth spec: 1 until the API changes).
pub const CALLBACK_API_VERSION: u32 = 1;

/// The identity provider the server names in a two-step conversation (its `IdpInfo`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TypedBuilder)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct IdpServerInfo {
    /// The issuer: the identity provider's URL, the `iss` of its tokens.
    pub issuer: String,
    /// The client id the application uses with the identity provider.
    pub client_id: Option<String>,
    /// The scopes to request besides the standard ones.
    pub request_scopes: Option<Vec<String>>,
}

/// What a token callback is given. Its `Debug` shows no refresh token.
#[derive(Clone, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct CallbackContext {
    /// When the callback must have returned: `connectTimeoutMS` (or the operation's
    /// `timeoutMS`) for a machine callback, five minutes for a human one.
    pub timeout: Option<Instant>,
    /// The callback API version ([`CALLBACK_API_VERSION`]).
    pub version: u32,
    /// The refresh token a human callback returned before, to get a new access token without
    /// the user.
    pub refresh_token: Option<String>,
    /// The identity provider the server named (human callbacks).
    pub idp_info: Option<IdpServerInfo>,
}

/// What a token callback returns. Its `Debug` shows neither token.
#[derive(Clone, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct IdpServerResponse {
    /// The access token (a JWT) sent to the server; never inspected by the client.
    #[builder(!default)]
    pub access_token: String,
    /// When the access token expires, if known.
    pub expires: Option<Instant>,
    /// A refresh token for the next human callback.
    pub refresh_token: Option<String>,
}

/// How a secret shows in `Debug`: whether it is there, never what it is.
fn redacted(secret: &Option<String>) -> Option<&'static str> {
    secret.as_ref().map(|_| "<redacted>")
}

impl std::fmt::Debug for CallbackContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallbackContext")
            .field("timeout", &self.timeout)
            .field("version", &self.version)
            .field("refresh_token", &redacted(&self.refresh_token))
            .field("idp_info", &self.idp_info)
            .finish()
    }
}

impl std::fmt::Debug for IdpServerResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdpServerResponse")
            .field("access_token", &"<redacted>")
            .field("expires", &self.expires)
            .field("refresh_token", &redacted(&self.refresh_token))
            .finish()
    }
}

/// `ALLOWED_HOSTS`' default: the hosts a human callback may be called for.
pub const DEFAULT_ALLOWED_HOSTS: &[&str] = &[
    "*.mongodb.net",
    "*.mongodb-qa.net",
    "*.mongodb-dev.net",
    "*.mongodbgov.net",
    "localhost",
    "127.0.0.1",
    "::1",
    "*.mongo.com",
];

/// Whether `host` (no port) matches one of `allowed`: exactly (case-insensitive), or below a
/// `*.` pattern's domain at any depth.
///
/// ```
/// use protocol::oidc::host_allowed;
/// let allowed = ["*.mongodb.net", "localhost"];
/// assert!(host_allowed(&allowed, "cluster0.a.mongodb.net"));
/// assert!(host_allowed(&allowed, "LOCALHOST"));
/// assert!(!host_allowed(&allowed, "mongodb.net"));
/// assert!(!host_allowed(&allowed, "evilmongodb.net"));
/// ```
pub fn host_allowed<S: AsRef<str>>(allowed: &[S], host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    allowed.iter().any(|pattern| {
        let pattern = pattern.as_ref().to_ascii_lowercase();
        match pattern.strip_prefix("*.") {
            Some(domain) => {
                host.strip_suffix(domain).is_some_and(|rest| rest.len() > 1 && rest.ends_with('.'))
            }
            None => host == pattern,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_hosts_by_name_and_wildcard() {
        assert!(host_allowed(DEFAULT_ALLOWED_HOSTS, "127.0.0.1"));
        assert!(host_allowed(DEFAULT_ALLOWED_HOSTS, "[::1]"));
        assert!(host_allowed(DEFAULT_ALLOWED_HOSTS, "x.y.mongo.com"));
        assert!(!host_allowed(DEFAULT_ALLOWED_HOSTS, "example.com"));
        assert!(!host_allowed(DEFAULT_ALLOWED_HOSTS, ".mongo.com"));
        assert!(!host_allowed::<&str>(&[], "localhost"));
    }

    #[test]
    fn the_server_idp_info_reads_from_bson() {
        let d = bson::doc! { "issuer": "https://issuer", "clientId": "abcd", "requestScopes": ["a", "b"] };
        let info: IdpServerInfo = crate::bson_compat::deserialize_from_document(d).unwrap();
        assert_eq!(info.client_id.as_deref(), Some("abcd"));
        assert_eq!(info.request_scopes, Some(vec!["a".to_string(), "b".to_string()]));
    }

    #[test]
    fn debug_shows_no_token() {
        let response = IdpServerResponse::builder()
            .access_token("access-secret".to_string())
            .refresh_token(Some("refresh-secret".to_string()))
            .build();
        let context = CallbackContext::builder().refresh_token(Some("refresh-secret".to_string())).build();
        let shown = format!("{response:?} {context:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}
