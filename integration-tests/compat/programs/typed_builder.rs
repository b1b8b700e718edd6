//! Options without a URI string: a `ConnectionString` read and edited field by field, given
//! to `ClientOptions::parse`, and `ClientOptions::builder()` (the typed builder) filled from
//! its fields, with an event handler set through the builder.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mongodb::bson::{doc, Document};
use mongodb::event::command::CommandEvent;
use mongodb::event::EventHandler;
use mongodb::options::{ClientOptions, ConnectionString, HostInfo, ServerAddress};
use mongodb::Client;

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let mut cs = ConnectionString::parse(uri)?;
    let HostInfo::HostIdentifiers(hosts) = cs.host_info.clone() else {
        panic!("the test deployment is named by its hosts");
    };
    assert!(!hosts.is_empty());
    assert!("mongodb://".parse::<ConnectionString>().is_err());
    let parsed: ConnectionString = uri.try_into()?;
    assert_eq!(parsed.host_info, cs.host_info);

    // Edited fields win over the string's.
    cs.app_name = Some("compat-edited".to_string());
    cs.max_pool_size = Some(3);
    let options = ClientOptions::parse(cs.clone()).await?;
    assert_eq!(options.app_name.as_deref(), Some("compat-edited"));
    assert_eq!(options.max_pool_size, Some(3));
    assert_eq!(options.hosts, hosts);

    // The typed builder: no string at all.
    let started: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = started.clone();
    let options = ClientOptions::builder()
        .hosts(hosts.clone())
        .direct_connection(cs.direct_connection)
        .repl_set_name(cs.replica_set.clone())
        .credential(cs.credential.clone())
        .tls(cs.tls.clone())
        .app_name("compat-typed-builder".to_string())
        .max_pool_size(2)
        .server_selection_timeout(Duration::from_secs(10))
        .command_event_handler(EventHandler::callback(move |event| {
            if let CommandEvent::Started(e) = event {
                seen.lock().unwrap().push(e.command_name);
            }
        }))
        .build();
    assert_eq!(options.max_pool_size, Some(2));
    let defaults = ClientOptions::builder().build();
    assert_eq!(defaults.hosts, vec![ServerAddress::Tcp { host: "localhost".to_string(), port: Some(27017) }]);
    assert!(defaults.app_name.is_none());

    let client = Client::with_options(options)?;
    let coll = client.database(db).collection::<Document>("typed");
    coll.insert_one(doc! { "x": 1 }).await?;
    assert_eq!(coll.find_one(doc! {}).await?.and_then(|d| d.get_i32("x").ok()), Some(1));
    client.database(db).drop().await?;
    // Events are delivered off the operation's path: wait for them.
    for _ in 0..100 {
        if started.lock().unwrap().iter().any(|c| c == "find") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let names = started.lock().unwrap().clone();
    assert!(names.iter().any(|c| c == "insert") && names.iter().any(|c| c == "find"), "{names:?}");
    Ok(())
}
