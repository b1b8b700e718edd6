//! Choosing servers: read preferences as the official enum (with options built by their
//! builder), selection criteria on the client, a handle and an operation, a predicate over
//! `ServerInfo`, and server addresses.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mongodb::bson::{doc, Document};
use mongodb::error::ErrorKind;
use mongodb::options::{
    ClientOptions, CollectionOptions, ReadPreference, ReadPreferenceOptions, SelectionCriteria,
    ServerAddress, TagSet,
};
use mongodb::{Client, Collection, ServerInfo, ServerType};

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    addresses()?;
    let mut options = ClientOptions::parse(uri).await?;
    let secondary_preferred = ReadPreference::SecondaryPreferred {
        options: Some(
            ReadPreferenceOptions::builder()
                .tag_sets(vec![TagSet::new()])
                .max_staleness(Duration::from_secs(120))
                .build(),
        ),
    };
    options.selection_criteria = Some(SelectionCriteria::ReadPreference(secondary_preferred.clone()));
    options.server_selection_timeout = Some(Duration::from_millis(500));
    let client = Client::with_options(options)?;
    assert_eq!(client.selection_criteria(), Some(&SelectionCriteria::ReadPreference(secondary_preferred)));

    let coll: Collection<Document> = client.database(db).collection("servers");
    coll.drop().await?;
    coll.insert_one(doc! { "_id": 1 }).await?;

    // A handle that reads from the primary only.
    let primary = CollectionOptions::builder()
        .selection_criteria(SelectionCriteria::ReadPreference(ReadPreference::Primary))
        .build();
    let on_primary = client.database(db).collection_with_options::<Document>("servers", primary);
    assert!(on_primary.selection_criteria().is_some_and(|c| *c == ReadPreference::Primary.into()));
    assert_eq!(on_primary.count_documents(doc! {}).await?, 1);

    // A predicate sees each data-bearing server; the read goes to one it accepts.
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let data_bearing = SelectionCriteria::Predicate(Arc::new(move |info: &ServerInfo| {
        counter.fetch_add(1, Ordering::SeqCst);
        matches!(info.address(), ServerAddress::Tcp { .. })
            && matches!(
                info.server_type(),
                ServerType::RsPrimary | ServerType::Standalone | ServerType::Mongos
            )
    }));
    let found = coll.find_one(doc! { "_id": 1 }).selection_criteria(data_bearing).await?;
    assert_eq!(found, Some(doc! { "_id": 1 }));
    assert!(seen.load(Ordering::SeqCst) > 0);

    // A predicate that accepts nothing ends in a server selection error.
    let nothing = SelectionCriteria::Predicate(Arc::new(|_: &ServerInfo| false));
    let error = coll.find_one(doc! {}).selection_criteria(nothing).await.expect_err("no server is suitable");
    assert!(matches!(*error.kind, ErrorKind::ServerSelection { .. }), "{error}");
    coll.drop().await?;
    Ok(())
}

/// Addresses parse, print and compare as the official driver's do.
fn addresses() -> mongodb::error::Result<()> {
    let parsed = ServerAddress::parse("localhost:27018")?;
    match &parsed {
        ServerAddress::Tcp { host, port } => assert_eq!((host.as_str(), *port), ("localhost", Some(27018))),
        other => panic!("not a TCP address: {other}"),
    }
    assert_eq!(parsed.to_string(), "localhost:27018");
    let default_port = ServerAddress::Tcp { host: "localhost".to_string(), port: None };
    assert_eq!(ServerAddress::parse("localhost")?, default_port);
    assert_eq!(default_port.to_string(), "localhost:27017");
    assert!(ServerAddress::parse("localhost:0").is_err());
    Ok(())
}
