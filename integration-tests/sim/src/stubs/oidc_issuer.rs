//! A local OIDC identity provider for tests: an ES256 key pair (ring), the JWKS that publishes
//! its public key, and signed access tokens (JWTs) for any subject and lifetime. The simulator
//! trusts its JWKS ([`crate::ClusterBuilder::oidc`]) and checks tokens as mongod does:
//! signature, issuer, audience, expiry.
//!
//! ```
//! use mongo_sim::stubs::oidc_issuer::OidcIssuer;
//! let idp = OidcIssuer::new("https://idp.test", "mongodb");
//! let token = idp.token("alice", std::time::Duration::from_secs(300));
//! assert_eq!(token.split('.').count(), 3);
//! assert_eq!(idp.jwks()["keys"][0]["crv"], "P-256");
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};

/// A test identity provider.
pub struct OidcIssuer {
    issuer: String,
    audience: String,
    kid: String,
    key: EcdsaKeyPair,
    rng: SystemRandom,
}

impl std::fmt::Debug for OidcIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcIssuer")
            .field("issuer", &self.issuer)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl OidcIssuer {
    /// A provider named `issuer` whose tokens are for `audience`, with a fresh key.
    ///
    /// # Panics
    /// If the system has no random numbers (test setup only).
    pub fn new(issuer: &str, audience: &str) -> OidcIssuer {
        let rng = SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("an ES256 key");
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("the key");
        let kid = hex::encode(&key.public_key().as_ref()[1..9]);
        OidcIssuer { issuer: issuer.to_owned(), audience: audience.to_owned(), kid, key, rng }
    }

    /// The issuer (`iss`).
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The audience (`aud`) of its tokens.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// The JWKS: the public key as an EC JWK (`kty`, `crv`, `kid`, `x`, `y`).
    pub fn jwks(&self) -> Value {
        let point = self.key.public_key().as_ref();
        json!({ "keys": [{
            "kty": "EC",
            "crv": "P-256",
            "alg": "ES256",
            "use": "sig",
            "kid": self.kid,
            "x": B64URL.encode(&point[1..33]),
            "y": B64URL.encode(&point[33..65]),
        }]})
    }

    /// What a simulated cluster needs to trust this provider: users are `test/<sub>`, the
    /// two-step conversation hands out client id `mongo-actors-test` and scope `openid`.
    pub fn sim_oidc(&self) -> crate::SimOidc {
        crate::SimOidc {
            issuer: self.issuer.clone(),
            audience: self.audience.clone(),
            jwks: self.jwks(),
            client_id: Some("mongo-actors-test".into()),
            request_scopes: Some(vec!["openid".into()]),
            auth_name_prefix: "test".into(),
        }
    }

    /// A token for `subject` valid for `lifetime` from now.
    pub fn token(&self, subject: &str, lifetime: Duration) -> String {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        self.token_with(json!({
            "iss": self.issuer,
            "aud": self.audience,
            "sub": subject,
            "iat": now,
            "exp": now + lifetime.as_secs(),
        }))
    }

    /// A token with exactly these claims (to test what the server refuses).
    pub fn token_with(&self, claims: Value) -> String {
        let header = json!({ "alg": "ES256", "typ": "JWT", "kid": self.kid });
        let signing_input =
            format!("{}.{}", B64URL.encode(header.to_string()), B64URL.encode(claims.to_string()));
        let signature = self.key.sign(&self.rng, signing_input.as_bytes()).expect("ES256 signing");
        format!("{signing_input}.{}", B64URL.encode(signature.as_ref()))
    }
}
