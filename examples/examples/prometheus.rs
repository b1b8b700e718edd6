//! The client's metrics (see the README's "Events and metrics") exported to Prometheus with
//! `metrics-exporter-prometheus`: install the recorder before building the client, then serve
//! `PrometheusHandle::render()` on `/metrics` (here with actix-web).
//!
//! ```text
//! cargo run -p mongo-actors-examples --example prometheus              # then curl 127.0.0.1:9898/metrics
//! cargo run -p mongo-actors-examples --example prometheus -- --uri 'mongodb://...' --listen 0.0.0.0:9898
//! cargo run -p mongo-actors-examples --example prometheus -- --smoke   # scrapes itself once and checks
//! ```

use std::time::Duration;

use actix_web::{web, App, HttpResponse, HttpServer};
use actors::bson::doc;
use actors::{Client, Criteria};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use mongo_actors_examples::{check, http_request, Args, BoxError};
use mongo_sim::Cluster;
use selection::ReadPreference;

async fn scrape(handle: web::Data<PrometheusHandle>) -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(handle.render())
}

/// A few writes and reads with two read preferences, so every metric family has samples.
async fn workload(client: &Client, round: u32) -> Result<(), actors::Error> {
    let coll = client.database("app").collection::<actors::bson::Document>("metrics_demo");
    coll.insert_one(doc! {"round": round}).await?;
    coll.count_documents(doc! {})
        .selection_criteria(ReadPreference::SecondaryPreferred { options: None }.into())
        .await?;
    client
        .database("admin")
        .run_command(doc! {"ping": 1})
        .criteria(Some(Criteria::Read(ReadPreference::NEAREST)))
        .await?;
    Ok(())
}

#[actix_web::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::from_env();
    // First: the client looks the recorder up when it records.
    let handle = PrometheusBuilder::new().install_recorder()?;
    let cluster = if args.uri.is_none() { Some(Cluster::replica_set(3).start()?) } else { None };
    let uri = args.uri.clone().or_else(|| cluster.as_ref().map(Cluster::uri)).ok_or("no uri")?;
    let client = Client::with_uri_str(&uri).await?;

    let data = web::Data::new(handle.clone());
    let listen = args.value("--listen").unwrap_or(if args.smoke { "127.0.0.1:0" } else { "127.0.0.1:9898" });
    let server =
        HttpServer::new(move || App::new().app_data(data.clone()).route("/metrics", web::get().to(scrape)))
            .workers(1)
            .bind(listen)?;
    let addr = server.addrs().first().ok_or("not listening")?.to_string();
    let server = server.run();
    let server_handle = server.handle();
    let running = actix_web::rt::spawn(server);
    println!("metrics on http://{addr}/metrics (database: {uri})");

    let result = if args.smoke {
        let r = async {
            for round in 0..10 {
                workload(&client, round).await?;
            }
            let (status, body) = http_request(&addr, "GET", "/metrics").await?;
            check(status == 200, format!("scrape status {status}"))?;
            // Prometheus writes the dotted names (and label names) with underscores.
            let samples: Vec<&str> = body.lines().filter(|l| !l.starts_with('#')).collect();
            for line in samples.iter().filter(|l| l.starts_with("db_client_operation_duration_count")) {
                println!("{line}");
            }
            for name in [
                "db_client_operation_duration",
                "db_client_connection_count",
                "db_client_connection_max",
                "db_client_connection_pending_requests",
                "db_client_connection_wait_time",
                "db_client_connection_use_time",
                "db_client_connection_create_time",
                "mongo_actors_command_duration",
                "mongo_actors_server_selection_duration",
                "mongo_actors_heartbeats",
                "mongo_actors_topology_changes",
            ] {
                check(
                    samples.iter().any(|l| l.starts_with(name)),
                    format!("{name} missing from the scrape"),
                )?;
            }
            // Ten inserts, as ten operations on app.metrics_demo.
            let inserts = samples.iter().find(|l| {
                l.starts_with("db_client_operation_duration_count")
                    && l.contains(r#"db_operation_name="insert""#)
                    && l.contains(r#"db_collection_name="metrics_demo""#)
            });
            check(inserts.is_some_and(|l| l.ends_with(" 10")), format!("ten inserts counted: {inserts:?}"))?;
            check(
                samples.iter().any(|l| {
                    l.starts_with("db_client_connection_count")
                        && l.contains(r#"db_client_connection_state="idle""#)
                }),
                "no idle connection count",
            )?;
            Ok::<_, BoxError>(())
        }
        .await;
        server_handle.stop(true).await;
        r
    } else {
        let mut round = 0;
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                _ = tokio::time::sleep(Duration::from_millis(500)) => {
                    if let Err(e) = workload(&client, round).await {
                        eprintln!("workload: {e}");
                    }
                    round += 1;
                }
            }
        }
        server_handle.stop(true).await;
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
