//! [`Credential`]: how a client authenticates, as the official crate spells it, with the MONGODB-OIDC
//! callback (and, with the `aws-auth` feature, an AWS credential provider) beside the values a
//! connection string carries ([`protocol::uri::Credential`], which the parser fills and the
//! connections use).

use std::fmt;

use bson::Document;
use protocol::uri::{AuthMechanism, CredentialFields, REDACTED};
use serde::{Deserialize, Serialize};
use typed_builder::TypedBuilder;

use super::oidc;

/// A mechanism property that is given in code only, never in a connection string: the hosts a
/// human OIDC callback may be called for.
pub(crate) const ALLOWED_HOSTS: &str = "ALLOWED_HOSTS";

/// How to authenticate. Fields left `None` are negotiated (the mechanism) or defaulted (the
/// source: `admin` for SCRAM, `$external` for the external mechanisms, the URI's database or
/// `$external` for PLAIN).
///
/// `Debug` and `Serialize` never show the password.
///
/// ```
/// use mongo_actors::options::{AuthMechanism, Credential};
/// let c = Credential::builder().username("app".to_string()).password("secret".to_string()).build();
/// assert_eq!(c.mechanism, None);
/// assert!(!format!("{c:?}").contains("secret"));
/// let oidc = Credential::builder().mechanism(AuthMechanism::MongoDbOidc).build();
/// assert_eq!(oidc.mechanism, Some(AuthMechanism::MongoDbOidc));
/// ```
#[derive(Clone, Default, Deserialize, Serialize, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[serde(default)]
#[non_exhaustive]
pub struct Credential {
    /// The user name; `None` where the mechanism allows it (MONGODB-X509, MONGODB-OIDC,
    /// MONGODB-AWS).
    pub username: Option<String>,
    /// The database to authenticate against (`authSource`).
    pub source: Option<String>,
    /// The password (secret); serialized as `"<redacted>"`.
    #[serde(serialize_with = "protocol::uri::redact_password")]
    pub password: Option<String>,
    /// The mechanism; `None`: SCRAM, negotiated with the server.
    pub mechanism: Option<AuthMechanism>,
    /// `authMechanismProperties`; in code also `ALLOWED_HOSTS` (an array) for a human OIDC
    /// callback.
    pub mechanism_properties: Option<Document>,
    /// The MONGODB-OIDC callback ([`oidc::Callback::machine`] or [`oidc::Callback::human`]);
    /// the default is none (an `ENVIRONMENT` property names a built-in one instead).
    #[serde(skip)]
    pub oidc_callback: oidc::Callback,
    /// An AWS SDK credential provider, tried before every other MONGODB-AWS source.
    #[cfg(feature = "aws-auth")]
    #[serde(skip)]
    pub aws_credential_provider: Option<aws_credential_types::provider::SharedCredentialsProvider>,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("username", &self.username)
            .field("source", &self.source)
            .field("password", &self.password.as_ref().map(|_| REDACTED))
            .field("mechanism", &self.mechanism)
            .field("mechanism_properties", &self.mechanism_properties)
            .field("oidc_callback", &self.oidc_callback)
            .finish_non_exhaustive()
    }
}

/// Values compared; the callback and the provider (code) are not.
impl PartialEq for Credential {
    fn eq(&self, other: &Self) -> bool {
        self.username == other.username
            && self.source == other.source
            && self.password == other.password
            && self.mechanism == other.mechanism
            && self.mechanism_properties == other.mechanism_properties
    }
}

impl From<protocol::uri::Credential> for Credential {
    fn from(c: protocol::uri::Credential) -> Self {
        Credential {
            username: c.username,
            source: c.source,
            password: c.password,
            mechanism: c.mechanism,
            mechanism_properties: c.mechanism_properties,
            ..Default::default()
        }
    }
}

impl CredentialFields for Credential {
    /// The connection string's part: the values, without the code-only properties
    /// (`ALLOWED_HOSTS`).
    fn to_uri_credential(&self) -> protocol::uri::Credential {
        let mut properties = self.mechanism_properties.clone();
        if properties.as_mut().is_some_and(|p| p.remove(ALLOWED_HOSTS).is_some()) {
            properties = properties.filter(|p| !p.is_empty());
        }
        protocol::uri::Credential {
            username: self.username.clone(),
            password: self.password.clone(),
            source: self.source.clone(),
            mechanism: self.mechanism,
            mechanism_properties: properties,
        }
    }
}

impl Credential {
    /// `ALLOWED_HOSTS` as given in code: `None` when not given, an error when it is not an
    /// array of strings.
    pub(crate) fn allowed_hosts(&self) -> crate::error::Result<Option<Vec<String>>> {
        let Some(v) = self.mechanism_properties.as_ref().and_then(|p| p.get(ALLOWED_HOSTS)) else {
            return Ok(None);
        };
        let bad = || crate::error::Error::invalid_argument("ALLOWED_HOSTS must be an array of host names");
        let array = v.as_array().ok_or_else(bad)?;
        array
            .iter()
            .map(|h| h.as_str().map(str::to_owned).ok_or_else(bad))
            .collect::<crate::error::Result<Vec<_>>>()
            .map(Some)
    }
}
