//! What parsing a connection string had to say beyond the options' values: what the parser
//! ignored, what this client parses but does not act on, and what it refuses.

use protocol::uri::{AuthMechanism, ConnectionString, UriOptions};

use crate::error::{Error, Result};

/// What parsing a connection string had to say, kept with the options it produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct UriNotes {
    /// What the parser ignored (unknown options, invalid values), as it said it.
    pub(crate) warnings: Vec<String>,
    /// Options this client parses but does not act on, each with what happens instead.
    pub(crate) without_effect: Vec<String>,
    /// For `mongodb+srv`: the host name whose SRV and TXT records give the seeds.
    pub(crate) srv_host: Option<String>,
    /// The string named `authSource` (a TXT record's then does not apply).
    pub(crate) auth_source_given: bool,
}

/// Refuses an authentication mechanism this build cannot use: the client would otherwise fall
/// back to another.
pub(crate) fn check_mechanism(m: AuthMechanism) -> Result<()> {
    let aws = cfg!(feature = "aws-auth") && m == AuthMechanism::MongoDbAws;
    if aws
        || matches!(
            m,
            AuthMechanism::ScramSha1
                | AuthMechanism::ScramSha256
                | AuthMechanism::MongoDbX509
                | AuthMechanism::Plain
                | AuthMechanism::MongoDbOidc
        )
    {
        return Ok(());
    }
    let more =
        if m == AuthMechanism::MongoDbAws { " (MONGODB-AWS needs the `aws-auth` feature)" } else { "" };
    Err(Error::invalid_argument(format!(
        "authMechanism {}: this client authenticates with SCRAM-SHA-1, SCRAM-SHA-256, MONGODB-X509, PLAIN, MONGODB-OIDC and, with the `aws-auth` feature, MONGODB-AWS only{more}",
        m.as_str()
    )))
}

/// Options the URI may carry that this client parses but does not act on, each with what
/// happens instead; the client logs each as a warning once, when it starts. `Err` for options
/// whose silent fallback would do something else than the user asked: an authentication
/// mechanism this build does not have, and a proxy (connections would go around it).
pub fn options_without_effect(cs: &ConnectionString) -> Result<Vec<String>> {
    if let Some(m) = cs.credential.as_ref().and_then(|c| c.mechanism) {
        check_mechanism(m)?;
    }
    uri_only_options_without_effect(&cs.options)
}

/// The options only a URI carries that this client parses but does not act on, each with
/// what happens instead. `Err` for a proxy: connections would go around it.
pub(crate) fn uri_only_options_without_effect(o: &UriOptions) -> Result<Vec<String>> {
    if o.proxy_host.is_some()
        || o.proxy_port.is_some()
        || o.proxy_username.is_some()
        || o.proxy_password.is_some()
    {
        return Err(Error::invalid_argument(
            "proxyHost, proxyPort, proxyUsername, proxyPassword: SOCKS5 proxies are not supported by this client",
        ));
    }
    let table: [(bool, &str); 2] = [
        (
            o.server_selection_try_once.is_some(),
            "serverSelectionTryOnce: only single-threaded drivers use it; selection waits up to serverSelectionTimeoutMS",
        ),
        (
            o.tls_disable_certificate_revocation_check.is_some() || o.tls_disable_ocsp_endpoint_check.is_some(),
            "tlsDisableCertificateRevocationCheck, tlsDisableOCSPEndpointCheck: this client never checks certificate revocation (OCSP or CRL)",
        ),
    ];
    Ok(table.into_iter().filter(|(set, _)| *set).map(|(_, what)| what.to_string()).collect())
}
