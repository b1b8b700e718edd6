//! Where MONGODB-AWS credentials come from, in the auth spec's order, and their cache.
//!
//! 0. A provider the application gave (`Credential::aws_credential_provider`), asked every
//!    time (the SDK's providers cache themselves).
//! 1. The environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), read
//!    again at every authentication (another part of the process may refresh them) and never
//!    cached.
//! 2. The cache: temporary credentials fetched before, while they are more than five minutes
//!    from expiring.
//! 3. The AWS SDK's default chain (`aws-config`): a shared profile, `AssumeRoleWithWebIdentity`
//!    (`AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`), ECS
//!    (`AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`/`FULL_URI`), then EC2 instance metadata
//!    (IMDSv2), with the SDK's own endpoint overrides (`AWS_EC2_METADATA_SERVICE_ENDPOINT`,
//!    `AWS_ENDPOINT_URL_STS`, ...). What it returns with an expiry is cached.
//!
//! One cache per client, shared by its pools. No lock is held while fetching (concurrent
//! authentications may fetch at once, as the spec asks, rather than queue behind one), and a
//! failed authentication clears it.

use std::fmt;
use std::time::{Duration, SystemTime};

use aws_config::default_provider::credentials::DefaultCredentialsChain;
use aws_config::provider_config::ProviderConfig;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
use parking_lot::Mutex;
use tokio::sync::OnceCell;

/// Cached credentials are used while they are at least this far from expiring.
const MARGIN: Duration = Duration::from_secs(5 * 60);

/// A client's MONGODB-AWS credential cache and its SDK chain (built on first use).
#[derive(Default)]
pub struct AwsCredentialCache {
    provider: Option<SharedCredentialsProvider>,
    cached: Mutex<Option<Credentials>>,
    chain: OnceCell<DefaultCredentialsChain>,
}

impl fmt::Debug for AwsCredentialCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Credentials' own Debug redacts the secret; say only whether there are some.
        f.debug_struct("AwsCredentialCache").field("cached", &self.cached.lock().is_some()).finish()
    }
}

impl AwsCredentialCache {
    /// A cache that asks `provider` first.
    pub fn with_provider(provider: Option<SharedCredentialsProvider>) -> Self {
        AwsCredentialCache { provider, ..Default::default() }
    }

    /// The credentials to sign with now.
    pub(crate) async fn get(&self) -> Result<Credentials, String> {
        if let Some(p) = &self.provider {
            return p
                .provide_credentials()
                .await
                .map_err(|e| format!("the AWS credential provider failed: {}", chain_of(&e)));
        }
        if let Some(c) = from_environment() {
            return Ok(c);
        }
        if let Some(c) = self.cached.lock().clone().filter(|c| fresh(c, SystemTime::now())) {
            return Ok(c);
        }
        let chain = self.chain.get_or_init(sdk_chain).await;
        let c =
            chain.provide_credentials().await.map_err(|e| format!("no AWS credentials: {}", chain_of(&e)))?;
        if c.expiry().is_some() {
            *self.cached.lock() = Some(c.clone());
        }
        Ok(c)
    }

    /// Forgets the cached credentials (after a failed authentication).
    pub(crate) fn clear(&self) {
        *self.cached.lock() = None;
    }
}

/// Credentials from the environment, when both the key id and the secret are set.
fn from_environment() -> Option<Credentials> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let (id, secret) = (var("AWS_ACCESS_KEY_ID")?, var("AWS_SECRET_ACCESS_KEY")?);
    Some(Credentials::new(id, secret, var("AWS_SESSION_TOKEN"), None, "environment"))
}

/// An error and its sources, `: `-separated (the SDK's errors say little at the top).
fn chain_of(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Whether cached credentials may still be used at `now`.
fn fresh(c: &Credentials, now: SystemTime) -> bool {
    c.expiry().is_some_and(|e| e > now + MARGIN)
}

/// The SDK's default chain over an HTTPS client on rustls' ring provider (the one this crate
/// already uses for TLS).
async fn sdk_chain() -> DefaultCredentialsChain {
    let http =
        aws_smithy_http_client::Builder::new().tls_provider(Provider::Rustls(CryptoMode::Ring)).build_https();
    DefaultCredentialsChain::builder()
        .configure(ProviderConfig::default().with_http_client(http))
        .build()
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_fresh_until_five_minutes_before_they_expire() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let expiring =
            |secs| Credentials::new("id", "secret", None, Some(now + Duration::from_secs(secs)), "t");
        assert!(fresh(&expiring(301), now));
        assert!(!fresh(&expiring(300), now));
        assert!(!fresh(&expiring(10), now));
        assert!(
            !fresh(&Credentials::new("id", "secret", None, None, "t"), now),
            "only expiring credentials are cached"
        );
    }
}
