//! SCRAM's salted password: PBKDF2 on a blocking thread (seconds of CPU at high iteration
//! counts must not pin an executor thread that serves other operations), under the
//! connection's deadline, and cached per (mechanism, password, salt, iteration count) as the
//! auth spec allows, so a pool's connections derive it once.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use sha2::Digest as _;
use tokio::time::Instant;

use super::scram::{ScramVersion, ServerFirst};
use crate::connection::conn::{guarded, Connection};
use crate::{Error, Phase, Result};

/// How many salted passwords the process keeps (a few credentials and servers at most).
const CAPACITY: usize = 16;

/// What a salted password depends on; the password only as its SHA-256 digest.
#[derive(PartialEq, Eq)]
struct Key {
    version: ScramVersion,
    password: [u8; 32],
    salt: Vec<u8>,
    iterations: u32,
}

static CACHE: Mutex<VecDeque<(Key, Arc<[u8]>)>> = Mutex::new(VecDeque::new());

fn cached(key: &Key) -> Option<Arc<[u8]>> {
    CACHE.lock().iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
}

fn remember(key: Key, value: Arc<[u8]>) {
    let mut cache = CACHE.lock();
    if cache.iter().any(|(k, _)| *k == key) {
        return;
    }
    if cache.len() >= CAPACITY {
        cache.pop_back();
    }
    cache.push_front((key, value));
}

/// The salted password for `server_first`, from the cache or computed off the executor;
/// fails with [`Error::Timeout`] (phase authentication) at `deadline` and with
/// [`Error::Interrupted`] when the connection is cancelled, whatever PBKDF2 still does.
pub(crate) async fn salted_password(
    conn: &Connection,
    version: ScramVersion,
    password: Vec<u8>,
    server_first: &ServerFirst,
    deadline: Option<Instant>,
) -> Result<Arc<[u8]>> {
    let key = Key {
        version,
        password: sha2::Sha256::digest(&password).into(),
        salt: server_first.salt.clone(),
        iterations: server_first.iterations,
    };
    if let Some(hit) = cached(&key) {
        return Ok(hit);
    }
    let (salt, iterations) = (key.salt.clone(), key.iterations);
    let address = conn.address();
    let cancel = conn.cancel_token();
    let salted = guarded(address, &cancel, deadline, Phase::Authentication, async {
        tokio::task::spawn_blocking(move || version.salted_password(&password, &salt, iterations))
            .await
            .map_err(|e| Error::Authentication {
                address: address.clone(),
                mechanism: version.mechanism().to_string(),
                code: None,
                message: format!("deriving the salted password failed: {e}"),
            })
    })
    .await?;
    let salted: Arc<[u8]> = salted.into();
    remember(key, salted.clone());
    Ok(salted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(iterations: u32) -> Key {
        Key { version: ScramVersion::Sha256, password: [1; 32], salt: vec![2], iterations }
    }

    #[test]
    fn the_cache_is_bounded_and_keyed_by_every_input() {
        for i in 0..(CAPACITY as u32 + 5) {
            remember(key(1_000_000 + i), Arc::from(vec![i as u8]));
        }
        assert!(CACHE.lock().len() <= CAPACITY);
        let newest = 1_000_000 + CAPACITY as u32 + 4;
        assert_eq!(cached(&key(newest)).as_deref(), Some(&[(newest - 1_000_000) as u8][..]));
        assert!(cached(&key(1_000_000)).is_none(), "the oldest entry was evicted");
        let other_salt = Key { salt: vec![3], ..key(newest) };
        assert!(cached(&other_salt).is_none());
    }
}
