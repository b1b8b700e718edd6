//! The sync API's runtime: a multi-thread tokio runtime of the crate's own.

use std::future::Future;
use std::sync::LazyLock;

/// Where the sync API's futures run: two worker threads, started at first use. The client's
/// actors run on their own System thread, as for any client built outside actix.
pub(super) static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("mongo-actors-sync")
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("the sync API cannot start its runtime: {e}"))
});

/// Runs `future` to completion on the sync API's runtime.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    RUNTIME.block_on(future)
}
