//! Cancel safety: an operation's future may be dropped at any await point (a timeout,
//! `select!`, a handler actix cancelled) and the client must be left as if it had never run
//! or had run once: no stale reply for the next operation, no pool clear, no write applied
//! twice or after the fact, every connection back.
//!
//! The harness polls an operation N times and drops it, for N = 1, 2, 3… until it completes
//! within N polls, so no await point is missed; after every drop the same client runs a check
//! (a `find_one` that must return the right document), the pool must hold no connection in use,
//! and no `PoolCleared` event may have been emitted. Real sockets, on the simulator and (with
//! `MONGODB_URI`) on SecantusDB.

use futures_util::TryStreamExt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bson::{doc, Document};
use futures_util::io::{AsyncReadExt, AsyncWriteExt};
use futures_util::StreamExt;
use pool::cmap::CmapEvent;

mod model;
use crate::support;
use support::{replica_set_with_primary, Setup};

/// Polls its future at most `left` more times: `None` when the future was still pending after
/// the last of them, and is dropped there.
struct PollLimit<F: Future> {
    inner: Pin<Box<F>>,
    left: usize,
}

impl<F: Future> Future for PollLimit<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.left -= 1;
        match self.inner.as_mut().poll(cx) {
            Poll::Ready(v) => Poll::Ready(Some(v)),
            Poll::Pending if self.left == 0 => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// `fut` polled at most `polls` times, then dropped.
async fn poll_at_most<F: IntoFuture>(fut: F, polls: usize) -> Option<F::Output> {
    PollLimit { inner: Box::pin(fut.into_future()), left: polls }.await
}

/// Most polls any operation here needs; a loop reaching it is a hang, not a slow operation.
const MAX_POLLS: usize = 400;

/// The probe every check reads: a wrong reply (another request's) would not be this.
const PROBE: &str = "probe";

impl Setup {
    fn coll(&self, name: &str) -> actors::Collection {
        self.database("cancel").collection::<Document>(name)
    }

    /// Whether every exchange is sure to suspend (the simulator, with its added latency): a
    /// fast real server can answer before the first poll reads, so there the counts of drops
    /// are not checked.
    fn suspends(&self) -> bool {
        self.deployment.sim().is_some()
    }

    /// The collection `name`, emptied.
    async fn fresh(&self, name: &str) -> actors::Collection {
        let coll = self.coll(name);
        let _ = coll.drop().await;
        coll
    }

    async fn seed_probe(&self) {
        let probes = self.coll("probes");
        let _ = probes.drop().await;
        probes.insert_one(doc! {"_id": PROBE, "v": 42}).await.expect("insert the probe");
    }

    /// The connections checked out of every pool.
    fn in_use(&self) -> usize {
        let snapshot = self.client.topology().snapshot();
        snapshot
            .description
            .servers()
            .filter_map(|s| snapshot.handle(&s.address))
            .map(|h| h.pool.stats().in_use)
            .sum()
    }

    /// After a drop: the client still answers correctly, nothing cleared a pool, and every
    /// connection came back (background work such as a killCursors may take a moment).
    async fn check_healthy(&self, what: &str, polls: usize) {
        let found = self.coll("probes").find_one(doc! {"_id": PROBE}).await;
        let found =
            found.unwrap_or_else(|e| panic!("{what}, dropped after {polls} polls: the check failed: {e}"));
        assert_eq!(found, Some(doc! {"_id": PROBE, "v": 42}), "{what} after {polls} polls");
        let cleared: Vec<_> =
            self.cmap.try_iter().filter(|e| matches!(e, CmapEvent::PoolCleared { .. })).collect();
        assert!(cleared.is_empty(), "{what} after {polls} polls cleared a pool: {cleared:?}");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        loop {
            let in_use = self.in_use();
            if in_use == 0 {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{what} after {polls} polls: {in_use} connections still checked out"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Runs `make(n)` polled at most n times for n = 1, 2, … until it completes, checking the
    /// client after every drop; `after_drop` checks the operation's own invariants. Returns
    /// the completed output and how many drops came before it.
    async fn drop_at_every_await<T, Fut>(
        &self,
        what: &str,
        mut make: impl FnMut(usize) -> Fut,
        mut after_drop: impl AsyncFnMut(usize),
    ) -> (T, usize)
    where
        Fut: IntoFuture<Output = T>,
    {
        let _ = self.cmap.try_iter().count();
        for polls in 1..=MAX_POLLS {
            match poll_at_most(make(polls), polls).await {
                Some(out) => {
                    self.check_healthy(what, polls).await;
                    return (out, polls - 1);
                }
                None => {
                    self.check_healthy(what, polls).await;
                    after_drop(polls).await;
                }
            }
        }
        panic!("{what} did not complete within {MAX_POLLS} polls");
    }
}

async fn setup(extra: &str) -> Setup {
    let s = replica_set_with_primary(3, extra).await;
    if let Some(cluster) = s.deployment.sim() {
        // Every reply a little late, as from a server across a network: each exchange then
        // suspends its future at least once (an in-process reply can beat the first poll).
        for i in 0..3 {
            cluster.set_latency(i, Duration::from_millis(2));
        }
    }
    s.seed_probe().await;
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn find_one_dropped_at_every_await_point() {
    let s = setup("").await;
    let coll = s.fresh("find_one").await;
    coll.insert_one(doc! {"_id": 1, "x": "one"}).await.expect("seed");
    let (found, drops) =
        s.drop_at_every_await("find_one", |_| coll.find_one(doc! {"_id": 1}), async |_| {}).await;
    assert_eq!(found.expect("find_one"), Some(doc! {"_id": 1, "x": "one"}));
    assert!(drops >= 1 || !s.suspends(), "the operation never suspended: nothing was tested");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_one_dropped_at_every_await_point_is_applied_at_most_once() {
    let s = setup("").await;
    let coll = s.fresh("insert_one").await;
    let (result, drops) = s
        .drop_at_every_await(
            "insert_one",
            |n| coll.insert_one(doc! {"k": n as i64}),
            async |n| {
                let copies = coll.count_documents(doc! {"k": n as i64}).await.expect("count");
                assert!(copies <= 1, "insert {n} applied {copies} times");
            },
        )
        .await;
    result.expect("the completed insert");
    let completed = drops as i64 + 1;
    assert_eq!(coll.count_documents(doc! {"k": completed}).await.expect("count"), 1);
    // Nothing a dropped insert left on the wire is applied later.
    tokio::time::sleep(Duration::from_millis(200)).await;
    for n in 1..=completed {
        assert!(coll.count_documents(doc! {"k": n}).await.expect("count") <= 1, "insert {n}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_many_dropped_at_every_await_point_never_applies_later() {
    let s = setup("").await;
    let coll = s.fresh("update_many").await;
    coll.insert_many([doc! {"_id": 1, "n": 0}, doc! {"_id": 2, "n": 0}]).await.expect("seed");
    let read = async || {
        let docs =
            coll.find(doc! {}).sort(doc! {"_id": 1}).await.expect("find").try_collect::<Vec<_>>().await;
        docs.expect("collect").iter().map(|d| d.get_i32("n").expect("n")).collect::<Vec<_>>()
    };
    // A real server may still be applying a cut-off update when the check reads (it had the
    // whole request), so each check bounds the counters: at most one increment per update
    // started so far. After the last one they must settle at exactly one per update applied.
    let (result, dropped) = s
        .drop_at_every_await(
            "update_many",
            |_| coll.update_many(doc! {}, doc! {"$inc": {"n": 1}}),
            async |n| {
                let now = read().await;
                assert!(now.iter().all(|v| *v as usize <= n), "after {n} cut-off updates: {now:?}");
            },
        )
        .await;
    assert_eq!(result.expect("the completed update").modified_count, 2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = read().await;
    assert_eq!(after[0], after[1], "every update applied to both documents or to none");
    assert!(
        after[0] >= 1 && after[0] as usize <= dropped + 1,
        "each update applied at most once: {after:?} after {dropped} cut off and one completed"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(read().await, after, "nothing a dropped update left behind was applied later");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregate_with_get_mores_dropped_at_every_await_point() {
    let s = setup("").await;
    let coll = s.fresh("aggregate").await;
    coll.insert_many((1..=7).map(|i| doc! {"_id": i})).await.expect("seed");
    let run = || async {
        let cursor = coll.aggregate(vec![doc! {"$sort": {"_id": 1}}]).batch_size(2).await?;
        cursor.try_collect::<Vec<_>>().await
    };
    let (docs, drops) = s.drop_at_every_await("aggregate + getMore", |_| run(), async |_| {}).await;
    let ids: Vec<i32> = docs.expect("aggregate").iter().map(|d| d.get_i32("_id").expect("_id")).collect();
    assert_eq!(ids, (1..=7).collect::<Vec<_>>());
    assert!(drops >= 4 || !s.suspends(), "the aggregate and its three getMores each suspend: {drops} drops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_whose_get_more_was_dropped_ends_instead_of_skipping_a_batch() {
    let s = setup("").await;
    let coll = s.fresh("cursor_cut").await;
    coll.insert_many((1..=6).map(|i| doc! {"_id": i})).await.expect("seed");
    // Drop the first getMore at every point of its exchange: the cursor either goes on with
    // the next batch (nothing was sent) or ends with a typed error, never skips a batch.
    for polls in 1..=MAX_POLLS {
        let mut cursor = coll.find(doc! {}).sort(doc! {"_id": 1}).batch_size(2).await.expect("find");
        let mut seen = Vec::new();
        for _ in 0..2 {
            seen.push(cursor.next().await.expect("first batch").expect("doc").get_i32("_id").expect("_id"));
        }
        let first = poll_at_most(cursor.next(), polls).await;
        let completed = first.is_some();
        if let Some(next) = first {
            seen.push(next.expect("a document").expect("doc").get_i32("_id").expect("_id"));
        }
        let mut ended = None;
        while let Some(next) = cursor.next().await {
            match next {
                Ok(d) => seen.push(d.get_i32("_id").expect("_id")),
                Err(e) => {
                    ended = Some(e);
                    break;
                }
            }
        }
        match ended {
            None => assert_eq!(seen, (1..=6).collect::<Vec<_>>(), "after {polls} polls"),
            Some(e) => {
                assert!(e.is_network_error(), "{e}");
                assert!(e.to_string().contains("cut off"), "{e}");
                assert_eq!(seen, vec![1, 2], "after {polls} polls nothing was skipped");
            }
        }
        drop(cursor);
        s.check_healthy("a cursor's getMore", polls).await;
        if completed {
            return;
        }
    }
    panic!("the getMore never completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_dropped_at_every_await_point_keeps_unknown_commit_semantics() {
    let s = setup("").await;
    if !s.replica_set_or_not_applicable("cancellation::commit", "transactions") {
        return;
    }
    let coll = s.fresh("commit").await;
    coll.insert_one(doc! {"_id": "seed"}).await.expect("create the collection");
    for polls in 1..=MAX_POLLS {
        let mut session = s.client.start_session().await.expect("session");
        session.start_transaction().await.expect("start");
        coll.insert_one(doc! {"_id": polls as i64}).session(&mut session).await.expect("insert");
        let committed = poll_at_most(session.commit_transaction(), polls).await;
        if let Some(result) = &committed {
            result.as_ref().expect("commit");
        } else {
            // Cut off: the outcome is unknown, as after UnknownTransactionCommitResult. Abort
            // is refused; committing again sends the commit again and succeeds.
            let abort = session.abort_transaction().await.expect_err("abort after a commit");
            assert!(abort.to_string().contains("after calling commitTransaction"), "{abort}");
            session.commit_transaction().await.expect("the commit repeated");
        }
        drop(session);
        s.check_healthy("commitTransaction", polls).await;
        let found = coll.count_documents(doc! {"_id": polls as i64}).await.expect("count");
        assert_eq!(found, 1, "the transaction's insert after {polls} polls");
        if committed.is_some() {
            assert!(polls > 1 || !s.suspends(), "the commit never suspended");
            return;
        }
    }
    panic!("commitTransaction never completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gridfs_upload_and_download_dropped_at_every_await_point() {
    let s = setup("").await;
    let bucket = s.database("cancel").gridfs_bucket(actors::gridfs::GridFsBucketOptions {
        chunk_size_bytes: Some(1024),
        ..Default::default()
    });
    let _ = bucket.drop().await;
    let content: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    let upload = |n: usize| {
        let (bucket, content) = (bucket.clone(), content.clone());
        async move {
            let mut up = bucket.open_upload_stream(format!("f{n}")).await?;
            up.write_all(&content).await?;
            up.close().await?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(up.id().clone())
        }
    };
    let (id, drops) = s.drop_at_every_await("GridFS upload", upload, async |_| {}).await;
    let id = id.expect("upload");
    assert!(drops >= 3 || !s.suspends(), "an upload is several round trips: {drops} drops");
    let download = |_| {
        let (bucket, id) = (bucket.clone(), id.clone());
        async move {
            let mut down = bucket.open_download_stream(id).await?;
            let mut back = Vec::new();
            down.read_to_end(&mut back).await?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(back)
        }
    };
    let (back, drops) = s.drop_at_every_await("GridFS download", download, async |_| {}).await;
    assert_eq!(back.expect("download"), content);
    assert!(drops >= 2 || !s.suspends(), "a download is at least two round trips: {drops} drops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_streams_next_dropped_at_every_await_point_loses_no_event() {
    let s = setup("").await;
    if !s.replica_set_or_not_applicable("cancellation::change_stream", "change streams") {
        return;
    }
    let coll = s.fresh("stream").await;
    coll.insert_one(doc! {"_id": 0}).await.expect("create the collection");
    let mut stream = coll.watch().max_await_time(Duration::from_millis(50)).await.expect("watch");
    for polls in 1..=MAX_POLLS {
        let expected = polls as i64;
        coll.insert_one(doc! {"_id": expected}).await.expect("insert");
        let first = poll_at_most(stream.next(), polls).await;
        let completed = first.is_some();
        let event = match first {
            Some(event) => event,
            // Cut off mid-getMore: the stream resumes from its token and the event is not lost.
            None => stream.next().await,
        };
        let event = event.expect("an event").expect("the insert event");
        assert_eq!(event.document_key, Some(doc! {"_id": expected}), "after {polls} polls");
        s.check_healthy("a change stream's next", polls).await;
        if completed && polls > 3 {
            return;
        }
    }
}

/// The reproduction from the issue: one connection, a primary answering 200 ms late, a
/// `find_one` given up after 30 ms; once the latency is gone, five `update_many`s all succeed,
/// each applied once, with no pool clear.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_find_one_leaves_no_stale_reply_for_the_next_write() {
    let s = replica_set_with_primary(1, "maxPoolSize=1").await;
    let Some(cluster) = s.deployment.sim() else {
        integration_tests::deployment::print_skip(
            "cancellation::timed_out_find_one",
            "needs the simulator's latency",
        );
        return;
    };
    s.seed_probe().await;
    let coll = s.fresh("stale").await;
    coll.insert_one(doc! {"_id": 1, "n": 0}).await.expect("seed");
    let _ = s.cmap.try_iter().count();
    for round in 0..5 {
        cluster.set_latency(0, Duration::from_millis(200));
        let r = tokio::time::timeout(Duration::from_millis(30), coll.find_one(doc! {"_id": 1})).await;
        assert!(r.is_err(), "round {round}: the find_one should have been cut off");
        cluster.set_latency(0, Duration::ZERO);
        let updated = coll.update_many(doc! {}, doc! {"$inc": {"n": 1}}).await;
        assert_eq!(updated.expect("update_many").modified_count, 1, "round {round}");
    }
    let n = coll.find_one(doc! {"_id": 1}).await.expect("read").expect("doc").get_i32("n").expect("n");
    assert_eq!(n, 5);
    s.check_healthy("timed-out find_one", 0).await;
}

/// The first reproduction: the first statement of a transaction cut off mid-exchange
/// (100 ms into a 300 ms round trip) after the server applied it. The transaction is in
/// progress from the moment the statement was written: the commit sends `commitTransaction`
/// and the document is there; it was a silent no-op before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_whose_first_statement_was_cut_off_commits_it() {
    let s = setup("").await;
    let Some(cluster) = s.deployment.sim() else {
        integration_tests::deployment::print_skip(
            "cancellation::first_statement",
            "needs the simulator's latency",
        );
        return;
    };
    let coll = s.fresh("first_statement").await;
    coll.insert_one(doc! {"_id": "seed"}).await.expect("create the collection");
    let mut session = s.client.start_session().await.expect("session");
    session.start_transaction().await.expect("start");
    cluster.set_latency(0, Duration::from_millis(300));
    let cut = tokio::time::timeout(
        Duration::from_millis(100),
        coll.insert_one(doc! {"_id": 1}).session(&mut session).into_future(),
    )
    .await;
    assert!(cut.is_err(), "the statement should have been cut off");
    assert_eq!(session.transaction_state(), actors::TransactionState::InProgress);
    cluster.set_latency(0, Duration::from_millis(2));
    let _ = s.events.try_iter().count();
    session.commit_transaction().await.expect("commit");
    let sent: Vec<_> = s
        .events
        .try_iter()
        .filter_map(|e| match e {
            actors::command_events::CommandEvent::Started { command_name, .. } => Some(command_name),
            _ => None,
        })
        .collect();
    assert!(sent.iter().any(|n| n == "commitTransaction"), "the commit was sent: {sent:?}");
    assert_eq!(coll.find_one(doc! {"_id": 1}).await.expect("read"), Some(doc! {"_id": 1}));
    assert_eq!(cluster.open_transactions(), 0);

    // Cut off the same way and then dropped: the session's drop aborts it in the background.
    let mut session = s.client.start_session().await.expect("session");
    session.start_transaction().await.expect("start");
    cluster.set_latency(0, Duration::from_millis(300));
    let cut = tokio::time::timeout(
        Duration::from_millis(100),
        coll.insert_one(doc! {"_id": 2}).session(&mut session).into_future(),
    )
    .await;
    assert!(cut.is_err(), "the statement should have been cut off");
    cluster.set_latency(0, Duration::from_millis(2));
    drop(session);
    wait_until("the dropped session's abort", || cluster.open_transactions() == 0).await;
    assert_eq!(coll.find_one(doc! {"_id": 2}).await.expect("read"), None);
    s.check_healthy("a cut-off first statement", 0).await;
}

/// The second reproduction: `and_run` dropped 100 ms in, with `timeoutMS=2000`. Its
/// deadline does not stay on the session: 2.1 s later the session's operations run (with and
/// without a timeout of their own), and the transaction it started was aborted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_and_run_leaves_no_deadline_and_no_transaction_on_the_session() {
    let s = setup("timeoutMS=2000").await;
    let Some(cluster) = s.deployment.sim() else {
        integration_tests::deployment::print_skip("cancellation::and_run", "needs the simulator's latency");
        return;
    };
    let coll = s.fresh("and_run").await;
    coll.insert_one(doc! {"_id": "seed"}).await.expect("create the collection");
    let mut session = s.client.start_session().await.expect("session");
    cluster.set_latency(0, Duration::from_millis(60));
    let run = session.start_transaction().and_run2(async |session| {
        coll.insert_one(doc! {"_id": "in"}).session(&mut *session).await?;
        coll.insert_one(doc! {"_id": "in2"}).session(&mut *session).await?;
        Ok(())
    });
    assert!(tokio::time::timeout(Duration::from_millis(100), run).await.is_err(), "cut off");
    cluster.set_latency(0, Duration::from_millis(2));
    assert_eq!(session.transaction_state(), actors::TransactionState::Aborted);
    wait_until("the cut-off and_run's abort", || cluster.open_transactions() == 0).await;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    coll.insert_one(doc! {"_id": "after"}).session(&mut session).await.expect("insert after the deadline");
    let own = coll.clone().with_timeout(Some(Duration::from_secs(5)));
    own.insert_one(doc! {"_id": "own"})
        .session(&mut session)
        .await
        .expect("an operation with its own timeoutMS");
    assert_eq!(coll.count_documents(doc! {"_id": {"$in": ["in", "in2"]}}).await.expect("count"), 0);
    drop(session);
    s.check_healthy("a cut-off and_run", 0).await;
}

/// An abort cut off mid-exchange: the session says `Aborted` at once and the abort is finished
/// in the background; a new transaction starts on the same session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_abort_is_finished_in_the_background() {
    let s = setup("").await;
    let Some(cluster) = s.deployment.sim() else {
        integration_tests::deployment::print_skip("cancellation::abort", "needs the simulator's latency");
        return;
    };
    let coll = s.fresh("abort").await;
    coll.insert_one(doc! {"_id": "seed"}).await.expect("create the collection");
    let mut session = s.client.start_session().await.expect("session");
    session.start_transaction().await.expect("start");
    coll.insert_one(doc! {"_id": 1}).session(&mut session).await.expect("statement");
    cluster.set_latency(0, Duration::from_millis(300));
    let cut =
        tokio::time::timeout(Duration::from_millis(100), session.abort_transaction().into_future()).await;
    assert!(cut.is_err(), "the abort should have been cut off");
    assert_eq!(session.transaction_state(), actors::TransactionState::Aborted);
    cluster.set_latency(0, Duration::from_millis(2));
    wait_until("the background abort", || cluster.open_transactions() == 0).await;
    session.start_transaction().await.expect("a new transaction on the same session");
    coll.insert_one(doc! {"_id": 2}).session(&mut session).await.expect("statement");
    session.commit_transaction().await.expect("commit");
    let ids: Vec<Document> =
        coll.find(doc! {"_id": {"$in": [1, 2]}}).await.expect("find").try_collect().await.expect("read");
    assert_eq!(ids, vec![doc! {"_id": 2}]);
    drop(session);
    s.check_healthy("a cut-off abort", 0).await;
}

/// Polls `done` every 10 ms for up to 15 s.
async fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "{what}: not within 15 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A first statement cut off while the server holds it (blocked 300 ms before it runs): the
/// abort arrives first and finds no transaction, then the statement starts one. The session's
/// number is fenced after the abort, so the late statement is refused (or its transaction
/// aborted by the fence): nothing stays open on the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_that_reaches_the_server_after_the_abort_is_fenced() {
    let s = setup("").await;
    let Some(cluster) = s.deployment.sim() else {
        integration_tests::deployment::print_skip("cancellation::fence", "needs the simulator's fail points");
        return;
    };
    let coll = s.fresh("fence").await;
    coll.insert_one(doc! {"_id": "seed"}).await.expect("create the collection");
    for end in ["abort", "drop", "commit, then the next transaction"] {
        let mut session = s.client.start_session().await.expect("session");
        session.start_transaction().await.expect("start");
        s.fail_point(
            doc! {"times": 1}.into(),
            doc! {"failCommands": ["insert"], "blockConnection": true, "blockTimeMS": 300},
        )
        .await;
        let cut = tokio::time::timeout(
            Duration::from_millis(100),
            coll.insert_one(doc! {"_id": end}).session(&mut session).into_future(),
        )
        .await;
        assert!(cut.is_err(), "{end}: the statement should have been cut off");
        match end {
            "abort" => session.abort_transaction().await.expect("abort"),
            "drop" => drop(session),
            _ => {
                // The commit finds no transaction yet (refused for sure), and the next one starts.
                let e = session.commit_transaction().await.expect_err("nothing to commit yet");
                assert_eq!(e.code(), Some(251), "{e}");
                session.start_transaction().await.expect("the next transaction");
                coll.insert_one(doc! {"_id": "next"}).session(&mut session).await.expect("its statement");
                session.commit_transaction().await.expect("its commit");
            }
        }
        // The late statement runs at 300 ms.
        tokio::time::sleep(Duration::from_millis(400)).await;
        wait_until(&format!("{end}: no transaction open"), || cluster.open_transactions() == 0).await;
        assert_eq!(coll.find_one(doc! {"_id": end}).await.expect("read"), None, "{end}");
    }
    s.check_healthy("a fenced statement", 0).await;
}
