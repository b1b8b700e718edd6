//! Authentication as mongod 7 does it: SCRAM-SHA-1 / SCRAM-SHA-256 (RFC 5802 / RFC 7677 in
//! MongoDB's `saslStart`/`saslContinue` conversation shape) for users in `admin`; PLAIN
//! (RFC 4616) for those users and for `$external` users with a password (what an LDAP
//! directory would check); MONGODB-X509 for `$external` users named by the subject of the
//! TLS client certificate; and which commands an unauthenticated connection may run.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use bson::{doc, spec::BinarySubtype, Binary, Bson, Document, RawBsonRef, RawDocument};
use hmac::{Hmac, KeyInit, Mac};
use md5::Md5;
use sha1::Sha1;
use sha2::{Digest, Sha256};

use super::sasl::{payload_bytes, random};
use crate::commands::reply::CmdError;
use crate::error::SimError;

/// mongod's iteration counts (`scramIterationCount`, `scramSHA256IterationCount`).
const SHA1_ITERATIONS: u32 = 10_000;
const SHA256_ITERATIONS: u32 = 15_000;
/// Salt lengths mongod uses: the hash length minus 4 bytes (16 and 28).
const SHA1_SALT_LEN: usize = 16;
const SHA256_SALT_LEN: usize = 28;
/// The only conversation id mongod hands out.
const CONVERSATION_ID: i32 = 1;

/// A SCRAM variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mechanism {
    Sha1,
    Sha256,
}

impl Mechanism {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "SCRAM-SHA-1" => Some(Mechanism::Sha1),
            "SCRAM-SHA-256" => Some(Mechanism::Sha256),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Mechanism::Sha1 => "SCRAM-SHA-1",
            Mechanism::Sha256 => "SCRAM-SHA-256",
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        // HMAC accepts keys of any length; the error arm is unreachable but must not panic.
        match self {
            Mechanism::Sha1 => match <Hmac<Sha1> as KeyInit>::new_from_slice(key) {
                Ok(mut m) => {
                    m.update(data);
                    m.finalize().into_bytes().to_vec()
                }
                Err(_) => Vec::new(),
            },
            Mechanism::Sha256 => match <Hmac<Sha256> as KeyInit>::new_from_slice(key) {
                Ok(mut m) => {
                    m.update(data);
                    m.finalize().into_bytes().to_vec()
                }
                Err(_) => Vec::new(),
            },
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            Mechanism::Sha1 => Sha1::digest(data).to_vec(),
            Mechanism::Sha256 => Sha256::digest(data).to_vec(),
        }
    }

    /// `SaltedPassword := Hi(Normalize(password), salt, i)`; SHA-1 uses MongoDB's password
    /// digest `hex(md5("user:mongo:password"))` as the password, SHA-256 the SASLprepped one.
    fn salted_password(
        self,
        user: &str,
        password: &str,
        salt: &[u8],
        iterations: u32,
    ) -> Result<Vec<u8>, String> {
        match self {
            Mechanism::Sha1 => {
                let digest = Md5::digest(format!("{user}:mongo:{password}").as_bytes());
                let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
                let mut out = vec![0; 20];
                pbkdf2::pbkdf2_hmac::<Sha1>(hex.as_bytes(), salt, iterations, &mut out);
                Ok(out)
            }
            Mechanism::Sha256 => {
                let prepped = stringprep::saslprep(password)
                    .map_err(|e| format!("password of user {user:?} is invalid for SCRAM-SHA-256: {e}"))?;
                let mut out = vec![0; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(prepped.as_bytes(), salt, iterations, &mut out);
                Ok(out)
            }
        }
    }
}

/// A user as the builder describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UserSpec {
    pub name: String,
    pub password: String,
    pub mechanisms: Vec<Mechanism>,
    /// `admin`, or `$external` for PLAIN (with a password) and X.509 (without) users.
    pub db: String,
}

/// What the server stores for one mechanism of one user (never the password).
#[derive(Clone, Debug)]
struct Credential {
    mechanism: Mechanism,
    salt: Vec<u8>,
    iterations: u32,
    stored_key: Vec<u8>,
    server_key: Vec<u8>,
}

#[derive(Clone, Debug)]
struct User {
    name: String,
    db: String,
    credentials: Vec<Credential>,
}

/// The users of a cluster, in `admin` or `$external`. Empty = no authentication.
#[derive(Clone, Debug, Default)]
pub(crate) struct Users {
    users: Vec<User>,
    /// MONGODB-AWS identities (users of `$external` named by their ARN).
    aws: Vec<super::auth_aws::AwsUser>,
    /// The STS host MONGODB-AWS conversations name.
    sts_host: String,
    /// The identity provider MONGODB-OIDC tokens come from.
    oidc: Option<super::auth_oidc::OidcConfig>,
}

impl Users {
    /// Derives the stored credentials, with a fresh random salt per user and mechanism.
    pub(crate) fn new(
        specs: &[UserSpec],
        aws: &[super::auth_aws::AwsUser],
        sts_host: &str,
        oidc: Option<&super::auth_oidc::SimOidc>,
    ) -> Result<Self, SimError> {
        let mut users = Vec::with_capacity(specs.len());
        for s in specs {
            let mut credentials = Vec::new();
            for &mechanism in &s.mechanisms {
                let (salt_len, iterations) = match mechanism {
                    Mechanism::Sha1 => (SHA1_SALT_LEN, SHA1_ITERATIONS),
                    Mechanism::Sha256 => (SHA256_SALT_LEN, SHA256_ITERATIONS),
                };
                let mut salt = vec![0; salt_len];
                random(&mut salt);
                let salted = mechanism
                    .salted_password(&s.name, &s.password, &salt, iterations)
                    .map_err(SimError::InvalidConfig)?;
                let client_key = mechanism.hmac(&salted, b"Client Key");
                credentials.push(Credential {
                    mechanism,
                    stored_key: mechanism.hash(&client_key),
                    server_key: mechanism.hmac(&salted, b"Server Key"),
                    salt,
                    iterations,
                });
            }
            users.push(User { name: s.name.clone(), db: s.db.clone(), credentials });
        }
        let oidc = oidc.map(super::auth_oidc::OidcConfig::new).transpose()?;
        Ok(Users { users, aws: aws.to_vec(), sts_host: sts_host.to_owned(), oidc })
    }

    /// Whether authentication is required (any user exists).
    pub(crate) fn enabled(&self) -> bool {
        !self.users.is_empty() || !self.aws.is_empty() || self.oidc.is_some()
    }

    fn find(&self, db: &str, name: &str) -> Option<&User> {
        self.users.iter().find(|u| u.db == db && u.name == name)
    }

    /// hello's `saslSupportedMechs` for `"db.user"`: `None` when the user does not exist (mongod
    /// then omits the field).
    pub(crate) fn supported_mechs(&self, qualified: &str) -> Option<Vec<Bson>> {
        let (db, name) = qualified.split_once('.')?;
        let user = self.find(db, name)?;
        Some(user.credentials.iter().map(|c| Bson::String(c.mechanism.name().to_owned())).collect())
    }
}

/// Commands mongod runs without authentication (`requiresAuth() == false`).
pub(crate) fn allowed_unauthenticated(name: &str) -> bool {
    matches!(
        name,
        "hello"
            | "isMaster"
            | "ismaster"
            | "saslStart"
            | "saslContinue"
            | "authenticate"
            | "logout"
            | "ping"
            | "buildInfo"
            | "buildinfo"
            | "endSessions"
            | "connectionStatus"
            | "whatsmyuri"
            | "getnonce"
            | "listCommands"
    )
}

/// The error mongod sends for a command that needs authentication.
pub(crate) fn unauthorized(name: &str) -> CmdError {
    CmdError::new(13, "Unauthorized", format!("command {name} requires authentication"))
}

fn auth_failed() -> CmdError {
    CmdError::new(18, "AuthenticationFailed", "Authentication failed.")
}

#[derive(Clone, Debug)]
enum Stage {
    /// server-first sent; waiting for client-final.
    First,
    /// server-final sent without `done`; waiting for the empty client message.
    Final,
}

#[derive(Clone, Debug)]
struct Conversation {
    user: String,
    db: String,
    credential: Credential,
    gs2_header: String,
    client_first_bare: String,
    server_first: String,
    nonce: String,
    skip_empty_exchange: bool,
    stage: Stage,
}

/// Authentication state of one connection.
#[derive(Debug, Default)]
pub(crate) struct ConnAuth {
    /// `(user, db)` once a conversation completed.
    pub user: Option<(String, String)>,
    conversation: Option<Conversation>,
    /// A MONGODB-AWS conversation waiting for the signed request.
    aws: Option<super::auth_aws::AwsPending>,
    /// A MONGODB-OIDC two-step conversation waiting for the token.
    oidc_pending: bool,
    /// When the MONGODB-OIDC token this connection authenticated with expires (seconds since
    /// the epoch): after that, commands fail with 391.
    oidc_expires: Option<u64>,
    /// The RFC 2253 subject of the verified TLS client certificate, if any.
    pub peer_subject: Option<String>,
}

fn binary(bytes: Vec<u8>) -> Binary {
    Binary { subtype: BinarySubtype::Generic, bytes }
}

/// `saslname` decoding of RFC 5802: `=2C` is `,` and `=3D` is `=`; any other `=` is invalid.
fn decode_saslname(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        let code = rest.get(i + 1..i + 3)?;
        out.push(match code {
            "2C" => ',',
            "3D" => '=',
            _ => return None,
        });
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Some(out)
}

/// Splits `client-first-message` into `(gs2-header, client-first-bare, user, nonce)`.
fn parse_client_first(msg: &str) -> Option<(String, String, String, String)> {
    let mut parts = msg.splitn(3, ',');
    let flag = parts.next()?;
    let authzid = parts.next()?;
    let bare = parts.next()?;
    // No channel binding over a simulator ("p=" would need tls-unique).
    if !matches!(flag, "n" | "y") || !(authzid.is_empty() || authzid.starts_with("a=")) {
        return None;
    }
    let mut user = None;
    let mut nonce = None;
    for attr in bare.split(',') {
        match attr.split_at_checked(2)? {
            ("n=", v) => user = Some(decode_saslname(v)?),
            ("r=", v) => nonce = Some(v.to_owned()),
            // A mandatory extension we do not know.
            ("m=", _) => return None,
            _ => {}
        }
    }
    let (user, nonce) = (user?, nonce?);
    if nonce.is_empty() || nonce.contains(',') {
        return None;
    }
    Some((format!("{flag},{authzid},"), bare.to_owned(), user, nonce))
}

impl ConnAuth {
    /// A connection's state before authentication; `peer_subject` from its TLS client
    /// certificate.
    pub(crate) fn with_peer_subject(peer_subject: Option<String>) -> Self {
        ConnAuth { peer_subject, ..ConnAuth::default() }
    }

    /// Whether the connection has authenticated.
    pub(crate) fn authenticated(&self) -> bool {
        self.user.is_some()
    }

    /// `authenticate` with MONGODB-X509 (also the `speculativeAuthenticate` of hello): the
    /// user is the certificate's subject, which an explicit `user` must equal.
    pub(crate) fn authenticate(
        &mut self,
        users: &Users,
        db: &str,
        body: &RawDocument,
    ) -> Result<Document, CmdError> {
        let mechanism = body.get_str("mechanism").unwrap_or("");
        if mechanism != "MONGODB-X509" {
            return Err(CmdError::new(
                2,
                "BadValue",
                format!("Unsupported mechanism for authenticate: {mechanism:?}"),
            ));
        }
        if db != "$external" {
            return Err(CmdError::new(
                18,
                "AuthenticationFailed",
                "X.509 authentication must always use the $external database.",
            ));
        }
        let Some(subject) = self.peer_subject.clone() else {
            return Err(CmdError::new(
                18,
                "AuthenticationFailed",
                "No verified subject name available from client",
            ));
        };
        if let Ok(user) = body.get_str("user") {
            if user != subject {
                return Err(CmdError::new(
                    18,
                    "AuthenticationFailed",
                    "There is no x.509 client certificate matching the user.",
                ));
            }
        }
        if users.find("$external", &subject).is_none() {
            tracing::debug!(subject, "X.509: no such user");
            return Err(CmdError::new(
                18,
                "AuthenticationFailed",
                format!("Could not find user \"{subject}\" for db \"$external\""),
            ));
        }
        self.user = Some((subject.clone(), "$external".to_owned()));
        Ok(doc! {"dbname": "$external", "user": subject, "ok": 1.0})
    }

    /// PLAIN: `\0user\0password` checked against the user's stored SCRAM credential.
    fn plain(&mut self, users: &Users, db: &str, body: &RawDocument) -> Result<Document, CmdError> {
        let payload = payload_bytes(body.get("payload").ok().flatten())?;
        let mut parts = payload.split(|b| *b == 0);
        let (Some(authzid), Some(user), Some(password), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(auth_failed());
        };
        let (Ok(user), Ok(password)) = (std::str::from_utf8(user), std::str::from_utf8(password)) else {
            return Err(auth_failed());
        };
        if !authzid.is_empty() && authzid != user.as_bytes() {
            return Err(auth_failed());
        }
        let Some(found) = users.find(db, user) else {
            tracing::debug!(user, db, "PLAIN: no such user");
            return Err(auth_failed());
        };
        let verified = found.credentials.iter().any(|c| {
            c.mechanism.salted_password(user, password, &c.salt, c.iterations).is_ok_and(|salted| {
                c.mechanism.hash(&c.mechanism.hmac(&salted, b"Client Key")) == c.stored_key
            })
        });
        if !verified {
            tracing::debug!(user, db, "PLAIN: wrong password");
            return Err(auth_failed());
        }
        self.user = Some((user.to_owned(), db.to_owned()));
        Ok(doc! {"conversationId": CONVERSATION_ID, "done": true, "payload": binary(Vec::new()), "ok": 1.0})
    }

    /// `saslStart` (also the `speculativeAuthenticate` of hello). `db` is the command's
    /// database: the user's authentication database.
    pub(crate) fn sasl_start(
        &mut self,
        users: &Users,
        db: &str,
        body: &RawDocument,
    ) -> Result<Document, CmdError> {
        self.conversation = None;
        self.aws = None;
        self.oidc_pending = false;
        let mechanism =
            body.get_str("mechanism").map_err(|_| CmdError::bad("saslStart needs a mechanism"))?;
        if mechanism == "PLAIN" {
            return self.plain(users, db, body);
        }
        if let (true, Some(config)) = (mechanism == "MONGODB-OIDC", &users.oidc) {
            if db != "$external" {
                return Err(auth_failed());
            }
            return match super::auth_oidc::start(config, body)? {
                super::auth_oidc::Start::Done(user, exp) => {
                    self.user = Some((user, "$external".to_owned()));
                    self.oidc_expires = Some(exp);
                    Ok(
                        doc! {"conversationId": CONVERSATION_ID, "done": true, "payload": binary(Vec::new()), "ok": 1.0},
                    )
                }
                super::auth_oidc::Start::Principal(reply) => {
                    self.oidc_pending = true;
                    Ok(reply)
                }
            };
        }
        if mechanism == "MONGODB-AWS" && !users.aws.is_empty() {
            if db != "$external" {
                return Err(auth_failed());
            }
            let (reply, pending) = super::auth_aws::start(body, &users.sts_host)?;
            self.aws = Some(pending);
            return Ok(reply);
        }
        let Some(mech) = Mechanism::parse(mechanism) else {
            return Err(CmdError::new(
                334,
                "MechanismUnavailable",
                format!("Received authentication for mechanism {mechanism} which is unknown or not enabled"),
            ));
        };
        let payload = payload_bytes(body.get("payload").ok().flatten())?;
        let skip_empty_exchange = body
            .get_document("options")
            .ok()
            .and_then(|o| o.get_bool("skipEmptyExchange").ok())
            .unwrap_or(false);
        let msg = String::from_utf8(payload).map_err(|_| auth_failed())?;
        let Some((gs2_header, client_first_bare, user, client_nonce)) = parse_client_first(&msg) else {
            tracing::debug!("malformed SCRAM client-first message");
            return Err(auth_failed());
        };
        let Some(found) = users.find(db, &user) else {
            tracing::debug!(user, db, "SCRAM: no such user");
            return Err(auth_failed());
        };
        let Some(credential) = found.credentials.iter().find(|c| c.mechanism == mech) else {
            return Err(CmdError::new(
                334,
                "MechanismUnavailable",
                format!(
                    "Unable to use {0} based authentication for user without any {0} credentials registered",
                    mech.name()
                ),
            ));
        };
        let mut server_nonce = [0u8; 24];
        random(&mut server_nonce);
        let nonce = format!("{client_nonce}{}", B64.encode(server_nonce));
        let server_first =
            format!("r={nonce},s={},i={}", B64.encode(&credential.salt), credential.iterations);
        let reply = doc! {
            "conversationId": CONVERSATION_ID,
            "done": false,
            "payload": binary(server_first.clone().into_bytes()),
            "ok": 1.0,
        };
        self.conversation = Some(Conversation {
            user,
            db: db.to_owned(),
            credential: credential.clone(),
            gs2_header,
            client_first_bare,
            server_first,
            nonce,
            skip_empty_exchange,
            stage: Stage::First,
        });
        Ok(reply)
    }

    /// `saslContinue`.
    pub(crate) fn sasl_continue(&mut self, users: &Users, body: &RawDocument) -> Result<Document, CmdError> {
        let id = match body.get("conversationId").ok().flatten() {
            Some(RawBsonRef::Int32(i)) => i64::from(i),
            Some(RawBsonRef::Int64(i)) => i,
            Some(RawBsonRef::Double(d)) => d as i64,
            _ => return Err(CmdError::bad("saslContinue needs a conversationId")),
        };
        if std::mem::take(&mut self.oidc_pending) {
            let config = users.oidc.as_ref().ok_or_else(auth_failed)?;
            if id != i64::from(CONVERSATION_ID) {
                return Err(CmdError::new(17, "ProtocolError", "sasl: Mismatched conversation id"));
            }
            let (user, exp) = super::auth_oidc::finish(config, body)?;
            self.user = Some((user, "$external".to_owned()));
            self.oidc_expires = Some(exp);
            return Ok(
                doc! {"conversationId": CONVERSATION_ID, "done": true, "payload": binary(Vec::new()), "ok": 1.0},
            );
        }
        if let Some(pending) = self.aws.take() {
            if id != i64::from(CONVERSATION_ID) {
                return Err(CmdError::new(17, "ProtocolError", "sasl: Mismatched conversation id"));
            }
            let arn = super::auth_aws::finish(&users.aws, &pending, body)?;
            self.user = Some((arn, "$external".to_owned()));
            return Ok(
                doc! {"conversationId": CONVERSATION_ID, "done": true, "payload": binary(Vec::new()), "ok": 1.0},
            );
        }
        let Some(conv) = self.conversation.take() else {
            return Err(CmdError::new(17, "ProtocolError", "No SASL session state found"));
        };
        if id != i64::from(CONVERSATION_ID) {
            return Err(CmdError::new(17, "ProtocolError", "sasl: Mismatched conversation id"));
        }
        let payload = payload_bytes(body.get("payload").ok().flatten())?;
        match conv.stage {
            Stage::First => {
                let msg = String::from_utf8(payload).map_err(|_| auth_failed())?;
                let Some(server_final) = conv.verify_client_final(&msg) else {
                    tracing::debug!(user = conv.user, "SCRAM proof rejected");
                    return Err(auth_failed());
                };
                let payload = binary(server_final.into_bytes());
                if conv.skip_empty_exchange {
                    self.user = Some((conv.user, conv.db));
                    return Ok(
                        doc! {"conversationId": CONVERSATION_ID, "done": true, "payload": payload, "ok": 1.0},
                    );
                }
                self.conversation = Some(Conversation { stage: Stage::Final, ..conv });
                Ok(doc! {"conversationId": CONVERSATION_ID, "done": false, "payload": payload, "ok": 1.0})
            }
            Stage::Final => {
                if !payload.is_empty() {
                    return Err(auth_failed());
                }
                self.user = Some((conv.user, conv.db));
                Ok(
                    doc! {"conversationId": CONVERSATION_ID, "done": true, "payload": binary(Vec::new()), "ok": 1.0},
                )
            }
        }
    }

    /// `logout`: forget the user.
    pub(crate) fn logout(&mut self) {
        self.user = None;
        self.conversation = None;
        self.aws = None;
        self.oidc_pending = false;
        self.oidc_expires = None;
    }

    /// Whether the connection's MONGODB-OIDC token expired: its commands need it to
    /// authenticate again (391).
    pub(crate) fn reauthentication_required(&self) -> bool {
        self.user.is_some() && self.oidc_expires.is_some_and(super::auth_oidc::expired)
    }
}

impl Conversation {
    /// Checks `client-final-message`; returns `server-final-message` when the proof is right.
    fn verify_client_final(&self, msg: &str) -> Option<String> {
        let (without_proof, proof) = msg.rsplit_once(",p=")?;
        let mut channel = None;
        let mut nonce = None;
        for attr in without_proof.split(',') {
            match attr.split_at_checked(2)? {
                ("c=", v) => channel = Some(v),
                ("r=", v) => nonce = Some(v),
                _ => {}
            }
        }
        if B64.decode(channel?).ok()? != self.gs2_header.as_bytes() || nonce? != self.nonce {
            return None;
        }
        let proof = B64.decode(proof).ok()?;
        let mech = self.credential.mechanism;
        let auth_message = format!("{},{},{without_proof}", self.client_first_bare, self.server_first);
        let client_signature = mech.hmac(&self.credential.stored_key, auth_message.as_bytes());
        if proof.len() != client_signature.len() {
            return None;
        }
        let client_key: Vec<u8> = proof.iter().zip(&client_signature).map(|(a, b)| a ^ b).collect();
        if mech.hash(&client_key) != self.credential.stored_key {
            return None;
        }
        let server_signature = mech.hmac(&self.credential.server_key, auth_message.as_bytes());
        Some(format!("v={}", B64.encode(server_signature)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    /// A minimal SCRAM client, to check the server side against the RFC's equations.
    fn client_final(
        mech: Mechanism,
        user: &str,
        password: &str,
        client_first_bare: &str,
        server_first: &str,
    ) -> (String, String) {
        let mut salt = None;
        let mut iterations = None;
        let mut nonce = None;
        for attr in server_first.split(',') {
            let (k, v) = attr.split_at(2);
            match k {
                "r=" => nonce = Some(v.to_owned()),
                "s=" => salt = Some(B64.decode(v).unwrap()),
                "i=" => iterations = Some(v.parse::<u32>().unwrap()),
                _ => {}
            }
        }
        let salted = mech.salted_password(user, password, &salt.unwrap(), iterations.unwrap()).unwrap();
        let client_key = mech.hmac(&salted, b"Client Key");
        let stored_key = mech.hash(&client_key);
        let without_proof = format!("c=biws,r={}", nonce.unwrap());
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let signature = mech.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
        let server_key = mech.hmac(&salted, b"Server Key");
        let expected_v = format!("v={}", B64.encode(mech.hmac(&server_key, auth_message.as_bytes())));
        (format!("{without_proof},p={}", B64.encode(proof)), expected_v)
    }

    fn users() -> Users {
        Users::new(
            &[UserSpec {
                name: "ann".into(),
                password: "pencil".into(),
                mechanisms: vec![Mechanism::Sha1, Mechanism::Sha256],
                db: "admin".into(),
            }],
            &[],
            "sts.amazonaws.com",
            None,
        )
        .unwrap()
    }

    fn run(mech: Mechanism, password: &str, skip: bool) -> Result<ConnAuth, CmdError> {
        let users = users();
        let mut auth = ConnAuth::default();
        let bare = "n=ann,r=fyko+d2lbbFgONRv9qkxdawL";
        let start = rawdoc! {
            "saslStart": 1, "mechanism": mech.name(),
            "payload": binary(format!("n,,{bare}").into_bytes()),
            "options": {"skipEmptyExchange": skip},
        };
        let first = auth.sasl_start(&users, "admin", &start)?;
        assert_eq!(first.get_i32("conversationId").unwrap(), 1);
        assert!(!first.get_bool("done").unwrap());
        let server_first = String::from_utf8(first.get_binary_generic("payload").unwrap().clone()).unwrap();
        assert!(server_first.starts_with("r=fyko+d2lbbFgONRv9qkxdawL"));
        let iterations = if mech == Mechanism::Sha1 { ",i=10000" } else { ",i=15000" };
        assert!(server_first.ends_with(iterations), "{server_first}");
        let (client_final, expected_v) = client_final(mech, "ann", password, bare, &server_first);
        let cont =
            rawdoc! {"saslContinue": 1, "conversationId": 1, "payload": binary(client_final.into_bytes())};
        let fin = auth.sasl_continue(&users, &cont)?;
        assert_eq!(fin.get_binary_generic("payload").unwrap(), expected_v.as_bytes());
        assert_eq!(fin.get_bool("done").unwrap(), skip);
        if !skip {
            assert!(!auth.authenticated());
            let empty = rawdoc! {"saslContinue": 1, "conversationId": 1, "payload": binary(Vec::new())};
            let done = auth.sasl_continue(&users, &empty)?;
            assert!(done.get_bool("done").unwrap());
        }
        Ok(auth)
    }

    #[test]
    fn scram_conversations_succeed_with_the_right_password() {
        for mech in [Mechanism::Sha1, Mechanism::Sha256] {
            for skip in [true, false] {
                let auth = run(mech, "pencil", skip).unwrap();
                assert_eq!(auth.user, Some(("ann".to_owned(), "admin".to_owned())));
            }
        }
    }

    #[test]
    fn wrong_password_is_authentication_failed() {
        for mech in [Mechanism::Sha1, Mechanism::Sha256] {
            let err = run(mech, "pen", true).unwrap_err();
            assert_eq!((err.code, err.errmsg.as_str()), (18, "Authentication failed."));
        }
    }

    #[test]
    fn unknown_user_and_mechanism() {
        let users = users();
        let mut auth = ConnAuth::default();
        let start = |m: &str, u: &str| {
            rawdoc! {"saslStart": 1, "mechanism": m, "payload": binary(format!("n,,n={u},r=abc").into_bytes())}
        };
        assert_eq!(auth.sasl_start(&users, "admin", &start("SCRAM-SHA-256", "bob")).unwrap_err().code, 18);
        assert_eq!(auth.sasl_start(&users, "test", &start("SCRAM-SHA-256", "ann")).unwrap_err().code, 18);
        assert_eq!(auth.sasl_start(&users, "admin", &start("GSSAPI", "ann")).unwrap_err().code, 334);
        // PLAIN exists: a SCRAM payload is not a PLAIN one.
        assert_eq!(auth.sasl_start(&users, "admin", &start("PLAIN", "ann")).unwrap_err().code, 18);
        let cont = rawdoc! {"saslContinue": 1, "conversationId": 1, "payload": binary(Vec::new())};
        assert_eq!(auth.sasl_continue(&users, &cont).unwrap_err().code, 17);
    }

    #[test]
    fn saslname_and_supported_mechs() {
        assert_eq!(decode_saslname("a=2Cb=3Dc").as_deref(), Some("a,b=c"));
        assert_eq!(decode_saslname("a=2"), None);
        let users = users();
        assert_eq!(
            users.supported_mechs("admin.ann"),
            Some(vec![Bson::String("SCRAM-SHA-1".into()), Bson::String("SCRAM-SHA-256".into())])
        );
        assert_eq!(users.supported_mechs("admin.bob"), None);
        assert_eq!(users.supported_mechs("test.ann"), None);
    }

    #[test]
    fn plain_checks_the_password_of_admin_and_external_users() {
        let users = Users::new(
            &[
                UserSpec {
                    name: "ann".into(),
                    password: "pencil".into(),
                    mechanisms: vec![Mechanism::Sha1],
                    db: "admin".into(),
                },
                UserSpec {
                    name: "ldap".into(),
                    password: "dir".into(),
                    mechanisms: vec![Mechanism::Sha256],
                    db: "$external".into(),
                },
            ],
            &[],
            "sts.amazonaws.com",
            None,
        )
        .unwrap();
        let start = |payload: &[u8]| rawdoc! {"saslStart": 1, "mechanism": "PLAIN", "payload": bson::Binary { subtype: BinarySubtype::Generic, bytes: payload.to_vec() }};
        let mut auth = ConnAuth::default();
        let reply = auth.sasl_start(&users, "admin", &start(b"\0ann\0pencil")).expect("admin user");
        assert_eq!(reply.get_bool("done").ok(), Some(true));
        assert_eq!(auth.user, Some(("ann".into(), "admin".into())));
        let mut auth = ConnAuth::default();
        auth.sasl_start(&users, "$external", &start(b"\0ldap\0dir")).expect("external user");
        for (db, payload) in [
            ("$external", &b"\0ldap\0wrong"[..]),
            ("admin", b"\0ldap\0dir"),
            ("admin", b"other\0ann\0pencil"),
            ("admin", b"ann\0pencil"),
        ] {
            let mut auth = ConnAuth::default();
            let e = auth.sasl_start(&users, db, &start(payload)).expect_err("refused");
            assert_eq!(e.code, 18, "{db} {payload:?}");
            assert!(!auth.authenticated());
        }
    }

    #[test]
    fn x509_takes_the_subject_of_the_verified_certificate() {
        let users = Users::new(
            &[UserSpec {
                name: "CN=svc,O=org".into(),
                password: String::new(),
                mechanisms: Vec::new(),
                db: "$external".into(),
            }],
            &[],
            "sts.amazonaws.com",
            None,
        )
        .unwrap();
        let cmd = rawdoc! {"authenticate": 1, "mechanism": "MONGODB-X509"};
        let mut auth = ConnAuth::with_peer_subject(Some("CN=svc,O=org".into()));
        let reply = auth.authenticate(&users, "$external", &cmd).expect("no user given");
        assert_eq!(reply.get_str("user").ok(), Some("CN=svc,O=org"));
        assert_eq!(auth.user, Some(("CN=svc,O=org".into(), "$external".into())));
        let with_user = rawdoc! {"authenticate": 1, "mechanism": "MONGODB-X509", "user": "CN=svc,O=org"};
        assert!(ConnAuth::with_peer_subject(Some("CN=svc,O=org".into()))
            .authenticate(&users, "$external", &with_user)
            .is_ok());
        let other = rawdoc! {"authenticate": 1, "mechanism": "MONGODB-X509", "user": "CN=other"};
        let cases = [
            (Some("CN=svc,O=org"), "$external", &other),
            (Some("CN=svc,O=org"), "admin", &cmd),
            (None, "$external", &cmd),
            (Some("CN=unknown"), "$external", &cmd),
        ];
        for (subject, db, body) in cases {
            let mut auth = ConnAuth::with_peer_subject(subject.map(str::to_owned));
            assert_eq!(
                auth.authenticate(&users, db, body).expect_err("refused").code,
                18,
                "{subject:?} {db}"
            );
        }
        let scram = rawdoc! {"authenticate": 1, "mechanism": "SCRAM-SHA-1"};
        assert_eq!(
            ConnAuth::default().authenticate(&users, "$external", &scram).expect_err("mechanism").code,
            2
        );
    }
}
