//! Credentials described by a connection string, validated per the auth spec.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Authentication mechanism properties (`authMechanismProperties`), keys as given.
pub type MechanismProperties = BTreeMap<String, String>;

/// What a secret is shown as.
pub const REDACTED: &str = "<redacted>";

/// The properties a connection string gives, as a credential holds them: each value a string.
pub fn properties_document(p: &MechanismProperties) -> bson::Document {
    p.iter().map(|(k, v)| (k.clone(), bson::Bson::String(v.clone()))).collect()
}

/// An authentication mechanism (auth spec, "Supported Authentication Methods").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum AuthMechanism {
    /// `SCRAM-SHA-1`.
    #[serde(rename = "SCRAM-SHA-1")]
    ScramSha1,
    /// `SCRAM-SHA-256`.
    #[serde(rename = "SCRAM-SHA-256")]
    ScramSha256,
    /// `MONGODB-X509`.
    #[serde(rename = "MONGODB-X509")]
    MongoDbX509,
    /// `GSSAPI` (Kerberos).
    #[serde(rename = "GSSAPI")]
    Gssapi,
    /// `PLAIN` (LDAP).
    #[serde(rename = "PLAIN")]
    Plain,
    /// `MONGODB-AWS`.
    #[serde(rename = "MONGODB-AWS")]
    MongoDbAws,
    /// `MONGODB-OIDC`.
    #[serde(rename = "MONGODB-OIDC")]
    MongoDbOidc,
    /// `MONGODB-CR`: removed from the server in 4.0. Named for the official API's shape; a
    /// connection string cannot select it and a credential with it is refused.
    #[serde(rename = "MONGODB-CR")]
    MongoDbCr,
}

impl AuthMechanism {
    const ALL: [AuthMechanism; 7] = [
        AuthMechanism::ScramSha1,
        AuthMechanism::ScramSha256,
        AuthMechanism::MongoDbX509,
        AuthMechanism::Gssapi,
        AuthMechanism::Plain,
        AuthMechanism::MongoDbAws,
        AuthMechanism::MongoDbOidc,
    ];

    /// The mechanism's name as the server and connection strings spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMechanism::ScramSha1 => "SCRAM-SHA-1",
            AuthMechanism::ScramSha256 => "SCRAM-SHA-256",
            AuthMechanism::MongoDbX509 => "MONGODB-X509",
            AuthMechanism::Gssapi => "GSSAPI",
            AuthMechanism::Plain => "PLAIN",
            AuthMechanism::MongoDbAws => "MONGODB-AWS",
            AuthMechanism::MongoDbOidc => "MONGODB-OIDC",
            AuthMechanism::MongoDbCr => "MONGODB-CR",
        }
    }

    /// Parses a mechanism name (ASCII case-insensitive). `None` for unknown or removed
    /// mechanisms such as `MONGODB-CR`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str().eq_ignore_ascii_case(s))
    }

    /// Checks `credential` against this mechanism's rules (a username where it needs one, no
    /// password where it takes none, its properties): what building a client with it would
    /// refuse.
    pub fn validate_credential<C: CredentialFields + ?Sized>(&self, credential: &C) -> Result<()> {
        let c = Credential { mechanism: Some(*self), ..credential.to_uri_credential() };
        c.finish(None).map(|_| ())
    }

    /// Mechanisms that authenticate against an external source and therefore require
    /// `authSource` to be `$external`.
    fn is_external(self) -> bool {
        matches!(
            self,
            AuthMechanism::MongoDbX509
                | AuthMechanism::Gssapi
                | AuthMechanism::MongoDbAws
                | AuthMechanism::MongoDbOidc
        )
    }

    /// The `authMechanismProperties` keys the mechanism accepts in a connection string.
    fn allowed_properties(self) -> &'static [&'static str] {
        match self {
            AuthMechanism::Gssapi => {
                &["SERVICE_NAME", "CANONICALIZE_HOST_NAME", "SERVICE_REALM", "SERVICE_HOST"]
            }
            AuthMechanism::MongoDbAws => &["AWS_SESSION_TOKEN"],
            AuthMechanism::MongoDbOidc => &["ENVIRONMENT", "TOKEN_RESOURCE"],
            _ => &[],
        }
    }
}

/// The mechanism of a name as the server spells it (`SCRAM-SHA-256`...), `MONGODB-CR`
/// included; case-insensitive.
impl std::str::FromStr for AuthMechanism {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        if s.eq_ignore_ascii_case("MONGODB-CR") {
            return Ok(AuthMechanism::MongoDbCr);
        }
        Self::parse(s)
            .ok_or_else(|| Error::InvalidCredential(format!("unknown authentication mechanism '{s}'")))
    }
}

impl fmt::Display for AuthMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A credential's values as a connection string holds them: this crate's [`Credential`], and
/// the client's own (which adds callbacks) through it.
pub trait CredentialFields {
    /// The values a connection string could carry.
    fn to_uri_credential(&self) -> Credential;
}

impl CredentialFields for Credential {
    fn to_uri_credential(&self) -> Credential {
        self.clone()
    }
}

/// The credential a connection string asks for.
///
/// Present only when the string has userinfo or an `authMechanism`/`authSource` option;
/// a database in the path alone does not request authentication.
///
/// `Debug` never prints the password.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[serde(default)]
pub struct Credential {
    /// The user name (percent-decoded). `None` when the string gives none, as `MONGODB-X509`
    /// and `MONGODB-OIDC` allow.
    pub username: Option<String>,
    /// The password (percent-decoded); `Some("")` for `user:@host`. Serialized as
    /// `"<redacted>"`.
    #[serde(serialize_with = "redact_password")]
    pub password: Option<String>,
    /// The database to authenticate against: `authSource`, else the mechanism's default
    /// (the path database or `admin` for SCRAM, the path database or `$external` for PLAIN,
    /// `$external` for the external mechanisms).
    pub source: Option<String>,
    /// The mechanism; `None` means negotiate SCRAM with the server.
    pub mechanism: Option<AuthMechanism>,
    /// `authMechanismProperties`, if given: from a connection string each value is a string;
    /// set in code a value may also be a boolean (`CANONICALIZE_HOST_NAME: true`).
    pub mechanism_properties: Option<bson::Document>,
}

/// Serializes a password as [`REDACTED`] (or none): serde's `serialize_with` for credentials.
pub fn redact_password<S: serde::Serializer>(
    p: &Option<String>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    match p {
        Some(_) => s.serialize_some(REDACTED),
        None => s.serialize_none(),
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The password is secret: show only whether one is set.
        f.debug_struct("Credential")
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("source", &self.source)
            .field("mechanism", &self.mechanism)
            .field("mechanism_properties", &self.mechanism_properties)
            .finish()
    }
}

impl Credential {
    /// Resolves the default source and checks the auth spec's per-mechanism rules.
    /// `db` is the connection string's default database.
    ///
    /// Passwords are never required here: they may be supplied in code when the client is
    /// built. What the connection string says must however be consistent.
    pub fn finish(mut self, db: Option<&str>) -> Result<Self> {
        let bad = |m: String| Err(Error::InvalidCredential(m));
        let mech = self.mechanism;
        let name = mech.map_or("the default mechanism", AuthMechanism::as_str);
        let has_user = self.username.as_deref().is_some_and(|u| !u.is_empty());
        if self.username.as_deref() == Some("") {
            if mech.is_some_and(|m| m == AuthMechanism::MongoDbX509 || m == AuthMechanism::MongoDbOidc) {
                return bad(format!("{name} does not accept an empty username"));
            }
            self.username = None;
        }
        if let Some(src) = &self.source {
            if src.is_empty() {
                return bad("authSource must not be empty".into());
            }
            if mech.is_some_and(AuthMechanism::is_external) && src != "$external" {
                return bad(format!("{name} requires authSource to be $external, not '{src}'"));
            }
        }
        // Allowed property keys, then the mechanism-specific rules.
        if let Some(props) = &self.mechanism_properties {
            let allowed = mech.map_or(&[][..], AuthMechanism::allowed_properties);
            if let Some(k) = props.keys().find(|k| !allowed.contains(&k.as_str())) {
                return bad(format!("{name} does not accept the mechanism property '{k}'"));
            }
        }
        self.check_mechanism(name, has_user)?;
        if mech == Some(AuthMechanism::Gssapi) {
            let props = self.mechanism_properties.get_or_insert_with(Default::default);
            if !props.contains_key("SERVICE_NAME") {
                props.insert("SERVICE_NAME", "mongodb");
            }
        }
        if self.source.is_none() {
            self.source = Some(match mech {
                Some(m) if m.is_external() => "$external".to_string(),
                Some(AuthMechanism::Plain) => db.unwrap_or("$external").to_string(),
                _ => db.unwrap_or("admin").to_string(),
            });
        }
        Ok(self)
    }

    /// The rules of the mechanism the string names (or of the default one).
    fn check_mechanism(&self, name: &str, has_user: bool) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidCredential(m));
        let text = |k: &str| self.mechanism_properties.as_ref().and_then(|p| p.get(k)).map(property_text);
        let (canonicalize, session_token) = (text("CANONICALIZE_HOST_NAME"), text("AWS_SESSION_TOKEN"));
        let (environment, token_resource) = (text("ENVIRONMENT"), text("TOKEN_RESOURCE"));
        match self.mechanism {
            None | Some(AuthMechanism::ScramSha1 | AuthMechanism::ScramSha256) => {
                if !has_user {
                    return bad(format!("{name} requires a username"));
                }
            }
            Some(AuthMechanism::Plain) => {
                if !has_user {
                    return bad("PLAIN requires a username".into());
                }
            }
            Some(AuthMechanism::Gssapi) => {
                if !has_user {
                    return bad("GSSAPI requires a username".into());
                }
                if let Some(v) = canonicalize.as_deref() {
                    if !["true", "false", "none", "forward", "forwardAndReverse"].contains(&v) {
                        return bad(format!("invalid CANONICALIZE_HOST_NAME '{v}'"));
                    }
                }
            }
            Some(AuthMechanism::MongoDbX509) => {
                if self.password.is_some() {
                    return bad("MONGODB-X509 does not accept a password".into());
                }
            }
            Some(AuthMechanism::MongoDbAws) => {
                // Credentials come from the environment only (auth spec, 2025-09-30).
                if has_user || self.password.is_some() || session_token.is_some() {
                    return bad(
                        "MONGODB-AWS takes its credentials from the environment, never from the connection string"
                            .into(),
                    );
                }
            }
            Some(AuthMechanism::MongoDbCr) => {
                return bad("MONGODB-CR was removed from the server in 4.0: use SCRAM-SHA-256".into());
            }
            Some(AuthMechanism::MongoDbOidc) => {
                if self.password.is_some() {
                    return bad("MONGODB-OIDC does not accept a password".into());
                }
                check_oidc_environment(environment.as_deref(), token_resource.as_deref(), has_user)?;
            }
        }
        Ok(())
    }
}

/// A mechanism property's value as the connection string would write it.
pub fn property_text(v: &bson::Bson) -> String {
    match v {
        bson::Bson::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// MONGODB-OIDC's `ENVIRONMENT` and `TOKEN_RESOURCE` properties.
fn check_oidc_environment(
    environment: Option<&str>,
    token_resource: Option<&str>,
    has_user: bool,
) -> Result<()> {
    let bad = |m: String| Err(Error::InvalidCredential(m));
    // Without ENVIRONMENT the application must provide a callback in code, which
    // cannot be checked here (building the connections refuses OIDC with neither).
    match (environment, token_resource) {
        (None, Some(_)) => return bad("TOKEN_RESOURCE requires ENVIRONMENT".into()),
        (None, None) => {}
        (Some(env @ ("test" | "k8s")), tr) => {
            if has_user {
                return bad(format!("ENVIRONMENT:{env} does not accept a username"));
            }
            if tr.is_some() {
                return bad(format!("ENVIRONMENT:{env} does not accept TOKEN_RESOURCE"));
            }
        }
        (Some(env @ ("azure" | "gcp")), tr) => {
            if tr.is_none() {
                return bad(format!("ENVIRONMENT:{env} requires TOKEN_RESOURCE"));
            }
            if env == "gcp" && has_user {
                return bad("ENVIRONMENT:gcp does not accept a username".into());
            }
        }
        (Some(env), _) => return bad(format!("unknown OIDC ENVIRONMENT '{env}'")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cred(user: Option<&str>, pass: Option<&str>, mech: Option<AuthMechanism>) -> Credential {
        Credential {
            username: user.map(str::to_string),
            password: pass.map(str::to_string),
            mechanism: mech,
            ..Default::default()
        }
    }

    #[test]
    fn debug_redacts_password() {
        let c = cred(Some("alice"), Some("s3cr3t-pw"), None);
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("s3cr3t-pw"), "{dbg}");
        assert!(dbg.contains("alice") && dbg.contains("redacted"), "{dbg}");
    }

    #[test]
    fn default_sources() {
        let c = cred(Some("u"), Some("p"), None).finish(Some("db")).unwrap();
        assert_eq!(c.source.as_deref(), Some("db"));
        let c = cred(Some("u"), Some("p"), None).finish(None).unwrap();
        assert_eq!(c.source.as_deref(), Some("admin"));
        let c = cred(Some("u"), Some("p"), Some(AuthMechanism::Plain)).finish(None).unwrap();
        assert_eq!(c.source.as_deref(), Some("$external"));
        let c = cred(None, None, Some(AuthMechanism::MongoDbX509)).finish(Some("db")).unwrap();
        assert_eq!(c.source.as_deref(), Some("$external"));
    }

    #[test]
    fn mechanism_rules() {
        assert!(cred(None, None, None).finish(None).is_err());
        assert!(cred(Some("u"), Some("p"), Some(AuthMechanism::MongoDbX509)).finish(None).is_err());
        assert!(cred(None, None, Some(AuthMechanism::Gssapi)).finish(None).is_err());
        assert!(cred(Some("u"), None, Some(AuthMechanism::MongoDbAws)).finish(None).is_err());
        let mut c = cred(Some("u"), None, Some(AuthMechanism::Gssapi));
        c.source = Some("foo".into());
        assert!(c.finish(None).is_err());
    }

    #[test]
    fn mechanism_names() {
        assert_eq!(AuthMechanism::parse("scram-sha-256"), Some(AuthMechanism::ScramSha256));
        assert_eq!(AuthMechanism::parse("MONGODB-CR"), None);
        // The official API's FromStr names MONGODB-CR, which every credential then refuses.
        assert_eq!("PLAIN".parse::<AuthMechanism>().unwrap(), AuthMechanism::Plain);
        let cr: AuthMechanism = "MONGODB-CR".parse().unwrap();
        assert!(matches!(
            cr.validate_credential(&cred(Some("u"), Some("p"), None)),
            Err(Error::InvalidCredential(_))
        ));
        assert!("NOPE".parse::<AuthMechanism>().is_err());
        let scram = AuthMechanism::ScramSha256;
        assert!(scram.validate_credential(&cred(Some("u"), Some("p"), None)).is_ok());
        assert!(scram.validate_credential(&cred(None, None, None)).is_err(), "SCRAM needs a username");
        let x509 = AuthMechanism::MongoDbX509;
        assert!(x509.validate_credential(&cred(None, Some("p"), None)).is_err(), "X509 takes no password");
    }
}
