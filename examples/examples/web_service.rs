//! An actix-web notes service sharing one client through `web::Data<Client>`, with a typed
//! collection: `POST /notes` stores a JSON note, `GET /notes/{id}` reads it back (404 when
//! there is none), `GET /notes` lists them newest first. Errors map to HTTP: a transient one
//! (no primary yet, a network error, a timeout) is 503, anything else 500.
//!
//! ```text
//! cargo run -p mongo-actors-examples --example web_service                 # embedded 3-member replica set
//! cargo run -p mongo-actors-examples --example web_service -- --uri mongodb://host/?replicaSet=rs0 --listen 127.0.0.1:8080
//! cargo run -p mongo-actors-examples --example web_service -- --smoke      # calls its own routes, then exits
//! ```
//! Then `curl -X POST -d '{"title":"hi","body":"there"}' localhost:8080/notes` and
//! `curl localhost:8080/notes`.

use futures_util::TryStreamExt;
use std::time::Duration;

use actix_web::{web, App, HttpResponse, HttpServer};
use actors::bson::{doc, oid::ObjectId};
use actors::{Client, Collection};
use mongo_actors_examples::{check, deployment, http_request, http_request_with_body, Args, BoxError};
use serde::{Deserialize, Serialize};

/// A note as stored: serde maps it to and from BSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Note {
    #[serde(rename = "_id")]
    id: ObjectId,
    title: String,
    body: String,
    created: actors::bson::DateTime,
}

/// What a client posts.
#[derive(Debug, Deserialize)]
struct NewNote {
    title: String,
    body: String,
}

/// A note as the API shows it (the id as a hex string, the time in milliseconds).
#[derive(Debug, Serialize)]
struct NoteView {
    id: String,
    title: String,
    body: String,
    created_ms: i64,
}

impl From<Note> for NoteView {
    fn from(n: Note) -> Self {
        NoteView { id: n.id.to_hex(), title: n.title, body: n.body, created_ms: n.created.timestamp_millis() }
    }
}

fn notes(client: &Client) -> Collection<Note> {
    client.database("web").collection("notes")
}

/// The client's typed error as an HTTP answer: 503 when trying again may help, else 500.
fn failed(e: actors::Error) -> HttpResponse {
    tracing::warn!(error = %e, transient = e.is_transient(), "operation failed");
    if e.is_transient() {
        HttpResponse::ServiceUnavailable().body(e.to_string())
    } else {
        HttpResponse::InternalServerError().body(e.to_string())
    }
}

async fn create_note(client: web::Data<Client>, body: web::Bytes) -> HttpResponse {
    let Ok(new) = serde_json::from_slice::<NewNote>(&body) else {
        return HttpResponse::BadRequest().body("expected {\"title\": ..., \"body\": ...}");
    };
    let note = Note {
        id: ObjectId::new(),
        title: new.title,
        body: new.body,
        created: actors::bson::DateTime::now(),
    };
    match notes(&client).insert_one(&note).await {
        Ok(_) => HttpResponse::Created().json(NoteView::from(note)),
        Err(e) => failed(e),
    }
}

async fn get_note(client: web::Data<Client>, id: web::Path<String>) -> HttpResponse {
    let Ok(id) = ObjectId::parse_str(id.as_str()) else {
        return HttpResponse::NotFound().finish();
    };
    match notes(&client).find_one(doc! {"_id": id}).await {
        Ok(Some(note)) => HttpResponse::Ok().json(NoteView::from(note)),
        Ok(None) => HttpResponse::NotFound().finish(),
        Err(e) => failed(e),
    }
}

async fn list_notes(client: web::Data<Client>) -> HttpResponse {
    // A per-request deadline (CSOT) for selection, check-out and the round trips.
    let notes = notes(&client);
    let cursor = notes.find(doc! {}).sort(doc! {"created": -1}).limit(100).timeout(Duration::from_secs(2));
    match cursor.await {
        Ok(cursor) => match cursor.try_collect::<Vec<_>>().await {
            Ok(all) => HttpResponse::Ok().json(all.into_iter().map(NoteView::from).collect::<Vec<_>>()),
            Err(e) => failed(e),
        },
        Err(e) => failed(e),
    }
}

async fn smoke(addr: &str) -> Result<(), BoxError> {
    let title = format!("smoke-{}", ObjectId::new());
    let body = serde_json::json!({"title": title, "body": "typed"}).to_string();
    let (status, created) = http_request_with_body(addr, "POST", "/notes", &body).await?;
    check(status == 201, format!("POST: {status} {created}"))?;
    let id =
        serde_json::from_str::<serde_json::Value>(&created)?["id"].as_str().unwrap_or_default().to_string();
    let (status, got) = http_request(addr, "GET", &format!("/notes/{id}")).await?;
    println!("GET /notes/{id} -> {status} {got}");
    check(status == 200 && got.contains(&title), format!("GET: {status} {got}"))?;
    let (status, _) = http_request(addr, "GET", &format!("/notes/{}", ObjectId::new())).await?;
    check(status == 404, format!("GET of a missing note: {status}"))?;
    let (status, bad) = http_request_with_body(addr, "POST", "/notes", "{\"nope\": 1}").await?;
    check(status == 400, format!("POST of a bad note: {status} {bad}"))?;
    let (status, list) = http_request(addr, "GET", "/notes").await?;
    check(status == 200 && list.contains(&title), format!("GET /notes: {status} {list}"))?;
    Ok(())
}

#[actix_web::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::from_env();
    // Your connection string; without --uri, an embedded simulated replica set.
    let (uri, _simulator) = deployment(&args, 3)?;
    let client = Client::with_uri_str(&uri).await?;
    let data = web::Data::new(client.clone());
    let listen = args.value("--listen").unwrap_or(if args.smoke { "127.0.0.1:0" } else { "127.0.0.1:8080" });
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/notes", web::post().to(create_note))
            .route("/notes", web::get().to(list_notes))
            .route("/notes/{id}", web::get().to(get_note))
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
    client.shutdown().await;
    result?;
    if args.smoke {
        println!("smoke ok");
    }
    Ok(())
}
