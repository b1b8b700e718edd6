//! Test helpers: the raw wire-protocol client (re-exported from [`crate::raw_client`]) and
//! generated TLS certificates ([`TestCerts`]).

pub use crate::raw_client::*;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use super::SimTls;
use crate::error::SimError;

/// A throwaway PKI for TLS tests: a self-signed CA, a server certificate it signed for
/// `localhost` and `127.0.0.1`, and a client certificate it signed. The PEM files are written
/// to a private temporary directory that is removed when the value is dropped.
///
/// ```no_run
/// use mongo_sim::{testing::TestCerts, Cluster};
///
/// let certs = TestCerts::generate();
/// let cluster = Cluster::replica_set(1).tls(certs.sim_tls()).start()?;
/// let uri = format!("{}&tlsCAFile={}", cluster.uri(), certs.ca_file().display());
/// # Ok::<(), mongo_sim::SimError>(())
/// ```
#[derive(Debug)]
pub struct TestCerts {
    /// The CA certificate (PEM).
    pub ca_pem: String,
    /// The server certificate (PEM), SANs `localhost`, IP `127.0.0.1` and the names given to
    /// [`TestCerts::try_generate_for`].
    pub server_cert_pem: String,
    /// The server's private key (PKCS#8 PEM).
    pub server_key_pem: String,
    /// The client certificate (PEM), subject `CN=mongo-sim-client`.
    pub client_cert_pem: String,
    /// The client's private key (PKCS#8 PEM).
    pub client_key_pem: String,
    /// A server certificate from the same CA for another name only (`other-host.invalid`),
    /// to check host name verification.
    pub wrong_name_cert_pem: String,
    /// Its private key (PKCS#8 PEM).
    pub wrong_name_key_pem: String,
    dir: PathBuf,
    ca_file: PathBuf,
    client_cert_key_file: PathBuf,
    server_cert_key_file: PathBuf,
}

impl TestCerts {
    /// Generates fresh certificates and writes the files.
    ///
    /// # Panics
    /// If key generation or writing to the temporary directory fails (test setup only); see
    /// [`TestCerts::try_generate`] for a fallible version.
    pub fn generate() -> TestCerts {
        match TestCerts::try_generate() {
            Ok(c) => c,
            Err(e) => panic!("cannot generate test certificates: {e}"),
        }
    }

    /// [`TestCerts::generate`], reporting failures.
    pub fn try_generate() -> Result<TestCerts, SimError> {
        TestCerts::try_generate_for(&[])
    }

    /// [`TestCerts::try_generate`] with a server certificate that also names `extra_names`
    /// (host names a DNS stub maps to 127.0.0.1, say).
    pub fn try_generate_for(extra_names: &[&str]) -> Result<TestCerts, SimError> {
        let gen = |e: rcgen::Error| SimError::Tls(format!("certificate generation: {e}"));
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(gen)?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "mongo-sim test CA");
        ca_params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let ca_key = KeyPair::generate().map_err(gen)?;
        let ca_cert = ca_params.self_signed(&ca_key).map_err(gen)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
        names.extend(extra_names.iter().map(|n| n.to_string()));
        let mut server_params = CertificateParams::new(names).map_err(gen)?;
        server_params.distinguished_name.push(DnType::CommonName, "localhost");
        server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        server_params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        let server_key = KeyPair::generate().map_err(gen)?;
        let server_cert = server_params.signed_by(&server_key, &issuer).map_err(gen)?;

        let mut wrong_params = CertificateParams::new(vec!["other-host.invalid".to_owned()]).map_err(gen)?;
        wrong_params.distinguished_name.push(DnType::CommonName, "other-host.invalid");
        wrong_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        wrong_params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        let wrong_key = KeyPair::generate().map_err(gen)?;
        let wrong_cert = wrong_params.signed_by(&wrong_key, &issuer).map_err(gen)?;

        let mut client_params = CertificateParams::new(Vec::<String>::new()).map_err(gen)?;
        client_params.distinguished_name.push(DnType::CommonName, "mongo-sim-client");
        client_params.distinguished_name.push(DnType::OrganizationName, "mongo-actors");
        client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        client_params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        let client_key = KeyPair::generate().map_err(gen)?;
        let client_cert = client_params.signed_by(&client_key, &issuer).map_err(gen)?;

        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!(
            "mongo-sim-certs-{}-{nanos}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(SimError::Io)?;
        let certs = TestCerts {
            ca_pem: ca_cert.pem(),
            server_cert_pem: server_cert.pem(),
            server_key_pem: server_key.serialize_pem(),
            client_cert_pem: client_cert.pem(),
            client_key_pem: client_key.serialize_pem(),
            wrong_name_cert_pem: wrong_cert.pem(),
            wrong_name_key_pem: wrong_key.serialize_pem(),
            ca_file: dir.join("ca.pem"),
            client_cert_key_file: dir.join("client.pem"),
            server_cert_key_file: dir.join("server.pem"),
            dir,
        };
        // From here on, Drop removes the directory if a write fails.
        let write = |path: &Path, parts: &[&str]| std::fs::write(path, parts.concat()).map_err(SimError::Io);
        write(&certs.ca_file, &[&certs.ca_pem])?;
        write(&certs.client_cert_key_file, &[&certs.client_cert_pem, &certs.client_key_pem])?;
        write(&certs.server_cert_key_file, &[&certs.server_cert_pem, &certs.server_key_pem])?;
        Ok(certs)
    }

    /// Server TLS settings without client certificates.
    pub fn sim_tls(&self) -> SimTls {
        SimTls {
            cert_chain_pem: self.server_cert_pem.clone(),
            key_pem: self.server_key_pem.clone(),
            client_ca_pem: None,
        }
    }

    /// Server TLS settings with a certificate from this CA that does not name `127.0.0.1`.
    pub fn sim_tls_wrong_name(&self) -> SimTls {
        SimTls {
            cert_chain_pem: self.wrong_name_cert_pem.clone(),
            key_pem: self.wrong_name_key_pem.clone(),
            client_ca_pem: None,
        }
    }

    /// Server TLS settings that require a client certificate signed by this CA.
    pub fn sim_tls_with_client_auth(&self) -> SimTls {
        SimTls { client_ca_pem: Some(self.ca_pem.clone()), ..self.sim_tls() }
    }

    /// The CA certificate file (`tlsCAFile`).
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// The client certificate followed by its key (`tlsCertificateKeyFile`).
    pub fn client_cert_key_file(&self) -> &Path {
        &self.client_cert_key_file
    }

    /// The server certificate followed by its key (e.g. for `mongo-sim --tls-cert/--tls-key`).
    pub fn server_cert_key_file(&self) -> &Path {
        &self.server_cert_key_file
    }

    /// The temporary directory holding the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for TestCerts {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            tracing::debug!(dir = %self.dir.display(), error = %e, "cannot remove the test certificate directory");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_hold_the_pems_and_vanish_on_drop() {
        let certs = TestCerts::generate();
        let ca = std::fs::read_to_string(certs.ca_file()).unwrap();
        assert_eq!(ca, certs.ca_pem);
        assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"));
        let both = std::fs::read_to_string(certs.client_cert_key_file()).unwrap();
        assert_eq!(both, format!("{}{}", certs.client_cert_pem, certs.client_key_pem));
        assert!(certs.client_key_pem.contains("PRIVATE KEY"));
        let dir = certs.dir().to_owned();
        drop(certs);
        assert!(!dir.exists());
    }

    #[test]
    fn server_config_accepts_the_generated_certificates() {
        let certs = TestCerts::generate();
        assert!(super::super::tls::acceptor(&certs.sim_tls()).is_ok());
        assert!(super::super::tls::acceptor(&certs.sim_tls_with_client_auth()).is_ok());
        let bad = SimTls { key_pem: "nope".into(), ..certs.sim_tls() };
        assert!(matches!(super::super::tls::acceptor(&bad), Err(SimError::Tls(_))));
    }
}
