//! One attempt of an operation on a checked-out connection: the command with its global
//! arguments ([`super::command`]), the round trip under command monitoring, what the reply
//! means (a command error, write errors, a write concern error), and what goes to SDAM (a
//! network error, a state change error). A connection found closed reports nothing.

use bson::RawDocumentBuf;
use pool::cmap::PooledConnection;
use pool::connection::{CommandBody, Connection};
use protocol::reply::ServerError;
use protocol::sdam::app_error::{classify_state_change, ApplicationErrorKind, ErrorPhase};
use protocol::sdam::{ServerType, TopologyType};
use tokio::time::Instant;

use super::super::inner::ClientInner;
use super::super::session::pool::ServerSession;
use super::command::{command_for, AttemptArguments, WIRE_VERSION_8_2};
use super::monitoring::Monitoring;
use super::operation::{Op, Reply};
use super::retry;
use crate::cluster::topology::application_error;
use crate::error::{Error, Result};

/// What a single attempt knows about its server.
pub(super) struct Target {
    pub topology_type: TopologyType,
    pub server_type: ServerType,
}

/// What identifies one attempt of an operation, and its limit.
#[derive(Debug, Clone, Copy)]
pub(super) struct Attempt {
    pub operation_id: i64,
    pub txn_number: Option<i64>,
    /// A transaction's statement: `Some(first)`, where `first` sends `startTransaction`.
    pub transaction: Option<bool>,
    /// The operation's `timeoutMS` deadline, for the round trip.
    pub deadline: Option<Instant>,
    /// CSOT: the `maxTimeMS` to append (remaining time − the server's minimum RTT).
    pub max_time_ms: Option<i64>,
    /// This attempt already authenticated its connection again (after a 391): it does not
    /// a second time.
    pub reauthenticated: bool,
}

impl ClientInner {
    /// One attempt on a checked-out connection: the command with its global arguments, the
    /// round trip under command monitoring, and what the reply means. A MONGODB-OIDC
    /// connection whose token expired (391) authenticates again and sends the command once
    /// more ([`super::reauthenticate`]).
    pub(super) async fn attempt(
        &self,
        conn: &mut PooledConnection<Connection>,
        target: &Target,
        op: &Op,
        mut session: Option<&mut ServerSession>,
        attempt: Attempt,
    ) -> Result<Reply> {
        if let Some((_, why)) = op.requires.filter(|(w, _)| conn.stream_description().max_wire_version < *w) {
            return Err(Error::incompatible(conn.address().clone(), why));
        }
        let raw = self.command(conn, target, op, session.as_deref(), &attempt)?;
        // An unacknowledged write goes with moreToCome: the server sends no reply, and the
        // operation (and its succeeded event) sees `{ok: 1}` (OP_MSG and command monitoring specs).
        let unacknowledged = matches!(&*op.name, "insert" | "update" | "delete" | "bulkWrite")
            && op.command.get_document("writeConcern").is_some_and(|c| super::super::concern::is_w0(&c));
        // A session whose command is cut off (the future dropped mid-exchange) may be in any
        // state on the server: it stays dirty, and is discarded instead of reused. Restored
        // when the exchange ends.
        let was_dirty = session.as_deref_mut().map(|s| std::mem::replace(&mut s.dirty, true));
        let mut monitoring = Monitoring::new(self, conn, op, &op.command, attempt.operation_id);
        monitoring.trace(conn, op, &raw);
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
                monitoring.failed(
                    e.to_string(),
                    || Error::connection(conn.address().clone(), e.clone()),
                    false,
                );
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
                monitoring.failed(
                    e.to_string(),
                    || Error::connection(conn.address().clone(), e.clone()),
                    false,
                );
                return Err(Box::pin(self.round_trip_failure(conn, session, e)).await);
            }
        };
        let (reply, error) = self.observe_reply(session.as_deref_mut(), &attempt, raw);
        if let Some(e) = &error {
            Box::pin(self.report_state_change(conn, e)).await;
        }
        match conclude(conn, op, &attempt, &monitoring, reply, error) {
            // Rare, and off the hot path: boxed, so the common attempt's future stays small.
            Err(e) if !attempt.reauthenticated && super::reauthenticate::required(&e, conn) => {
                drop(monitoring);
                Box::pin(self.reauthenticate_and_retry(conn, target, op, session, attempt)).await
            }
            result => result,
        }
    }

    /// Authenticates `conn` again and sends the command once more (no further
    /// reauthentication).
    async fn reauthenticate_and_retry(
        &self,
        conn: &mut PooledConnection<Connection>,
        target: &Target,
        op: &Op,
        session: Option<&mut ServerSession>,
        attempt: Attempt,
    ) -> Result<Reply> {
        super::reauthenticate::reauthenticate(conn, attempt.deadline).await?;
        self.attempt(conn, target, op, session, Attempt { reauthenticated: true, ..attempt }).await
    }

    /// The bytes `op` sends on `conn` in this attempt (see [`command_for`]).
    #[inline]
    fn command(
        &self,
        conn: &PooledConnection<Connection>,
        target: &Target,
        op: &Op,
        session: Option<&ServerSession>,
        attempt: &Attempt,
    ) -> Result<RawDocumentBuf> {
        let max_wire_version = conn.stream_description().max_wire_version;
        let args = AttemptArguments {
            topology_type: target.topology_type,
            server_type: target.server_type,
            session,
            txn_number: attempt.txn_number,
            transaction: attempt.transaction,
            max_time_ms: attempt.max_time_ms,
            cluster_time: &self.cluster_time,
            server_api: self.settings.server_api.as_ref(),
            // rawData (an internal option) is never sent to a server older than 8.2.
            drop: (max_wire_version < WIRE_VERSION_8_2).then_some("rawData"),
        };
        command_for(op, &args)
            .map_err(|e| Error::invalid_argument(format!("the command cannot be serialized: {e}")))
    }

    /// What a reply tells the client and the session (their `$clusterTime`, the session's
    /// times and tokens), and the server's error in it, if any (which may be a state change
    /// for SDAM).
    #[inline]
    fn observe_reply(
        &self,
        session: Option<&mut ServerSession>,
        attempt: &Attempt,
        raw: RawDocumentBuf,
    ) -> (Reply, Option<Box<ServerError>>) {
        // Read from the bytes: nothing here builds the reply's `Document` when the command
        // succeeded and no session tracks causal consistency.
        let scan = protocol::reply::scan_raw_reply(&raw);
        if let Some(ct) = scan.cluster_time {
            self.cluster_time.advance(ct);
        }
        let clean = scan.clean;
        let reply = Reply::new(raw);
        if let Some(t) = session.and_then(|s| s.tracking.as_deref_mut()) {
            t.observe(&reply, attempt.transaction.is_some());
        }
        let error = if clean { None } else { protocol::reply::reply_error(&reply) };
        (reply, error)
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
        Error::connection(conn.address().clone(), e)
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
}

/// What a reply means: a command error (or, for a write, write and write concern errors)
/// fails the attempt; the rest succeeds.
#[inline]
fn conclude(
    conn: &PooledConnection<Connection>,
    op: &Op,
    attempt: &Attempt,
    monitoring: &Monitoring<'_>,
    reply: Reply,
    error: Option<Box<ServerError>>,
) -> Result<Reply> {
    // Write errors and write concern errors fail only writes.
    let Some(mut error) = error.filter(|e| e.command_failed || op.check_write) else {
        monitoring.succeeded(&reply);
        return Ok(reply);
    };
    let max_wire_version = conn.stream_description().max_wire_version;
    retry::label_legacy_write_error(&mut error, attempt.txn_number.is_some(), max_wire_version);
    if error.command_failed {
        let e = Error::command(conn.address().clone(), *error);
        monitoring.failed(e.to_string(), || e.clone(), true);
        Err(e)
    } else {
        // ok: 1: the command succeeded as far as monitoring is concerned.
        let e = Error::command(conn.address().clone(), *error);
        monitoring.succeeded_with_write_errors(&reply, &e);
        Err(e)
    }
}

/// Puts back a session's dirty flag once its exchange ended (see [`ClientInner::attempt`]).
#[inline]
fn restore_dirty(session: Option<&mut ServerSession>, was: Option<bool>) {
    if let (Some(s), Some(was)) = (session, was) {
        s.dirty = was;
    }
}

#[cfg(test)]
mod tests {
    use bson::{doc, Document};
    use protocol::ServerAddress;

    use super::*;

    fn addr() -> ServerAddress {
        ServerAddress::tcp("a", 27017)
    }

    fn error_of(reply: Document) -> Error {
        let error = protocol::reply::reply_error(&reply).expect("an error reply");
        Error::command(addr(), *error)
    }

    #[test]
    fn command_and_write_errors() {
        let e = error_of(
            doc! {"ok": 0.0, "code": 10107, "codeName": "NotWritablePrimary", "errmsg": "not primary", "errorLabels": ["RetryableWriteError"]},
        );
        assert!(matches!(*e.kind, crate::error::ErrorKind::Command(_)));
        assert_eq!(e.code(), Some(10107));
        assert!(e.contains_label("RetryableWriteError"));
        assert_eq!(e.address(), Some(&addr()));
        assert_eq!(
            e.to_string(),
            "command failed: not primary (code 10107, NotWritablePrimary) (on a:27017)"
        );
        let e =
            error_of(doc! {"ok": 1.0, "n": 0, "writeErrors": [{"index": 0, "code": 11000, "errmsg": "dup"}]});
        assert!(matches!(*e.kind, crate::error::ErrorKind::Write(_)));
        assert_eq!(e.code(), Some(11000));
        assert_eq!(e.to_string(), "write failed: dup (code 11000) (on a:27017)");
        let mut e = error_of(
            doc! {"ok": 1.0, "n": 1, "writeConcernError": {"code": 91, "errmsg": "shutdown", "errorLabels": ["RetryableWriteError"]}},
        );
        assert_eq!(e.code(), Some(91));
        assert!(e.contains_label("RetryableWriteError"));
        e.add_label("Another");
        let mut labels: Vec<&str> = e.labels().iter().map(String::as_str).collect();
        labels.sort_unstable();
        assert_eq!(labels, ["Another", "RetryableWriteError"]);
    }
}
