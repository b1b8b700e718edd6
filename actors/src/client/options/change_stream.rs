//! The options of a change stream (`watch`).

use crate::cluster::selection_criteria::SelectionCriteria;
use std::time::Duration;
use typed_builder::TypedBuilder;

use bson::{doc, Bson, Timestamp};
use serde::{Deserialize, Serialize};

use super::super::change_stream::event::ResumeToken;
use super::super::concern::{duration_ms, ReadConcern};
use super::super::options::crud::Collation;

/// `fullDocument`: what update events carry as `fullDocument`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum FullDocumentType {
    /// The server's default: no full document for updates.
    Default,
    /// The document's current version, looked up when the event is read.
    UpdateLookup,
    /// The post-image, when the collection records them.
    WhenAvailable,
    /// The post-image; the server fails the stream when there is none.
    Required,
    /// A value this client does not know, sent as it is.
    #[serde(untagged)]
    Other(String),
}

/// `fullDocumentBeforeChange`: whether events carry the document's pre-image.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum FullDocumentBeforeChangeType {
    /// The pre-image, when the collection records them.
    WhenAvailable,
    /// The pre-image; the server fails the stream when there is none.
    Required,
    /// No pre-image (the server's default).
    Off,
    /// A value this client does not know, sent as it is.
    #[serde(untagged)]
    Other(String),
}

/// Options of a change stream (`watch`).
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ChangeStreamOptions {
    /// What update events carry as `fullDocument`.
    pub full_document: Option<FullDocumentType>,
    /// Whether events carry the document before the change.
    pub full_document_before_change: Option<FullDocumentBeforeChangeType>,
    /// Start after the event of this token (an invalidate token fails: use `start_after`).
    pub resume_after: Option<ResumeToken>,
    /// Start after the event of this token, which may be an invalidate event's.
    pub start_after: Option<ResumeToken>,
    /// Start with the changes at or after this cluster time.
    pub start_at_operation_time: Option<Timestamp>,
    /// Also report DDL events (`create`, `createIndexes`, `modify`...).
    pub show_expanded_events: Option<bool>,
    /// Events per batch (the first batch and every `getMore`).
    pub batch_size: Option<u32>,
    /// `maxAwaitTimeMS`: how long each `getMore` waits for new events on the server (capped
    /// by the remaining `timeoutMS`; less than a non-zero `timeoutMS`).
    #[serde(rename = "maxAwaitTimeMS", with = "duration_ms")]
    pub max_await_time: Option<Duration>,
    /// String comparison rules of the pipeline.
    pub collation: Option<Collation>,
    /// A comment for the server's logs (also sent on the `getMore`s).
    pub comment: Option<Bson>,
    /// The read concern (default: the handle's).
    pub read_concern: Option<ReadConcern>,
    /// Where to read (default: the handle's); a resume selects a server again with it.
    #[serde(skip)]
    pub selection_criteria: Option<SelectionCriteria>,
    /// The `timeoutMS` of the opening `aggregate` and of each `next` (`None`: the handle's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
}
