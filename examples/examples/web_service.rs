//! An actix-web service sharing one client through `web::Data`: `POST /visits/{page}` writes a
//! document, `GET /visits/{page}` reads the count back. Every worker thread uses the same client
//! (its actors live on the main arbiter; the handle is `Clone + Send`).
//!
//! ```text
//! cargo run -p mongo-actors-examples --example web_service                 # embedded 3-member replica set
//! cargo run -p mongo-actors-examples --example web_service -- --uri mongodb://host/?replicaSet=rs0 --listen 127.0.0.1:8080
//! cargo run -p mongo-actors-examples --example web_service -- --smoke      # calls its own routes, then exits
//! ```
//! Then `curl -X POST localhost:8080/visits/home` and `curl localhost:8080/visits/home`.

use actix_web::{web, App, HttpResponse, HttpServer};
use actors::Client;
use bson::{doc, Bson, Document};
use integration_tests::sim::Cluster;
use mongo_actors_examples::{check, http_request, Args, BoxError};

fn json(doc: Document) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(Bson::Document(doc).into_relaxed_extjson().to_string())
}

/// A failed operation is the client's typed error; the service answers 503 with its message.
fn unavailable(e: actors::Error) -> HttpResponse {
    tracing::warn!(error = %e, "operation failed");
    HttpResponse::ServiceUnavailable().body(e.to_string())
}

async fn record_visit(client: web::Data<Client>, page: web::Path<String>) -> HttpResponse {
    let visits = client.database("web").collection("visits");
    match visits.insert_one(doc! {"page": page.as_str(), "at": bson::DateTime::now()}).await {
        Ok(r) => json(doc! {"inserted": r.inserted_id}),
        Err(e) => unavailable(e),
    }
}

async fn count_visits(client: web::Data<Client>, page: web::Path<String>) -> HttpResponse {
    let visits = client.database("web").collection("visits");
    // Read from the primary (the client's default): the count includes the caller's own writes.
    match visits.count_documents(doc! {"page": page.as_str()}, None).await {
        Ok(n) => json(doc! {"page": page.as_str(), "visits": n as i64}),
        Err(e) => unavailable(e),
    }
}

async fn smoke(addr: &str) -> Result<(), BoxError> {
    // Pages of their own, so a smoke run against a real deployment (`--uri`) can be repeated.
    let page = format!("smoke-{}", bson::oid::ObjectId::new());
    for _ in 0..3 {
        let (status, body) = http_request(addr, "POST", &format!("/visits/{page}")).await?;
        check(status == 200 && body.contains("inserted"), format!("POST: {status} {body}"))?;
    }
    let (status, body) = http_request(addr, "GET", &format!("/visits/{page}")).await?;
    println!("GET /visits/{page} -> {status} {body}");
    check(status == 200 && body.contains("\"visits\":3"), format!("GET: {status} {body}"))?;
    let (status, body) = http_request(addr, "GET", &format!("/visits/{page}-other")).await?;
    check(status == 200 && body.contains("\"visits\":0"), format!("GET other: {status} {body}"))?;
    Ok(())
}

#[actix_web::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::from_env();
    let cluster = if args.uri.is_none() { Some(Cluster::replica_set(3).start()?) } else { None };
    let uri = args.uri.clone().or_else(|| cluster.as_ref().map(Cluster::uri)).ok_or("no uri")?;
    let client = Client::with_uri_str(&uri).await?;
    let data = web::Data::new(client.clone());
    let listen = args.value("--listen").unwrap_or(if args.smoke { "127.0.0.1:0" } else { "127.0.0.1:8080" });
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/visits/{page}", web::post().to(record_visit))
            .route("/visits/{page}", web::get().to(count_visits))
    })
    .workers(2)
    .bind(listen)?;
    let addr = server.addrs().first().ok_or("not listening")?.to_string();
    let server = server.run();
    let handle = server.handle();
    let running = actix_web::rt::spawn(server);
    println!("listening on http://{addr} (database: {uri})");
    let result = if args.smoke {
        let r = smoke(&addr).await;
        handle.stop(true).await;
        r
    } else {
        tokio::signal::ctrl_c().await?;
        handle.stop(true).await;
        Ok(())
    };
    let _ = running.await;
    client.shutdown().await?;
    result?;
    if args.smoke {
        println!("smoke ok");
    }
    Ok(())
}
