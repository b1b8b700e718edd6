//! Shutdown that always happens: dropping the last `Client` handle, or stopping the actix
//! System under it, closes every connection (pooled and monitoring) and ends every actor and
//! thread of the client (its own System's thread, the event delivery threads), with no
//! message that could be lost. Counted by the simulator's open connections and by this
//! process's threads. One test: thread counts are per process.

use std::time::{Duration, Instant};

use actors::command_events::CommandEvent;
use actors::{Client, ClientOptions};
use bson::{doc, Document};
use mongo_sim::Cluster;
use pool::cmap::CmapEvent;
use protocol::sdam::events::SdamEvent;

/// This process's threads (Linux).
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// Waits up to 5 s for `done`.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Options with a closure for each kind of event (each gets a delivery thread).
async fn options(cluster: &Cluster) -> ClientOptions {
    let mut options = ClientOptions::parse(format!("{}&maxPoolSize=5", cluster.uri())).await.expect("uri");
    options.sdam_event_handler = Some(actors::event::EventHandler::subscriber(|_: &SdamEvent| {}));
    options.cmap_event_handler = Some(actors::event::EventHandler::subscriber(|_: &CmapEvent| {}));
    options.command_event_handler = Some(actors::event::EventHandler::subscriber(|_: &CommandEvent| {}));
    options
}

/// Opens pooled connections on every member it can: concurrent reads and a write.
async fn use_client(client: &Client) {
    let coll = client.database("shutdown").collection::<Document>("c");
    coll.insert_one(doc! {"x": 1}).await.expect("insert");
    let reads: Vec<_> =
        (0..10).map(|_| std::future::IntoFuture::into_future(coll.find_one(doc! {}))).collect();
    for r in futures_util::future::join_all(reads).await {
        r.expect("find_one");
    }
}

fn open_connections(cluster: &Cluster) -> u64 {
    cluster.counters().total.current_connections
}

#[test]
fn the_last_handle_or_a_stopped_system_closes_everything() {
    // Alone in a process of its own: it uses this process's threads.
    if integration_tests::child_process::alone(
        module_path!(),
        "the_last_handle_or_a_stopped_system_closes_everything",
        &[],
    ) {
        return;
    }
    let cluster = Cluster::replica_set(3).start().expect("sim");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let baseline = threads();
    assert_eq!(open_connections(&cluster), 0);

    // 1. Outside any actix System: the client runs its own, on a thread of its own. Dropping
    // the last handle (a clone first) ends it all.
    runtime.block_on(async {
        let client = Client::with_options(options(&cluster).await).expect("client");
        let clone = client.clone();
        use_client(&client).await;
        drop(client);
        use_client(&clone).await;
        assert!(open_connections(&cluster) > 3, "monitoring and pooled connections are open");
        assert!(threads() >= baseline + 4, "the System's thread and three delivery threads");
        drop(clone);
    });
    eventually("every connection closes once the last handle is dropped", || open_connections(&cluster) == 0);
    eventually("every thread of the client ends", || threads() == baseline);
    println!("drop: connections 0, threads back to {baseline}");

    // 2. Inside the application's System: the System stops while the application still holds
    // the client. Its actors go with the System; no message is needed for the connections.
    let (tx, rx) = std::sync::mpsc::channel();
    let uri_options = runtime.block_on(options(&cluster));
    let system_thread = std::thread::spawn(move || {
        let system = actix::System::new();
        system.block_on(async move {
            let client = Client::with_options(uri_options).expect("client");
            use_client(&client).await;
            let _ = tx.send(client);
        });
        actix::System::current().stop();
        let _ = system.run();
    });
    let client = rx.recv().expect("the client");
    system_thread.join().expect("the System's thread");
    eventually("every connection closes with the System", || open_connections(&cluster) == 0);
    eventually("every thread of the client ends with the System", || threads() == baseline);
    println!("stopped System: connections 0, threads back to {baseline}, the client still held");
    // The handle answers with a typed error, at once.
    runtime.block_on(async {
        let began = Instant::now();
        let coll = client.database("shutdown").collection::<Document>("c");
        let e = coll.find_one(doc! {}).await.expect_err("the client's System is gone");
        assert!(began.elapsed() < Duration::from_secs(1), "{:?}", began.elapsed());
        assert!(
            matches!(*e.kind, actors::ErrorKind::Shutdown) || e.pool_error().is_some(),
            "a typed error: {e:?}"
        );
    });
    drop(client);
    assert_eq!(open_connections(&cluster), 0);
    assert_eq!(threads(), baseline);
}
