//! What a change stream opens, and opens again when it resumes: the `$changeStream` stage
//! and its `aggregate`.

use std::time::Duration;

use bson::{doc, Bson, Document, Timestamp};
use serde::Serialize;

use super::super::collection::Handle;
use super::super::cursor::{Cursor, OpenCursor};
use super::super::database::Database;
use super::super::inner::Client;
use super::super::op_options::{cursor_mode, CursorType};
use super::super::ops::aggregate;
use super::super::ops::append;
use super::super::options::change_stream::ChangeStreamOptions;
use super::super::options::handle::CollectionOptions;
use super::event::ResumeToken;
use crate::error::{Error, Result};

/// What a change stream watches, owned so that it can resume.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub(crate) db: Database,
    /// `None`: every collection of the database (or, with `cluster`, of the deployment).
    pub(crate) coll: Option<String>,
    pub(crate) settings: CollectionOptions,
    /// The whole deployment (`allChangesForCluster` on `admin`).
    pub(crate) cluster: bool,
}

/// Where a change stream (re)starts.
#[derive(Clone, Debug, Default)]
pub(crate) struct Start {
    pub(crate) resume_after: Option<ResumeToken>,
    pub(crate) start_after: Option<ResumeToken>,
    pub(crate) start_at_operation_time: Option<Timestamp>,
}

/// The opening `aggregate` of a stream, to run again when resuming.
#[derive(Debug)]
pub(crate) struct Spec {
    pub(crate) target: Target,
    pub(crate) pipeline: Vec<Document>,
    pub(crate) options: ChangeStreamOptions,
    /// The `timeoutMS` (inherited from the handle).
    pub(crate) timeout: Option<Duration>,
}

impl Spec {
    /// The `$changeStream` stage from `start`.
    pub(crate) fn stage(&self, start: &Start) -> Result<Document> {
        let o = &self.options;
        let mut stage = Document::new();
        if let Some(f) = &o.full_document {
            stage.insert("fullDocument", to_bson(f)?);
        }
        if let Some(f) = &o.full_document_before_change {
            stage.insert("fullDocumentBeforeChange", to_bson(f)?);
        }
        if let Some(t) = &start.resume_after {
            stage.insert("resumeAfter", t.0.clone());
        }
        if let Some(t) = &start.start_after {
            stage.insert("startAfter", t.0.clone());
        }
        if let Some(t) = start.start_at_operation_time {
            stage.insert("startAtOperationTime", t);
        }
        if self.target.cluster {
            stage.insert("allChangesForCluster", true);
        }
        append(&mut stage, "showExpandedEvents", o.show_expanded_events);
        Ok(stage)
    }

    /// The `aggregate` starting at `start`.
    pub(crate) fn aggregate(&self, start: &Start) -> Result<aggregate::Aggregate> {
        let t = &self.target;
        let handle = Handle { db: &t.db, coll: t.coll.as_deref().unwrap_or(""), settings: &t.settings };
        let read = handle.read_on(
            self.options.selection_criteria.clone(),
            self.options.read_concern.as_ref(),
            None,
            self.timeout,
        );
        let mut pipeline = Vec::with_capacity(self.pipeline.len() + 1);
        pipeline.push(doc! {"$changeStream": self.stage(start)?});
        pipeline.extend(self.pipeline.iter().cloned());
        let mut fields = Document::new();
        if let Some(c) = &self.options.collation {
            fields.insert("collation", to_bson(c)?);
        }
        append(&mut fields, "comment", self.options.comment.clone());
        append(&mut fields, "readConcern", read.read_concern);
        let db = if t.cluster { "admin" } else { t.db.name() };
        Ok(aggregate::Aggregate::new(
            (db, t.coll.as_deref()),
            pipeline,
            self.options.batch_size,
            read.criteria,
            fields,
        ))
    }

    pub(crate) fn open_cursor(&self) -> Result<OpenCursor> {
        let mode = cursor_mode(self.timeout, None, Some(CursorType::TailableAwait))?;
        Ok(OpenCursor { timeout: self.timeout, mode, batch_size: self.options.batch_size })
    }

    pub(crate) fn client(&self) -> &Client {
        self.target.db.client()
    }
}

/// An option value as BSON.
fn to_bson<V: Serialize>(value: &V) -> Result<Bson> {
    crate::bson_compat::serialize_to_bson(value).map_err(|e| Error::serialization(e.to_string()))
}

/// The `getMore` options of a stream's cursor.
pub(crate) fn setup(spec: &Spec, mut cursor: Cursor<Document>) -> Cursor<Document> {
    cursor.configure(spec.options.max_await_time, spec.options.comment.clone());
    cursor
}
