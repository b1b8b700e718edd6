//! The sync API's runtime: a multi-thread tokio runtime of the crate's own, and what an
//! async action's output becomes there ([`IntoSync`]; each blocking type implements it in
//! its own file, so the builders' `run()` names only this file).

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

/// An async action's output as the sync API gives it: a cursor, a session or a change
/// stream becomes its blocking counterpart, anything else is itself.
pub trait IntoSync {
    /// The blocking counterpart.
    type Sync;
    /// Converts.
    fn into_sync(self) -> Self::Sync;
}

impl IntoSync for () {
    type Sync = ();
    fn into_sync(self) {}
}

impl<T> IntoSync for Option<T> {
    type Sync = Option<T>;
    fn into_sync(self) -> Option<T> {
        self
    }
}

impl IntoSync for Vec<String> {
    type Sync = Vec<String>;
    fn into_sync(self) -> Vec<String> {
        self
    }
}
