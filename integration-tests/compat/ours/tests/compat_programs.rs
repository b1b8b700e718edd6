//! Runs every compatibility program against the simulator, or against MONGODB_URI (the peer
//! tier runs it against SecantusDB, as a replica set and as a standalone).

use integration_tests::deployment::{print_skip, Deployment};
use mongodb::bson::doc;

/// Whether `uri` names a replica set member or a mongos (transactions run there).
async fn transactions_supported(uri: &str) -> bool {
    let client = mongodb::Client::with_uri_str(uri).await.expect("client");
    let hello = client.database("admin").run_command(doc! { "hello": 1 }).await.expect("hello");
    hello.contains_key("setName") || hello.get_str("msg").ok() == Some("isdbgrid")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_program_passes() {
    // MongoDB 8.0, for the client-level bulk write.
    let deployment = Deployment::replica_set(1, |b| b.server_version(mongo_sim::ServerVersion::V8_0))
        .expect("a deployment");
    let uri = deployment.uri();
    let replica_set = transactions_supported(&uri).await;
    for (name, needs_replica_set, program) in compat_ours::all() {
        if needs_replica_set && !replica_set {
            print_skip(
                &format!("compat program {name}"),
                "needs a replica set (transactions, change streams)",
            );
            continue;
        }
        let db = format!("compat_{name}_{}", std::process::id());
        if let Err(e) = program(&uri, &db).await {
            panic!("program {name}: {e}");
        }
        eprintln!("compat program {name}: ok");
    }
}
