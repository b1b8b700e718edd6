//! SCRAM-SHA-1 and SCRAM-SHA-256 (RFC 5802, RFC 7677) as MongoDB uses them: no channel
//! binding, SHA-1 over MongoDB's hex MD5 password digest, SHA-256 over the SASLprepped password.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{KeyInit, Mac};
use md5::Digest as _;

/// The lowest iteration count a server may ask for (auth spec).
const MIN_ITERATIONS: u32 = 4096;
/// The highest iteration count a server may ask for: mongod's default is 15,000 (SHA-256)
/// or 10,000 (SHA-1), and PBKDF2 costs about a microsecond an iteration, so ten million is
/// seconds of CPU; `i=4294967295` would be hours.
pub const MAX_ITERATIONS: u32 = 10_000_000;

/// Which hash the conversation uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScramVersion {
    /// SCRAM-SHA-1.
    Sha1,
    /// SCRAM-SHA-256.
    Sha256,
}

/// A SCRAM failure; the caller wraps it with the address and mechanism.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramError(pub String);

fn err<T>(m: impl Into<String>) -> Result<T, ScramError> {
    Err(ScramError(m.into()))
}

impl ScramVersion {
    /// The mechanism name.
    pub fn mechanism(self) -> &'static str {
        match self {
            ScramVersion::Sha1 => "SCRAM-SHA-1",
            ScramVersion::Sha256 => "SCRAM-SHA-256",
        }
    }

    /// The password fed to PBKDF2: MongoDB's `hex(md5("user:mongo:password"))` for SHA-1,
    /// the SASLprepped password for SHA-256.
    pub fn prepare_password(self, username: &str, password: &str) -> Result<Vec<u8>, ScramError> {
        match self {
            ScramVersion::Sha1 => {
                let digest = md5::Md5::digest(format!("{username}:mongo:{password}").as_bytes());
                Ok(hex(&digest).into_bytes())
            }
            ScramVersion::Sha256 => match stringprep::saslprep(password) {
                Ok(p) => Ok(p.into_owned().into_bytes()),
                // Never echo the password in the error.
                Err(_) => err("the password contains characters SASLprep prohibits"),
            },
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Result<Vec<u8>, ScramError> {
        fn run<M: Mac + KeyInit>(key: &[u8], data: &[u8]) -> Result<Vec<u8>, ScramError> {
            let mut m = <M as KeyInit>::new_from_slice(key).map_err(|_| ScramError("bad HMAC key".into()))?;
            m.update(data);
            Ok(m.finalize().into_bytes().to_vec())
        }
        match self {
            ScramVersion::Sha1 => run::<hmac::Hmac<sha1::Sha1>>(key, data),
            ScramVersion::Sha256 => run::<hmac::Hmac<sha2::Sha256>>(key, data),
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramVersion::Sha1 => sha1::Sha1::digest(data).to_vec(),
            ScramVersion::Sha256 => sha2::Sha256::digest(data).to_vec(),
        }
    }

    /// PBKDF2 of `password` (see [`ScramVersion::prepare_password`]): CPU-bound, seconds at
    /// the highest iteration counts, so callers run it off the async executor.
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            ScramVersion::Sha1 => {
                let mut out = vec![0; 20];
                pbkdf2::pbkdf2_hmac::<sha1::Sha1>(password, salt, iterations, &mut out);
                out
            }
            ScramVersion::Sha256 => {
                let mut out = vec![0; 32];
                pbkdf2::pbkdf2_hmac::<sha2::Sha256>(password, salt, iterations, &mut out);
                out
            }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `saslname` escaping of RFC 5802: `=` and `,` are reserved.
fn escape_username(user: &str) -> String {
    user.replace('=', "=3D").replace(',', "=2C")
}

/// A fresh random client nonce (24 random bytes, base64).
pub fn new_nonce() -> String {
    let mut bytes = [0u8; 24];
    let rng = rustls::crypto::ring::default_provider().secure_random;
    if rng.fill(&mut bytes).is_err() {
        // ring's system RNG does not fail on supported platforms; fall back to time-based
        // entropy rather than panicking.
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        bytes[..16].copy_from_slice(&t.as_nanos().to_le_bytes());
    }
    B64.encode(bytes)
}

/// The state after the client-first message.
#[derive(Clone)]
pub struct ClientFirst {
    version: ScramVersion,
    nonce: String,
    bare: String,
}

impl std::fmt::Debug for ClientFirst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientFirst").field("version", &self.version).finish_non_exhaustive()
    }
}

/// A parsed server-first message: what PBKDF2 needs, and the nonce to answer with.
#[derive(Clone)]
pub struct ServerFirst {
    message: String,
    nonce: String,
    /// The salt, decoded.
    pub salt: Vec<u8>,
    /// The iteration count, within the allowed range.
    pub iterations: u32,
}

impl std::fmt::Debug for ServerFirst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerFirst").field("iterations", &self.iterations).finish_non_exhaustive()
    }
}

/// The state after the client-final message: what the server must prove.
#[derive(Clone)]
pub struct ClientFinal {
    /// The client-final message to send.
    pub message: String,
    server_signature: Vec<u8>,
}

impl std::fmt::Debug for ClientFinal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientFinal { .. }")
    }
}

impl ClientFirst {
    /// Starts a conversation for `username` with `nonce`.
    pub fn new(version: ScramVersion, username: &str, nonce: String) -> Self {
        let bare = format!("n={},r={nonce}", escape_username(username));
        ClientFirst { version, nonce, bare }
    }

    /// The mechanism.
    pub fn version(&self) -> ScramVersion {
        self.version
    }

    /// The client-first message (`n,,` GS2 header: no channel binding, no authzid).
    pub fn message(&self) -> String {
        format!("n,,{}", self.bare)
    }

    /// Answers the server-first message, `password` being [`ScramVersion::prepare_password`]'s
    /// output: [`parse`](Self::parse), PBKDF2 and [`finish`](Self::finish) in one call.
    pub fn respond(&self, server_first: &str, password: &[u8]) -> Result<ClientFinal, ScramError> {
        let parsed = self.parse(server_first)?;
        let salted = self.version.salted_password(password, &parsed.salt, parsed.iterations);
        self.finish(&parsed, &salted)
    }

    /// Reads the server-first message: the nonce must extend ours, and the iteration count
    /// lie between 4,096 (the spec's minimum) and [`MAX_ITERATIONS`].
    pub fn parse(&self, server_first: &str) -> Result<ServerFirst, ScramError> {
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for part in server_first.split(',') {
            match part.split_once('=') {
                Some(("r", v)) => nonce = Some(v),
                Some(("s", v)) => salt = Some(v),
                Some(("i", v)) => iterations = Some(v),
                Some(("m", _)) => return err("the server requires an unsupported SCRAM extension"),
                _ => {}
            }
        }
        let (Some(nonce), Some(salt), Some(iterations)) = (nonce, salt, iterations) else {
            return err("malformed server-first message");
        };
        if !nonce.starts_with(&self.nonce) || nonce.len() <= self.nonce.len() {
            return err("the server nonce does not extend the client nonce");
        }
        let salt = B64.decode(salt).map_err(|_| ScramError("invalid salt encoding".into()))?;
        let iterations: u32 = iterations.parse().map_err(|_| ScramError("invalid iteration count".into()))?;
        if iterations < MIN_ITERATIONS {
            return err(format!("iteration count {iterations} is below the minimum {MIN_ITERATIONS}"));
        }
        if iterations > MAX_ITERATIONS {
            return err(format!("iteration count {iterations} is above the maximum {MAX_ITERATIONS}"));
        }
        Ok(ServerFirst { message: server_first.to_string(), nonce: nonce.to_string(), salt, iterations })
    }

    /// The client-final message for a parsed server-first message and the salted password
    /// ([`ScramVersion::salted_password`] of its salt and iteration count).
    pub fn finish(&self, server_first: &ServerFirst, salted: &[u8]) -> Result<ClientFinal, ScramError> {
        let ServerFirst { message: server_first, nonce, .. } = server_first;
        let v = self.version;
        let client_key = v.hmac(salted, b"Client Key")?;
        let stored_key = v.hash(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.bare);
        let client_signature = v.hmac(&stored_key, auth_message.as_bytes())?;
        let proof: Vec<u8> = client_key.iter().zip(&client_signature).map(|(a, b)| a ^ b).collect();
        let server_key = v.hmac(salted, b"Server Key")?;
        let server_signature = v.hmac(&server_key, auth_message.as_bytes())?;
        Ok(ClientFinal { message: format!("{without_proof},p={}", B64.encode(proof)), server_signature })
    }
}

impl ClientFinal {
    /// Checks the server-final message: the server must prove it knows the password too.
    pub fn verify(&self, server_final: &str) -> Result<(), ScramError> {
        for part in server_final.split(',') {
            match part.split_once('=') {
                Some(("e", e)) => return err(format!("the server reported: {e}")),
                Some(("v", v)) => {
                    let sig = B64.decode(v).map_err(|_| ScramError("invalid server signature".into()))?;
                    // Constant-time comparison is moot for a value the server sends us, but cheap.
                    let same = sig.len() == self.server_signature.len()
                        && sig.iter().zip(&self.server_signature).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0;
                    return if same { Ok(()) } else { err("the server signature is wrong") };
                }
                _ => {}
            }
        }
        err("the server-final message has no signature")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(
        version: ScramVersion,
        user: &str,
        password: &[u8],
        nonce: &str,
        server_first: &str,
        client_final: &str,
        server_final: &str,
    ) {
        let first = ClientFirst::new(version, user, nonce.to_string());
        assert_eq!(first.message(), format!("n,,n={user},r={nonce}"));
        let fin = first.respond(server_first, password).expect("respond");
        assert_eq!(fin.message, client_final);
        fin.verify(server_final).expect("server signature");
        assert!(fin.verify("v=AAAA").is_err());
    }

    #[test]
    fn rfc5802_sha1_vector() {
        // RFC 5802 section 5 hashes the raw password.
        run(
            ScramVersion::Sha1,
            "user",
            b"pencil",
            "fyko+d2lbbFgONRv9qkxdawL",
            "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
            "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
            "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
        );
    }

    #[test]
    fn rfc7677_sha256_vector() {
        let password = ScramVersion::Sha256.prepare_password("user", "pencil").expect("saslprep");
        assert_eq!(password, b"pencil");
        run(
            ScramVersion::Sha256,
            "user",
            &password,
            "rOprNGfwEbeRWgbNEkqO",
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
            "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
        );
    }

    #[test]
    fn mongodb_sha1_example() {
        // The auth spec's SCRAM-SHA-1 conversation, over the hex MD5 digest of user:mongo:pencil.
        let password = ScramVersion::Sha1.prepare_password("user", "pencil").expect("digest");
        assert_eq!(password, b"1c33006ec1ffd90f9cadcbcc0e118200");
        run(
            ScramVersion::Sha1,
            "user",
            &password,
            "fyko+d2lbbFgONRv9qkxdawL",
            "r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,s=rQ9ZY3MntBeuP3E1TDVC4w==,i=10000",
            "c=biws,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,p=MC2T8BvbmWRckDw8oWl5IVghwCY=",
            "v=UMWeI25JD1yNYZRMpZ4VHvhZ9e0=",
        );
    }

    #[test]
    fn saslprep_and_escaping() {
        // RFC 4013: the soft hyphen maps to nothing, non-ASCII space to a space.
        let p = ScramVersion::Sha256.prepare_password("u", "I\u{00AD}X").expect("saslprep");
        assert_eq!(p, b"IX");
        let p = ScramVersion::Sha256.prepare_password("u", "a\u{00A0}b").expect("saslprep");
        assert_eq!(p, b"a b");
        assert!(ScramVersion::Sha256.prepare_password("u", "\u{0007}").is_err());
        let first = ClientFirst::new(ScramVersion::Sha256, "a=b,c", "n".into());
        assert_eq!(first.message(), "n,,n=a=3Db=2Cc,r=n");
    }

    #[test]
    fn rejects_bad_server_first() {
        let first = ClientFirst::new(ScramVersion::Sha256, "user", "abc".into());
        let e = first.respond("r=xyz123,s=AAAA,i=4096", b"p").unwrap_err();
        assert!(e.0.contains("nonce"), "{e:?}");
        let e = first.respond("r=abc123,s=AAAA,i=1000", b"p").unwrap_err();
        assert!(e.0.contains("iteration"), "{e:?}");
        let e = first.respond("r=abc123,s=AAAA,i=4294967295", b"p").unwrap_err();
        assert!(e.0.contains("above the maximum 10000000"), "{e:?}");
        let e = first.respond("r=abc123,s=AAAA", b"p").unwrap_err();
        assert!(e.0.contains("malformed"), "{e:?}");
        assert_eq!(new_nonce().len(), 32);
        assert_ne!(new_nonce(), new_nonce());
    }
}
