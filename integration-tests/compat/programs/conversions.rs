//! The small shapes a service leans on: a connection string written back and edited, options
//! deserialized and compared, the conversions between options types (`Acknowledgment`,
//! `WriteConcern`, `ReadPreference`, `SelectionCriteria`), pool events re-wrapped with
//! `CmapEvent::from`, mechanism names parsed and credentials checked, database options from
//! their builder, and write models serialized.

use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mongodb::bson::{doc, Document};
use mongodb::event::cmap::CmapEvent;
use mongodb::event::EventHandler;
use mongodb::options::{
    Acknowledgment, AuthMechanism, ClientOptions, ConnectionString, Credential, DatabaseOptions, FindOptions,
    InsertOneModel, ReadConcern, ReadPreference, SelectionCriteria, ServerApiVersion, WriteConcern,
    WriteModel,
};
use mongodb::Client;

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    connection_strings()?;
    conversions()?;
    credentials()?;

    // Pool events, each re-wrapped into the enum it came out of.
    let rewrapped = Arc::new(AtomicUsize::new(0));
    let count = rewrapped.clone();
    let mut options = ClientOptions::parse(uri).await?;
    options.cmap_event_handler = Some(EventHandler::callback(move |event| {
        let again = match event {
            CmapEvent::ConnectionCheckedOut(e) => CmapEvent::from(e),
            CmapEvent::ConnectionCheckedIn(e) => e.into(),
            _ => return,
        };
        assert!(matches!(again, CmapEvent::ConnectionCheckedOut(_) | CmapEvent::ConnectionCheckedIn(_)));
        count.fetch_add(1, Ordering::SeqCst);
    }));
    let client = Client::with_options(options)?;

    // A database's options from their builder, as its collections inherit them.
    let database = client.database_with_options(
        db,
        DatabaseOptions::builder()
            .read_concern(ReadConcern::local())
            .write_concern(WriteConcern::from(Acknowledgment::from(1u32)))
            .build(),
    );
    let coll = database.collection::<Document>("conversions");
    assert_eq!(coll.write_concern().and_then(|w| w.w.clone()), Some(Acknowledgment::Nodes(1)));
    coll.insert_one(doc! { "_id": 1 }).await?;
    assert_eq!(coll.count_documents(doc! {}).await?, 1);
    database.drop().await?;
    client.shutdown().await;
    assert!(rewrapped.load(Ordering::SeqCst) >= 2, "checked out and in at least once");
    Ok(())
}

/// A connection string parsed, edited, written back and parsed again; options deserialized
/// from a document and compared with built ones.
fn connection_strings() -> mongodb::error::Result<()> {
    let mut cs =
        ConnectionString::parse("mongodb://db1:27018,db2/app?maxPoolSize=5&uuidRepresentation=javaLegacy")?;
    assert_eq!(cs.uuid_representation, Some(mongodb::bson::UuidRepresentation::JavaLegacy));
    cs.max_pool_size = Some(9);
    cs.app_name = Some("edited".to_string());
    let again = ConnectionString::parse(cs.to_string())?;
    assert_eq!((again.max_pool_size, again.app_name.as_deref()), (Some(9), Some("edited")));
    assert_eq!(again.uuid_representation, cs.uuid_representation);
    assert_eq!(again.default_database.as_deref(), Some("app"));

    let read: ClientOptions = crate::bson_compat::deserialize_from_document(doc! {
        "appName": "svc", "maxPoolSize": 7, "retryWrites": false,
    })
    .expect("options deserialize");
    let built =
        ClientOptions::builder().app_name("svc".to_string()).max_pool_size(7).retry_writes(false).build();
    assert!(read == built, "the same options compare equal");
    Ok(())
}

/// The conversions between options types.
fn conversions() -> mongodb::error::Result<()> {
    assert_eq!(Acknowledgment::from("majority"), Acknowledgment::Majority);
    assert_eq!(Acknowledgment::from("dc-aware".to_string()), Acknowledgment::Custom("dc-aware".to_string()));
    let majority = WriteConcern::from(Acknowledgment::Majority);
    assert_eq!(majority.w, Some(Acknowledgment::Majority));
    assert_eq!(majority.journal, None);
    let criteria = SelectionCriteria::from(ReadPreference::secondary(None));
    assert!(matches!(criteria, SelectionCriteria::ReadPreference(ReadPreference::Secondary { .. })));
    assert!(matches!(ReadPreference::primary(), ReadPreference::Primary));
    assert!(matches!(ReadPreference::nearest(None), ReadPreference::Nearest { options: None }));
    assert_eq!(ServerApiVersion::V1.to_string(), "1");

    // Write models serialize (untagged, each as its model).
    let model = WriteModel::InsertOne(
        InsertOneModel::builder()
            .namespace(mongodb::Namespace::new("db", "coll"))
            .document(doc! { "a": 1 })
            .build(),
    );
    let written = crate::bson_compat::serialize_to_document(&model).expect("a write model serializes");
    assert_eq!(written.get_document("document").ok(), Some(&doc! { "a": 1 }));

    // A deprecated option keeps its shape (no supported server accepts it).
    #[allow(deprecated)]
    let legacy = FindOptions::builder().max_scan(10u64).build();
    #[allow(deprecated)]
    let scan = legacy.max_scan;
    assert_eq!(scan, Some(10));
    Ok(())
}

/// Mechanism names parsed; credentials checked against a mechanism; properties as a document.
fn credentials() -> mongodb::error::Result<()> {
    let scram = AuthMechanism::from_str("SCRAM-SHA-256")?;
    assert_eq!(scram, AuthMechanism::ScramSha256);
    let user = Credential::builder().username("ada".to_string()).password("secret".to_string()).build();
    scram.validate_credential(&user)?;
    assert!(scram.validate_credential(&Credential::default()).is_err(), "SCRAM needs a username");
    assert!(AuthMechanism::from_str("NO-SUCH-MECHANISM").is_err());
    let workload = Credential::builder()
        .mechanism(AuthMechanism::MongoDbOidc)
        .mechanism_properties(doc! { "ENVIRONMENT": "test" })
        .build();
    assert_eq!(
        workload.mechanism_properties.as_ref().and_then(|p| p.get_str("ENVIRONMENT").ok()),
        Some("test")
    );
    Ok(())
}
