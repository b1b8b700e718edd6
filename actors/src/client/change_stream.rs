//! Change streams: `watch` on a client, a database or a collection opens an `aggregate` whose
//! first stage is `$changeStream`, and [`ChangeStream`] reads its events as a [`Stream`],
//! caching the resume token and resuming once after each resumable error (change-streams
//! spec).
//!
//! ```no_run
//! # async fn example(coll: actors::Collection<bson::Document>) -> actors::Result<()> {
//! use bson::doc;
//! let mut stream = coll.watch().pipeline([doc! {"$match": {"operationType": "insert"}}]).await?;
//! while let Some(event) = stream.next_if_any().await? {
//!     println!("{:?} {:?}", event.operation_type, event.full_document);
//! }
//! let token = stream.resume_token(); // store it to resume later with `resume_after`
//! # let _ = token;
//! # Ok(())
//! # }
//! ```

use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bson::{doc, Bson, DateTime, Document, Timestamp};
use futures_util::future::BoxFuture;
use futures_util::Stream;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use selection::ReadPreference;

use super::action::{decode, into_future, option_setters};
use super::collection::Handle;
use super::concern::{duration_ms, ReadConcern};
use super::cursor::{Cursor, OpenCursor};
use super::database::Database;
use super::inner::{Client, BACKGROUND_TIMEOUT};
use super::op_options::{check_max_await, cursor_mode, CursorType};
use super::ops::aggregate;
use super::ops::append;
use super::options::crud::Collation;
use super::options::handle::CollectionOptions;
use super::session::ClientSession;
use crate::{Error, Result};

/// A change stream's resume token: the `_id` of an event or a batch's
/// `postBatchResumeToken`. Opaque; give it back as
/// [`resume_after`](ChangeStreamOptions::resume_after) or
/// [`start_after`](ChangeStreamOptions::start_after) to go on where a stream stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ResumeToken(Bson);

impl ResumeToken {
    /// The token as the server sent it.
    pub fn as_bson(&self) -> &Bson {
        &self.0
    }
}

impl From<Document> for ResumeToken {
    fn from(d: Document) -> Self {
        ResumeToken(Bson::Document(d))
    }
}

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
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
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
    pub read_preference: Option<ReadPreference>,
    /// The `timeoutMS` of the opening `aggregate` and of each `next` (`None`: the handle's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
}

/// The kind of a change event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum OperationType {
    /// A document was inserted.
    Insert,
    /// A document was updated with operators.
    Update,
    /// A document was replaced.
    Replace,
    /// A document was deleted.
    Delete,
    /// A collection was dropped.
    Drop,
    /// A collection was renamed.
    Rename,
    /// A database was dropped.
    DropDatabase,
    /// The stream cannot go on (its collection or database went away).
    Invalidate,
    /// A collection was created (`show_expanded_events`).
    Create,
    /// Indexes were created (`show_expanded_events`).
    CreateIndexes,
    /// Indexes were dropped (`show_expanded_events`).
    DropIndexes,
    /// A collection's options changed (`show_expanded_events`).
    Modify,
    /// A collection was sharded (`show_expanded_events`).
    ShardCollection,
    /// Any other event type, as the server named it.
    #[serde(untagged)]
    Other(String),
}

/// The database and collection of an event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChangeNamespace {
    /// The database.
    pub db: String,
    /// The collection (`None` for database events).
    pub coll: Option<String>,
}

/// What an update changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UpdateDescription {
    /// The fields set, with their new values.
    pub updated_fields: Document,
    /// The fields removed.
    pub removed_fields: Vec<String>,
    /// Arrays shortened, with their new sizes.
    pub truncated_arrays: Option<Vec<TruncatedArray>>,
    /// Field paths whose dotted form is ambiguous (`show_expanded_events`).
    pub disambiguated_paths: Option<Document>,
}

/// An array an update shortened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TruncatedArray {
    /// The array's field path.
    pub field: String,
    /// Its new length.
    pub new_size: i32,
}

/// One change event, with the full documents as `T`s.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ChangeStreamEvent<T> {
    /// The event's resume token.
    #[serde(rename = "_id")]
    pub id: ResumeToken,
    /// What happened.
    pub operation_type: OperationType,
    /// Where it happened.
    pub ns: Option<ChangeNamespace>,
    /// A rename's new namespace.
    pub to: Option<ChangeNamespace>,
    /// The session of the write, when it ran in a transaction.
    pub lsid: Option<Document>,
    /// The transaction number of the write, when it ran in a transaction.
    pub txn_number: Option<i64>,
    /// The `_id` (and shard key) of the document.
    pub document_key: Option<Document>,
    /// An update's changes.
    pub update_description: Option<UpdateDescription>,
    /// The cluster time of the write.
    pub cluster_time: Option<Timestamp>,
    /// The wall clock time of the write (MongoDB 6.0+).
    pub wall_time: Option<DateTime>,
    /// The document (inserts and replaces; updates with [`FullDocumentType`]).
    pub full_document: Option<T>,
    /// The document before the change ([`FullDocumentBeforeChangeType`]).
    pub full_document_before_change: Option<T>,
}

/// What a change stream watches, owned so that it can resume.
#[derive(Clone, Debug)]
struct Target {
    db: Database,
    /// `None`: every collection of the database (or, with `cluster`, of the deployment).
    coll: Option<String>,
    settings: CollectionOptions,
    /// The whole deployment (`allChangesForCluster` on `admin`).
    cluster: bool,
}

/// Where a change stream (re)starts.
#[derive(Clone, Debug, Default)]
struct Start {
    resume_after: Option<ResumeToken>,
    start_after: Option<ResumeToken>,
    start_at_operation_time: Option<Timestamp>,
}

/// The opening `aggregate` of a stream, to run again when resuming.
#[derive(Debug)]
struct Spec {
    target: Target,
    pipeline: Vec<Document>,
    options: ChangeStreamOptions,
    /// The `timeoutMS` (inherited from the handle).
    timeout: Option<Duration>,
}

impl Spec {
    /// The `$changeStream` stage from `start`.
    fn stage(&self, start: &Start) -> Result<Document> {
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
    fn aggregate(&self, start: &Start) -> Result<aggregate::Aggregate> {
        let t = &self.target;
        let handle = Handle { db: &t.db, coll: t.coll.as_deref().unwrap_or(""), settings: &t.settings };
        let read = handle.read_on(
            self.options.read_preference.clone(),
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

    fn open_cursor(&self) -> Result<OpenCursor> {
        let mode = cursor_mode(self.timeout, None, Some(CursorType::TailableAwait))?;
        Ok(OpenCursor { timeout: self.timeout, mode, batch_size: self.options.batch_size })
    }

    fn client(&self) -> &Client {
        self.target.db.client()
    }
}

/// An option value as BSON.
fn to_bson<V: Serialize>(value: &V) -> Result<Bson> {
    bson::serialize_to_bson(value).map_err(|e| Error::BsonSerialization { message: e.to_string() })
}

/// A `watch`: see [`Collection::watch`](super::Collection::watch). Gives a
/// [`ChangeStream`] of [`ChangeStreamEvent<T>`]s.
#[must_use = "an operation does nothing until it is awaited"]
pub struct Watch<'a, T = Document> {
    target: Target,
    pipeline: Vec<Document>,
    options: ChangeStreamOptions,
    session: Option<&'a mut ClientSession>,
    _type: PhantomData<fn() -> T>,
}

impl<'a, T> Watch<'a, T> {
    fn new(target: Target) -> Self {
        Watch {
            target,
            pipeline: Vec::new(),
            options: ChangeStreamOptions::default(),
            session: None,
            _type: PhantomData,
        }
    }

    /// The stages after `$changeStream` (`$match`, `$project`, ... on the events).
    pub fn pipeline(mut self, pipeline: impl IntoIterator<Item = Document>) -> Self {
        self.pipeline = pipeline.into_iter().collect();
        self
    }

    option_setters!(options: ChangeStreamOptions;
        full_document: FullDocumentType,
        full_document_before_change: FullDocumentBeforeChangeType,
        resume_after => ResumeToken,
        start_after => ResumeToken,
        start_at_operation_time: Timestamp,
        show_expanded_events: bool,
        batch_size: u32,
        max_await_time: Duration,
        collation: Collation,
        comment => Bson,
        read_concern: ReadConcern,
        read_preference: ReadPreference,
        timeout: Duration,
    );

    /// Events whose full documents are `U`s.
    pub fn with_type<U>(self) -> Watch<'a, U> {
        let Watch { target, pipeline, options, session, .. } = self;
        Watch { target, pipeline, options, session, _type: PhantomData }
    }

    async fn execute(self) -> Result<ChangeStream<ChangeStreamEvent<T>>> {
        let Watch { target, pipeline, options, session, .. } = self;
        let timeout = super::timeout::inherit(target.settings.timeout, options.timeout);
        check_max_await(timeout, options.max_await_time)?;
        let start = Start {
            resume_after: options.resume_after.clone(),
            start_after: options.start_after.clone(),
            start_at_operation_time: options.start_at_operation_time,
        };
        let spec = Arc::new(Spec { target, pipeline, options, timeout });
        let op = spec.aggregate(&start)?;
        let raw = spec.open_cursor()?.run(spec.client(), op, session).await?;
        let cursor = setup(&spec, Cursor::new(raw));
        // The token to resume from before any event: the one given, else the first batch's.
        let mut token = spec.options.start_after.clone().or_else(|| spec.options.resume_after.clone());
        let mut operation_time = spec.options.start_at_operation_time;
        if cursor.batch_is_empty() {
            if let Some(t) = cursor.post_batch_resume_token() {
                token = Some(ResumeToken::from(t.clone()));
            } else if token.is_none() && operation_time.is_none() {
                operation_time = cursor.operation_time();
            }
        }
        Ok(ChangeStream {
            cursor: Some(cursor),
            spec,
            token,
            returned_any: false,
            operation_time,
            resuming: None,
            resume_next: false,
            _type: PhantomData,
        })
    }
}

into_future!(Watch<'a, T> => ChangeStream<ChangeStreamEvent<T>>, where T: Send + Sync + 'static);

/// The `getMore` options of a stream's cursor.
fn setup(spec: &Spec, mut cursor: Cursor<Document>) -> Cursor<Document> {
    cursor.configure(spec.options.max_await_time, spec.options.comment.clone());
    cursor
}

impl<T> super::Collection<T> {
    /// A change stream of this collection's events (MongoDB replica sets and sharded
    /// clusters; a standalone server refuses it). Set the pipeline with
    /// [`Watch::pipeline`].
    pub fn watch(&self) -> Watch<'_, T> {
        let h = self.handle();
        Watch::new(Target {
            db: h.db.clone(),
            coll: Some(h.coll.to_string()),
            settings: h.settings.clone(),
            cluster: false,
        })
    }
}

impl Database {
    /// A change stream of the events of every collection of this database.
    pub fn watch(&self) -> Watch<'_, Document> {
        Watch::new(Target { db: self.clone(), coll: None, settings: self.settings().clone(), cluster: false })
    }
}

impl Client {
    /// A change stream of the events of every database of the deployment (an `aggregate` on
    /// `admin` with `allChangesForCluster`).
    pub fn watch(&self) -> Watch<'_, Document> {
        let db = self.database("admin");
        let settings = db.settings().clone();
        Watch::new(Target { db, coll: None, settings, cluster: true })
    }
}

/// A resume in flight: the new cursor, or the error of its `aggregate`.
type Resuming = BoxFuture<'static, Result<Cursor<Document>>>;

/// A change stream: a [`Stream`] of `T`s ([`ChangeStreamEvent<D>`] unless
/// [`with_type`](Self::with_type) changed it).
///
/// The stream caches the resume token of the last event it returned (or of the last batch,
/// `postBatchResumeToken`), and after a resumable error (a network error, `CursorNotFound`,
/// a server error labelled `ResumableChangeStreamError`) it kills its cursor and opens a new
/// one from that token, once per error. After a `timeoutMS` expiry the stream stays usable:
/// the next call resumes. Use [`next_if_any`](Self::next_if_any) to poll without waiting for
/// an event, and [`resume_token`](Self::resume_token) to store where to start next time.
pub struct ChangeStream<T = ChangeStreamEvent<Document>> {
    /// `None` while a resume is in flight, or once the stream ended.
    cursor: Option<Cursor<Document>>,
    spec: Arc<Spec>,
    token: Option<ResumeToken>,
    /// An event was returned (a resume then uses `resumeAfter`, not `startAfter`).
    returned_any: bool,
    /// The `startAtOperationTime` to resume from when there is no token.
    operation_time: Option<Timestamp>,
    resuming: Option<Resuming>,
    /// The last call timed out: the next one resumes first.
    resume_next: bool,
    _type: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for ChangeStream<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeStream")
            .field("cursor", &self.cursor)
            .field("resume_token", &self.token)
            .finish_non_exhaustive()
    }
}

impl<T> ChangeStream<T> {
    /// The token a resume would start after: store it, and pass it as
    /// [`resume_after`](ChangeStreamOptions::resume_after) to go on later.
    pub fn resume_token(&self) -> Option<ResumeToken> {
        self.token.clone()
    }

    /// Whether the stream may return more events (false once invalidated or closed).
    pub fn is_alive(&self) -> bool {
        self.resuming.is_some() || self.resume_next || self.cursor.as_ref().is_some_and(Cursor::has_next)
    }

    /// The same stream, reading `U`s (`Document` for the events as they come).
    pub fn with_type<U>(self) -> ChangeStream<U> {
        let ChangeStream { cursor, spec, token, returned_any, operation_time, resuming, resume_next, .. } =
            self;
        ChangeStream {
            cursor,
            spec,
            token,
            returned_any,
            operation_time,
            resuming,
            resume_next,
            _type: PhantomData,
        }
    }

    /// Closes the stream: its cursor is killed on the server (errors ignored).
    pub async fn close(mut self) {
        if let Some(r) = self.resuming.take() {
            if let Ok(c) = r.await {
                self.cursor = Some(c);
            }
        }
        if let Some(c) = self.cursor.take() {
            c.close(None).await;
        }
    }

    /// Caches the batch's `postBatchResumeToken` once its events are all returned.
    fn cache_batch_token(&mut self) {
        if let Some(c) = self.cursor.as_ref().filter(|c| c.batch_is_empty()) {
            if let Some(t) = c.post_batch_resume_token() {
                self.token = Some(ResumeToken::from(t.clone()));
            }
        }
    }

    /// Starts a resume: kill the old cursor, then `aggregate` again from the cached token
    /// (or operation time), with the same session, within the call's `deadline` (`None`: a
    /// new call, a full `timeoutMS`).
    fn start_resume(&mut self, deadline: Option<Option<tokio::time::Instant>>) {
        let mut old = self.cursor.take();
        let session = old.as_mut().and_then(Cursor::take_session_for_resume);
        let start = match &self.token {
            Some(t) if self.spec.options.start_after.is_some() && !self.returned_any => {
                Start { start_after: Some(t.clone()), ..Start::default() }
            }
            Some(t) => Start { resume_after: Some(t.clone()), ..Start::default() },
            None => Start { start_at_operation_time: self.operation_time, ..Start::default() },
        };
        let spec = Arc::clone(&self.spec);
        let deadline = deadline.unwrap_or_else(|| super::timeout::deadline(spec.timeout));
        let resume = async move {
            if let Some(old) = old {
                old.close(None).await;
            }
            let op = spec.aggregate(&start)?;
            let open = spec.open_cursor()?;
            let raw = open.run_with_server_session(spec.client(), op, session, deadline).await?;
            let mut cursor = setup(&spec, Cursor::new(raw));
            // The call goes on with the new cursor, under the same deadline.
            cursor.set_call_deadline(Some(deadline));
            Ok(cursor)
        };
        self.resuming = Some(match deadline {
            Some(_) => Box::pin(resume),
            // Without timeoutMS a resume (the old cursor's killCursors, the new aggregate) is
            // still bounded: an unresponsive server cannot hold `next` for ever. Like a CSOT
            // timeout, the error leaves the stream to resume again on the next call.
            None => Box::pin(async move {
                match tokio::time::timeout(BACKGROUND_TIMEOUT, resume).await {
                    Ok(r) => r,
                    Err(_) => Err(Error::Timeout {
                        message: format!(
                            "the change stream's resume did not finish within {BACKGROUND_TIMEOUT:?} (no timeoutMS)"
                        ),
                        source: None,
                    }),
                }
            }),
        });
    }

    /// The next event document: `once` returns `None` after one empty batch.
    fn poll_next_event(&mut self, cx: &mut Context<'_>, once: bool) -> Poll<Option<Result<Document>>> {
        loop {
            if self.resume_next && self.resuming.is_none() {
                self.resume_next = false;
                self.start_resume(None);
            }
            if let Some(r) = self.resuming.as_mut() {
                match r.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(result) => {
                        self.resuming = None;
                        match result {
                            Ok(c) => {
                                self.cursor = Some(c);
                                self.cache_batch_token();
                            }
                            Err(e) => {
                                if e.kind() == crate::ErrorKind::Timeout {
                                    self.resume_next = true;
                                }
                                return Poll::Ready(Some(Err(e)));
                            }
                        }
                    }
                }
            }
            let Some(cursor) = self.cursor.as_mut() else { return Poll::Ready(None) };
            match cursor.poll_next_document_keeping_deadline(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(d))) => {
                    let Some(id) = d.get("_id").cloned() else {
                        // Without the token the stream could not resume: end it.
                        let address = cursor.address().clone();
                        if let Some(c) = self.cursor.take() {
                            drop(c);
                        }
                        return Poll::Ready(Some(Err(Error::InvalidResponse {
                            address,
                            message: "Cannot provide resume functionality when the resume token is missing."
                                .into(),
                        })));
                    };
                    self.token = Some(ResumeToken(id));
                    self.cache_batch_token();
                    self.returned_any = true;
                    return Poll::Ready(Some(Ok(d)));
                }
                Poll::Ready(None) => {
                    self.cache_batch_token();
                    let alive = self.cursor.as_ref().is_some_and(|c| c.id() != 0);
                    if once || !alive {
                        if let Some(c) = self.cursor.as_mut() {
                            c.reset_deadline();
                        }
                        return Poll::Ready(None);
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    self.cache_batch_token();
                    let deadline = self.cursor.as_ref().and_then(Cursor::call_deadline);
                    if let Some(c) = self.cursor.as_mut() {
                        c.reset_deadline();
                    }
                    if e.kind() == crate::ErrorKind::Timeout {
                        // CSOT: the stream stays usable; the next call resumes.
                        self.resume_next = true;
                        return Poll::Ready(Some(Err(e)));
                    }
                    if resumable(&e, self.spec.client()) {
                        self.start_resume(deadline);
                        continue;
                    }
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }
}

/// Server error codes that are resumable on servers older than 4.4 (wire version 9).
const RESUMABLE_CODES: [i32; 17] =
    [6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436, 63, 150, 13388, 234, 133];

/// Whether a `getMore` error lets the stream resume (change-streams spec, "Resumable
/// Error").
fn resumable(e: &Error, client: &Client) -> bool {
    let Some(server) = e.server_error() else {
        // Not a server error: a network error, or the client gave up.
        return !matches!(
            e.kind(),
            crate::ErrorKind::InvalidOptions
                | crate::ErrorKind::BsonDeserialization
                | crate::ErrorKind::ActorStopped
        );
    };
    let code = server.code.unwrap_or(0);
    if code == 43 || e.has_label("ResumableChangeStreamError") {
        return true;
    }
    let old_server = e.address().is_some_and(|a| {
        let snapshot = client.inner.topology.snapshot();
        let wire = snapshot.description.servers().find(|s| &s.address == a).and_then(|s| s.max_wire_version);
        wire.is_some_and(|w| w < 9)
    });
    old_server && RESUMABLE_CODES.contains(&code)
}

impl<T: DeserializeOwned + 'static> ChangeStream<T> {
    /// The next event, waiting for one (each `getMore` waits `max_await_time` on the server);
    /// `None` once the stream is invalidated or closed.
    pub async fn next(&mut self) -> Option<Result<T>> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }

    /// The next event if one comes within one `getMore` (`tryNext`): `None` when there is
    /// none yet. The resume token moves on even then.
    pub async fn next_if_any(&mut self) -> Result<Option<T>> {
        let next = std::future::poll_fn(|cx| self.poll_next_event(cx, true)).await;
        next.map(|r| r.and_then(decode)).transpose()
    }
}

impl<T: DeserializeOwned + 'static> Stream for ChangeStream<T> {
    type Item = Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<T>>> {
        let this = self.get_mut();
        this.poll_next_event(cx, false).map(|next| next.map(|r| r.and_then(decode)))
    }
}
