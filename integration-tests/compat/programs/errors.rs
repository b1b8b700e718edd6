//! Matching errors as the official documentation does: `*e.kind` against `ErrorKind` with its
//! payloads, labels, and custom errors.

use mongodb::bson::{doc, Document};
use mongodb::error::{CommandError, Error, ErrorKind, WriteError, WriteFailure};
use mongodb::{Client, Collection};

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let client = Client::with_uri_str(uri).await?;
    let coll: Collection<Document> = client.database(db).collection("people");
    coll.drop().await?;
    coll.insert_one(doc! { "_id": 1, "name": "Ada" }).await?;

    // A duplicate key is a write error with code 11000.
    let e = coll.insert_one(doc! { "_id": 1, "name": "Grace" }).await.unwrap_err();
    match *e.kind {
        ErrorKind::Write(WriteFailure::WriteError(WriteError { code, ref message, .. })) => {
            assert_eq!(code, 11000);
            assert!(!message.is_empty());
        }
        ref other => panic!("expected a write error, got {other:?}"),
    }
    assert!(!e.contains_label("TransientTransactionError"));

    // insert_many, unordered: the other documents go in; the error lists the failed ones.
    let docs = vec![doc! { "_id": 2 }, doc! { "_id": 1 }, doc! { "_id": 3 }];
    let e = coll.insert_many(docs).ordered(false).await.unwrap_err();
    match *e.kind {
        ErrorKind::InsertMany(ref failure) => {
            let write_errors = failure.write_errors.as_ref().expect("write errors");
            assert_eq!(write_errors.len(), 1);
            assert_eq!((write_errors[0].index, write_errors[0].code), (1, 11000));
            assert!(failure.write_concern_error.is_none());
        }
        ref other => panic!("expected an insert_many error, got {other:?}"),
    }
    assert_eq!(coll.count_documents(doc! {}).await?, 3);

    // A command the server refuses is a command error with the server's code.
    let e = client.database(db).run_command(doc! { "noSuchCommand": 1 }).await.unwrap_err();
    match *e.kind {
        ErrorKind::Command(CommandError { code, .. }) => assert_eq!(code, 59),
        ref other => panic!("expected a command error, got {other:?}"),
    }

    // Custom errors carry any value through a `Result<_, Error>`.
    let custom = Error::custom(42_u32);
    assert_eq!(custom.get_custom::<u32>(), Some(&42));
    assert!(custom.get_custom::<String>().is_none());

    coll.drop().await?;
    Ok(())
}
