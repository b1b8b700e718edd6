//! What the executor runs: the [`Operation`] trait each command of [`super::super::ops`]
//! implements, its [`Shape`] (name, database, selection criteria, retry rules), the prepared
//! [`Op`] with its [`Command`] body, and the server's [`Reply`] as the operation reads it.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use crate::cluster::selection_criteria::SelectionCriteria;
use bson::{Bson, Document, RawDocumentBuf};
use pool::cmap::PooledConnection;
use pool::connection::Connection;
use protocol::wire::DocumentSequence;
use protocol::ServerAddress;

use super::super::session::pool::ServerSession;
use crate::cluster::selection::Criteria;
use crate::error::Result;

/// Wire version of MongoDB 8.0, the first with the `bulkWrite` command.
pub(crate) const WIRE_VERSION_8_0: i32 = 25;

static NEXT_OPERATION_ID: AtomicI64 = AtomicI64::new(1);

/// A fresh operation id, shared by an operation's attempts.
pub(crate) fn next_operation_id() -> i64 {
    NEXT_OPERATION_ID.fetch_add(1, Ordering::Relaxed)
}

/// How an operation may be retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// A retryable read.
    Read,
    /// A retryable write (gets a `txnNumber`).
    Write,
    /// Never retried.
    No,
}

/// One command as a value: the body it sends, where it may run, whether it may be retried,
/// and what its reply means. The operations live in [`super::super::ops`];
/// [`prepare`](Operation::prepare) turns one into the [`Op`] the executor runs
/// ([`super::execute`](crate::client::inner::ClientInner::execute)), and [`handle_reply`](Operation::handle_reply) reads what it
/// answered. Each method is called once: `build` may move the operation's documents out.
pub(crate) trait Operation {
    /// What a successful reply yields.
    type Output;

    /// Its name, database, selection criteria and retry rules.
    fn shape(&self) -> Shape<'_>;

    /// The command body, without the global arguments the executor adds (`$db`, `lsid`,
    /// `txnNumber`, `$clusterTime`, `$readPreference`, CSOT's `maxTimeMS`).
    fn build(&mut self) -> Result<Command>;

    /// Reads a successful reply.
    fn handle_reply(self, out: OpOutput) -> Result<Self::Output>;

    /// The documents the command sends as OP_MSG document sequences (an `insert`'s
    /// `documents`, a `bulkWrite`'s `ops` and `nsInfo`) rather than in its body; called
    /// after [`build`](Self::build).
    fn sequences(&mut self) -> Result<Vec<DocumentSequence>> {
        Ok(Vec::new())
    }

    /// The command the executor runs. Inlined: the `Op` is then built where the executor
    /// keeps it, not copied there.
    #[inline]
    fn prepare(&mut self) -> Result<Op> {
        let Shape {
            name,
            db,
            criteria,
            retry,
            checks_write_errors,
            opens_cursor,
            requires,
            read_concern,
            generic,
        } = self.shape();
        let db = db.to_string();
        let command = self.build()?;
        Ok(Op {
            name,
            db,
            command,
            sequences: self.sequences()?,
            criteria,
            retry,
            check_write: checks_write_errors,
            opens_cursor,
            requires,
            read_concern,
            generic,
            span: Default::default(),
        })
    }
}

/// What an [`Operation`] is, apart from its body: built by the constructor of its kind.
#[derive(Debug, Clone)]
pub(crate) struct Shape<'a> {
    /// The command's name (selection and command-monitoring logs, transaction rules).
    pub name: std::borrow::Cow<'static, str>,
    /// The database the command runs on.
    pub db: &'a str,
    /// Which servers may run it.
    pub criteria: Criteria,
    /// How it may be retried.
    pub retry: Retry,
    /// `writeErrors` or a `writeConcernError` in an `ok: 1` reply fail it.
    pub checks_write_errors: bool,
    /// Its reply may open a cursor (which then keeps the session and, in load-balanced mode,
    /// the connection).
    pub opens_cursor: bool,
    /// The lowest wire version that has the command, and what to say to an older server.
    pub requires: Option<(i32, &'static str)>,
    /// The command takes a `readConcern` (a session's `afterClusterTime` or snapshot time
    /// goes there).
    pub read_concern: bool,
    /// A user's command (`run_command`): an overload retry needs both retryReads and
    /// retryWrites.
    pub generic: bool,
}

impl<'a> Shape<'a> {
    /// A retryable read.
    pub(crate) fn read(name: &'static str, db: &'a str, criteria: Criteria) -> Self {
        Shape { retry: Retry::Read, ..Shape::command(name, db, criteria) }
    }

    /// A retryable write, failed by write errors.
    pub(crate) fn write(name: &'static str, db: &'a str) -> Self {
        Shape { retry: Retry::Write, checks_write_errors: true, ..Shape::command(name, db, Criteria::Write) }
    }

    /// A command sent once, whose reply is taken as it is.
    pub(crate) fn command(
        name: impl Into<std::borrow::Cow<'static, str>>,
        db: &'a str,
        criteria: Criteria,
    ) -> Self {
        Shape {
            name: name.into(),
            db,
            criteria,
            retry: Retry::No,
            checks_write_errors: false,
            opens_cursor: false,
            requires: None,
            read_concern: false,
            generic: false,
        }
    }

    /// This shape, a user's command (client backpressure treats it as a read and a write).
    pub(crate) fn generic(self) -> Self {
        Shape { generic: true, ..self }
    }

    /// This shape, taking a `readConcern` (causal consistency and snapshot reads add to it).
    pub(crate) fn reading_concern(self) -> Self {
        Shape { read_concern: true, ..self }
    }

    /// This shape, refused with [`ErrorKind::IncompatibleServer`](crate::error::ErrorKind::IncompatibleServer) (`why`) before it is sent to a
    /// server older than wire version `wire`.
    pub(crate) fn requires(self, wire: i32, why: &'static str) -> Self {
        Shape { requires: Some((wire, why)), ..self }
    }

    /// This shape, never retried.
    pub(crate) fn once(self) -> Self {
        Shape { retry: Retry::No, ..self }
    }

    /// This shape, opening a cursor.
    pub(crate) fn cursor(self) -> Self {
        Shape { opens_cursor: true, ..self }
    }
}

/// A prepared command, what the executor runs (built by [`Operation::prepare`]).
#[derive(Debug, Clone)]
pub(crate) struct Op {
    /// The command's name, for selection logs.
    pub name: std::borrow::Cow<'static, str>,
    /// The database.
    pub db: String,
    /// The command, without global arguments.
    pub command: Command,
    /// Statements sent as document sequences beside the command; each attempt's message
    /// shares their documents (a retry sends them again).
    pub sequences: Vec<DocumentSequence>,
    /// Read or write.
    pub criteria: Criteria,
    /// Retry rules.
    pub retry: Retry,
    /// `writeErrors`/`writeConcernError` in an `ok: 1` reply are errors.
    pub check_write: bool,
    /// Keep the session and connection when the reply opens a cursor.
    pub opens_cursor: bool,
    /// The lowest wire version that has the command, and what to say to an older server.
    pub requires: Option<(i32, &'static str)>,
    /// The command takes a `readConcern`.
    pub read_concern: bool,
    /// A user's command (`run_command`).
    pub generic: bool,
    /// Its OpenTelemetry span, under which each attempt's command span nests (set by the
    /// executor's entry points; nothing when tracing is off or compiled out).
    pub span: crate::observe::otel::OperationSpan,
}

/// An operation's command body: a `Document`, or the bytes of one that a hot operation
/// (`find_one`) builds directly, skipping the `Document` and its serialization.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Command {
    /// Built as a document (most operations).
    Document(Document),
    /// Built as bytes, with its keys (so that asking for a field scans no bytes).
    Raw(RawDocumentBuf, Vec<&'static str>),
}

impl From<Document> for Command {
    fn from(d: Document) -> Self {
        Command::Document(d)
    }
}

impl Command {
    /// Whether the body has a field `key`.
    pub(crate) fn contains_key(&self, key: &str) -> bool {
        match self {
            Command::Document(d) => d.contains_key(key),
            Command::Raw(_, keys) => keys.contains(&key),
        }
    }

    /// The body's sub-document `key` (converted from bytes for a raw body).
    pub(crate) fn get_document(&self, key: &str) -> Option<std::borrow::Cow<'_, Document>> {
        use std::borrow::Cow;
        match self {
            Command::Document(d) => d.get_document(key).ok().map(Cow::Borrowed),
            Command::Raw(r, keys) if keys.contains(&key) => {
                r.get_document(key).ok().map(|d| Cow::Owned(convert(d)))
            }
            Command::Raw(..) => None,
        }
    }

    /// The body as a document to edit (a raw body is converted once).
    pub(crate) fn document_mut(&mut self) -> &mut Document {
        if let Command::Raw(r, _) = self {
            *self = Command::Document(convert(r));
        }
        match self {
            Command::Document(d) => d,
            Command::Raw(..) => unreachable!("converted above"),
        }
    }

    /// The body as a document (tests and slow paths).
    #[cfg(test)]
    pub(crate) fn to_document(&self) -> Document {
        match self {
            Command::Document(d) => d.clone(),
            Command::Raw(r, _) => convert(r),
        }
    }

    /// The body's bytes, with room for `extra` more.
    pub(super) fn to_bytes(&self, extra: usize) -> crate::error::Result<Vec<u8>> {
        match self {
            Command::Document(d) => {
                let mut bytes = RawDocumentBuf::try_from(d)?.into_bytes();
                bytes.reserve(extra);
                Ok(bytes)
            }
            Command::Raw(r, _) => {
                let mut bytes = Vec::with_capacity(r.as_bytes().len() + extra);
                bytes.extend_from_slice(r.as_bytes());
                Ok(bytes)
            }
        }
    }
}

impl Op {
    /// The collection the command names, for tracing: its first field's string value (a
    /// `getMore`'s `collection`); `None` for a database's command (`aggregate: 1`,
    /// `listCollections: 1`).
    pub(crate) fn collection(&self) -> Option<String> {
        let key = (self.name == "getMore").then_some("collection");
        match &self.command {
            Command::Document(d) => match key {
                Some(k) => d.get_str(k).ok(),
                None => d.iter().next().and_then(|(_, v)| v.as_str()),
            }
            .map(str::to_string),
            Command::Raw(r, _) => match key {
                Some(k) => r.get_str(k).ok(),
                None => r.iter().next().and_then(|e| e.ok()).and_then(|(_, v)| v.as_str()),
            }
            .map(str::to_string),
        }
    }

    /// The command carries `writeConcern: {w: 0}` (without `j: true`): the server will not
    /// say whether it wrote.
    pub(crate) fn unacknowledged(&self) -> bool {
        let Some(wc) = self.command.get_document("writeConcern") else { return false };
        let w0 = matches!(wc.get("w"), Some(Bson::Int32(0)) | Some(Bson::Int64(0)));
        w0 && !wc.get_bool("j").unwrap_or(false)
    }
}

/// A server's reply: its validated bytes, converted to a `Document` only when something
/// reads it as one (a `find_one` takes its document from the bytes; the rest of the reply is
/// never built).
pub(crate) struct Reply {
    raw: RawDocumentBuf,
    document: std::sync::OnceLock<Document>,
}

impl Reply {
    /// `raw` passed the wire layer's structural validation (`protocol::wire`), UTF-8 and
    /// nesting included, so its conversion cannot fail.
    pub(crate) fn new(raw: RawDocumentBuf) -> Reply {
        Reply { raw, document: std::sync::OnceLock::new() }
    }

    /// A reply made here (an unacknowledged write's `{ok: 1}`).
    pub(crate) fn from_document(document: Document) -> Reply {
        let raw = RawDocumentBuf::try_from(&document).unwrap_or_default();
        Reply { raw, document: document.into() }
    }

    /// The bytes.
    pub(crate) fn raw(&self) -> &bson::RawDocument {
        &self.raw
    }

    /// The bytes, owned and shareable.
    pub(crate) fn into_raw(self) -> RawDocumentBuf {
        self.raw
    }

    /// The reply as a `Document`, owned.
    pub(crate) fn into_document(self) -> Document {
        match self.document.into_inner() {
            Some(d) => d,
            None => convert(&self.raw),
        }
    }
}

/// A validated document as a `Document`. Validation makes a failure impossible; should one
/// happen all the same, the bytes are read with invalid UTF-8 replaced, then reported.
pub(crate) fn convert(raw: &bson::RawDocument) -> Document {
    match Document::try_from(raw) {
        Ok(d) => d,
        Err(e) => {
            tracing::error!(target: "mongo_actors::operation", error = %e, "a validated reply did not convert");
            crate::bson_compat::to_document_lossy(raw)
        }
    }
}

impl std::ops::Deref for Reply {
    type Target = Document;

    fn deref(&self) -> &Document {
        self.document.get_or_init(|| convert(&self.raw))
    }
}

impl std::ops::DerefMut for Reply {
    fn deref_mut(&mut self) -> &mut Document {
        if self.document.get().is_none() {
            let _ = self.document.set(convert(&self.raw));
        }
        match self.document.get_mut() {
            Some(d) => d,
            None => unreachable!("set above"),
        }
    }
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// What a successful operation leaves.
pub(crate) struct OpOutput {
    /// The reply.
    pub reply: Reply,
    /// The server that answered.
    pub address: ServerAddress,
    /// The session, for an operation that opened a cursor (otherwise returned to the pool).
    pub session: Option<ServerSession>,
    /// The connection, kept for an open cursor in load-balanced mode.
    pub connection: Option<PooledConnection<Connection>>,
}

impl OpOutput {
    /// The reply's bytes, shared, and the rest of the output with an empty reply in their
    /// place.
    pub(crate) fn take_raw(self) -> (Arc<RawDocumentBuf>, OpOutput) {
        let OpOutput { reply, address, session, connection } = self;
        let bytes = Arc::new(reply.into_raw());
        (bytes, OpOutput { reply: Reply::new(RawDocumentBuf::new()), address, session, connection })
    }
}

/// The id of the cursor a reply opened (0 when none or exhausted).
pub(crate) fn raw_cursor_id(reply: &bson::RawDocument) -> i64 {
    match reply.get_document("cursor").ok().and_then(|c| c.get("id").ok().flatten()) {
        Some(bson::RawBsonRef::Int64(i)) => i,
        Some(bson::RawBsonRef::Int32(i)) => i64::from(i),
        _ => 0,
    }
}

/// The id of the cursor a reply opened (0: none, or exhausted).
pub(crate) fn cursor_id(reply: &Document) -> i64 {
    match reply.get_document("cursor").ok().and_then(|c| c.get("id")) {
        Some(Bson::Int64(i)) => *i,
        Some(Bson::Int32(i)) => i64::from(*i),
        _ => 0,
    }
}

/// The criteria of a read with `rp` (or the client's default).
pub(crate) fn read_criteria(
    criteria: Option<SelectionCriteria>,
    default: &Arc<SelectionCriteria>,
) -> Criteria {
    Criteria::from(criteria.unwrap_or_else(|| (**default).clone()))
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    #[test]
    fn cursor_ids() {
        assert_eq!(cursor_id(&doc! {"cursor": {"id": 5_i64}}), 5);
        assert_eq!(cursor_id(&doc! {"cursor": {"id": 7}}), 7);
        assert_eq!(cursor_id(&doc! {"ok": 1}), 0);
        let raw = RawDocumentBuf::try_from(&doc! {"cursor": {"id": 9_i64}}).unwrap();
        assert_eq!(raw_cursor_id(&raw), 9);
    }
}
