//! `aggregate`, on a collection or a database. A retryable read, except a pipeline that ends
//! in `$out` or `$merge` (a write to the primary, run once).

use bson::{doc, Bson, Document};

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use super::super::inner::Client;
use super::super::options::crud::AggregateOptions;
use super::append;
use super::cursor_reply::CursorReply;
use super::read_on::common_fields;
use crate::cluster::selection::Criteria;
use crate::error::Result;

/// `aggregate` on a collection, or on a database (`aggregate: 1`), opening a cursor.
pub(crate) struct Aggregate {
    db: String,
    /// The collection; `None`: a database-level pipeline.
    collection: Option<String>,
    pipeline: Vec<Document>,
    batch_size: Option<u32>,
    /// The read's criteria (a pipeline that writes goes to the primary whatever it says).
    criteria: Criteria,
    /// Option fields (`allowDiskUse`, `collation`, `comment`, `hint`, `let`, `maxTimeMS`,
    /// `readConcern`, `writeConcern`...), appended as they are.
    fields: Document,
    /// The pipeline ends in `$out` or `$merge`.
    writes: bool,
    /// A writing pipeline may follow the read preference (every server is 5.0+).
    writes_anywhere: bool,
}

impl Aggregate {
    /// An aggregate of `pipeline` on `collection` of `db` (`None`: the database), with its
    /// option `fields`.
    pub(crate) fn new(
        (db, collection): (&str, Option<&str>),
        pipeline: Vec<Document>,
        batch_size: Option<u32>,
        criteria: Criteria,
        fields: Document,
    ) -> Aggregate {
        Aggregate {
            db: db.to_string(),
            collection: collection.map(str::to_string),
            writes: writes(&pipeline),
            pipeline,
            batch_size,
            criteria,
            fields,
            writes_anywhere: false,
        }
    }

    /// A writing pipeline may run where the read preference says (CRUD spec: when every
    /// server is 5.0 or newer); otherwise it goes to the primary.
    pub(crate) fn writes_anywhere(mut self, allowed: bool) -> Self {
        self.writes_anywhere = allowed;
        self
    }

    /// Whether the pipeline ends in `$out` or `$merge`.
    pub(crate) fn writes(&self) -> bool {
        self.writes
    }
}

/// The fields of an `aggregate` from its options, in the order the CRUD spec lists them, and
/// the read's `maxTimeMS` and `readConcern`, and (a writing pipeline) its `writeConcern`.
pub(crate) fn option_fields(
    options: &AggregateOptions,
    max_time_ms: Option<i64>,
    read_concern: Option<Document>,
    write_concern: Option<Document>,
) -> Document {
    let mut fields = Document::new();
    append(&mut fields, "allowDiskUse", options.allow_disk_use);
    append(&mut fields, "bypassDocumentValidation", options.bypass_document_validation);
    fields.extend(common_fields(
        options.collation.clone(),
        options.hint.clone(),
        options.comment.clone(),
        options.raw_data,
    ));
    append(&mut fields, "let", options.let_vars.clone());
    append(&mut fields, "maxTimeMS", max_time_ms);
    append(&mut fields, "readConcern", read_concern);
    append(&mut fields, "writeConcern", write_concern);
    fields
}

/// Whether a pipeline ending in `$out` or `$merge` may follow a non-primary read preference
/// (CRUD spec): when every known data-bearing server is 5.0 or newer (wire version 13), or
/// behind a load balancer (which needs 5.0). With nothing discovered yet, waits for a server
/// `criteria` allows first.
pub(crate) async fn may_write_anywhere(client: &Client, criteria: &Criteria) -> bool {
    if client.inner.settings.load_balanced {
        return true;
    }
    let known = || {
        let snapshot = client.inner.topology.snapshot();
        let versions: Vec<Option<i32>> = snapshot
            .description
            .servers()
            .filter(|s| s.server_type.is_data_bearing())
            .map(|s| s.max_wire_version)
            .collect();
        versions
    };
    let mut versions = known();
    if versions.is_empty() {
        let request = crate::cluster::selection::SelectionRequest::new(criteria.clone(), "aggregate");
        let _ = client.inner.selector.select(request).await;
        versions = known();
    }
    !versions.is_empty() && versions.iter().all(|w| w.is_some_and(|w| w >= 13))
}

/// Whether `pipeline` ends in `$out` or `$merge` (a write).
pub(crate) fn writes(pipeline: &[Document]) -> bool {
    pipeline.last().and_then(|s| s.keys().next()).is_some_and(|k| k == "$out" || k == "$merge")
}

impl Operation for Aggregate {
    type Output = CursorReply;

    fn shape(&self) -> Shape<'_> {
        if self.writes && self.writes_anywhere {
            Shape::command("aggregate", &self.db, self.criteria.clone()).cursor().reading_concern()
        } else if self.writes {
            Shape::command("aggregate", &self.db, Criteria::Write).cursor().reading_concern()
        } else {
            Shape::read("aggregate", &self.db, self.criteria.clone()).cursor().reading_concern()
        }
    }

    fn build(&mut self) -> Result<Command> {
        let mut cursor = Document::new();
        if !self.writes() {
            append(&mut cursor, "batchSize", self.batch_size.map(i64::from));
        }
        let target = match &self.collection {
            Some(c) => Bson::String(c.clone()),
            None => Bson::Int32(1),
        };
        let pipeline = std::mem::take(&mut self.pipeline);
        let mut command = doc! {"aggregate": target, "pipeline": pipeline, "cursor": cursor};
        command.extend(std::mem::take(&mut self.fields));
        Ok(command.into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<CursorReply> {
        let collection = self.collection.as_deref().unwrap_or("$cmd.aggregate");
        CursorReply::read(out, &self.db, collection)
    }
}
