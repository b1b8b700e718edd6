//! A `Client` built from a TOML file plus environment variables (`ClientOptions::from_config`),
//! against the simulator or `MONGODB_URI` (a replica set with a secondary). A test binary of its
//! own: the environment is process-wide.

use std::time::Duration;

use actors::command_events::CommandEvent;
use actors::{Client, ClientOptions};
use bson::doc;
use integration_tests::deployment::Deployment;
use protocol::sdam::ServerType;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_from_a_toml_file_and_the_environment_reach_the_cluster() {
    // Alone in a process of its own: it uses environment variables.
    if integration_tests::child_process::alone(
        module_path!(),
        "options_from_a_toml_file_and_the_environment_reach_the_cluster",
        &[],
    ) {
        return;
    }
    let deployment = Deployment::replica_set(3, |b| b).expect("deployment");
    let test = "client_config::options_from_a_toml_file_and_the_environment_reach_the_cluster";
    if !deployment.has_members_or_not_applicable(test, 2).await.expect("members") {
        return;
    }
    // Its own application name on a real deployment: fail points match it, and runs share it.
    let app = if deployment.is_real() {
        format!("fromEnv{}", bson::oid::ObjectId::new())
    } else {
        "fromEnv".into()
    };
    let dir = std::env::temp_dir().join(format!("mongo-actors-client-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("client.toml");
    std::fs::write(
        &file,
        format!(
            "uri = \"{}\"\napp_name = \"fromFile\"\nread_preference = \"primary\"\nserver_selection_timeout_ms = 5000\n",
            deployment.uri()
        ),
    )
    .expect("write the file");
    // The environment overrides the file (the only test of this process: `alone`).
    std::env::set_var("MONGO_ACTORS_APP_NAME", &app);
    std::env::set_var("MONGO_ACTORS_READ_PREFERENCE", "secondary");

    let mut options = ClientOptions::from_config(None, Some(&file)).await.expect("valid configuration");
    assert_eq!(options.app_name.as_deref(), Some(app.as_str()));
    assert_eq!(options.server_selection_timeout, Some(Duration::from_millis(5000)));
    let (tx, events) = crossbeam_channel::unbounded();
    options.command_event_handler = Some(actors::event::EventHandler::subscriber(tx));
    let client = Client::with_options(options).expect("client");
    client
        .topology()
        .wait_for(
            |t| t.primary().is_some() && !t.servers_of_type(ServerType::RsSecondary).is_empty(),
            Duration::from_secs(10),
        )
        .await
        .expect("discovery");
    let db = if deployment.is_real() { format!("app_{}", bson::oid::ObjectId::new()) } else { "app".into() };
    let coll = client.database(&db).collection::<bson::Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.expect("insert");

    // The app name from the environment reaches the servers: a fail point that matches only
    // that appName fails the read on every secondary.
    let primary = deployment.primary().await.expect("hello");
    for host in deployment.replica_set_members().await.expect("hello") {
        if Some(&host) == primary.as_ref() {
            continue;
        }
        deployment
            .configure_fail_point_on(
                &host,
                doc! {"configureFailPoint": "failCommand", "mode": {"times": 2},
                "data": {"failCommands": ["find"], "errorCode": 2, "appName": &app}},
            )
            .await
            .unwrap_or_else(|e| panic!("fail point on {host}: {e}"));
    }
    let err = coll.find_one(doc! {}).await.expect_err("the fail point matched the appName");
    assert_eq!(err.code(), Some(2), "{err}");

    // The read preference from the environment sends reads to a secondary.
    let secondaries = client.topology().snapshot().servers_of_type(ServerType::RsSecondary);
    let finds: Vec<_> = events
        .try_iter()
        .filter_map(|e| match e {
            CommandEvent::Started { command_name, connection, .. } if command_name == "find" => {
                Some(connection.address)
            }
            _ => None,
        })
        .collect();
    assert!(!finds.is_empty());
    assert!(
        finds.iter().all(|a| secondaries.contains(a)),
        "reads went to {finds:?}, secondaries {secondaries:?}"
    );
    client.shutdown().await;
}
