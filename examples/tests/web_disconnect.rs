//! A real actix-web service whose HTTP client disconnects mid-request: actix drops the
//! handler's future while its `find_one` waits for a slow server. The connection that operation
//! held must not go back to the pool half used: the next 100 requests all succeed, on the
//! one pooled connection's successors, with no pool cleared.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix_web::{web, App, HttpResponse, HttpServer};
use actors::bson::{doc, Document};
use actors::{Client, ClientOptions, Collection};
use mongo_actors_examples::http_request;
use tokio::io::AsyncWriteExt;

/// Counts handlers dropped before they finished.
struct Unfinished(Arc<AtomicUsize>, bool);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

struct State {
    coll: Collection<Document>,
    dropped: Arc<AtomicUsize>,
}

async fn read(state: web::Data<State>) -> HttpResponse {
    let mut guard = Unfinished(state.dropped.clone(), false);
    let found = state.coll.find_one(doc! {"_id": 1}).await;
    guard.1 = true;
    match found {
        Ok(Some(d)) => HttpResponse::Ok().body(d.get_str("v").unwrap_or_default().to_string()),
        Ok(None) => HttpResponse::NotFound().finish(),
        Err(e) => HttpResponse::ServiceUnavailable().body(e.to_string()),
    }
}

#[actix_web::test]
// The read guard only keeps the browser's timed test from running meanwhile; nothing here takes
// the lock again, so holding it across awaits cannot deadlock.
#[allow(clippy::await_holding_lock)]
async fn a_handler_dropped_mid_find_one_leaves_the_pool_healthy() {
    let _machine = crate::shared();
    let cluster = mongo_sim::Cluster::replica_set(1).start().expect("simulator");
    let options = ClientOptions::parse(format!("{}&maxPoolSize=1", cluster.uri())).await.expect("uri");
    let client = Client::with_options(options).expect("client");
    let coll = client.database("web").collection::<Document>("pages");
    coll.insert_one(doc! {"_id": 1, "v": "home"}).await.expect("seed");
    let dropped = Arc::new(AtomicUsize::new(0));
    let data = web::Data::new(State { coll: coll.clone(), dropped: dropped.clone() });
    let server =
        HttpServer::new(move || App::new().app_data(data.clone()).route("/page", web::get().to(read)))
            .workers(1)
            .bind("127.0.0.1:0")
            .expect("bind");
    let addr = server.addrs()[0].to_string();
    let running = server.run();
    let handle = running.handle();
    actix_web::rt::spawn(running);

    // The server answers 300 ms late; the HTTP client hangs up after 100 ms.
    let generation = || {
        let snapshot = client.topology().snapshot();
        let primary = snapshot.primary().cloned().expect("primary");
        snapshot.handle(&primary).expect("handle").pool.generation(None)
    };
    let before = generation();
    cluster.set_latency(0, Duration::from_millis(300));
    for _ in 0..3 {
        let mut stream = tokio::net::TcpStream::connect(&addr).await.expect("connect");
        let request = format!("GET /page HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("write");
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Gone for good (a reset, not a half-close a client could still read after), as when a
        // browser tab closes: the dispatcher sees the error and drops the handler's future.
        stream.set_zero_linger().expect("linger");
        drop(stream);
    }
    let until = tokio::time::Instant::now() + Duration::from_secs(5);
    while dropped.load(Ordering::SeqCst) < 3 && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(dropped.load(Ordering::SeqCst), 3, "actix dropped each handler when its client left");
    cluster.set_latency(0, Duration::ZERO);

    for i in 0..100 {
        let (status, body) = http_request(&addr, "GET", "/page").await.expect("request");
        assert_eq!((status, body.as_str()), (200, "home"), "request {i}");
    }
    assert_eq!(generation(), before, "no pool was cleared");
    handle.stop(true).await;
    client.shutdown().await;
}
