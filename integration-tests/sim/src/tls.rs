//! TLS serving: the rustls (`ring` provider) server configuration built from [`SimTls`].

use std::fmt;
use std::sync::Arc;

use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use crate::error::SimError;

/// TLS settings of a simulated cluster: every member, mongos and load balancer then accepts
/// only TLS connections. [`crate::testing::TestCerts`] generates a matching set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimTls {
    /// The server certificate chain in PEM, leaf first. Its names must match what clients dial
    /// (the simulator listens on `127.0.0.1`, so an IP SAN `127.0.0.1`).
    pub cert_chain_pem: String,
    /// The server certificate's private key in PEM (PKCS#8, PKCS#1 or SEC1).
    pub key_pem: String,
    /// When set, clients must present a certificate signed by one of these CAs (PEM).
    pub client_ca_pem: Option<String>,
}

/// The acceptor shared by every listener of a cluster.
#[derive(Clone)]
pub(crate) struct Acceptor(pub TlsAcceptor);

impl fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TlsAcceptor")
    }
}

fn tls_err(what: &str, e: impl fmt::Display) -> SimError {
    SimError::Tls(format!("{what}: {e}"))
}

fn certs(pem: &str, what: &str) -> Result<Vec<CertificateDer<'static>>, SimError> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| tls_err(what, e))?;
    if certs.is_empty() {
        return Err(SimError::Tls(format!("{what}: no certificate in the PEM")));
    }
    Ok(certs)
}

/// Builds the server configuration (TLS 1.2 and 1.3, ring provider).
pub(crate) fn acceptor(tls: &SimTls) -> Result<Acceptor, SimError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certs(&tls.cert_chain_pem, "server certificate")?;
    let key = PrivateKeyDer::from_pem_slice(tls.key_pem.as_bytes()).map_err(|e| tls_err("server key", e))?;
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_err("protocol versions", e))?;
    let builder = match &tls.client_ca_pem {
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for c in certs(ca, "client CA")? {
                roots.add(c).map_err(|e| tls_err("client CA", e))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| tls_err("client verifier", e))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let config = builder.with_single_cert(chain, key).map_err(|e| tls_err("server certificate", e))?;
    Ok(Acceptor(TlsAcceptor::from(Arc::new(config))))
}

/// The subject of a client certificate (DER) as mongod names an X.509 user: RFC 2253, the
/// most specific attribute first (`CN=client,O=org`), special characters escaped. `None`
/// when the certificate does not parse.
pub(crate) fn subject_rfc2253(der: &[u8]) -> Option<String> {
    use x509_parser::prelude::{FromDer, X509Certificate};
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let registry = x509_parser::objects::oid_registry();
    let mut rdns = Vec::new();
    for rdn in cert.subject().iter_rdn() {
        let mut parts = Vec::new();
        for attr in rdn.iter() {
            let oid = attr.attr_type();
            let name = x509_parser::objects::oid2abbrev(oid, registry)
                .map(str::to_owned)
                .unwrap_or_else(|_| oid.to_id_string());
            let value = attr.as_str().ok()?;
            parts.push(format!("{name}={}", escape_rfc2253(value)));
        }
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Some(rdns.join(","))
}

fn escape_rfc2253(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for (i, c) in value.chars().enumerate() {
        let edge = (i == 0 && (c == ' ' || c == '#')) || (i + 1 == value.chars().count() && c == ' ');
        if edge || matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc2253_subjects() {
        let certs = crate::testing::TestCerts::generate();
        let der = CertificateDer::pem_slice_iter(certs.client_cert_pem.as_bytes()).next().unwrap().unwrap();
        assert_eq!(subject_rfc2253(&der).as_deref(), Some("O=mongo-actors,CN=mongo-sim-client"));
        assert_eq!(subject_rfc2253(b"not a certificate"), None);
        assert_eq!(escape_rfc2253("a,b+c"), "a\\,b\\+c");
        assert_eq!(escape_rfc2253("#lead "), "\\#lead\\ ");
    }
}
