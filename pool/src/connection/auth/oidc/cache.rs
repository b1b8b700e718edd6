//! The client's MONGODB-OIDC token cache (auth spec, "Credential Caching"): the last access
//! token, and for the human flow the identity provider's info and the refresh token. One per
//! client, shared by its pools. Only one callback runs at a time, at least 100 ms after the
//! previous one; no lock is held while a conversation runs.

use std::time::{Duration, Instant};

use parking_lot::Mutex;
use protocol::oidc::IdpServerInfo;

/// The least time between two callback calls.
pub(crate) const CALLBACK_SPACING: Duration = Duration::from_millis(100);

/// What is cached.
#[derive(Default, Clone)]
pub(crate) struct Cached {
    pub access_token: Option<String>,
    pub refresh_token: Option<String>,
    pub idp_info: Option<IdpServerInfo>,
    /// How many callback answers were stored: a caller that saw an older count knows another
    /// caller got a token while it waited for the callback's lock.
    pub generation: u64,
}

impl std::fmt::Debug for Cached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cached")
            .field("access_token", &self.access_token.as_ref().map(|_| "<redacted>"))
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "<redacted>"))
            .field("idp_info", &self.idp_info)
            .field("generation", &self.generation)
            .finish()
    }
}

/// The cache and the single-flight guard of the callback.
#[derive(Default)]
pub(crate) struct TokenCache {
    cached: Mutex<Cached>,
    last_call: Mutex<Option<Instant>>,
    /// Held while the callback runs: one call at a time.
    pub(crate) calling: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCache").field("cached", &*self.cached.lock()).finish_non_exhaustive()
    }
}

impl TokenCache {
    pub(crate) fn snapshot(&self) -> Cached {
        self.cached.lock().clone()
    }

    pub(crate) fn access_token(&self) -> Option<String> {
        self.cached.lock().access_token.clone()
    }

    /// Stores what a callback returned (a human callback's refresh token and the identity
    /// provider it was for too).
    pub(crate) fn store(&self, access: String, refresh: Option<String>, idp: Option<IdpServerInfo>) {
        let mut c = self.cached.lock();
        c.access_token = Some(access);
        if idp.is_some() {
            c.idp_info = idp;
        }
        c.refresh_token = refresh;
        c.generation += 1;
    }

    /// Clears the access token, only if it is still `token` (another connection may already
    /// have replaced it).
    pub(crate) fn invalidate(&self, token: &str) {
        let mut c = self.cached.lock();
        if c.access_token.as_deref() == Some(token) {
            c.access_token = None;
        }
    }

    /// Forgets the refresh token (the server refused what it gave).
    pub(crate) fn clear_refresh_token(&self) {
        self.cached.lock().refresh_token = None;
    }

    /// How long to wait before the next call, and records that call.
    pub(crate) fn next_call_delay(&self, now: Instant) -> Duration {
        let mut last = self.last_call.lock();
        let wait = last.map_or(Duration::ZERO, |l| (l + CALLBACK_SPACING).saturating_duration_since(now));
        *last = Some(now + wait);
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalidation_only_clears_the_same_token() {
        let c = TokenCache::default();
        c.store("a".into(), None, None);
        c.invalidate("b");
        assert_eq!(c.access_token().as_deref(), Some("a"));
        c.invalidate("a");
        assert_eq!(c.access_token(), None);
    }

    #[test]
    fn debug_shows_no_token() {
        let c = TokenCache::default();
        c.store("access-secret".into(), Some("refresh-secret".into()), None);
        let shown = format!("{c:?} {:?}", c.snapshot());
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    fn callbacks_are_spaced_by_100_ms() {
        let c = TokenCache::default();
        let t0 = Instant::now();
        assert_eq!(c.next_call_delay(t0), Duration::ZERO);
        assert_eq!(c.next_call_delay(t0 + Duration::from_millis(30)), Duration::from_millis(70));
        assert_eq!(c.next_call_delay(t0 + Duration::from_millis(500)), Duration::ZERO);
    }
}
