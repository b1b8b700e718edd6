//! The Atlas Search index commands: `createSearchIndexes`, `updateSearchIndex` and
//! `dropSearchIndex`.

use bson::{doc, Document};

use super::super::options::search_index::SearchIndexModel;
use super::admin::AdminWrite;
use super::Namespace;
use crate::error::{Error, Result};

/// What a search index command does. Search index commands take no read or write concern
/// (index-management spec), and need an Atlas deployment: other servers refuse them.
pub(crate) enum SearchIndexCommand {
    Create(Vec<SearchIndexModel>),
    Update { name: String, definition: Document },
    Drop { name: String },
}

/// The command of `command` on the collection `ns`.
pub(crate) fn search_index(ns: Namespace<'_>, command: SearchIndexCommand) -> Result<AdminWrite> {
    let (name, command) = match command {
        SearchIndexCommand::Create(models) => {
            let indexes: Vec<Document> = models
                .iter()
                .map(crate::bson_compat::serialize_to_document)
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| Error::serialization(e.to_string()))?;
            ("createSearchIndexes", doc! {"createSearchIndexes": ns.coll, "indexes": indexes})
        }
        SearchIndexCommand::Update { name, definition } => {
            ("updateSearchIndex", doc! {"updateSearchIndex": ns.coll, "name": name, "definition": definition})
        }
        SearchIndexCommand::Drop { name } => {
            ("dropSearchIndex", doc! {"dropSearchIndex": ns.coll, "name": name})
        }
    };
    Ok(AdminWrite { db: ns.db.to_string(), name, command })
}
