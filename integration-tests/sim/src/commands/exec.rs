//! Which family answers a data command's body: one arm per command name (the families each
//! have a file), run against the store the caller chose (the member's, a transaction's, a
//! snapshot).

use bson::{doc, Document};

use super::aggregate::aggregate;
use super::bulk_write::bulk_write;
use super::context::Ctx;
use super::find::{counts, find};
use super::find_and_modify::find_and_modify;
use super::indexes::indexes;
use super::namespaces::{coll_mod, namespaces, rename_collection};
use super::outcome::Exec;
use super::reply::{atlas_only, CmdError};
use super::write::{delete, insert, update};
use crate::options::ServerVersion;
use crate::state::expr;
use crate::state::oplog::{Op, Ops};
use crate::state::store::Store;
use crate::state::Kind;

/// Executes the command body against `store`.
pub(crate) fn exec(
    ctx: &Ctx<'_>,
    cmd: &Document,
    store: &mut Store,
    ops: &mut Ops,
) -> Result<Exec, CmdError> {
    let db = ctx.db;
    // `let` variables and a command-level collation hold while the command runs.
    let _scope = expr::scope(cmd.get_document("let").ok(), cmd.get_document("collation").ok())?;
    match ctx.name {
        "insert" => insert(ctx, cmd, store, ops),
        "find" => find(db, cmd, store),
        "update" => update(ctx, cmd, store, ops),
        "delete" => delete(ctx, cmd, store, ops),
        "findAndModify" => find_and_modify(db, cmd, store, ops),
        "count" | "distinct" => counts(ctx, cmd, store),
        "aggregate" => aggregate(db, cmd, store, ops),
        "create" | "drop" | "dropDatabase" | "listDatabases" | "listCollections" => {
            namespaces(ctx, cmd, store, ops)
        }
        "listIndexes" | "createIndexes" | "dropIndexes" => indexes(ctx, cmd, store, ops),
        "collMod" => coll_mod(db, cmd, store, ops),
        "renameCollection" => rename_collection(cmd, store, ops),
        // A mongos shards a collection; the simulated cluster keeps one copy of the data, so
        // only the collection and the change event come of it.
        "shardCollection" if ctx.shared.kind == Kind::Sharded => {
            let ns = cmd
                .get_str("shardCollection")
                .map_err(|_| CmdError::bad("shardCollection needs a namespace"))?;
            let (sdb, scoll) = ns.split_once('.').ok_or_else(|| {
                CmdError::new(73, "InvalidNamespace", format!("Invalid namespace specified '{ns}'"))
            })?;
            let key =
                cmd.get_document("key").cloned().map_err(|_| CmdError::bad("shardCollection needs a key"))?;
            if !store.has_coll(sdb, scoll) {
                store.coll_mut(sdb, scoll);
                ops.push(|| Op::Create { db: sdb.to_owned(), coll: scoll.to_owned() });
            }
            let event = doc! {"operationType": "shardCollection", "operationDescription": {"shardKey": key, "unique": false}};
            ops.push(|| Op::Ddl { db: sdb.to_owned(), coll: scoll.to_owned(), event });
            Ok(Exec::Reply(doc! {"collectionsharded": ns, "ok": 1.0}))
        }
        "createSearchIndexes" | "updateSearchIndex" | "dropSearchIndex" => Err(atlas_only()),
        "bulkWrite" if ctx.shared.version >= ServerVersion::V8_0 => bulk_write(ctx, cmd, store, ops),
        // A mongos checks the sharding metadata; the simulated one is always consistent.
        "checkMetadataConsistency" if ctx.shared.kind == Kind::Sharded => Ok(Exec::Cursor {
            ns: format!("{db}.$cmd.checkMetadataConsistency"),
            docs: Vec::new(),
            batch: None,
            single: false,
        }),
        other => Err(CmdError::new(59, "CommandNotFound", format!("no such command: '{other}'"))),
    }
}
