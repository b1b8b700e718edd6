//! `Client::warm_connection_pool`: fills every ready pool up to `minPoolSize` now, instead of
//! as the pools' background maintenance gets to it.

use std::time::Duration;

use futures_util::future::BoxFuture;
use pool::cmap::PoolState;
use tokio::time::Instant;

use super::super::inner::Client;

/// How long warming waits for connections at most: the connections' own `connectTimeoutMS`
/// bounds each attempt; this bounds a server that keeps failing them.
const WARM_LIMIT: Duration = Duration::from_secs(30);
/// How often the pools' counts are looked at while waiting.
const POLL: Duration = Duration::from_millis(5);

impl Client {
    /// Opens connections until every pool of a known server holds `minPoolSize` of them
    /// (nothing to do without a `minPoolSize`), starting as many as `maxConnecting` allows at
    /// once. Pools of servers discovered later fill in the background, as always. Waits at
    /// most 30 s; connections that fail are logged as background errors are.
    pub fn warm_connection_pool(&self) -> WarmConnectionPool<'_> {
        WarmConnectionPool { client: self }
    }
}

/// Pools to warm: see [`Client::warm_connection_pool`].
#[must_use = "the pools are warmed only when this is awaited"]
pub struct WarmConnectionPool<'a> {
    client: &'a Client,
}

impl WarmConnectionPool<'_> {
    async fn execute(self) {
        let deadline = Instant::now() + WARM_LIMIT;
        let snapshot = self.client.inner.topology.snapshot();
        for handle in snapshot.servers.values() {
            let pool = &handle.pool;
            let min = pool.options().min_pool_size() as usize;
            // A paused pool (server unknown, or cleared) opens nothing until it is ready again.
            while min > 0 && pool.state() == PoolState::Ready && Instant::now() < deadline {
                let stats = pool.stats();
                if stats.total - stats.pending >= min || !pool.maintain() {
                    break;
                }
                tokio::time::sleep(POLL).await;
            }
        }
    }
}

impl<'a> std::future::IntoFuture for WarmConnectionPool<'a> {
    type Output = ();
    type IntoFuture = BoxFuture<'a, ()>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

super::action! {
    impl<'a> for WarmConnectionPool<'a>;
}
