//! Load-balanced SDAM error handling against the simulator: handshake errors are ignored, an
//! authentication error after the handshake clears only its service; the single-service load
//! balancer; `Cursor::close` returns once the pinned connection is back. With `MONGODB_URI`
//! set, the tests that control the simulator's services say they do not apply; the cursor test
//! runs against `MONGODB_LB_URI` if it is set.

use std::time::Duration;

use actors::command_events::CommandEvent;
use actors::{Client, ClientOptions, FindOptions};
use bson::doc;
use bson::oid::ObjectId;
use integration_tests::deployment::{self, Deployment};
use mongo_sim::Cluster;
use pool::cmap::CmapEvent;

struct Setup {
    client: Client,
    commands: crossbeam_channel::Receiver<CommandEvent>,
    cmap: crossbeam_channel::Receiver<CmapEvent>,
}

async fn client(uri: &str) -> Setup {
    let mut options = ClientOptions::parse(uri).await.expect("uri");
    let (tx, commands) = crossbeam_channel::unbounded();
    options.command_event_handler = Some(actors::event::EventHandler::subscriber(tx));
    let (tx, cmap) = crossbeam_channel::unbounded();
    options.cmap_event_handler = Some(actors::event::EventHandler::subscriber(tx));
    let client = Client::with_options(options).expect("client");
    Setup { client, commands, cmap }
}

/// The serviceId of every started command named `name`.
fn services_of(events: &[CommandEvent], name: &str) -> Vec<Option<ObjectId>> {
    events
        .iter()
        .filter_map(|e| match e {
            CommandEvent::Started { command_name, connection, .. } if command_name == name => {
                Some(connection.service_id)
            }
            _ => None,
        })
        .collect()
}

fn cleared(events: &[CmapEvent]) -> Vec<Option<ObjectId>> {
    events
        .iter()
        .filter_map(|e| match e {
            CmapEvent::PoolCleared { service_id, .. } => Some(*service_id),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_change_error_in_the_handshake_is_ignored() {
    let Some(cluster) = deployment::sim_only(
        "client_lb_sdam::a_state_change_error_in_the_handshake_is_ignored",
        "fail points on each service behind its balancer",
        || Cluster::load_balanced(2).start().expect("sim"),
    ) else {
        return;
    };
    let s = client(&format!("{}&retryReads=false", cluster.uri())).await;
    for i in 0..2 {
        cluster
            .configure_fail_point(
                i,
                doc! {"configureFailPoint": "failCommand", "mode": {"times": 1},
                "data": {"failCommands": ["hello", "isMaster"], "errorCode": 11600}},
            )
            .expect("fail point");
    }
    for _ in 0..2 {
        let e = s.client.database("app").run_command(doc! {"ping": 1}).await.expect_err("hello fails");
        assert!(e.to_string().contains("11600"), "{e}");
    }
    s.client.database("app").run_command(doc! {"ping": 1}).await.expect("next ping");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cmap: Vec<CmapEvent> = s.cmap.try_iter().collect();
    assert_eq!(cleared(&cmap), Vec::<Option<ObjectId>>::new(), "{cmap:?}");
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auth_error_after_the_handshake_clears_only_its_service() {
    let Some(cluster) = deployment::sim_only(
        "client_lb_sdam::an_auth_error_after_the_handshake_clears_only_its_service",
        "a user it creates and fail points on each service",
        || Cluster::load_balanced(2).user("user", "pencil").start().expect("sim"),
    ) else {
        return;
    };
    let lb = cluster.single_service_lb(1).expect("single-service LB");
    let s = client(&format!("mongodb://user:pencil@{lb}/?loadBalanced=true&retryReads=false")).await;
    cluster
        .configure_fail_point(
            1,
            doc! {"configureFailPoint": "failCommand", "mode": {"times": 1},
            "data": {"failCommands": ["saslContinue"], "closeConnection": true}},
        )
        .expect("fail point");
    let e = s.client.database("app").run_command(doc! {"ping": 1}).await.expect_err("auth fails");
    assert!(e.is_network_error(), "{e}");
    s.client.database("app").run_command(doc! {"ping": 1}).await.expect("next ping");
    let commands: Vec<CommandEvent> = s.commands.try_iter().collect();
    let service = services_of(&commands, "ping");
    assert_eq!(service.len(), 1, "{commands:?}");
    assert!(service[0].is_some());
    let cmap: Vec<CmapEvent> = s.cmap.try_iter().collect();
    // The clear names the service the handshake reported, and precedes the close.
    assert_eq!(cleared(&cmap), service, "{cmap:?}");
    let clear_at = cmap.iter().position(|e| matches!(e, CmapEvent::PoolCleared { .. }));
    let closed_at = cmap.iter().position(|e| matches!(e, CmapEvent::ConnectionClosed { .. }));
    assert!(clear_at < closed_at, "{cmap:?}");
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_single_service_lb_reaches_one_service_only() {
    let Some(cluster) = deployment::sim_only(
        "client_lb_sdam::the_single_service_lb_reaches_one_service_only",
        "its single-service balancer",
        || Cluster::load_balanced(2).start().expect("sim"),
    ) else {
        return;
    };
    let lb = cluster.single_service_lb(0).expect("single-service LB");
    assert_ne!(Some(&lb), cluster.hosts().first());
    let s = client(&format!("mongodb://{lb}/?loadBalanced=true")).await;
    let coll = s.client.database("app").collection::<bson::Document>("one");
    coll.insert_many((0..6).map(|i| doc! {"i": i})).await.expect("insert");
    let batch = FindOptions { batch_size: Some(2), ..Default::default() };
    // Three pinned cursors: three connections, every one to the same service.
    let mut cursors = Vec::new();
    for _ in 0..3 {
        cursors.push(coll.find(doc! {}).with_options(batch.clone()).await.expect("find"));
    }
    let commands: Vec<CommandEvent> = s.commands.try_iter().collect();
    let services = services_of(&commands, "find");
    assert_eq!(services.len(), 3);
    assert!(services[0].is_some() && services.iter().all(|s| *s == services[0]), "{services:?}");
    let opened = cmap_created(&s.cmap.try_iter().collect::<Vec<_>>());
    assert_eq!(opened, 3);
    drop(cursors);
    s.client.shutdown().await;
    assert!(Cluster::standalone().start().expect("sim").single_service_lb(0).is_err());
}

fn cmap_created(events: &[CmapEvent]) -> usize {
    events.iter().filter(|e| matches!(e, CmapEvent::ConnectionCreated { .. })).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_a_cursor_returns_after_its_connection_is_checked_in() {
    let Some(deployment) = Deployment::load_balanced(2).expect("deployment") else {
        deployment::print_skip(
            "client_lb_sdam::closing_a_cursor_returns_after_its_connection_is_checked_in",
            &format!("needs a load balancer; {} is not set", deployment::LB_URI_ENV),
        );
        return;
    };
    let s = client(&deployment.uri()).await;
    let db = if deployment.is_real() { format!("app_{}", ObjectId::new()) } else { "app".to_owned() };
    let coll = s.client.database(&db).collection::<bson::Document>("close");
    coll.insert_many((0..3).map(|i| doc! {"i": i})).await.expect("insert");
    let cursor = coll
        .find(doc! {})
        .with_options(FindOptions { batch_size: Some(2), ..Default::default() })
        .await
        .expect("find");
    let _ = s.cmap.try_iter().count();
    let _ = s.commands.try_iter().count();
    cursor.close(None).await;
    // No waiting: the kill and the check-in are done when close returns.
    let commands: Vec<CommandEvent> = s.commands.try_iter().collect();
    assert_eq!(services_of(&commands, "killCursors").len(), 1, "{commands:?}");
    let cmap: Vec<CmapEvent> = s.cmap.try_iter().collect();
    assert!(cmap.iter().any(|e| matches!(e, CmapEvent::CheckedIn { .. })), "{cmap:?}");
    s.client.shutdown().await;
}
