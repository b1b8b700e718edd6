//! Running one operation: selection, check-out, the command's global arguments, command
//! monitoring, reply classification, SDAM error reporting, and the retryable reads and
//! writes rules. An [`Operation`] (one of [`super::ops`]) says what to send and how to read
//! the reply; [`ClientInner::execute`] runs the [`Op`] it prepares.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant as StdInstant};

use bson::{Bson, Document, RawBsonRef, RawDocumentBuf};
use pool::cmap::{CheckoutPurpose, PooledConnection};
use pool::connection::{CommandBody, Connection};
use protocol::reply::{ServerError, RETRYABLE_READ_CODES, RETRYABLE_WRITE_CODES};
use protocol::sdam::app_error::{classify_state_change, ApplicationErrorKind, ErrorPhase};
use protocol::sdam::{ServerType, TopologyType};
use protocol::wire::DocumentSequence;
use protocol::ServerAddress;
use selection::ReadPreference;
use tokio::time::Instant;

use super::inner::{ClientInner, Settings};
use super::session::ServerSession;
use super::timeout;
use crate::command_events::{CommandConnection, CommandEvent, CommandEventHandler};
use crate::error::{pool_error_address, NO_WRITES_PERFORMED, RETRYABLE_ERROR, RETRYABLE_WRITE_ERROR};
use crate::metrics::RecordCommands;
use crate::selection_actor::{Criteria, SelectedServer, SelectionRequest};
use crate::snapshot::{ServerHandle, TopologySnapshot};
use crate::topology::application_error;
use crate::{Error, Result};

/// The write commands that take a `readConcern` of only `afterClusterTime` in a causally
/// consistent session (read and write concern spec).
const AFTER_CLUSTER_TIME_WRITES: &[&str] = &[
    "insert",
    "update",
    "delete",
    "findAndModify",
    "bulkWrite",
    "create",
    "createIndexes",
    "drop",
    "dropDatabase",
    "dropIndexes",
];

/// The default `maxAdaptiveRetries`: the most retries once a server reports an overload.
pub(crate) const MAX_ADAPTIVE_RETRIES: u32 = 2;
/// The label of errors a server returns when it sheds load.
const SYSTEM_OVERLOADED_ERROR: &str = "SystemOverloadedError";
/// Client backpressure's base backoff and its cap.
const BASE_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Wire version of MongoDB 4.4: from there on the server labels retryable write errors.
const WIRE_VERSION_4_4: i32 = 9;

/// Wire version of MongoDB 8.2: the first to take `rawData`.
const WIRE_VERSION_8_2: i32 = 27;
/// Wire version of MongoDB 8.0, the first with the `bulkWrite` command.
pub(crate) const WIRE_VERSION_8_0: i32 = 25;

/// Commands whose bodies and replies command monitoring redacts.
const SENSITIVE_COMMANDS: [&str; 9] = [
    "authenticate",
    "saslstart",
    "saslcontinue",
    "getnonce",
    "createuser",
    "updateuser",
    "copydbgetnonce",
    "copydbsaslstart",
    "copydb",
];

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
/// and what its reply means. The operations live in [`super::ops`], one file per family;
/// [`prepare`](Operation::prepare) turns one into the [`Op`] the executor runs
/// ([`ClientInner::execute`]), and [`handle_reply`](Operation::handle_reply) reads what it
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

    /// The command the executor runs.
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

    /// This shape, refused with [`Error::IncompatibleServer`] (`why`) before it is sent to a
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
}

/// The greatest `$clusterTime` a client has seen: its timestamp, to compare, and its bytes,
/// to send (every command to a replica set or a sharded cluster gossips it).
#[derive(Debug, Clone)]
pub(crate) struct ClusterTime {
    /// Its `clusterTime`.
    pub timestamp: bson::Timestamp,
    /// The whole `$clusterTime` document (shared: every command's attempt sends it).
    pub raw: Arc<RawDocumentBuf>,
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
    fn to_bytes(&self, extra: usize) -> std::result::Result<Vec<u8>, bson::error::Error> {
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
            bson::Utf8Lossy::<Document>::try_from(raw).map(|d| d.0).unwrap_or_default()
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

/// What a single attempt knows about its server.
struct Target {
    topology_type: TopologyType,
    server_type: ServerType,
}

/// Whether the topology supports sessions, and their timeout.
fn session_support(topology_type: TopologyType, timeout: Option<i64>) -> Option<Option<i64>> {
    match (topology_type, timeout) {
        (_, Some(t)) => Some(Some(t)),
        (TopologyType::LoadBalanced, None) => Some(None),
        _ => None,
    }
}

/// What identifies one attempt of an operation, and its limit.
#[derive(Debug, Clone, Copy)]
struct Attempt {
    operation_id: i64,
    txn_number: Option<i64>,
    /// A transaction's statement: `Some(first)`, where `first` sends `startTransaction`.
    transaction: Option<bool>,
    /// The operation's `timeoutMS` deadline, for the round trip.
    deadline: Option<Instant>,
    /// CSOT: the `maxTimeMS` to append (remaining time − the server's minimum RTT).
    max_time_ms: Option<i64>,
}

/// An operation's CSOT limits (see [`super::timeout`]): its `timeoutMS`, the one deadline of
/// every step of every attempt, and whether the command carries the remaining time as
/// `maxTimeMS`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub timeout: Option<Duration>,
    pub deadline: Option<Instant>,
    pub send_max_time: bool,
}

impl Limits {
    /// `timeout` from now.
    pub(crate) fn new(timeout: Option<Duration>) -> Limits {
        Limits::until(timeout, timeout::deadline(timeout))
    }

    /// A deadline fixed earlier (a cursor's lifetime starts with its first command).
    pub(crate) fn until(timeout: Option<Duration>, deadline: Option<Instant>) -> Limits {
        Limits { timeout, deadline, send_max_time: true }
    }

    /// With `send: false` the deadline stays client-side: no `maxTimeMS` (a cursor in
    /// ITERATION mode, a `getMore`).
    #[must_use]
    pub(crate) fn sending_max_time(self, send: bool) -> Limits {
        Limits { send_max_time: send, ..self }
    }
}

/// The session an operation sends.
#[derive(Debug)]
pub(crate) enum SessionUse<'a> {
    /// An implicit session from the pool when the deployment supports sessions, given back
    /// when the operation ends (or kept by the cursor it opens).
    Implicit,
    /// No session (a cursor opened without one).
    None,
    /// The caller's: an explicit session outside a transaction, or a cursor's.
    Given(&'a mut ServerSession),
    /// A statement of an explicit session's transaction: `txnNumber`, `autocommit: false`,
    /// and `startTransaction: true` while `starting` (cleared once sent). Never retried.
    Transaction { session: &'a mut ServerSession, starting: &'a mut bool },
}

/// Where an operation runs and the session it sends.
#[derive(Debug)]
pub(crate) struct Binding<'a> {
    /// The session.
    pub session: SessionUse<'a>,
    /// `Some`: this server (a cursor's); `None`: the one server selection chooses.
    pub server: Option<&'a ServerAddress>,
    /// A pinned connection (load-balanced cursors and transactions): the operation runs on
    /// the connection it holds, or on one checked out for it, and leaves that connection
    /// here for the caller to pin again (or drop).
    pub connection: Option<&'a mut Option<PooledConnection<Connection>>>,
    /// What a connection checked out for the operation is for.
    pub purpose: CheckoutPurpose,
}

impl Binding<'_> {
    /// An implicit session, on a server selection chooses.
    pub(crate) fn implicit() -> Binding<'static> {
        Binding {
            session: SessionUse::Implicit,
            server: None,
            connection: None,
            purpose: CheckoutPurpose::Other,
        }
    }
}

/// Where one attempt runs.
struct Located {
    address: ServerAddress,
    target: Target,
    /// The server's pool and RTT (`None`: a pinned connection to a server that left).
    handle: Option<Arc<ServerHandle>>,
    /// Session support (see [`session_support`]).
    sessions: Option<Option<i64>>,
}

/// What an operation carries from one attempt to the next: its session, its write's
/// `txnNumber`, the servers a retry avoids and the first attempt's error.
struct Run<'a> {
    session: SessionUse<'a>,
    /// The implicit session taken for the operation (given back at its end, or kept by the
    /// cursor it opens).
    implicit: Option<ServerSession>,
    /// The operation takes an implicit session, once it has a connection (driver sessions
    /// spec: so there are never more server sessions than connections, however many
    /// operations queue).
    wants_implicit: bool,
    session_timeout: Option<i64>,
    /// A retryable write's number, the same for its retry.
    txn_number: Option<i64>,
    /// Sharded retries go to another mongos when there is one.
    deprioritized: Vec<ServerAddress>,
    first_error: Option<Error>,
    /// Retries made so far.
    retries: u32,
    /// A server reported an overload: at most `maxAdaptiveRetries` retries in all.
    overloaded: bool,
    /// The pending retry is client backpressure's (allowed whatever the operation's own rules).
    overload_retry: bool,
    /// How long to wait before the next attempt (backpressure's backoff).
    backoff: Option<Duration>,
    /// A transaction statement: whether it starts the transaction, fixed at its first attempt
    /// (a retry after an overload starts it again).
    txn_first: Option<bool>,
}

impl<'a> Run<'a> {
    fn new(session: SessionUse<'a>) -> Self {
        Run {
            session,
            implicit: None,
            wants_implicit: false,
            session_timeout: None,
            txn_number: None,
            deprioritized: Vec::new(),
            first_error: None,
            retries: 0,
            overloaded: false,
            overload_retry: false,
            backoff: None,
            txn_first: None,
        }
    }

    /// Whether the operation takes an implicit session: on the first attempt, when the
    /// deployment supports sessions. It is taken after the check-out.
    fn plan_implicit_session(&mut self, sessions: Option<Option<i64>>) {
        let first = self.first_error.is_none();
        if let (SessionUse::Implicit, None, true, Some(timeout)) =
            (&self.session, &self.implicit, first, sessions)
        {
            self.session_timeout = timeout;
            self.wants_implicit = true;
        }
    }

    /// Takes the planned implicit session (a connection is checked out).
    fn take_implicit_session(&mut self, client: &ClientInner) {
        if self.wants_implicit && self.implicit.is_none() {
            self.implicit = Some(client.sessions.acquire(self.session_timeout));
        }
    }

    /// Whether `op` may be retried on `target` (never inside a transaction).
    fn retryable(&self, op: &Op, target: &Target, settings: &Settings) -> bool {
        if matches!(self.session, SessionUse::Transaction { .. }) {
            return false;
        }
        let has_session =
            self.implicit.is_some() || self.wants_implicit || matches!(self.session, SessionUse::Given(_));
        match op.retry {
            Retry::Read => settings.retry_reads,
            Retry::Write => {
                settings.retry_writes
                    && has_session
                    && target.server_type != ServerType::Standalone
                    && !op.unacknowledged()
            }
            Retry::No => false,
        }
    }

    /// Gives a retryable write its `txnNumber` (once: its retry reuses it).
    fn number_the_write(&mut self) {
        if self.txn_number.is_none() {
            self.txn_number = match &mut self.session {
                SessionUse::Implicit => self.implicit.as_mut().map(ServerSession::next_txn_number),
                SessionUse::Given(s) => Some(s.next_txn_number()),
                _ => None,
            };
        }
    }

    /// The retryable reads and writes rules after a failed attempt: `None` to try again
    /// (with a `timeoutMS`: as long as time remains; otherwise once), or the error to return.
    /// The retry rules: the retryable reads and writes specs', and client backpressure's for
    /// overload errors (`RetryableError` + `SystemOverloadedError`, any command, after a
    /// jittered exponential backoff, at most `maxAdaptiveRetries` times once any overload was
    /// seen).
    fn failed(
        &mut self,
        mut e: Error,
        op: &Op,
        retryable: bool,
        limits: Limits,
        sharded: Option<ServerAddress>,
        settings: &Settings,
    ) -> Option<Error> {
        if op.retry == Retry::Write && retryable {
            add_write_labels(&mut e);
        }
        let by_policy = retryable
            && match op.retry {
                Retry::Read => is_retryable_read_error(&e),
                Retry::Write => e.has_label(RETRYABLE_WRITE_ERROR),
                Retry::No => false,
            };
        let overload = e.has_label(SYSTEM_OVERLOADED_ERROR);
        // Only a command the server refused is retried for overload: an `ok: 1` reply with a
        // write concern error wrote (an `updateMany` has no txnNumber to make a second send
        // harmless), and overload labels on a connection error come from establishment,
        // before anything was sent.
        let by_overload = overload
            && e.has_label(RETRYABLE_ERROR)
            && !applied_with_concern_error(&e)
            && overload_retry_allowed(op, settings);
        self.overloaded |= overload;
        // The retry failed with an error that says it wrote nothing: the previous error.
        if let Some(first) = self.first_error.take() {
            if e.has_label(NO_WRITES_PERFORMED) {
                e = first;
            }
        }
        let limit = if self.overloaded {
            settings.max_adaptive_retries
        } else if limits.timeout.is_some() {
            u32::MAX
        } else {
            1
        };
        let time_left = limits.timeout.is_none() || !timeout::is_expired(limits.deadline);
        if !(by_policy || by_overload) || self.retries >= limit || !time_left {
            return Some(e);
        }
        if overload {
            // The server's base, through the one checked conversion (`Infinity`, `NaN` or a
            // negative number is no base), capped like the backoff itself.
            let base = e
                .server_error()
                .and_then(|se| se.response.get("baseBackoffMS"))
                .and_then(protocol::duration::from_millis_bson)
                .filter(|d| !d.is_zero())
                .map_or(BASE_BACKOFF, |d| d.min(MAX_BACKOFF));
            let exp = base.saturating_mul(1u32 << (self.retries + 1).min(20)).min(MAX_BACKOFF);
            let jitter =
                selection::with_thread_rng(|rng| selection::rand::RngExt::random_range(rng, 0.0..1.0));
            let backoff = exp.mul_f64(jitter);
            if limits.deadline.is_some_and(|d| Instant::now().checked_add(backoff).is_none_or(|t| t > d)) {
                return Some(e);
            }
            self.backoff = Some(backoff);
            if settings.overload_retargeting {
                self.deprioritized.extend(sharded);
            }
        } else {
            self.deprioritized.extend(sharded);
        }
        tracing::debug!(operation = %op.name, error = %e, "retrying");
        self.retries += 1;
        self.overload_retry = !by_policy;
        self.first_error = Some(e);
        None
    }

    /// The session and the ids of the next attempt; CSOT's `maxTimeMS` from the server's
    /// minimum RTT (an error when no time is left for the round trip).
    fn attempt(
        &mut self,
        limits: Limits,
        min_rtt: Duration,
        operation_id: i64,
    ) -> Result<(Option<&mut ServerSession>, Attempt)> {
        let max_time_ms = timeout::max_time_ms(limits.deadline, min_rtt)?.filter(|_| limits.send_max_time);
        let txn_number = self.txn_number;
        let (session, transaction, txn_number) = match &mut self.session {
            SessionUse::Implicit => (self.implicit.as_mut(), None, txn_number),
            SessionUse::None => (None, None, txn_number),
            SessionUse::Given(s) => (Some(&mut **s), None, txn_number),
            SessionUse::Transaction { session, starting } => {
                let number = session.txn_number;
                let first = *self.txn_first.get_or_insert_with(|| std::mem::take(*starting));
                (Some(&mut **session), Some(first), Some(number))
            }
        };
        Ok((
            session,
            Attempt { operation_id, txn_number, transaction, deadline: limits.deadline, max_time_ms },
        ))
    }

    /// The session an open cursor keeps: the implicit one, or a copy of an explicit one's id.
    fn session_for_cursor(&mut self, cursor_open: bool) -> Option<ServerSession> {
        if !cursor_open {
            return None;
        }
        match &self.session {
            SessionUse::None => None,
            SessionUse::Implicit => self.implicit.take(),
            SessionUse::Given(s) => Some(s.lend()),
            SessionUse::Transaction { session, .. } => Some(session.lend()),
        }
    }
}

impl Located {
    /// Where selection sent the attempt (the selected server itself stays with the caller:
    /// it counts the operation against its server until dropped).
    fn of(selected: &SelectedServer) -> Located {
        Located {
            address: selected.address().clone(),
            target: Target {
                topology_type: selected.snapshot().description.topology_type(),
                server_type: selected.description().server_type,
            },
            handle: Some(selected.handle().clone()),
            sessions: sessions_in(selected.snapshot()),
        }
    }
}

impl ClientInner {
    /// Runs `op`, the one way every operation runs: server selection (or the server and
    /// connection `binding` pins), check-out, the session's fields, the command's global
    /// arguments, command monitoring, reply classification, SDAM error reporting, and the
    /// retryable reads and writes rules, all under `limits`. With a `timeoutMS`, retryable
    /// operations retry as long as time remains (otherwise once), and timeouts become
    /// [`Error::Timeout`].
    pub(crate) async fn execute(&self, op: Op, limits: Limits, binding: Binding<'_>) -> Result<OpOutput> {
        self.check_open()?;
        let Binding { session, server, mut connection, purpose } = binding;
        let mut run = Run::new(session);
        let operation_id = next_operation_id();
        let result = loop {
            if let Some(backoff) = run.backoff.take() {
                tokio::time::sleep(backoff).await;
            }
            // Selection is awaited here, not in a helper: every async layer and every move of
            // a large value on this path costs instructions per operation.
            let pinned = connection.as_deref_mut().and_then(Option::take);
            let selected = match (&pinned, server) {
                (None, None) => {
                    let request = SelectionRequest {
                        criteria: op.criteria.clone(),
                        deprioritized: run.deprioritized.clone(),
                        operation: op.name.clone(),
                        operation_id: Some(operation_id),
                        deadline: limits.deadline,
                    };
                    match self.selector.select(request).await {
                        Ok(s) => Some(s),
                        // A retry that finds no server returns the original error (CSOT: as a
                        // timeout once the deadline has passed).
                        Err(e) => {
                            break Err(timeout::retry_selection_error(
                                run.first_error.take(),
                                e,
                                limits.deadline,
                            ))
                        }
                    }
                }
                _ => None,
            };
            let located = match (&selected, &pinned, server) {
                (Some(s), ..) => Located::of(s),
                (None, Some(conn), _) => self.locate_pinned(conn.address()),
                (None, None, Some(address)) => match self.locate_server(address) {
                    Ok(l) => l,
                    Err(e) => break Err(e),
                },
                (None, None, None) => break Err(Error::stopped("selection")),
            };
            let Located { address, target, handle, sessions } = located;
            // An unacknowledged write takes no implicit session (driver sessions spec).
            run.plan_implicit_session(sessions.filter(|_| !op.unacknowledged()));
            let retryable = run.retryable(&op, &target, &self.settings);
            if run.first_error.is_some() && !retryable && !run.overload_retry {
                // The new server cannot retry (for example no longer supports sessions).
                break Err(run.first_error.take().unwrap_or_else(|| Error::stopped("operation")));
            }
            let checked_out = match (pinned, &handle) {
                (Some(conn), _) => Ok(conn),
                (None, Some(handle)) => {
                    let generation = handle.pool.generation(None);
                    match timeout::check_out(&handle.pool, limits.timeout, limits.deadline, purpose).await {
                        Ok(conn) => Ok(conn),
                        Err(e) => {
                            // Boxed, as every cold path here: its state stays out of the
                            // operation's future, which the fluent API boxes whole.
                            Err(Box::pin(self.check_out_error(
                                &address,
                                e,
                                generation,
                                op.retry == Retry::Write,
                            ))
                            .await)
                        }
                    }
                }
                (None, None) => Err(pool_closed(&address)),
            };
            let attempt = match checked_out {
                Err(e) => Err(e),
                Ok(mut conn) => {
                    run.take_implicit_session(self);
                    if op.retry == Retry::Write && retryable {
                        run.number_the_write();
                    }
                    // CSOT: maxTimeMS from the server's minimum RTT, checked after the check-out;
                    // a failure here returns the connection unsent.
                    let min_rtt = handle.as_ref().map(|h| h.rtt.min()).unwrap_or_default();
                    let reply = match run.attempt(limits, min_rtt, operation_id) {
                        // Boxed: an operation waiting for its check-out or selection (a
                        // burst far over capacity) holds no room for the round trip's state.
                        Ok((session, ids)) => {
                            Box::pin(self.attempt(&mut conn, &target, &op, session, ids)).await
                        }
                        Err(e) => Err(e),
                    };
                    // A pinned operation leaves its connection to the caller.
                    match connection.as_deref_mut() {
                        Some(slot) => {
                            *slot = Some(conn);
                            reply.map(|r| (r, None))
                        }
                        None => reply.map(|r| (r, Some(conn))),
                    }
                }
            };
            drop(selected);
            match attempt {
                Ok((reply, conn)) => break Ok((reply, address, conn)),
                // Admission control fails at once: a retry would only queue again.
                Err(e @ Error::Overloaded { .. }) => break Err(e),
                Err(e) => {
                    let sharded = target.topology_type == TopologyType::Sharded;
                    if let Some(e) =
                        run.failed(e, &op, retryable, limits, sharded.then_some(address), &self.settings)
                    {
                        break Err(e);
                    }
                }
            }
        };
        let output = match result {
            Ok((reply, address, conn)) => {
                let cursor_open = op.opens_cursor && raw_cursor_id(reply.raw()) != 0;
                // An open cursor keeps the session (an explicit one lends a copy of its id)
                // and, in load-balanced mode, the connection.
                let session = run.session_for_cursor(cursor_open);
                let connection = conn.filter(|_| cursor_open && self.settings.load_balanced);
                Ok(OpOutput { reply, address, session, connection })
            }
            Err(e) => Err(timeout::convert(e, limits.timeout, limits.deadline)),
        };
        if let Some(s) = run.implicit.take() {
            self.sessions.release(s, run.session_timeout);
        }
        output
    }

    /// Runs `op` through [`execute`](Self::execute) and reads its reply.
    pub(crate) async fn run<O: Operation>(
        &self,
        mut op: O,
        limits: Limits,
        binding: Binding<'_>,
    ) -> Result<O::Output> {
        let prepared = op.prepare()?;
        op.handle_reply(self.execute(prepared, limits, binding).await?)
    }

    /// Where an operation on a named server (a cursor's) runs.
    fn locate_server(&self, address: &ServerAddress) -> Result<Located> {
        let snapshot = self.topology.snapshot();
        let Some(handle) = snapshot.handle(address) else { return Err(pool_closed(address)) };
        Ok(Located {
            address: address.clone(),
            target: target_in(&snapshot, address),
            handle: Some(handle.clone()),
            sessions: sessions_in(&snapshot),
        })
    }

    /// Where a pinned connection to `address` runs.
    fn locate_pinned(&self, address: &ServerAddress) -> Located {
        let snapshot = self.topology.snapshot();
        Located {
            address: address.clone(),
            target: target_in(&snapshot, address),
            handle: snapshot.handle(address).cloned(),
            sessions: sessions_in(&snapshot),
        }
    }

    /// A check-out failure as an operation error; establishment errors go to SDAM.
    pub(crate) async fn check_out_error(
        &self,
        address: &ServerAddress,
        e: pool::Error,
        generation: u32,
        write: bool,
    ) -> Error {
        if let pool::Error::WaitQueueFull { address, limit } = e {
            return Error::Overloaded {
                queue: crate::OverloadedQueue::ConnectionPool,
                limit,
                address: Some(address),
            };
        }
        let establishment = e.is_network_error() || matches!(e, pool::Error::Authentication { .. });
        if establishment && !matches!(e, pool::Error::PoolCleared { .. }) {
            let app = application_error(
                address.clone(),
                &e,
                generation,
                ErrorPhase::ConnectionEstablishment,
                None,
                None,
            );
            let _ = self.topology.report_error(app).await;
        }
        let mut labels = e.labels();
        if write && (e.is_network_error() || matches!(e, pool::Error::PoolCleared { .. })) {
            labels.push(RETRYABLE_WRITE_ERROR.to_string());
        }
        let address = pool_error_address(&e).cloned().unwrap_or_else(|| address.clone());
        Error::Connection { address, source: Box::new(e), labels }
    }

    /// One attempt on a checked-out connection: the command with its global arguments, the
    /// round trip under command monitoring, and what the reply means.
    async fn attempt(
        &self,
        conn: &mut PooledConnection<Connection>,
        target: &Target,
        op: &Op,
        mut session: Option<&mut ServerSession>,
        attempt: Attempt,
    ) -> Result<Reply> {
        if let Some((_, why)) = op.requires.filter(|(w, _)| conn.stream_description().max_wire_version < *w) {
            return Err(Error::IncompatibleServer { address: conn.address().clone(), message: why.into() });
        }
        // rawData (an internal option) is never sent to a server older than 8.2 (wire 27).
        let drop = (conn.stream_description().max_wire_version < WIRE_VERSION_8_2).then_some("rawData");
        let raw = self.command_for(target, op, session.as_deref(), &attempt, drop).map_err(|e| {
            Error::InvalidOptions { message: format!("the command cannot be serialized: {e}") }
        })?;
        // An unacknowledged write goes with moreToCome: the server sends no reply, and the
        // operation (and its succeeded event) sees `{ok: 1}` (OP_MSG and command monitoring specs).
        let unacknowledged = matches!(&*op.name, "insert" | "update" | "delete" | "bulkWrite")
            && op.command.get_document("writeConcern").is_some_and(|c| super::concern::is_w0(&c));
        // A session whose command is cut off (the future dropped mid-exchange) may be in any
        // state on the server: it stays dirty, and is discarded instead of reused. Restored
        // when the exchange ends.
        let was_dirty = session.as_deref_mut().map(|s| std::mem::replace(&mut s.dirty, true));
        let mut monitoring = Monitoring::new(self, conn, op, &op.command, attempt.operation_id);
        let mut started_doc = monitoring.started_document(&raw, &op.sequences);
        let body = if op.sequences.is_empty() {
            CommandBody::Raw(raw)
        } else {
            // Shared, not copied: a retry sends the same statements again.
            CommandBody::Sequenced(raw, op.sequences.clone())
        };
        if unacknowledged {
            let sent = conn
                .send_unacknowledged(&op.db, body, attempt.deadline, |rid| {
                    monitoring.started(rid, started_doc.take())
                })
                .await;
            restore_dirty(session.as_deref_mut(), was_dirty);
            if let Err(e) = sent {
                monitoring.failed(e.to_string(), false);
                return Err(Box::pin(self.round_trip_failure(conn, session, e)).await);
            }
            let reply = Reply::from_document(bson::doc! {"ok": 1});
            monitoring.succeeded(&reply);
            return Ok(reply);
        }
        let result = conn
            .send_command_with(&op.db, body, attempt.deadline, |rid| {
                monitoring.started(rid, started_doc.take())
            })
            .await;
        restore_dirty(session.as_deref_mut(), was_dirty);
        let raw = match result {
            Ok(r) => r,
            Err(e) => {
                monitoring.failed(e.to_string(), false);
                return Err(Box::pin(self.round_trip_failure(conn, session, e)).await);
            }
        };
        // Read from the bytes: nothing here builds the reply's `Document` when the command
        // succeeded and no session tracks causal consistency.
        let scan = protocol::reply::scan_raw_reply(&raw);
        if let Some(ct) = scan.cluster_time {
            self.advance_cluster_time(ct);
        }
        let clean = scan.clean;
        let reply = Reply::new(raw);
        if let Some(t) = session.and_then(|s| s.tracking.as_deref_mut()) {
            t.observe(&reply, attempt.transaction.is_some());
        }
        let error = if clean { None } else { protocol::reply::reply_error(&reply) };
        if let Some(e) = &error {
            Box::pin(self.report_state_change(conn, e)).await;
        }
        // Write errors and write concern errors fail only writes.
        let Some(mut error) = error.filter(|e| e.command_failed || op.check_write) else {
            monitoring.succeeded(&reply);
            return Ok(reply);
        };
        let legacy_server =
            attempt.txn_number.is_some() && conn.stream_description().max_wire_version < WIRE_VERSION_4_4;
        if legacy_server && error.code().is_some_and(|c| RETRYABLE_WRITE_CODES.contains(&c)) {
            error.add_label(RETRYABLE_WRITE_ERROR);
        }
        if error.command_failed {
            let e = Error::Command { address: conn.address().clone(), error };
            monitoring.failed(e.to_string(), true);
            Err(e)
        } else {
            // ok: 1: the command succeeded as far as monitoring is concerned.
            monitoring.succeeded(&reply);
            Err(Error::Command { address: conn.address().clone(), error })
        }
    }

    /// `op`'s command with the global arguments of this attempt, as the bytes sent:
    /// `maxTimeMS` (replacing one the command carries, as `run_command` documents),
    /// `$readPreference`, `lsid`, the transaction fields, `$clusterTime` and `$db`. A global
    /// the command already has is replaced where it stands, one it lacks is appended, as
    /// `Document::insert` would; `drop` names a field left out (`rawData` for an old server).
    /// The command is serialized once and copied element by element: no `Document` is cloned.
    fn command_for(
        &self,
        target: &Target,
        op: &Op,
        session: Option<&ServerSession>,
        ids: &Attempt,
        drop: Option<&str>,
    ) -> std::result::Result<RawDocumentBuf, bson::error::Error> {
        // Values built for this attempt live here; `globals` borrows them and the rest.
        let read_preference = match &op.criteria {
            Criteria::Read(rp) => {
                read_preference_document(target, rp).map(|d| RawDocumentBuf::try_from(&d)).transpose()?
            }
            _ => None,
        };
        let tracking = session.and_then(|s| s.tracking.as_deref());
        let mut read_concern = None;
        if let Some(t) = tracking {
            // Causal consistency and snapshot reads: a read outside a transaction, or the
            // statement that starts one.
            let outside = ids.transaction.is_none();
            let causal_command = op.read_concern || AFTER_CLUSTER_TIME_WRITES.contains(&op.name.as_ref());
            // A snapshot session sends its read concern with every command (the server
            // refuses the ones that cannot take it); causal consistency with the commands
            // that take `afterClusterTime`, and with the statement that starts a transaction.
            let send = if t.snapshot {
                outside
            } else {
                (causal_command && outside) || ids.transaction == Some(true)
            };
            if send {
                if let Some(rc) = t.read_concern(op.command.get_document("readConcern").as_deref()) {
                    read_concern = Some(RawDocumentBuf::try_from(&rc)?);
                }
            }
        }
        let mut session_cluster_time = None;
        let mut client_cluster_time = None;
        if target.server_type != ServerType::Standalone {
            // The greater of the client's and the session's (which the user may advance).
            let client = self.cluster_time.lock().as_ref().map(|c| (c.timestamp, c.raw.clone()));
            let session_ct = tracking.and_then(|t| t.cluster_time.as_ref()).filter(|s| match &client {
                Some((client, _)) => super::session::cluster_timestamp(s).is_some_and(|s| s > *client),
                None => true,
            });
            match session_ct {
                Some(s) => session_cluster_time = Some(RawDocumentBuf::try_from(s)?),
                None => client_cluster_time = client.map(|(_, c)| c),
            }
        }
        let cluster_time = session_cluster_time.as_deref().or(client_cluster_time.as_deref().map(|c| &**c));

        let mut globals = Globals::default();
        if let Some(ms) = ids.max_time_ms {
            globals.push("maxTimeMS", RawBsonRef::Int64(ms));
        }
        if let Some(rp) = &read_preference {
            globals.push("$readPreference", RawBsonRef::Document(rp));
        }
        if let Some(s) = session {
            globals.push("lsid", RawBsonRef::Document(&s.lsid_raw));
        }
        if let Some(n) = ids.txn_number {
            globals.push("txnNumber", RawBsonRef::Int64(n));
        }
        if let Some(first) = ids.transaction {
            if first {
                globals.push("startTransaction", RawBsonRef::Boolean(true));
            }
            globals.push("autocommit", RawBsonRef::Boolean(false));
        }
        if let Some(rc) = &read_concern {
            globals.push("readConcern", RawBsonRef::Document(rc));
        }
        if let Some(ct) = cluster_time {
            globals.push("$clusterTime", RawBsonRef::Document(ct));
        }
        if let Some(api) = &self.settings.server_api {
            // Every command, getMore and a transaction's included (versioned-api spec); a
            // generic command's own fields are not looked at.
            globals.push("apiVersion", RawBsonRef::String(&api.version));
            if let Some(strict) = api.strict {
                globals.push("apiStrict", RawBsonRef::Boolean(strict));
            }
            if let Some(errors) = api.deprecation_errors {
                globals.push("apiDeprecationErrors", RawBsonRef::Boolean(errors));
            }
        }
        globals.push("$db", RawBsonRef::String(&op.db));
        let globals = globals.as_slice();
        let replaces = |key: &str| op.command.contains_key(key);
        if !drop.is_some_and(replaces) && !globals.iter().any(|(key, _)| replaces(key)) {
            // The usual case: every global is new, appended to the serialized command with
            // room made once.
            let extra: usize = globals.iter().map(|(k, v)| k.len() + 2 + raw_size(v)).sum();
            let mut out = RawDocumentBuf::from_bytes(op.command.to_bytes(extra)?)?;
            for (key, value) in globals {
                out.append(<&bson::raw::CStr>::try_from(*key)?, *value);
            }
            return Ok(out);
        }
        let base = RawDocumentBuf::from_bytes(op.command.to_bytes(0)?)?;
        let mut out = RawDocumentBuf::new();
        let mut used = vec![false; globals.len()];
        for element in base.iter_elements() {
            let element = element?;
            let key = element.key();
            if drop.is_some_and(|d| d == key.as_str()) {
                continue;
            }
            match globals.iter().position(|(g, _)| *g == key.as_str()) {
                Some(i) => {
                    used[i] = true;
                    out.append(key, globals[i].1);
                }
                None => out.append(key, element.value()?),
            }
        }
        for ((key, value), used) in globals.iter().zip(used) {
            if !used {
                out.append(<&bson::raw::CStr>::try_from(*key)?, *value);
            }
        }
        Ok(out)
    }

    /// A round trip that failed: a network error marks the session dirty and goes to SDAM.
    /// A connection found already closed (an earlier exchange on it was cut off) sent
    /// nothing and says nothing about the server: it goes to no one.
    async fn round_trip_failure(
        &self,
        conn: &PooledConnection<Connection>,
        session: Option<&mut ServerSession>,
        e: pool::Error,
    ) -> Error {
        if e.is_network_error() {
            if let Some(s) = session {
                s.dirty = true;
            }
        }
        if e.is_network_error() && !matches!(e, pool::Error::ConnectionClosed { .. }) {
            let app = application_error(
                conn.address().clone(),
                &e,
                conn.generation(),
                ErrorPhase::AfterHandshake,
                conn.service_id(),
                Some(conn.stream_description().max_wire_version),
            );
            let _ = self.topology.report_error(app).await;
        }
        Error::Connection { address: conn.address().clone(), source: Box::new(e), labels: Vec::new() }
    }

    /// State change errors (`ok: 0`, or a write concern error) go to SDAM.
    async fn report_state_change(&self, conn: &PooledConnection<Connection>, e: &ServerError) {
        let (code, message) = match &e.write_concern_error {
            Some(w) if !e.command_failed => (Some(w.code), &w.message),
            _ => (e.code, &e.message),
        };
        if classify_state_change(code, message).is_none() {
            return;
        }
        if let Some((kind, labels)) = ApplicationErrorKind::from_server_error(e.clone()) {
            let app = protocol::sdam::app_error::ApplicationError {
                address: conn.address().clone(),
                generation: conn.generation(),
                service_id: conn.service_id(),
                max_wire_version: Some(conn.stream_description().max_wire_version),
                phase: ErrorPhase::AfterHandshake,
                kind,
                labels,
            };
            let _ = self.topology.report_error(app).await;
        }
    }

    /// Keeps the greatest `$clusterTime` seen.
    /// Read from the reply's bytes: nothing is built unless the time moved forward.
    fn advance_cluster_time(&self, ct: &bson::RawDocument) {
        let Ok(new) = ct.get_timestamp("clusterTime") else { return };
        let mut current = self.cluster_time.lock();
        if current.as_ref().is_none_or(|old| new > old.timestamp) {
            *current = Some(ClusterTime { timestamp: new, raw: Arc::new(ct.to_owned()) });
        }
    }
}

/// Puts back a session's dirty flag once its exchange ended (see [`ClientInner::attempt`]).
fn restore_dirty(session: Option<&mut ServerSession>, was: Option<bool>) {
    if let (Some(s), Some(was)) = (session, was) {
        s.dirty = was;
    }
}

/// Command monitoring of one attempt: the command metrics, and the events of the user's
/// handler, built only when one listens.
struct Monitoring<'a> {
    handler: Option<&'a dyn CommandEventHandler>,
    metrics: &'a RecordCommands,
    connection: Option<CommandConnection>,
    command_name: &'a str,
    db: &'a str,
    operation_id: i64,
    request_id: i32,
    /// When the command was sent.
    /// When the command went out; `None` when nobody takes its duration (no handler, no
    /// log, no metrics recorder): then no clock is read.
    started: Option<StdInstant>,
    /// A sensitive command (authentication, a hello with speculative authentication): its
    /// body and reply are not shown.
    redact: bool,
    /// The topology id, when command log messages are wanted.
    log: Option<String>,
}

impl<'a> Monitoring<'a> {
    fn new(
        client: &'a ClientInner,
        conn: &PooledConnection<Connection>,
        op: &'a Op,
        command: &Command,
        operation_id: i64,
    ) -> Self {
        let handler = client.command_handler.as_deref();
        let log = crate::command_log::enabled().then(|| client.topology.id().0.to_string());
        let observed = handler.is_some() || log.is_some();
        Monitoring {
            handler,
            metrics: &client.command_metrics,
            connection: observed.then(|| CommandConnection {
                address: conn.address().clone(),
                driver_connection_id: conn.id(),
                server_connection_id: conn.hello_reply().connection_id,
                service_id: conn.service_id(),
            }),
            redact: observed && is_sensitive(&op.name, command),
            log,
            command_name: &op.name,
            db: &op.db,
            operation_id,
            request_id: 0,
            started: (observed || client.command_metrics.enabled()).then(StdInstant::now),
        }
    }

    /// The command the started event shows: a document sequence appears as the array field
    /// it stands for (command monitoring spec).
    /// Built from the bytes sent, and only when a handler or the log shows it.
    fn started_document(&self, sent: &bson::RawDocument, sequences: &[DocumentSequence]) -> Option<Document> {
        match (self.handler.is_some() || self.log.is_some(), self.redact) {
            (true, false) => {
                let mut command = convert(sent);
                for seq in sequences {
                    let docs: Vec<Bson> = seq
                        .documents
                        .iter()
                        .filter_map(|d| Document::try_from(d.as_ref()).ok().map(Bson::Document))
                        .collect();
                    command.insert(seq.identifier.clone(), docs);
                }
                Some(command)
            }
            (true, true) => Some(Document::new()),
            _ => None,
        }
    }

    /// The fields of this command's log messages, when they are wanted.
    fn log_context(&self) -> Option<crate::command_log::Context<'_>> {
        Some(crate::command_log::Context {
            topology_id: self.log.as_deref()?,
            connection: self.connection.as_ref()?,
            command_name: self.command_name,
            database_name: self.db,
            request_id: self.request_id,
            operation_id: self.operation_id,
        })
    }

    fn started(&mut self, request_id: i32, command: Option<Document>) {
        self.request_id = request_id;
        if self.started.is_some() {
            self.started = Some(StdInstant::now());
        }
        if let (Some(ctx), Some(command)) = (self.log_context(), command.as_ref()) {
            crate::command_log::started(&ctx, command);
        }
        if let (Some(h), Some(command), Some(c)) = (self.handler, command, self.connection.clone()) {
            h.handle(&CommandEvent::Started {
                command,
                database_name: self.db.to_string(),
                command_name: self.command_name.to_string(),
                request_id,
                operation_id: self.operation_id,
                connection: c,
            });
        }
    }

    /// The reply's `Document` is built only when a log message or a handler shows it.
    fn succeeded(&self, reply: &Reply) {
        let duration = self.started.map(|s| s.elapsed()).unwrap_or_default();
        self.metrics.record(self.command_name, true, duration);
        if let Some(ctx) = self.log_context() {
            let empty = Document::new();
            crate::command_log::succeeded(&ctx, if self.redact { &empty } else { reply }, duration);
        }
        self.ended(|m, connection| CommandEvent::Succeeded {
            reply: if m.redact { Document::new() } else { Document::clone(reply) },
            command_name: m.command_name.to_string(),
            database_name: m.db.to_string(),
            request_id: m.request_id,
            operation_id: m.operation_id,
            duration,
            connection,
        });
    }

    /// `server`: the server answered with an error (redacted from the log for a sensitive
    /// command), rather than a network, timeout or decoding failure.
    fn failed(&self, failure: String, server: bool) {
        let duration = self.started.map(|s| s.elapsed()).unwrap_or_default();
        self.metrics.record(self.command_name, false, duration);
        // A sensitive command's server error is redacted from its event as from its log.
        let failure =
            if self.redact && server { crate::command_log::REDACTED_FAILURE.to_string() } else { failure };
        if let Some(ctx) = self.log_context() {
            crate::command_log::failed(&ctx, &failure, duration);
        }
        self.ended(|m, connection| CommandEvent::Failed {
            failure,
            command_name: m.command_name.to_string(),
            database_name: m.db.to_string(),
            request_id: m.request_id,
            operation_id: m.operation_id,
            duration,
            connection,
        });
    }

    /// Emits the event that ends the command, built only when a handler listens.
    fn ended(&self, event: impl FnOnce(&Self, CommandConnection) -> CommandEvent) {
        if let (Some(h), Some(c)) = (self.handler, self.connection.clone()) {
            h.handle(&event(self, c));
        }
    }
}

/// The error of an operation whose server has left the topology (its pool is gone).
fn pool_closed(address: &ServerAddress) -> Error {
    Error::Connection {
        address: address.clone(),
        source: Box::new(pool::Error::PoolClosed { address: address.clone() }),
        labels: Vec::new(),
    }
}

/// What `snapshot` says of `address`.
fn target_in(snapshot: &TopologySnapshot, address: &ServerAddress) -> Target {
    let server_type = snapshot.server(address).map_or(ServerType::Unknown, |d| d.server_type);
    Target { topology_type: snapshot.description.topology_type(), server_type }
}

/// Session support in `snapshot` (see [`session_support`]).
fn sessions_in(snapshot: &TopologySnapshot) -> Option<Option<i64>> {
    session_support(
        snapshot.description.topology_type(),
        snapshot.description.logical_session_timeout_minutes(),
    )
}

/// The `$readPreference` to send for a read, per the server selection spec.
fn read_preference_document(target: &Target, rp: &ReadPreference) -> Option<Document> {
    selection::read_preference_for_command(target.topology_type, target.server_type, Some(rp))
}

fn is_sensitive(name: &str, command: &Command) -> bool {
    let lower = name.to_ascii_lowercase();
    SENSITIVE_COMMANDS.contains(&lower.as_str())
        || (matches!(lower.as_str(), "hello" | "ismaster") && command.contains_key("speculativeAuthenticate"))
}

/// Whether client backpressure may retry `op` after an overload error: a write with
/// retryWrites, a read with retryReads, a user's command with both.
fn overload_retry_allowed(op: &Op, settings: &Settings) -> bool {
    if op.generic {
        return settings.retry_reads && settings.retry_writes;
    }
    match (op.retry, &op.criteria) {
        (Retry::Read, _) => settings.retry_reads,
        (Retry::Write, _) | (Retry::No, Criteria::Write) => settings.retry_writes,
        (Retry::No, _) => settings.retry_reads,
    }
}

/// An `ok: 1` reply whose write concern (or write) failed: the command ran.
fn applied_with_concern_error(e: &Error) -> bool {
    matches!(e, Error::Command { error, .. } if !error.command_failed)
}

/// A network or pool-cleared error of a retryable write gets `RetryableWriteError`.
fn add_write_labels(e: &mut Error) {
    if let Error::Connection { source, .. } = e {
        if source.is_network_error() || matches!(**source, pool::Error::PoolCleared { .. }) {
            e.add_label(RETRYABLE_WRITE_ERROR);
        }
    }
}

fn is_retryable_read_error(e: &Error) -> bool {
    match e {
        Error::Connection { source, .. } => {
            source.is_network_error() || matches!(**source, pool::Error::PoolCleared { .. })
        }
        Error::Command { error, .. } => {
            error.command_failed && error.code.is_some_and(|c| RETRYABLE_READ_CODES.contains(&c))
        }
        _ => false,
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

/// About the bytes `value` takes in a document (to reserve room; not exact for every type).
fn raw_size(value: &RawBsonRef<'_>) -> usize {
    match value {
        RawBsonRef::Document(d) => d.as_bytes().len(),
        RawBsonRef::String(s) => s.len() + 5,
        _ => 16,
    }
}

/// The global arguments of one attempt, on the stack: at most one of each of the twelve.
struct Globals<'a> {
    items: [(&'static str, RawBsonRef<'a>); 12],
    len: usize,
}

impl Default for Globals<'_> {
    fn default() -> Self {
        Globals { items: [("", RawBsonRef::Null); 12], len: 0 }
    }
}

impl<'a> Globals<'a> {
    fn push(&mut self, key: &'static str, value: RawBsonRef<'a>) {
        debug_assert!(self.len < self.items.len(), "a thirteenth global argument");
        if let Some(slot) = self.items.get_mut(self.len) {
            *slot = (key, value);
            self.len += 1;
        }
    }

    fn as_slice(&self) -> &[(&'static str, RawBsonRef<'a>)] {
        &self.items[..self.len]
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
pub(crate) fn read_criteria(rp: Option<ReadPreference>, default: &Arc<ReadPreference>) -> Criteria {
    Criteria::Read(rp.unwrap_or_else(|| (**default).clone()))
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    fn addr() -> ServerAddress {
        ServerAddress::tcp("a", 27017)
    }

    fn error_of(reply: Document) -> Error {
        let error = protocol::reply::reply_error(&reply).expect("an error reply");
        Error::Command { address: addr(), error }
    }

    #[test]
    fn command_and_write_errors() {
        let e = error_of(
            doc! {"ok": 0.0, "code": 10107, "codeName": "NotWritablePrimary", "errmsg": "not primary", "errorLabels": ["RetryableWriteError"]},
        );
        assert_eq!(e.kind(), crate::error::ErrorKind::Command);
        assert_eq!(e.code(), Some(10107));
        assert!(e.has_label("RetryableWriteError"));
        assert_eq!(e.address(), Some(&addr()));
        assert_eq!(e.to_string(), "command failed on a:27017: not primary (code 10107, NotWritablePrimary)");
        let e =
            error_of(doc! {"ok": 1.0, "n": 0, "writeErrors": [{"index": 0, "code": 11000, "errmsg": "dup"}]});
        assert_eq!(e.kind(), crate::error::ErrorKind::Write);
        assert_eq!(e.code(), Some(11000));
        assert_eq!(e.to_string(), "write failed on a:27017: write 0 failed: dup (code 11000)");
        let mut e = error_of(
            doc! {"ok": 1.0, "n": 1, "writeConcernError": {"code": 91, "errmsg": "shutdown", "errorLabels": ["RetryableWriteError"]}},
        );
        assert_eq!(e.code(), Some(91));
        assert!(e.has_label("RetryableWriteError"));
        e.add_label("Another");
        assert_eq!(e.labels(), ["RetryableWriteError", "Another"]);
    }

    #[test]
    fn redaction() {
        assert!(is_sensitive("saslStart", &doc! {}.into()));
        assert!(is_sensitive("hello", &doc! {"speculativeAuthenticate": {}}.into()));
        assert!(!is_sensitive("hello", &doc! {}.into()));
        assert!(!is_sensitive("find", &doc! {}.into()));
    }

    #[test]
    fn retryable_read_errors() {
        let cmd = |code| Error::Command {
            address: addr(),
            error: Box::new(protocol::reply::ServerError::command(code, "")),
        };
        assert!(is_retryable_read_error(&cmd(91)));
        assert!(!is_retryable_read_error(&cmd(11000)));
        let net = Error::Connection {
            address: addr(),
            source: Box::new(pool::Error::ConnectionClosed { address: addr() }),
            labels: vec![],
        };
        assert!(is_retryable_read_error(&net));
        let mut w = net.clone();
        add_write_labels(&mut w);
        assert!(w.has_label(RETRYABLE_WRITE_ERROR));
        assert_eq!(cursor_id(&doc! {"cursor": {"id": 5_i64}}), 5);
        assert_eq!(cursor_id(&doc! {"ok": 1}), 0);
    }
}
