//! Sessions and transactions as the official documentation writes them: a started, committed
//! and an aborted transaction, the convenient API with `and_run` (a boxed callback taking a
//! context) and `and_run2` (an async closure), and a causally consistent session.

use futures_util::FutureExt;
use mongodb::bson::{doc, Document};
use mongodb::{Client, ClientSession, ClusterTime, Collection};

/// Runs the program against `uri`, in database `db` (a replica set: transactions).
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let client = Client::with_uri_str(uri).await?;
    let coll: Collection<Document> = client.database(db).collection("accounts");
    coll.drop().await?;
    client.database(db).create_collection("accounts").await?;

    let mut session = client.start_session().await?;
    session.start_transaction().await?;
    coll.insert_one(doc! { "_id": "alice", "balance": 100 }).session(&mut session).await?;
    coll.insert_one(doc! { "_id": "bob", "balance": 0 }).session(&mut session).await?;
    session.commit_transaction().await?;
    assert_eq!(coll.count_documents(doc! {}).await?, 2);

    session.start_transaction().await?;
    coll.insert_one(doc! { "_id": "carol", "balance": 5 }).session(&mut session).await?;
    session.abort_transaction().await?;
    assert_eq!(coll.count_documents(doc! {}).await?, 2);

    session
        .start_transaction()
        .and_run(coll.clone(), |session, coll| async move { transfer(coll, session, 30).await }.boxed())
        .await?;
    session.start_transaction().and_run(coll.clone(), no_op).await?;
    let moved = 20;
    session.start_transaction().and_run2(async |session| transfer(&coll, session, moved).await).await?;
    let bob = coll.find_one(doc! { "_id": "bob" }).await?.expect("bob");
    assert_eq!(bob.get_i32("balance").ok(), Some(50));

    let mut causal = client.start_session().causal_consistency(true).await?;
    coll.update_one(doc! { "_id": "bob" }, doc! { "$inc": { "balance": 1 } }).session(&mut causal).await?;
    let bob = coll.find_one(doc! { "_id": "bob" }).session(&mut causal).await?.expect("bob");
    assert_eq!(bob.get_i32("balance").ok(), Some(51));

    // One session hands its cluster time to another.
    let seen: ClusterTime = causal.cluster_time().cloned().expect("a replica set reports its cluster time");
    let mut other = client.start_session().await?;
    other.advance_cluster_time(&seen);
    assert!(other.cluster_time().is_some_and(|t| *t >= seen));

    coll.drop().await?;
    Ok(())
}

/// Moves `amount` from alice to bob in the session's transaction.
async fn transfer(
    coll: &Collection<Document>,
    session: &mut ClientSession,
    amount: i32,
) -> mongodb::error::Result<()> {
    coll.update_one(doc! { "_id": "alice" }, doc! { "$inc": { "balance": -amount } })
        .session(&mut *session)
        .await?;
    coll.update_one(doc! { "_id": "bob" }, doc! { "$inc": { "balance": amount } })
        .session(&mut *session)
        .await?;
    Ok(())
}

/// A callback as a named function: `and_run` takes `mongodb::BoxFuture`s.
fn no_op<'a>(
    _session: &'a mut ClientSession,
    _coll: &'a mut Collection<Document>,
) -> mongodb::BoxFuture<'a, mongodb::error::Result<()>> {
    Box::pin(async { Ok(()) })
}
