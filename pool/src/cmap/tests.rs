//! Pool unit tests on paused time with a mock establisher.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bson::oid::ObjectId;
use futures_util::future::BoxFuture;
use parking_lot::Mutex;
use protocol::address::ServerAddress;
use tokio::time::Instant;

use super::*;
use crate::Error;

#[derive(Debug)]
struct MockConn {
    closed: Arc<AtomicBool>,
}

impl PoolConnection for MockConn {
    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

#[derive(Default)]
struct Mock {
    /// Establishment takes this long (virtual time).
    delay: Duration,
    /// Fail the next this-many establishments.
    failures: AtomicU32,
    service_id: Option<ObjectId>,
    attempts: AtomicU32,
    /// The `closed` flags of every connection made, by id - 1.
    flags: Mutex<Vec<Arc<AtomicBool>>>,
}

impl Establisher for Arc<Mock> {
    type Connection = MockConn;

    fn establish(
        &self,
        request: EstablishRequest,
    ) -> BoxFuture<'static, crate::Result<Established<MockConn>>> {
        let this = self.clone();
        Box::pin(async move {
            this.attempts.fetch_add(1, Ordering::SeqCst);
            tokio::select! {
                _ = tokio::time::sleep(this.delay) => {}
                _ = request.cancel.cancelled() => {
                    return Err(Error::Interrupted { address: request.address, reason: "cancelled".into() });
                }
            }
            if this.failures.load(Ordering::SeqCst) > 0 {
                this.failures.fetch_sub(1, Ordering::SeqCst);
                return Err(Error::Command {
                    address: request.address,
                    error: Box::new(protocol::reply::ServerError::command(91, "shutting down")),
                });
            }
            let closed = Arc::new(AtomicBool::new(false));
            this.flags.lock().push(closed.clone());
            Ok(Established { connection: MockConn { closed }, service_id: this.service_id })
        })
    }
}

type Events = Arc<Mutex<Vec<CmapEvent>>>;

fn pool(mock: Mock, options: PoolOptions) -> (Pool<Arc<Mock>>, Events, Arc<Mock>) {
    let events: Events = Arc::default();
    let sink = events.clone();
    let mock = Arc::new(mock);
    let pool = Pool::builder(ServerAddress::tcp("db", 27017), mock.clone())
        .options(options)
        .event_handler(Arc::new(move |e: &CmapEvent| sink.lock().push(e.clone())))
        .build()
        .unwrap();
    (pool, events, mock)
}

fn names(events: &Events) -> Vec<&'static str> {
    events.lock().iter().map(|e| e.name()).collect()
}

/// Lets spawned tasks run without advancing virtual time much.
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn wait_queue_is_fifo() {
    let (pool, _, _) = pool(Mock::default(), PoolOptions::builder().max_pool_size(1).build().unwrap());
    pool.ready();
    let first = pool.check_out(None, CheckoutPurpose::Other).await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..4 {
        let (pool, order) = (pool.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let conn = pool.check_out(None, CheckoutPurpose::Other).await.unwrap();
            order.lock().push(i);
            tokio::time::sleep(Duration::from_millis(10)).await;
            drop(conn);
        }));
        settle().await;
    }
    assert_eq!(pool.stats().wait_queue, 4);
    drop(first);
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*order.lock(), vec![0, 1, 2, 3]);
    let stats = pool.stats();
    assert_eq!((stats.total, stats.available, stats.in_use, stats.wait_queue), (1, 1, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn expired_waiter_leaves_without_opening_a_connection() {
    let (pool, events, mock) =
        pool(Mock::default(), PoolOptions::builder().max_pool_size(1).build().unwrap());
    pool.ready();
    let held = pool.check_out(None, CheckoutPurpose::Other).await.unwrap();
    let start = Instant::now();
    let err =
        pool.check_out(Some(start + Duration::from_millis(30)), CheckoutPurpose::Other).await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_millis(30));
    match &err {
        Error::WaitQueueTimeout { message, .. } => assert_eq!(
            message,
            "Timed out while checking out a connection from connection pool for db:27017 after 30 ms"
        ),
        other => panic!("unexpected {other:?}"),
    }
    drop(held);
    settle().await;
    assert_eq!(mock.attempts.load(Ordering::SeqCst), 1);
    let stats = pool.stats();
    assert_eq!((stats.total, stats.pending, stats.wait_queue), (1, 0, 0));
    let failed = events.lock().iter().find_map(|e| match e {
        CmapEvent::CheckOutFailed { reason, duration, .. } => Some((*reason, *duration)),
        _ => None,
    });
    assert_eq!(failed, Some((CheckOutFailedReason::Timeout, Duration::from_millis(30))));
}

#[tokio::test(start_paused = true)]
async fn options_wait_queue_timeout_applies_and_dropped_waiter_leaves_queue() {
    let options = PoolOptions::builder()
        .max_pool_size(1)
        .wait_queue_timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let (pool, _, _) = pool(Mock::default(), options);
    pool.ready();
    let _held = pool.check_out(None, CheckoutPurpose::Other).await.unwrap();
    let start = Instant::now();
    // The caller's later deadline does not extend waitQueueTimeout.
    let err = pool.check_out(Some(start + Duration::from_secs(5)), CheckoutPurpose::Other).await.unwrap_err();
    assert!(err.is_timeout());
    assert_eq!(start.elapsed(), Duration::from_millis(50));
    // A caller that gives up (drops the future) leaves the queue too.
    let gave_up =
        tokio::time::timeout(Duration::from_millis(10), pool.check_out(None, CheckoutPurpose::Other)).await;
    assert!(gave_up.is_err());
    assert_eq!(pool.stats().wait_queue, 0);
}

#[tokio::test(start_paused = true)]
async fn clear_with_interrupt_cancels_in_use_and_pending() {
    let mock = Mock { delay: Duration::from_millis(100), ..Default::default() };
    let (pool, events, _) = pool(mock, PoolOptions::default());
    pool.ready();
    let in_use = pool.check_out(None, CheckoutPurpose::Other).await.unwrap();
    assert_eq!(in_use.generation(), 0);
    let pending = tokio::spawn({
        let pool = pool.clone();
        async move { pool.check_out(None, CheckoutPurpose::Other).await }
    });
    settle().await;
    assert_eq!(pool.stats().pending, 1);
    events.lock().clear();
    pool.clear(None, true);
    assert!(in_use.is_interrupted());
    assert_eq!(pool.state(), PoolState::Paused);
    assert_eq!(pool.generation(None), 1);
    let err = pending.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::PoolCleared { .. }), "{err:?}");
    assert_eq!(names(&events), ["ConnectionPoolCleared", "ConnectionClosed", "ConnectionCheckOutFailed"]);
    events.lock().clear();
    drop(in_use);
    let closed = events.lock().iter().find_map(|e| match e {
        CmapEvent::ConnectionClosed { connection_id, reason, .. } => Some((*connection_id, *reason)),
        _ => None,
    });
    assert_eq!(closed, Some((1, ConnectionClosedReason::Stale)));
    assert_eq!(pool.stats().total, 0);
}

#[tokio::test(start_paused = true)]
async fn establishment_finishing_after_clear_is_not_handed_out() {
    let mock = Mock { delay: Duration::from_millis(100), ..Default::default() };
    let (pool, events, _) = pool(mock, PoolOptions::default());
    pool.ready();
    let pending = tokio::spawn({
        let pool = pool.clone();
        async move { pool.check_out(None, CheckoutPurpose::Other).await }
    });
    settle().await;
    pool.clear(None, false);
    pool.ready();
    let err = pending.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::PoolCleared { .. }), "{err:?}");
    let closed = events.lock().iter().find_map(|e| match e {
        CmapEvent::ConnectionClosed { reason, .. } => Some(*reason),
        _ => None,
    });
    assert_eq!(closed, Some(ConnectionClosedReason::Stale));
    assert_eq!(pool.stats().total, 0);
}

#[tokio::test(start_paused = true)]
async fn load_balanced_timeout_message_counts_purposes() {
    let sid = ObjectId::new();
    let mock = Mock { service_id: Some(sid), ..Default::default() };
    let options = PoolOptions::builder().max_pool_size(3).load_balanced(true).build().unwrap();
    let (pool, _, _) = pool(mock, options);
    pool.ready();
    let _cursor = pool.check_out(None, CheckoutPurpose::Cursor).await.unwrap();
    let mut txn = pool.check_out(None, CheckoutPurpose::Other).await.unwrap();
    txn.set_purpose(CheckoutPurpose::Transaction);
    let _other = pool.check_out(None, CheckoutPurpose::Other).await.unwrap();
    let stats = pool.stats();
    assert_eq!((stats.in_use_cursors, stats.in_use_transactions, stats.in_use_other), (1, 1, 1));
    let deadline = Instant::now() + Duration::from_millis(20);
    let err = pool.check_out(Some(deadline), CheckoutPurpose::Other).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "Timeout waiting for connection from the connection pool. maxPoolSize: 3, connections in use by \
         cursors: 1, connections in use by transactions: 1, connections in use by other operations: 1"
    );
}

#[tokio::test(start_paused = true)]
async fn load_balanced_clear_is_per_service_and_never_pauses() {
    let sid = ObjectId::new();
    let mock = Mock { service_id: Some(sid), ..Default::default() };
    let options = PoolOptions::builder().max_pool_size(1).load_balanced(true).build().unwrap();
    let (pool, events, _) = pool(mock, options);
    pool.ready();
    let conn = pool.check_out(None, CheckoutPurpose::Other).await.unwrap();
    assert_eq!(conn.service_id(), Some(sid));
    assert_eq!(conn.generation(), 0);
    let waiter = tokio::spawn({
        let pool = pool.clone();
        async move { pool.check_out(None, CheckoutPurpose::Other).await.map(|c| c.id()) }
    });
    settle().await;
    pool.clear(Some(sid), false);
    assert_eq!(pool.state(), PoolState::Ready);
    assert_eq!(pool.generation(Some(sid)), 1);
    assert_eq!(pool.generation(None), 0);
    assert_eq!(pool.stats().wait_queue, 1, "load-balanced clear keeps waiters");
    assert!(events.lock().iter().any(|e| matches!(e,
        CmapEvent::PoolCleared { service_id: Some(s), .. } if *s == sid)));
    // The stale connection is closed at check-in; the waiter gets a new one.
    drop(conn);
    assert_eq!(waiter.await.unwrap().unwrap(), 2);
}

#[tokio::test(start_paused = true)]
async fn close_fails_pending_and_later_checkouts() {
    let mock = Mock { delay: Duration::from_secs(10), ..Default::default() };
    let (pool, events, _) = pool(mock, PoolOptions::default());
    pool.ready();
    let pending = tokio::spawn({
        let pool = pool.clone();
        async move { pool.check_out(None, CheckoutPurpose::Other).await }
    });
    settle().await;
    events.lock().clear();
    pool.close();
    pool.close();
    let err = pending.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::PoolClosed { .. }));
    assert_eq!(names(&events), ["ConnectionClosed", "ConnectionPoolClosed", "ConnectionCheckOutFailed"]);
    let err = pool.check_out(None, CheckoutPurpose::Other).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "attempted to check out a connection from closed connection pool for db:27017"
    );
    assert_eq!(pool.state(), PoolState::Closed);
}

#[tokio::test(start_paused = true)]
async fn errored_connection_is_closed_at_check_in() {
    let (pool, events, mock) = pool(Mock::default(), PoolOptions::default());
    pool.ready();
    let conn = pool.check_out(None, CheckoutPurpose::Other).await.unwrap();
    mock.flags.lock()[0].store(true, Ordering::SeqCst);
    conn.check_in();
    let last = events.lock().last().cloned();
    assert!(matches!(last, Some(CmapEvent::ConnectionClosed { reason: ConnectionClosedReason::Error, .. })));
    assert_eq!(pool.stats().total, 0);
}

#[tokio::test(start_paused = true)]
async fn background_keeps_min_pool_size_and_prunes_idle() {
    let options = PoolOptions::builder()
        .min_pool_size(3)
        .max_idle_time(Duration::from_millis(500))
        .maintenance_interval(Some(Duration::from_millis(100)))
        .build()
        .unwrap();
    let (pool, events, mock) = pool(Mock::default(), options);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(pool.stats().total, 0, "a paused pool is not populated");
    pool.ready();
    settle().await;
    assert_eq!(pool.stats().available, 3);
    // Idle connections are replaced once they pass maxIdleTime.
    tokio::time::sleep(Duration::from_millis(650)).await;
    assert_eq!(pool.stats().available, 3);
    assert!(mock.attempts.load(Ordering::SeqCst) >= 6);
    assert!(events
        .lock()
        .iter()
        .any(|e| matches!(e, CmapEvent::ConnectionClosed { reason: ConnectionClosedReason::Idle, .. })));
    // Dropping the last handle closes the pool and stops the background task.
    drop(pool);
    let attempts = mock.attempts.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(mock.attempts.load(Ordering::SeqCst), attempts);
    assert_eq!(events.lock().last().map(|e| e.name()), Some("ConnectionPoolClosed"));
}

#[tokio::test(start_paused = true)]
async fn failed_background_establishment_clears_the_pool() {
    let mock = Mock { failures: AtomicU32::new(1), ..Default::default() };
    let events: Events = Arc::default();
    let sink = events.clone();
    let pool = Pool::builder(ServerAddress::tcp("db", 27017), Arc::new(mock))
        .options(PoolOptions::builder().min_pool_size(1).build().unwrap())
        .event_handler(Arc::new(move |e: &CmapEvent| sink.lock().push(e.clone())))
        .build()
        .unwrap();
    pool.ready();
    settle().await;
    assert_eq!(pool.state(), PoolState::Paused);
    assert_eq!(pool.generation(None), 1);
    assert_eq!(
        names(&events),
        [
            "ConnectionPoolCreated",
            "ConnectionPoolReady",
            "ConnectionCreated",
            "ConnectionPoolCleared",
            "ConnectionClosed"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn failed_background_establishment_goes_to_the_owner_hook() {
    let mock = Mock { failures: AtomicU32::new(1), ..Default::default() };
    let seen: Arc<Mutex<Vec<(String, u32)>>> = Arc::default();
    let events: Events = Arc::default();
    let sink = events.clone();
    let hook_seen = seen.clone();
    let pool = Pool::builder(ServerAddress::tcp("db", 27017), Arc::new(mock))
        .options(PoolOptions::builder().min_pool_size(1).build().unwrap())
        .event_handler(Arc::new(move |e: &CmapEvent| sink.lock().push(e.clone())))
        .on_background_error(Arc::new(move |e: &Error, generation| {
            hook_seen.lock().push((e.to_string(), generation))
        }))
        .build()
        .unwrap();
    pool.ready();
    settle().await;
    // The owner (SDAM) decides; the pool did not clear itself.
    assert_eq!(pool.state(), PoolState::Ready);
    assert_eq!(pool.generation(None), 0);
    assert_eq!(seen.lock().len(), 1);
    assert!(seen.lock()[0].0.contains("code 91"));
    assert_eq!(seen.lock()[0].1, 0);
    // What the owner does after marking the server Unknown.
    pool.clear(None, false);
    assert_eq!(pool.state(), PoolState::Paused);
    assert_eq!(
        names(&events),
        [
            "ConnectionPoolCreated",
            "ConnectionPoolReady",
            "ConnectionCreated",
            "ConnectionClosed",
            "ConnectionPoolCleared"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn establishment_error_hook_clears_before_the_connection_is_closed() {
    let events: Events = Arc::default();
    let sink = events.clone();
    let slot: Arc<Mutex<Option<Pool<Arc<Mock>>>>> = Arc::default();
    let hook_slot = slot.clone();
    let seen: Arc<Mutex<Vec<u32>>> = Arc::default();
    let hook_seen = seen.clone();
    let mock = Arc::new(Mock { failures: AtomicU32::new(1), ..Default::default() });
    let pool = Pool::builder(ServerAddress::tcp("db", 27017), mock)
        .event_handler(Arc::new(move |e: &CmapEvent| sink.lock().push(e.clone())))
        .on_establishment_error(Arc::new(move |_e: &Error, generation, _service_id| {
            hook_seen.lock().push(generation);
            let pool = hook_slot.lock().clone();
            Box::pin(async move {
                // The owner handles the error asynchronously (an actor message).
                tokio::task::yield_now().await;
                if let Some(pool) = pool {
                    pool.clear(None, false);
                }
            })
        }))
        .build()
        .unwrap();
    *slot.lock() = Some(pool.clone());
    pool.ready();
    let err = pool.check_out(None, CheckoutPurpose::Other).await.unwrap_err();
    assert!(matches!(&err, Error::Command { error, .. } if error.code == Some(91)));
    assert_eq!(*seen.lock(), [0]);
    assert_eq!(pool.generation(None), 1);
    assert_eq!(
        names(&events),
        [
            "ConnectionPoolCreated",
            "ConnectionPoolReady",
            "ConnectionCheckOutStarted",
            "ConnectionCreated",
            "ConnectionPoolCleared",
            "ConnectionClosed",
            "ConnectionCheckOutFailed"
        ]
    );
    slot.lock().take();
}

#[tokio::test(start_paused = true)]
async fn checkout_on_paused_pool_fails_with_pool_cleared() {
    let (pool, events, _) = pool(Mock::default(), PoolOptions::default());
    let err = pool.check_out(None, CheckoutPurpose::Other).await.unwrap_err();
    assert!(matches!(err, Error::PoolCleared { service_id: None, .. }));
    assert!(!err.is_network_error());
    assert_eq!(
        names(&events),
        ["ConnectionPoolCreated", "ConnectionCheckOutStarted", "ConnectionCheckOutFailed"]
    );
}

#[test]
fn build_outside_a_runtime_is_an_error() {
    let result = Pool::builder(ServerAddress::tcp("db", 27017), Arc::new(Mock::default())).build();
    assert!(matches!(result, Err(Error::InvalidOptions { .. })));
}

#[test]
fn events_serialize_with_spec_names() {
    let e = CmapEvent::CheckOutFailed {
        address: ServerAddress::tcp("db", 1),
        reason: CheckOutFailedReason::ConnectionError,
        error: None,
        duration: Duration::from_millis(2),
    };
    let v = serde_json::to_value(&e).unwrap();
    assert_eq!(v["type"], "ConnectionCheckOutFailed");
    assert_eq!(v["reason"], "connectionError");
    assert_eq!(v["address"], "db:1");
    let back: CmapEvent = serde_json::from_value(v).unwrap();
    assert_eq!(back, e);
}

#[test]
fn crossbeam_sender_is_a_handler() {
    let (tx, rx) = crossbeam_channel::unbounded();
    let handler: Arc<dyn CmapEventHandler> = Arc::new(tx);
    handler.handle(&CmapEvent::PoolReady { address: ServerAddress::tcp("db", 1) });
    assert_eq!(rx.try_recv().map(|e| e.name()).ok(), Some("ConnectionPoolReady"));
}

#[tokio::test]
async fn pool_and_checkout_future_are_send() {
    fn assert_send<T: Send>(t: T) -> T {
        t
    }
    fn assert_sync<T: Sync>(_: &T) {}
    let (pool, _, _) = pool(Mock::default(), PoolOptions::default());
    assert_sync(&pool);
    pool.ready();
    let conn = assert_send(pool.check_out(None, CheckoutPurpose::Other)).await.unwrap();
    assert_eq!(conn.id(), 1);
}

/// Every `CheckOutStarted` ends in exactly one `CheckedOut` or `CheckOutFailed`, also when the
/// caller drops the check-out while its connection is being established; the connection is
/// not wasted.
#[tokio::test(start_paused = true)]
async fn check_out_abandoned_during_establishment_emits_check_out_failed() {
    let mock = Mock { delay: Duration::from_millis(100), ..Default::default() };
    let (pool, events, _) = pool(mock, PoolOptions::default());
    pool.ready();
    let gave_up =
        tokio::time::timeout(Duration::from_millis(30), pool.check_out(None, CheckoutPurpose::Other)).await;
    assert!(gave_up.is_err());
    let failed: Vec<_> = events
        .lock()
        .iter()
        .filter_map(|e| match e {
            CmapEvent::CheckOutFailed { reason, duration, .. } => Some((*reason, *duration)),
            _ => None,
        })
        .collect();
    assert_eq!(failed, vec![(CheckOutFailedReason::Timeout, Duration::from_millis(30))]);
    // The establishment finishes and the connection becomes available.
    tokio::time::sleep(Duration::from_millis(100)).await;
    settle().await;
    assert_eq!(pool.stats().available, 1);
    assert_eq!(
        names(&events),
        vec![
            "ConnectionPoolCreated",
            "ConnectionPoolReady",
            "ConnectionCheckOutStarted",
            "ConnectionCreated",
            "ConnectionCheckOutFailed",
            "ConnectionReady",
        ]
    );
}

/// CMAP "backpressure-enabled": network errors and timeouts of connection establishment and
/// hello carry `SystemOverloadedError` and `RetryableError`; authentication, certificate
/// errors and errors on established connections do not.
#[tokio::test(start_paused = true)]
async fn establishment_network_errors_carry_backpressure_labels() {
    use crate::Phase;
    let address = ServerAddress::tcp("db", 27017);
    let io = |phase| Error::Io {
        address: address.clone(),
        phase,
        source: Arc::new(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)),
    };
    let timeout = |phase| Error::Timeout { address: address.clone(), phase };
    for e in [io(Phase::TcpConnect), io(Phase::TlsHandshake), io(Phase::Hello), timeout(Phase::Hello)] {
        assert_eq!(e.labels(), vec!["SystemOverloadedError", "RetryableError"], "{e:?}");
        assert!(e.has_label("SystemOverloadedError"));
    }
    for e in [
        io(Phase::Authentication),
        timeout(Phase::Authentication),
        io(Phase::Read),
        timeout(Phase::Write),
        Error::Tls { address: address.clone(), message: "unknown issuer".into() },
    ] {
        assert!(e.labels().is_empty(), "{e:?}");
    }
    let mut error = protocol::reply::ServerError::command(91, "shutting down");
    error.add_label("RetryableWriteError");
    let command = Error::Command { address: address.clone(), error: Box::new(error) };
    assert_eq!(command.labels(), vec!["RetryableWriteError"]);
}

#[tokio::test(start_paused = true)]
async fn a_full_wait_queue_turns_check_outs_away_at_once() {
    let options = PoolOptions::builder().max_pool_size(1).max_wait_queue_size(2).build().unwrap();
    let (pool, events, _) = pool(Mock::default(), options);
    pool.ready();
    let held = pool.check_out(None, CheckoutPurpose::Other).await.unwrap();
    let mut waiters = Vec::new();
    for _ in 0..2 {
        let pool = pool.clone();
        waiters
            .push(tokio::spawn(async move { pool.check_out(None, CheckoutPurpose::Other).await.map(drop) }));
        settle().await;
    }
    assert_eq!(pool.stats().wait_queue, 2);
    let start = Instant::now();
    let err = pool.check_out(None, CheckoutPurpose::Other).await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert!(matches!(err, Error::WaitQueueFull { limit: 2, .. }), "{err:?}");
    assert_eq!(err.labels(), vec!["RetryableError".to_string()]);
    let reason = events.lock().iter().rev().find_map(|e| match e {
        CmapEvent::CheckOutFailed { reason, .. } => Some(*reason),
        _ => None,
    });
    assert_eq!(reason, Some(CheckOutFailedReason::WaitQueueFull));
    // A waiter whose caller goes away frees its place at once.
    waiters.remove(0).abort();
    settle().await;
    assert_eq!(pool.stats().wait_queue, 1);
    let third = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.check_out(None, CheckoutPurpose::Other).await.map(drop) })
    };
    settle().await;
    assert_eq!(pool.stats().wait_queue, 2);
    drop(held);
    waiters.remove(0).await.unwrap().unwrap();
    third.await.unwrap().unwrap();
    assert_eq!(pool.stats().wait_queue, 0);
}

#[tokio::test(start_paused = true)]
async fn ten_thousand_waiters_time_out_in_order_and_leave_nothing_behind() {
    let (pool, _, _) = pool(Mock::default(), PoolOptions::builder().max_pool_size(1).build().unwrap());
    pool.ready();
    let _held = pool.check_out(None, CheckoutPurpose::Other).await.unwrap();
    let start = Instant::now();
    let tasks: Vec<_> = (0..10_000u64)
        .map(|i| {
            let pool = pool.clone();
            // Deadlines 1 ms apart, newest first: each leaves from the middle of the queue.
            let deadline = start + Duration::from_millis(20_000 - i);
            tokio::spawn(
                async move { pool.check_out(Some(deadline), CheckoutPurpose::Other).await.map(drop) },
            )
        })
        .collect();
    while pool.stats().wait_queue < 10_000 {
        tokio::task::yield_now().await;
    }
    for (i, t) in tasks.into_iter().enumerate() {
        assert!(t.await.unwrap().unwrap_err().is_timeout(), "waiter {i}");
    }
    assert_eq!(pool.stats().wait_queue, 0);
}

fn multi_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

/// A check-out on another multi-threaded runtime establishes its connection there (so the
/// socket's wake-ups come from that runtime's own workers); once that runtime shuts down,
/// its idle connection is closed at the next check-out instead of handed out.
#[test]
fn a_shut_down_caller_runtime_takes_its_idle_connections_with_it() {
    let home = multi_thread_runtime();
    let (pool, events, mock) = home.block_on(async { pool(Mock::default(), PoolOptions::default()) });
    pool.ready();
    let caller = multi_thread_runtime();
    let caller_id = caller.handle().id();
    let first = caller.block_on(async {
        let conn = pool.check_out(None, CheckoutPurpose::Other).await.unwrap();
        let id = conn.id();
        assert_eq!(conn.runtime_id(), Some(caller_id), "established on the caller's runtime");
        id
    });
    assert_eq!(pool.stats().available, 1);
    caller.shutdown_timeout(Duration::from_secs(5));
    let second = home.block_on(async {
        let conn = pool.check_out(None, CheckoutPurpose::Other).await.unwrap();
        assert!(conn.runtime_id().is_none(), "established on the pool's own runtime");
        conn.id()
    });
    assert_ne!(first, second, "the dead runtime's connection is not handed out");
    assert_eq!(mock.attempts.load(Ordering::SeqCst), 2);
    let closed = events.lock().iter().any(|e| {
        matches!(e, CmapEvent::ConnectionClosed { connection_id, reason: ConnectionClosedReason::Error, .. } if *connection_id == first)
    });
    assert!(closed, "the first connection is closed: {:?}", names(&events));
    drop(home);
}

/// An establishment whose runtime shuts down before it finishes fails its check-out and
/// frees its slot: the pool is left with no pending connection.
#[test]
fn an_establishment_dropped_with_its_runtime_frees_its_slot() {
    let home = multi_thread_runtime();
    let mock = Mock { delay: Duration::from_secs(60), ..Mock::default() };
    let (pool, events, _) = home.block_on(async { pool(mock, PoolOptions::default()) });
    pool.ready();
    let caller = multi_thread_runtime();
    let waiting = {
        let pool = pool.clone();
        caller.spawn(async move { pool.check_out(None, CheckoutPurpose::Other).await.map(|c| c.id()) })
    };
    let started = std::time::Instant::now();
    while pool.stats().pending == 0 && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(pool.stats().pending, 1);
    caller.shutdown_timeout(Duration::from_secs(5));
    drop(waiting);
    let stats = pool.stats();
    assert_eq!((stats.pending, stats.total), (0, 0), "{:?}", names(&events));
    let closed = events
        .lock()
        .iter()
        .any(|e| matches!(e, CmapEvent::ConnectionClosed { reason: ConnectionClosedReason::Error, .. }));
    assert!(closed, "{:?}", names(&events));
    drop(home);
}

#[test]
fn a_check_out_on_a_runtime_that_has_shut_down_fails_instead_of_deadlocking() {
    // A runtime shutting down drops a task inside `spawn` itself: the establishment's guard
    // then runs on the thread that holds the pool lock. Seen as a hang at a test's end (its
    // runtime shutting down while one of its tasks checked out).
    let home = multi_thread_runtime();
    let (pool, events, _) = home.block_on(async { pool(Mock::default(), PoolOptions::default()) });
    pool.ready();
    let caller = multi_thread_runtime();
    let handle = caller.handle().clone();
    caller.shutdown_timeout(Duration::from_secs(5));
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn({
        let pool = pool.clone();
        move || {
            let _enter = handle.enter();
            let result = futures_util::FutureExt::now_or_never(pool.check_out(None, CheckoutPurpose::Other));
            let _ = tx.send(result.map(|r| r.map(|c| c.id()).map_err(|e| e.to_string())));
        }
    });
    let result = rx.recv_timeout(Duration::from_secs(10)).expect("the check-out returned (no deadlock)");
    let _ = thread.join();
    match result {
        Some(Err(e)) => assert!(e.contains("runtime establishing the connection shut down"), "{e}"),
        other => panic!("expected the check-out to fail at once, got {other:?}"),
    }
    let stats = pool.stats();
    assert_eq!((stats.pending, stats.total), (0, 0), "{:?}", names(&events));
    drop(home);
}

/// An in-place handler may use the pool it hears from (format it, read its stats, clear it):
/// events reach it after the pool lock is released, so nothing deadlocks, and it sees each
/// event in order.
#[tokio::test(start_paused = true)]
async fn an_in_place_handler_may_use_its_pool() {
    let slot: Arc<std::sync::OnceLock<Pool<Arc<Mock>>>> = Arc::default();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (handler_slot, sink) = (slot.clone(), seen.clone());
    let pool = Pool::builder(ServerAddress::tcp("db", 27017), Arc::new(Mock::default()))
        .event_handler(Arc::new(move |e: &CmapEvent| {
            if let Some(pool) = handler_slot.get() {
                // Each of these takes the pool lock.
                let shown = format!("{pool:?}");
                let stats = pool.stats();
                sink.lock().push(format!("{} {} {}", e.name(), stats.total, shown.len()));
            }
        }))
        .build()
        .unwrap();
    let _ = slot.set(pool.clone());
    pool.ready();
    let conn = pool.check_out(None, CheckoutPurpose::Other).await.unwrap();
    drop(conn);
    pool.clear(None, false);
    settle().await;
    let seen = seen.lock();
    let names: Vec<&str> = seen.iter().map(|s| s.split(' ').next().unwrap_or_default()).collect();
    assert_eq!(
        names,
        [
            "ConnectionPoolReady",
            "ConnectionCheckOutStarted",
            "ConnectionCreated",
            "ConnectionReady",
            "ConnectionCheckedOut",
            "ConnectionCheckedIn",
            "ConnectionPoolCleared",
            // The idle connection, stale after the clear, closed by the maintenance.
            "ConnectionClosed",
        ]
    );
}
