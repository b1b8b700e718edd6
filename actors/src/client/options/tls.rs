//! [`Tls`] and [`TlsOptions`]: the official typed form of the connection string's `tls*`
//! options (`ClientOptions::tls`).

use std::path::PathBuf;

use protocol::uri::UriOptions;
use serde::{Deserialize, Serialize};
use typed_builder::TypedBuilder;

/// Whether connections use TLS, and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Tls {
    /// TLS with these options.
    Enabled(TlsOptions),
    /// Plain TCP.
    Disabled,
}

impl From<TlsOptions> for Tls {
    fn from(options: TlsOptions) -> Self {
        Tls::Enabled(options)
    }
}

impl From<TlsOptions> for Option<Tls> {
    fn from(options: TlsOptions) -> Self {
        Some(Tls::Enabled(options))
    }
}

/// How TLS connections check the server and present a client certificate.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct TlsOptions {
    /// Accept any server certificate (`tlsAllowInvalidCertificates`). Testing only.
    pub allow_invalid_certificates: Option<bool>,
    /// The CA certificates (PEM) that sign the server's (`tlsCAFile`); `None`: the platform's.
    pub ca_file_path: Option<PathBuf>,
    /// The client certificate and its key, in one PEM file (`tlsCertificateKeyFile`).
    pub cert_key_file_path: Option<PathBuf>,
    /// Accept a certificate whose name does not match the host (`tlsAllowInvalidHostnames`).
    pub allow_invalid_hostnames: Option<bool>,
    /// The password of an encrypted key in `cert_key_file_path`
    /// (`tlsCertificateKeyFilePassword`). Never serialized, and redacted by `Debug`.
    #[serde(skip)]
    pub tls_certificate_key_file_password: Option<Vec<u8>>,
}

/// Redacts the key file's password.
impl std::fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let password = self.tls_certificate_key_file_password.as_ref().map(|_| "<redacted>");
        f.debug_struct("TlsOptions")
            .field("allow_invalid_certificates", &self.allow_invalid_certificates)
            .field("ca_file_path", &self.ca_file_path)
            .field("cert_key_file_path", &self.cert_key_file_path)
            .field("allow_invalid_hostnames", &self.allow_invalid_hostnames)
            .field("tls_certificate_key_file_password", &password)
            .finish()
    }
}

/// The TLS settings a connection string names, if it names any.
pub(crate) fn tls_of(o: &UriOptions) -> Option<Tls> {
    let insecure = o.tls_insecure.filter(|i| *i);
    let options = TlsOptions {
        allow_invalid_certificates: insecure.or(o.tls_allow_invalid_certificates),
        ca_file_path: o.tls_ca_file.as_ref().map(PathBuf::from),
        cert_key_file_path: o.tls_certificate_key_file.as_ref().map(PathBuf::from),
        allow_invalid_hostnames: insecure.or(o.tls_allow_invalid_hostnames),
        tls_certificate_key_file_password: o
            .tls_certificate_key_file_password
            .as_ref()
            .map(|p| p.expose().as_bytes().to_vec()),
    };
    match o.tls {
        Some(false) => Some(Tls::Disabled),
        Some(true) => Some(Tls::Enabled(options)),
        None if options != TlsOptions::default() => Some(Tls::Enabled(options)),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri_options(uri: &str) -> UriOptions {
        protocol::uri::ConnectionString::parse(uri).unwrap().options
    }

    #[test]
    fn uri_tls_options() {
        let o = uri_options("mongodb://h/?tls=true&tlsCAFile=/ca.pem&tlsAllowInvalidHostnames=true");
        let tls = tls_of(&o).unwrap();
        let Tls::Enabled(t) = &tls else { panic!("{tls:?}") };
        assert_eq!(t.ca_file_path, Some(PathBuf::from("/ca.pem")));
        assert_eq!((t.allow_invalid_hostnames, t.allow_invalid_certificates), (Some(true), None));
        assert_eq!(tls_of(&uri_options("mongodb://h/?tls=false")), Some(Tls::Disabled));
        assert_eq!(tls_of(&uri_options("mongodb://h/")), None);
        // tlsInsecure is both relaxations.
        let Some(Tls::Enabled(t)) = tls_of(&uri_options("mongodb://h/?tlsInsecure=true")) else { panic!() };
        assert_eq!((t.allow_invalid_hostnames, t.allow_invalid_certificates), (Some(true), Some(true)));
    }
}
