//! End-to-end tests of the CMAP pool (`pool::cmap::Pool<ConnectionEstablisher>`) over real
//! connections to the simulator: interrupting clears, authentication and TLS, reuse,
//! minPoolSize and maxIdleTimeMS maintenance, a killed server, the wait queue deadline and
//! load-balanced per-service clears. With `MONGODB_URI` set the pools connect to its primary
//! (or standalone) instead, fail points go through `configureFailPoint`, and the tests that need
//! the simulator (TLS and users it sets up, killing a server, a load balancer) say they do not
//! apply; connection counts are the simulator's.
//!
//! Real sockets do not work with paused time, so these use short real timeouts with wide
//! margins.

use std::time::Duration;

use bson::{doc, Document};
use crossbeam_channel::{unbounded, Receiver, Sender};
use integration_tests::deployment::{self, Deployment};
use mongo_sim::testing::TestCerts;
use mongo_sim::Cluster;
use pool::cmap::{
    CheckOutFailedReason, CheckoutPurpose, CmapEvent, ConnectionClosedReason, Pool, PoolOptions, PoolState,
    PooledConnection,
};
use pool::connection::{Connection, ConnectionEstablisher, ConnectionOptions, TlsOptions};
use pool::Error;
use protocol::uri::Credential;
use protocol::ServerAddress;
use std::sync::Arc;
use tokio::time::Instant;

type TestPool = Pool<ConnectionEstablisher>;

/// A pool to `host` whose events go to the returned channel.
fn pool_with(host: &str, conn: ConnectionOptions, options: PoolOptions) -> (TestPool, Receiver<CmapEvent>) {
    let (tx, rx): (Sender<CmapEvent>, Receiver<CmapEvent>) = unbounded();
    let address = ServerAddress::parse(host).expect("address");
    let pool = Pool::builder(address, ConnectionEstablisher::new(conn))
        .options(options)
        .event_handler(Arc::new(tx))
        .build()
        .expect("pool");
    (pool, rx)
}

fn conn_options() -> ConnectionOptions {
    ConnectionOptions::builder()
        .connect_timeout(Some(Duration::from_secs(5)))
        .app_name("pool-e2e")
        .build()
        .expect("connection options")
}

fn drain(rx: &Receiver<CmapEvent>) -> Vec<CmapEvent> {
    rx.try_iter().collect()
}

/// Collects events until one matches `pred` (returned last), or panics after `limit`.
async fn events_until(
    rx: &Receiver<CmapEvent>,
    limit: Duration,
    pred: impl Fn(&CmapEvent) -> bool,
) -> Vec<CmapEvent> {
    let end = Instant::now() + limit;
    let mut seen = Vec::new();
    loop {
        while let Ok(e) = rx.try_recv() {
            let hit = pred(&e);
            seen.push(e);
            if hit {
                return seen;
            }
        }
        assert!(Instant::now() < end, "no matching event within {limit:?}; saw {seen:#?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until `cond` holds, or panics after `limit`.
async fn eventually(limit: Duration, what: &str, cond: impl Fn() -> bool) {
    let end = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn checkout(pool: &TestPool) -> Result<PooledConnection<Connection>, Error> {
    pool.check_out(Some(Instant::now() + Duration::from_secs(5)), CheckoutPurpose::Other).await
}

async fn run(conn: &mut Connection, db: &str, cmd: Document) -> Result<bson::RawDocumentBuf, Error> {
    let reply = conn.send_command(db, cmd, Some(Instant::now() + Duration::from_secs(10))).await?;
    conn.check_ok(reply)
}

/// Blocks this test's next ping (app name `pool-e2e`) for `ms`.
fn block_ping(ms: i32) -> Document {
    doc! {
        "configureFailPoint": "failCommand",
        "mode": {"times": 1},
        "data": {"failCommands": ["ping"], "blockConnection": true, "blockTimeMS": ms, "appName": "pool-e2e"},
    }
}

/// A simulated standalone or `MONGODB_URI`, and the server its pools connect to (the primary,
/// or the first seed of a standalone).
async fn server() -> (Deployment, String) {
    let deployment = Deployment::standalone().expect("deployment");
    // No hello to the simulator: the tests count its connections.
    let host = match &deployment {
        Deployment::Sim(cluster) => cluster.hosts()[0].clone(),
        Deployment::Real(_) => match deployment.primary().await {
            Ok(Some(p)) => p,
            _ => deployment.seeds()[0].clone(),
        },
    };
    (deployment, host)
}

/// Connections the simulator has opened (`None` on a real deployment).
fn opened(d: &Deployment) -> Option<u64> {
    d.sim().map(|c| c.counters().total.connections_opened)
}

fn closed(events: &[CmapEvent]) -> Vec<(u32, ConnectionClosedReason)> {
    events
        .iter()
        .filter_map(|e| match e {
            CmapEvent::ConnectionClosed { connection_id, reason, .. } => Some((*connection_id, *reason)),
            _ => None,
        })
        .collect()
}

fn count(events: &[CmapEvent], name: &str) -> usize {
    events.iter().filter(|e| e.name() == name).count()
}

#[tokio::test]
async fn clear_with_interrupt_stops_the_in_flight_command_and_pauses() {
    let (deployment, host) = server().await;
    let (pool, rx) = pool_with(&host, conn_options(), PoolOptions::default());
    pool.ready();
    let mut conn = checkout(&pool).await.expect("check out");
    assert_eq!((conn.id(), conn.generation()), (1, 0));
    run(&mut conn, "admin", doc! {"ping": 1}).await.expect("ping");

    // The next ping blocks for 5 s on the server.
    deployment.configure_fail_point(block_ping(5000)).await.expect("fail point");
    let task = tokio::spawn(async move {
        let result = conn.send_command("admin", doc! {"ping": 1}, None).await;
        (conn, result, Instant::now())
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(!task.is_finished(), "the ping is blocked on the server");
    let cleared_at = Instant::now();
    pool.clear(None, true);
    let (conn, result, failed_at) = task.await.expect("join");
    let err = result.expect_err("interrupted");
    assert!(matches!(err, Error::Interrupted { .. }), "{err:?}");
    assert!(err.is_network_error());
    let latency = failed_at.duration_since(cleared_at);
    assert!(latency < Duration::from_secs(1), "interrupted after {latency:?}, not promptly");
    assert!(conn.is_interrupted() && conn.is_closed());

    // Paused: check-outs fail with PoolCleared until ready().
    assert_eq!(pool.state(), PoolState::Paused);
    assert_eq!(pool.generation(None), 1);
    let err = checkout(&pool).await.expect_err("paused");
    assert!(matches!(err, Error::PoolCleared { service_id: None, .. }), "{err:?}");
    assert!(!err.is_network_error(), "PoolCleared must not mark the server unknown");

    // Checking the interrupted connection in closes it as stale.
    drop(conn);
    let events = drain(&rx);
    let cleared: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            CmapEvent::PoolCleared { service_id, interrupt_in_use_connections, .. } => {
                Some((*service_id, *interrupt_in_use_connections))
            }
            _ => None,
        })
        .collect();
    assert_eq!(cleared, vec![(None, true)]);
    assert_eq!(closed(&events), vec![(1, ConnectionClosedReason::Stale)]);
    let failed: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            CmapEvent::CheckOutFailed { reason, error, .. } => Some((*reason, error.is_some())),
            _ => None,
        })
        .collect();
    assert_eq!(failed, vec![(CheckOutFailedReason::ConnectionError, true)]);
    // Order: cleared, the failed check-out, then check-in and close.
    let names: Vec<_> = events.iter().map(CmapEvent::name).collect();
    let pos = |n: &str| names.iter().position(|x| *x == n).unwrap_or(usize::MAX);
    assert!(pos("ConnectionPoolCleared") < pos("ConnectionCheckOutFailed"), "{names:?}");
    assert!(pos("ConnectionCheckedIn") < pos("ConnectionClosed"), "{names:?}");

    // Ready again: a new connection of the new generation works.
    pool.ready();
    let mut conn = checkout(&pool).await.expect("check out after ready");
    assert_eq!((conn.id(), conn.generation()), (2, 1));
    run(&mut conn, "admin", doc! {"ping": 1}).await.expect("ping on the new connection");
    if let Some(n) = opened(&deployment) {
        assert_eq!(n, 2);
    }
}

#[tokio::test]
async fn clear_without_interrupt_lets_the_command_finish_and_closes_at_check_in() {
    let (deployment, host) = server().await;
    let (pool, rx) = pool_with(&host, conn_options(), PoolOptions::default());
    pool.ready();
    let mut conn = checkout(&pool).await.expect("check out");
    deployment.configure_fail_point(block_ping(400)).await.expect("fail point");
    let started = Instant::now();
    let task = tokio::spawn(async move {
        let result = run(&mut conn, "admin", doc! {"ping": 1}).await;
        (conn, result)
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    pool.clear(None, false);
    assert_eq!(pool.state(), PoolState::Paused);
    let (conn, result) = task.await.expect("join");
    result.expect("the in-flight ping completes");
    assert!(started.elapsed() >= Duration::from_millis(400), "the ping was blocked");
    assert!(!conn.is_interrupted() && !conn.is_closed());
    let before_check_in = drain(&rx);
    assert!(closed(&before_check_in).is_empty(), "nothing closed while in use");
    assert!(before_check_in.iter().any(|e| matches!(
        e,
        CmapEvent::PoolCleared { interrupt_in_use_connections: false, service_id: None, .. }
    )));
    drop(conn);
    let events = drain(&rx);
    assert_eq!(
        events.iter().map(CmapEvent::name).collect::<Vec<_>>(),
        vec!["ConnectionCheckedIn", "ConnectionClosed"]
    );
    assert_eq!(closed(&events), vec![(1, ConnectionClosedReason::Stale)]);
    assert_eq!(pool.stats().total, 0);
}

const PASSWORD: &str = "pool-e2e-pa55word";

#[tokio::test]
async fn pooled_connections_authenticate_over_tls_and_are_reused() {
    let certs = TestCerts::generate();
    let Some(cluster) = deployment::sim_only(
        "pool_e2e::pooled_connections_authenticate_over_tls_and_are_reused",
        "TLS certificates and a user it sets up",
        || Cluster::standalone().tls(certs.sim_tls()).user("alice", PASSWORD).start().expect("start"),
    ) else {
        return;
    };
    let options = ConnectionOptions::builder()
        .connect_timeout(Some(Duration::from_secs(5)))
        .tls(TlsOptions { ca_file: Some(certs.ca_file().display().to_string()), ..Default::default() })
        .credential(Credential {
            username: Some("alice".into()),
            password: Some(PASSWORD.into()),
            source: Some("admin".into()),
            mechanism: None,
            mechanism_properties: None,
        })
        .build()
        .expect("options");
    let (pool, rx) = pool_with(&cluster.hosts()[0], options, PoolOptions::default());
    pool.ready();

    let mut conn = checkout(&pool).await.expect("first check out");
    assert!(conn.is_tls());
    // find needs an authenticated connection on the simulator once a user exists.
    run(&mut conn, "db", doc! {"find": "c", "filter": {}}).await.expect("authenticated find");
    drop(conn);
    let after_first = cluster.counters().total;
    assert_eq!(after_first.connections_opened, 1);
    // Speculative authentication: no saslStart, one or more saslContinue.
    assert_eq!(after_first.command("saslStart"), 0);
    let continues = after_first.command("saslContinue");
    assert!(continues >= 1);

    for _ in 0..5 {
        let mut conn = checkout(&pool).await.expect("check out");
        assert_eq!(conn.id(), 1, "the idle connection is reused");
        run(&mut conn, "db", doc! {"find": "c", "filter": {}}).await.expect("find");
    }
    let total = cluster.counters().total;
    assert_eq!(total.connections_opened, 1);
    assert_eq!(total.command("saslContinue"), continues, "no re-authentication on reuse");
    assert_eq!(total.command("find"), 6);
    let events = drain(&rx);
    assert_eq!(count(&events, "ConnectionCreated"), 1);
    assert_eq!(count(&events, "ConnectionReady"), 1);
    assert_eq!(count(&events, "ConnectionCheckedOut"), 6);
    assert_eq!(count(&events, "ConnectionCheckedIn"), 6);
    assert!(closed(&events).is_empty());

    // A wrong password fails the check-out with the server's code 18, and the connection
    // is closed with reason error.
    let bad = ConnectionOptions::builder()
        .tls(TlsOptions { ca_file: Some(certs.ca_file().display().to_string()), ..Default::default() })
        .scram("alice", "wrong", Some("admin"))
        .build()
        .expect("options");
    let (bad_pool, rx) = pool_with(&cluster.hosts()[0], bad, PoolOptions::default());
    bad_pool.ready();
    let err = checkout(&bad_pool).await.expect_err("bad password");
    assert!(matches!(err, Error::Authentication { code: Some(18), .. }), "{err:?}");
    let events = drain(&rx);
    assert_eq!(closed(&events), vec![(1, ConnectionClosedReason::Error)]);
    assert!(events.iter().any(|e| matches!(
        e,
        CmapEvent::CheckOutFailed { reason: CheckOutFailedReason::ConnectionError, error: Some(_), .. }
    )));
}

#[tokio::test]
async fn min_pool_size_populates_and_max_idle_time_prunes() {
    let (deployment, host) = server().await;
    let options = PoolOptions::builder()
        .min_pool_size(2)
        .max_idle_time(Duration::from_millis(1000))
        .maintenance_interval(Some(Duration::from_millis(50)))
        .build()
        .expect("pool options");
    let (pool, rx) = pool_with(&host, conn_options(), options);
    // Paused: nothing is populated yet.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(pool.stats().total, 0);
    assert_eq!(opened(&deployment).unwrap_or(0), 0);

    pool.ready();
    eventually(Duration::from_secs(5), "two available connections", || pool.stats().available == 2).await;
    assert_eq!(opened(&deployment).unwrap_or(2), 2);
    let events = drain(&rx);
    let names: Vec<_> = events.iter().map(CmapEvent::name).collect();
    // PoolReady comes before any background creation.
    assert_eq!(names.iter().position(|n| *n == "ConnectionPoolReady"), Some(1), "{names:?}");
    assert_eq!(count(&events, "ConnectionReady"), 2);

    // A populated connection serves a check-out without opening another.
    let started = Instant::now();
    let mut conn = checkout(&pool).await.expect("check out");
    assert!(conn.id() <= 2);
    run(&mut conn, "admin", doc! {"ping": 1}).await.expect("ping");
    drop(conn);
    assert!(started.elapsed() < Duration::from_millis(1000));
    assert_eq!(opened(&deployment).unwrap_or(2), 2);

    // After maxIdleTimeMS both are closed as idle, and minPoolSize opens replacements.
    let events = events_until(&rx, Duration::from_secs(5), |e| {
        matches!(e, CmapEvent::ConnectionReady { connection_id: 4, .. })
    })
    .await;
    let mut idle = closed(&events);
    idle.sort_unstable_by_key(|c| c.0);
    assert_eq!(idle, vec![(1, ConnectionClosedReason::Idle), (2, ConnectionClosedReason::Idle)]);
    eventually(Duration::from_secs(5), "replacements available", || pool.stats().available == 2).await;
    assert!(opened(&deployment).unwrap_or(4) >= 4);
}

#[tokio::test]
async fn killed_server_fails_check_outs_until_restart_clear_and_ready() {
    let Some(cluster) = deployment::sim_only(
        "pool_e2e::killed_server_fails_check_outs_until_restart_clear_and_ready",
        "killing and restarting a server",
        || Cluster::standalone().start().expect("start"),
    ) else {
        return;
    };
    let options = PoolOptions::builder().connect_timeout(Duration::from_secs(2)).build().expect("options");
    let (pool, rx) = pool_with(&cluster.hosts()[0], conn_options(), options);
    pool.ready();
    let mut conn = checkout(&pool).await.expect("check out");
    run(&mut conn, "admin", doc! {"ping": 1}).await.expect("ping");
    drop(conn);

    cluster.kill(0);
    // The idle connection is handed out, and its first use fails with a network error.
    let mut conn = checkout(&pool).await.expect("the idle connection");
    let err = run(&mut conn, "admin", doc! {"ping": 1}).await.expect_err("server is down");
    assert!(err.is_network_error(), "{err:?}");
    assert!(conn.is_closed());
    let generation = conn.generation();
    drop(conn);
    // What SDAM does with a network error on an established connection.
    if pool.generation(None) == generation {
        pool.clear(None, false);
    }
    let err = checkout(&pool).await.expect_err("paused");
    assert!(matches!(err, Error::PoolCleared { .. }), "{err:?}");

    // Even when marked ready, new connections fail while the server is down.
    pool.ready();
    let err = checkout(&pool).await.expect_err("server is down");
    assert!(err.is_network_error(), "{err:?}");
    assert!(matches!(err, Error::Io { phase: pool::Phase::TcpConnect, .. }), "{err:?}");
    let events = drain(&rx);
    // 1: broken when checked in; 2: the failed establishment.
    assert_eq!(closed(&events), vec![(1, ConnectionClosedReason::Error), (2, ConnectionClosedReason::Error)]);
    assert!(events
        .iter()
        .any(|e| matches!(e, CmapEvent::ConnectionClosed { connection_id: 2, error: Some(_), .. })));

    // Restart, clear, ready: the pool recovers.
    cluster.restart(0);
    pool.clear(None, false);
    pool.ready();
    let mut conn = checkout(&pool).await.expect("check out after restart");
    assert_eq!(conn.generation(), 2);
    run(&mut conn, "admin", doc! {"ping": 1}).await.expect("ping after restart");
}

#[tokio::test]
async fn wait_queue_deadline_with_a_held_connection() {
    let (deployment, host) = server().await;
    let options = PoolOptions::builder().max_pool_size(1).build().expect("options");
    let (pool, rx) = pool_with(&host, conn_options(), options);
    pool.ready();
    let held = checkout(&pool).await.expect("check out");

    let started = Instant::now();
    let err = pool
        .check_out(Some(Instant::now() + Duration::from_millis(150)), CheckoutPurpose::Other)
        .await
        .expect_err("no connection for the second check-out");
    let waited = started.elapsed();
    assert!(matches!(err, Error::WaitQueueTimeout { .. }), "{err:?}");
    assert!(err.is_timeout());
    assert!(waited >= Duration::from_millis(150) && waited < Duration::from_secs(1), "{waited:?}");

    // The pool's own waitQueueTimeoutMS works too.
    let options = PoolOptions::builder()
        .max_pool_size(1)
        .wait_queue_timeout(Duration::from_millis(100))
        .build()
        .expect("options");
    let (other, _other_rx) = pool_with(&host, conn_options(), options);
    other.ready();
    let _held_too = other.check_out(None, CheckoutPurpose::Other).await.expect("check out");
    let err = other.check_out(None, CheckoutPurpose::Other).await.expect_err("timeout");
    assert!(matches!(err, Error::WaitQueueTimeout { .. }), "{err:?}");

    // No extra connection was opened by either pool.
    assert_eq!(opened(&deployment).unwrap_or(2), 2);
    assert_eq!(pool.stats().total, 1);
    let events = drain(&rx);
    assert_eq!(count(&events, "ConnectionCreated"), 1);
    let failed: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            CmapEvent::CheckOutFailed { reason, error, duration, .. } => {
                Some((*reason, error.clone(), *duration))
            }
            _ => None,
        })
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!((failed[0].0, failed[0].1.clone()), (CheckOutFailedReason::Timeout, None));
    assert!(failed[0].2 >= Duration::from_millis(150));

    // Once the held connection is back, the same connection serves the next check-out.
    drop(held);
    let conn = checkout(&pool).await.expect("check out");
    assert_eq!(conn.id(), 1);
}

#[tokio::test]
async fn load_balanced_clear_for_one_service() {
    let Some(cluster) = deployment::sim_only(
        "pool_e2e::load_balanced_clear_for_one_service",
        "a load balancer in front of two services",
        || Cluster::load_balanced(2).start().expect("start"),
    ) else {
        return;
    };
    let conn = ConnectionOptions::builder()
        .connect_timeout(Some(Duration::from_secs(5)))
        .load_balanced(true)
        .build()
        .expect("options");
    let options = PoolOptions::builder().load_balanced(true).build().expect("options");
    let (pool, rx) = pool_with(&cluster.hosts()[0], conn, options);
    pool.ready();

    // The load balancer assigns services round-robin: two connections, two services.
    let mut a = checkout(&pool).await.expect("a");
    let mut b = checkout(&pool).await.expect("b");
    let (sa, sb) = (a.service_id().expect("serviceId"), b.service_id().expect("serviceId"));
    assert_ne!(sa, sb);
    for c in [&mut a, &mut b] {
        run(c, "admin", doc! {"ping": 1}).await.expect("ping");
    }
    let (ida, idb) = (a.id(), b.id());

    pool.clear(Some(sa), false);
    // Not paused, and only service A's generation moved.
    assert_eq!(pool.state(), PoolState::Ready);
    assert_eq!(pool.generation(Some(sa)), 1);
    assert_eq!(pool.generation(Some(sb)), 0);
    assert_eq!(pool.generation(None), 0);
    // Neither in-use connection was interrupted.
    assert!(!a.is_interrupted() && !b.is_interrupted());
    run(&mut a, "admin", doc! {"ping": 1}).await.expect("ping after clear");

    drop(a);
    drop(b);
    let events = drain(&rx);
    assert!(events.iter().any(|e| matches!(
        e,
        CmapEvent::PoolCleared { service_id: Some(s), interrupt_in_use_connections: false, .. } if *s == sa
    )));
    assert_eq!(closed(&events), vec![(ida, ConnectionClosedReason::Stale)]);
    assert_eq!(pool.stats().available, 1);

    // Check-outs keep working: B's connection is reused.
    let mut c = checkout(&pool).await.expect("check out after clear");
    assert_eq!((c.id(), c.service_id()), (idb, Some(sb)));
    run(&mut c, "admin", doc! {"ping": 1}).await.expect("ping");
}

/// A pool its owner maintains does no background work of its own: its `PoolActor` runs
/// minPoolSize population on the actor's timer and when the pool asks (it became ready), and
/// stopping the actor closes the pool.
#[actix::test]
async fn the_pool_actor_runs_its_pools_background_work() {
    use actix::Actor;
    let (_deployment, host) = server().await;
    let options = PoolOptions::builder()
        .min_pool_size(2)
        .maintenance_interval(Some(Duration::from_millis(50)))
        .build()
        .expect("pool options");
    let (tx, rx): (Sender<CmapEvent>, Receiver<CmapEvent>) = unbounded();
    let pool = Pool::builder(
        ServerAddress::parse(&host).expect("address"),
        ConnectionEstablisher::new(conn_options()),
    )
    .options(options)
    .event_handler(Arc::new(tx))
    .maintained_by_owner()
    .build()
    .expect("pool");
    pool.ready();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(pool.stats().total, 0, "no task of the pool's own populates it");
    let actor = actors::pool_actor::PoolActor::new(pool.clone()).start();
    eventually(Duration::from_secs(5), "two available connections", || pool.stats().available == 2).await;
    assert_eq!(count(&drain(&rx), "ConnectionReady"), 2);
    actor.send(actors::messages::StopActor).await.expect("stopped");
    assert_eq!(pool.state(), PoolState::Closed, "stopping the actor closes its pool");
    eventually(Duration::from_secs(2), "connections closed", || pool.stats().total == 0).await;
}
