//! TLS client configuration (tokio-rustls with the ring provider) built from the uri-options
//! TLS settings, and the two relaxed certificate verifiers the options may ask for.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use serde::{Deserialize, Serialize};

use protocol::uri::Secret;

use crate::{Error, Result};

/// The TLS settings of the uri-options spec.
///
/// `Debug` and serde never show the key file password.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TlsOptions {
    /// `tlsCAFile`: PEM file of the certificate authorities to trust, instead of the system
    /// store.
    #[serde(rename = "tlsCAFile")]
    pub ca_file: Option<String>,
    /// `tlsCertificateKeyFile`: PEM file with the client certificate chain and its private key.
    #[serde(rename = "tlsCertificateKeyFile")]
    pub certificate_key_file: Option<String>,
    /// `tlsCertificateKeyFilePassword`: decrypts an encrypted PKCS#8 private key.
    #[serde(skip)]
    pub certificate_key_file_password: Option<Secret>,
    /// `tlsAllowInvalidCertificates`: accept any server certificate (insecure).
    #[serde(rename = "tlsAllowInvalidCertificates")]
    pub allow_invalid_certificates: bool,
    /// `tlsAllowInvalidHostnames`: verify the chain but not that it names the host (insecure).
    #[serde(rename = "tlsAllowInvalidHostnames")]
    pub allow_invalid_hostnames: bool,
}

impl fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsOptions")
            .field("ca_file", &self.ca_file)
            .field("certificate_key_file", &self.certificate_key_file)
            .field("certificate_key_file_password", &self.certificate_key_file_password)
            .field("allow_invalid_certificates", &self.allow_invalid_certificates)
            .field("allow_invalid_hostnames", &self.allow_invalid_hostnames)
            .finish()
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::InvalidOptions { message: message.into() }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds the rustls client configuration; every unreadable or invalid file is
/// [`Error::InvalidOptions`].
pub(crate) fn client_config(opts: &TlsOptions) -> Result<Arc<ClientConfig>> {
    let provider = provider();
    let roots = Arc::new(root_store(opts.ca_file.as_deref())?);
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(format!("TLS protocol versions: {e}")))?;
    let builder = if opts.allow_invalid_certificates {
        builder.dangerous().with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
    } else if opts.allow_invalid_hostnames {
        let inner = WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|e| invalid(format!("TLS verifier: {e}")))?;
        builder.dangerous().with_custom_certificate_verifier(Arc::new(IgnoreHostname(inner)))
    } else {
        builder.with_root_certificates(roots)
    };
    let config = match &opts.certificate_key_file {
        Some(path) => {
            let (chain, key) = client_identity(path, opts.certificate_key_file_password.as_ref())?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| invalid(format!("tlsCertificateKeyFile {path}: {e}")))?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// tlsCAFile replaces the system store; without it the system store, or the webpki roots when
/// the system has none.
fn root_store(ca_file: Option<&str>) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    if let Some(path) = ca_file {
        let certs = read_certs(path, "tlsCAFile")?;
        let (added, _) = store.add_parsable_certificates(certs);
        if added == 0 {
            return Err(invalid(format!("tlsCAFile {path}: no usable certificate")));
        }
        return Ok(store);
    }
    let native = rustls_native_certs::load_native_certs();
    if !native.errors.is_empty() {
        tracing::debug!(errors = native.errors.len(), "some system certificates could not be loaded");
    }
    store.add_parsable_certificates(native.certs);
    if store.is_empty() {
        tracing::debug!("system certificate store is empty; using the webpki roots");
        store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    }
    Ok(store)
}

fn read_file(path: &str, option: &str) -> Result<Vec<u8>> {
    std::fs::read(Path::new(path)).map_err(|e| invalid(format!("{option} {path}: {e}")))
}

fn read_certs(path: &str, option: &str) -> Result<Vec<CertificateDer<'static>>> {
    let pem = read_file(path, option)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(format!("{option} {path}: {e}")))?;
    if certs.is_empty() {
        return Err(invalid(format!("{option} {path}: no certificate found")));
    }
    Ok(certs)
}

/// The certificate chain and private key of `tlsCertificateKeyFile`. An encrypted PKCS#8 key
/// needs `tlsCertificateKeyFilePassword`.
fn client_identity(
    path: &str,
    password: Option<&Secret>,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    const OPTION: &str = "tlsCertificateKeyFile";
    let chain = read_certs(path, OPTION)?;
    let pem = read_file(path, OPTION)?;
    let text = String::from_utf8_lossy(&pem);
    const BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
    const END: &str = "-----END ENCRYPTED PRIVATE KEY-----";
    if let Some(start) = text.find(BEGIN) {
        let Some(password) = password else {
            return Err(invalid(format!(
                "{OPTION} {path}: the key is encrypted but tlsCertificateKeyFilePassword is not set"
            )));
        };
        let end = text[start..]
            .find(END)
            .map(|e| start + e + END.len())
            .ok_or_else(|| invalid(format!("{OPTION} {path}: unterminated encrypted key")))?;
        let (_, der) = pkcs8::der::pem::decode_vec(text[start..end].as_bytes())
            .map_err(|e| invalid(format!("{OPTION} {path}: {e}")))?;
        let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice())
            .map_err(|e| invalid(format!("{OPTION} {path}: {e}")))?;
        // The error says nothing about the password itself.
        let doc = info
            .decrypt(password.expose())
            .map_err(|_| invalid(format!("{OPTION} {path}: cannot decrypt the private key")))?;
        return Ok((chain, PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(doc.as_bytes().to_vec()))));
    }
    let key = PrivateKeyDer::from_pem_slice(&pem)
        .map_err(|e| invalid(format!("{OPTION} {path}: no private key: {e}")))?;
    Ok((chain, key))
}

/// The TLS server name: the host name (sent as SNI), or an IP address (no SNI).
pub(crate) fn server_name(host: &str) -> std::result::Result<ServerName<'static>, String> {
    ServerName::try_from(host.to_string()).map_err(|e| format!("invalid TLS server name {host:?}: {e}"))
}

/// `tlsAllowInvalidCertificates`: any certificate is accepted, but the handshake signatures are
/// still checked so the peer holds the key of the certificate it sent.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `tlsAllowInvalidHostnames`: the chain is verified as usual; only a name mismatch (which
/// webpki reports after the chain checked out) is forgiven.
#[derive(Debug)]
struct IgnoreHostname(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for IgnoreHostname {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pkcs8::der::pem::LineEnding;

    /// Writes a self-signed cert plus its key (encrypted with `password` when given) to a
    /// fresh PEM file.
    fn identity_file(name: &str, password: Option<&str>) -> String {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
        let key_pem = match password {
            None => ck.signing_key.serialize_pem(),
            Some(p) => {
                let der = ck.signing_key.serialize_der();
                let info = pkcs8::PrivateKeyInfo::try_from(der.as_slice()).expect("pkcs8");
                let params =
                    pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(2048, b"saltsalt", &[7u8; 16])
                        .expect("params");
                let enc = info.encrypt_with_params(params, p).expect("encrypt");
                enc.to_pem("ENCRYPTED PRIVATE KEY", LineEnding::LF).expect("pem").to_string()
            }
        };
        let path = std::env::temp_dir().join(format!("pool-tls-{}-{name}.pem", std::process::id()));
        std::fs::write(&path, format!("{}{key_pem}", ck.cert.pem())).expect("write");
        path.to_string_lossy().into_owned()
    }

    fn opts(file: &str, password: Option<&str>) -> TlsOptions {
        TlsOptions {
            ca_file: Some(file.to_string()),
            certificate_key_file: Some(file.to_string()),
            certificate_key_file_password: password.map(Secret::new),
            ..Default::default()
        }
    }

    #[test]
    fn plain_and_encrypted_client_keys() {
        let plain = identity_file("plain", None);
        client_config(&opts(&plain, None)).expect("plain key");

        let enc = identity_file("enc", Some("open sesame"));
        assert!(std::fs::read_to_string(&enc).expect("read").contains("ENCRYPTED PRIVATE KEY"));
        client_config(&opts(&enc, Some("open sesame"))).expect("decrypted key");
        let e = client_config(&opts(&enc, Some("wrong"))).expect_err("wrong password");
        assert!(matches!(&e, Error::InvalidOptions { message } if message.contains("decrypt")), "{e:?}");
        assert!(!e.to_string().contains("wrong"));
        let e = client_config(&opts(&enc, None)).expect_err("no password");
        assert!(e.to_string().contains("tlsCertificateKeyFilePassword"), "{e}");
        for f in [plain, enc] {
            let _ = std::fs::remove_file(f);
        }
    }

    #[test]
    fn bad_files_are_invalid_options() {
        let path = std::env::temp_dir().join(format!("pool-tls-{}-empty.pem", std::process::id()));
        std::fs::write(&path, "not a certificate").expect("write");
        let p = path.to_string_lossy().into_owned();
        let e =
            client_config(&TlsOptions { ca_file: Some(p.clone()), ..Default::default() }).expect_err("empty");
        assert!(matches!(e, Error::InvalidOptions { .. }), "{e:?}");
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn server_names() {
        assert!(matches!(server_name("localhost"), Ok(ServerName::DnsName(_))));
        assert!(matches!(server_name("127.0.0.1"), Ok(ServerName::IpAddress(_))));
        assert!(matches!(server_name("::1"), Ok(ServerName::IpAddress(_))));
    }
}
