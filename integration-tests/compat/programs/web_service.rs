//! An actix-web service in the style of the official actix-web example: the `Client` shared
//! as `web::Data`, handlers that insert and find typed documents, a unique index, and the
//! HTTP status each outcome maps to. The service runs on an actix System of its own and is
//! asked over plain HTTP/1.1.

use std::net::SocketAddr;

use actix_web::{get, post, web, App, HttpResponse, HttpServer};
use mongodb::bson::doc;
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::options::IndexOptions;
use mongodb::{Client, Collection, IndexModel};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A user, as the service stores it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct User {
    first_name: String,
    username: String,
}

/// The database the handlers use.
struct Db(String);

fn users(client: &Client, db: &Db) -> Collection<User> {
    client.database(&db.0).collection("users")
}

#[post("/users/{username}/{first_name}")]
async fn add_user(
    client: web::Data<Client>,
    db: web::Data<Db>,
    path: web::Path<(String, String)>,
) -> HttpResponse {
    let (username, first_name) = path.into_inner();
    match users(&client, &db).insert_one(User { first_name, username }).await {
        Ok(_) => HttpResponse::Ok().body("user added"),
        Err(e) => match *e.kind {
            ErrorKind::Write(WriteFailure::WriteError(w)) if w.code == 11000 => {
                HttpResponse::Conflict().body("username taken")
            }
            _ => HttpResponse::InternalServerError().body(e.to_string()),
        },
    }
}

#[get("/users/{username}")]
async fn get_user(client: web::Data<Client>, db: web::Data<Db>, username: web::Path<String>) -> HttpResponse {
    let username = username.into_inner();
    match users(&client, &db).find_one(doc! { "username": &username }).await {
        Ok(Some(user)) => HttpResponse::Ok().body(user.first_name),
        Ok(None) => HttpResponse::NotFound().body(format!("no user named {username}")),
        Err(e) => HttpResponse::InternalServerError().body(e.to_string()),
    }
}

/// Runs the program against `uri`, in database `db`: the service on a thread with an actix
/// System of its own, as `#[actix_web::main]` would give it.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let (uri, db) = (uri.to_string(), db.to_string());
    let thread = std::thread::spawn(move || actix_web::rt::System::new().block_on(serve_and_ask(&uri, &db)));
    match tokio::task::spawn_blocking(move || thread.join()).await {
        Ok(Ok(result)) => result,
        _ => panic!("the actix-web program panicked"),
    }
}

async fn serve_and_ask(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let client = Client::with_uri_str(uri).await?;
    let unique = IndexModel::builder()
        .keys(doc! { "username": 1 })
        .options(IndexOptions::builder().unique(true).build())
        .build();
    client.database(db).collection::<User>("users").create_index(unique).await?;

    let shared = web::Data::new(client.clone());
    let names = web::Data::new(Db(db.to_string()));
    let server = HttpServer::new(move || {
        App::new().app_data(shared.clone()).app_data(names.clone()).service(add_user).service(get_user)
    })
    .workers(1)
    .bind(("127.0.0.1", 0))?;
    let address = server.addrs()[0];
    let server = server.run();
    let handle = server.handle();
    actix_web::rt::spawn(server);

    assert_eq!(ask(address, "POST", "/users/ada/Ada").await?, (200, "user added".to_string()));
    assert_eq!(ask(address, "GET", "/users/ada").await?, (200, "Ada".to_string()));
    assert_eq!(ask(address, "GET", "/users/bob").await?, (404, "no user named bob".to_string()));
    assert_eq!(ask(address, "POST", "/users/ada/Another").await?, (409, "username taken".to_string()));

    handle.stop(true).await;
    client.database(db).drop().await?;
    Ok(())
}

/// One HTTP/1.1 request: the status and the body.
async fn ask(address: SocketAddr, method: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Ok((status, body))
}
