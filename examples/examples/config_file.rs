//! Client configuration from a TOML file plus `MONGO_ACTORS_*` environment variables (the
//! `config` crate, through `ClientOptions::from_client_config`). Precedence, lowest first: the
//! URI's options < the file < the environment. The file is `examples/examples/client.toml`
//! unless `--config FILE` names another (YAML and JSON work too, by extension).
//!
//! ```text
//! cargo run -p mongo-actors-examples --example config_file
//! MONGO_ACTORS_MAX_POOL_SIZE=50 cargo run -p mongo-actors-examples --example config_file -- --config my.toml --uri 'mongodb://...'
//! cargo run -p mongo-actors-examples --example config_file -- --smoke
//! ```

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use actors::bson::doc;
use actors::client::{ClientConfig, ClientOptions, FindOneOptions};
use actors::Client;
use mongo_actors_examples::{check, Args, BoxError};
use mongo_sim::Cluster;
use selection::ReadPreference;

#[actix::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::from_env();
    let file = args
        .value("--config")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/client.toml")));
    let config = if args.smoke {
        // The smoke run stands a fixed map in for the process environment, so its checks hold
        // whatever the shell exports.
        let env = HashMap::from([
            ("MONGO_ACTORS_MAX_POOL_SIZE".to_string(), "7".to_string()),
            ("MONGO_ACTORS_APP_NAME".to_string(), "from-env".to_string()),
        ]);
        ClientConfig::load_with_env(Some(&file), Some(env))?
    } else {
        ClientConfig::load(Some(&file))?
    };
    println!("loaded {}:", file.display());
    for (name, value) in config.uri_options()? {
        println!("  {name} = {value}");
    }

    // A URI from --uri, else from the file or MONGO_ACTORS_URI, else an embedded replica set.
    let cluster = if args.uri.is_none() && config.uri.is_none() {
        Some(Cluster::replica_set(3).start()?)
    } else {
        None
    };
    let uri = args.uri.clone().or_else(|| cluster.as_ref().map(Cluster::uri));
    let options = ClientOptions::from_client_config(uri.as_deref(), config).await?;
    let o = &options;
    let read_preference = o.selection_criteria.as_ref().and_then(|c| c.as_read_pref()).map(|rp| rp.mode());
    println!(
        "effective: appname {:?}, maxPoolSize {:?}, timeoutMS {:?}, readPreference {:?}",
        o.app_name, o.max_pool_size, o.timeout, read_preference
    );
    if args.smoke {
        check(o.max_pool_size == Some(7), format!("environment wins over the file: {:?}", o.max_pool_size))?;
        check(o.app_name.as_deref() == Some("from-env"), format!("appname {:?}", o.app_name))?;
        check(
            o.timeout == Some(Duration::from_millis(2000)),
            format!("timeoutMS from the file: {:?}", o.timeout),
        )?;
        check(
            o.server_selection_timeout == Some(Duration::from_millis(5000)),
            "serverSelectionTimeoutMS from the file",
        )?;
    }

    let client = Client::with_options(options)?;
    let settings = client.database("app").collection::<actors::bson::Document>("settings");
    // A generated _id, so runs against the same deployment do not collide.
    let id = settings.insert_one(doc! {"key": "theme", "value": "dark"}).await?.inserted_id;
    // The configured default is secondaryPreferred; read our own write from the primary.
    let read = FindOneOptions {
        selection_criteria: Some(ReadPreference::Primary.into()),
        ..FindOneOptions::default()
    };
    let found = settings.find_one(doc! {"_id": id}).with_options(read).await?;
    println!("read back: {found:?}");
    if args.smoke {
        check(found.as_ref().and_then(|d| d.get_str("value").ok()) == Some("dark"), "read back the write")?;
    }
    client.shutdown().await;
    if args.smoke {
        println!("smoke ok");
    }
    Ok(())
}
