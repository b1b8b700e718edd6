//! Application errors: classification and the SDAM decision (the spec's `handleError`).
//!
//! [`decide`] is pure: it reads the topology and the pool generation and returns an
//! [`ErrorDecision`] that the caller carries out (mark Unknown via
//! [`TopologyDescription::apply_error_decision`], clear the pool, request or cancel a check).

use std::cmp::Ordering;

use bson::oid::ObjectId;
use bson::Document;

use crate::address::ServerAddress;
use crate::reply::ServerError;
use crate::sdam::server_description::ServerDescription;
use crate::sdam::topology_description::{TopologyDescription, TopologyType, TopologyUpdate};
use crate::sdam::topology_version::{compare_topology_versions, TopologyVersion};

pub use crate::reply::{NOT_WRITABLE_PRIMARY_CODES, RECOVERING_CODES, SHUTDOWN_CODES};
/// The backpressure label the pool adds to connection-establishment network errors.
pub const SYSTEM_OVERLOADED_ERROR: &str = "SystemOverloadedError";
/// Wire version of MongoDB 4.2: older servers close connections on a state change.
const WIRE_VERSION_4_2: i32 = 8;

/// The two kinds of state change error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateChange {
    /// "node is recovering" (includes "node is shutting down").
    NodeIsRecovering,
    /// "not writable primary".
    NotWritablePrimary,
}

/// Classifies a command error. The code alone decides when there is one; the message is
/// consulted only when the error has no code.
pub fn classify_state_change(code: Option<i32>, message: &str) -> Option<StateChange> {
    match code {
        Some(c) if RECOVERING_CODES.contains(&c) => Some(StateChange::NodeIsRecovering),
        Some(c) if NOT_WRITABLE_PRIMARY_CODES.contains(&c) => Some(StateChange::NotWritablePrimary),
        Some(_) => None,
        None if message.contains("node is recovering") || message.contains("not master or secondary") => {
            Some(StateChange::NodeIsRecovering)
        }
        None if message.contains("not master") || message.contains("not primary") => {
            Some(StateChange::NotWritablePrimary)
        }
        None => None,
    }
}

/// Whether the code is a "node is shutting down" code.
pub fn is_shutdown_code(code: Option<i32>) -> bool {
    code.is_some_and(|c| SHUTDOWN_CODES.contains(&c))
}

/// Where in a connection's life an application error happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorPhase {
    /// Opening the connection or its hello (the pool treats network errors here as
    /// possible overload and labels them `SystemOverloadedError`).
    ConnectionEstablishment,
    /// The authentication step after hello.
    Authentication,
    /// On an established connection, after check-out.
    AfterHandshake,
}

impl ErrorPhase {
    /// Whether the handshake (hello and authentication) had completed.
    pub fn completed_handshake(self) -> bool {
        self == ErrorPhase::AfterHandshake
    }
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq)]
pub enum ApplicationErrorKind {
    /// A network error other than a timeout.
    Network,
    /// A network timeout.
    Timeout,
    /// A command error (`ok: 0`), or a `writeConcernError` of an `ok: 1` reply (checked the
    /// same way). `writeErrors` are never checked.
    Command {
        /// The error code, if any.
        code: Option<i32>,
        /// The error message.
        message: String,
        /// The `topologyVersion` of the error response.
        topology_version: Option<TopologyVersion>,
        /// Whether this came from a `writeConcernError`.
        write_concern: bool,
    },
}

/// An error seen by an application operation, with what SDAM needs to judge it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplicationError {
    /// The server the operation ran on.
    pub address: ServerAddress,
    /// The connection's generation (for errors while connecting: the pool's generation when
    /// the attempt started).
    pub generation: u32,
    /// The connection's `serviceId` (load-balanced mode).
    pub service_id: Option<ObjectId>,
    /// The connection's maxWireVersion, if the handshake got that far.
    pub max_wire_version: Option<i32>,
    /// Where the error happened.
    pub phase: ErrorPhase,
    /// What happened.
    pub kind: ApplicationErrorKind,
    /// The error's labels (for example `SystemOverloadedError`).
    pub labels: Vec<String>,
}

impl ApplicationErrorKind {
    /// Extracts the SDAM-relevant error of a command response: an `ok: 0` error (including a
    /// legacy `$err`), else a `writeConcernError`. `None` if neither is present (`writeErrors`
    /// are ignored).
    pub fn from_response(response: &Document) -> Option<(Self, Vec<String>)> {
        crate::reply::reply_error(response).and_then(|e| Self::from_server_error(*e))
    }

    /// [`from_response`](Self::from_response) on an error [`crate::reply`] already parsed.
    pub fn from_server_error(e: ServerError) -> Option<(Self, Vec<String>)> {
        let kind = if e.command_failed {
            ApplicationErrorKind::Command {
                code: e.code,
                message: e.message,
                topology_version: e.topology_version,
                write_concern: false,
            }
        } else {
            let wce = e.write_concern_error?;
            ApplicationErrorKind::Command {
                code: Some(wce.code),
                message: wce.message,
                topology_version: wce.topology_version.or(e.topology_version),
                write_concern: true,
            }
        };
        Some((kind, e.labels))
    }
}

impl ApplicationError {
    /// The error's topologyVersion (only command errors carry one).
    pub fn topology_version(&self) -> Option<&TopologyVersion> {
        match &self.kind {
            ApplicationErrorKind::Command { topology_version, .. } => topology_version.as_ref(),
            _ => None,
        }
    }

    /// Whether the error carries the backpressure label. The pool adds it to every network
    /// error or timeout during connection establishment and hello, so those count too.
    pub fn is_overload(&self) -> bool {
        self.labels.iter().any(|l| l == SYSTEM_OVERLOADED_ERROR)
            || (self.phase == ErrorPhase::ConnectionEstablishment
                && matches!(self.kind, ApplicationErrorKind::Network | ApplicationErrorKind::Timeout))
    }

    /// The state change this error signals, if it is a command error that is one.
    pub fn state_change(&self) -> Option<StateChange> {
        match &self.kind {
            ApplicationErrorKind::Command { code, message, .. } => classify_state_change(*code, message),
            _ => None,
        }
    }

    fn description(&self) -> String {
        match &self.kind {
            ApplicationErrorKind::Network => format!("network error on connection to {}", self.address),
            ApplicationErrorKind::Timeout => format!("network timeout on connection to {}", self.address),
            ApplicationErrorKind::Command { code, message, write_concern, .. } => {
                let what = if *write_concern { "write concern error" } else { "command error" };
                match code {
                    Some(c) => format!("{what} from {}: {message} (code {c})", self.address),
                    None => format!("{what} from {}: {message}", self.address),
                }
            }
        }
    }
}

/// Which pool to clear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClearPool {
    /// In load-balanced mode: clear only the connections to this service.
    pub service_id: Option<ObjectId>,
    /// Whether in-use connections are interrupted too (application errors never do).
    pub interrupt_in_use: bool,
}

/// Why an error was ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IgnoredBecause {
    /// The server is not in the topology.
    NotInTopology,
    /// The connection's generation is older than the pool's.
    StaleGeneration,
    /// The error's topologyVersion is not newer than the server's.
    StaleTopologyVersion,
    /// The error does not affect SDAM (a timeout after the handshake, an overload, an
    /// ordinary command error).
    NotRelevant,
}

/// What SDAM wants done about an application error.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ErrorDecision {
    /// Replace the server's description with this Unknown one (via
    /// [`TopologyDescription::apply_error_decision`]).
    pub mark_unknown: Option<ServerDescription>,
    /// Clear the server's pool (bump its generation), synchronised with the update.
    pub clear_pool: Option<ClearPool>,
    /// Ask the server's monitor for an immediate check (state change errors).
    pub request_immediate_check: bool,
    /// Cancel the monitor's in-progress check (network errors).
    pub cancel_check: bool,
    /// Set when the error changes nothing.
    pub ignored: Option<IgnoredBecause>,
}

impl ErrorDecision {
    fn ignore(why: IgnoredBecause) -> Self {
        ErrorDecision { ignored: Some(why), ..Default::default() }
    }
}

/// The spec's `handleError`: decides what an application error does to SDAM state.
/// `pool_generation` is the current generation of the server's pool (in load-balanced mode,
/// of the error's service).
pub fn decide(
    topology: &TopologyDescription,
    pool_generation: u32,
    error: &ApplicationError,
) -> ErrorDecision {
    let Some(current) = topology.server(&error.address) else {
        return ErrorDecision::ignore(IgnoredBecause::NotInTopology);
    };
    if error.generation < pool_generation {
        return ErrorDecision::ignore(IgnoredBecause::StaleGeneration);
    }
    // We use >= because every state change produces a new topologyVersion.
    if compare_topology_versions(current.topology_version.as_ref(), error.topology_version())
        != Ordering::Less
    {
        return ErrorDecision::ignore(IgnoredBecause::StaleTopologyVersion);
    }
    let load_balanced = topology.topology_type() == TopologyType::LoadBalanced;
    let unknown = || ServerDescription::new_error(error.address.clone(), error.description(), None);
    // Load balanced: errors before the handshake completed (no serviceId yet) are not SDAM
    // errors (load-balancers spec, "Initial Handshake Errors").
    if load_balanced && error.service_id.is_none() {
        return ErrorDecision::ignore(IgnoredBecause::NotRelevant);
    }

    if error.state_change().is_some() {
        let code = match &error.kind {
            ApplicationErrorKind::Command { code, .. } => *code,
            _ => None,
        };
        // Servers before 4.2 close all connections on a state change; from 4.2 only
        // shutdown does.
        let pre_4_2 = error.max_wire_version.is_some_and(|w| w < WIRE_VERSION_4_2);
        let clear = is_shutdown_code(code) || pre_4_2;
        return ErrorDecision {
            mark_unknown: (!load_balanced).then(|| ServerDescription {
                topology_version: error.topology_version().copied(),
                ..unknown()
            }),
            clear_pool: clear.then_some(ClearPool {
                service_id: if load_balanced { error.service_id } else { None },
                interrupt_in_use: false,
            }),
            request_immediate_check: !load_balanced,
            cancel_check: false,
            ignored: None,
        };
    }

    let network = matches!(error.kind, ApplicationErrorKind::Network);
    let timeout = matches!(error.kind, ApplicationErrorKind::Timeout);
    let relevant = if error.is_overload() {
        false
    } else if network {
        true
    } else if timeout {
        // A timeout on an established connection may just be a slow operation.
        !error.phase.completed_handshake()
    } else {
        // Other command errors matter only during the handshake (e.g. authentication).
        !error.phase.completed_handshake()
    };
    if !relevant {
        return ErrorDecision::ignore(IgnoredBecause::NotRelevant);
    }
    if load_balanced {
        return match error.service_id {
            Some(id) => ErrorDecision {
                clear_pool: Some(ClearPool { service_id: Some(id), interrupt_in_use: false }),
                cancel_check: false,
                ..Default::default()
            },
            None => ErrorDecision::ignore(IgnoredBecause::NotRelevant),
        };
    }
    ErrorDecision {
        mark_unknown: Some(unknown()),
        clear_pool: Some(ClearPool { service_id: None, interrupt_in_use: false }),
        request_immediate_check: false,
        cancel_check: true,
        ignored: None,
    }
}

impl TopologyDescription {
    /// Carries out the topology part of a decision (marking the server Unknown). The caller
    /// clears the pool and talks to the monitor. Returns the update if one was applied.
    pub fn apply_error_decision(&mut self, decision: &ErrorDecision) -> Option<TopologyUpdate> {
        decision.mark_unknown.clone().map(|sd| self.apply(sd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_takes_precedence_over_message() {
        assert_eq!(classify_state_change(Some(1), "not master"), None);
        assert_eq!(classify_state_change(Some(1), "node is recovering"), None);
        assert_eq!(classify_state_change(Some(10107), "whatever"), Some(StateChange::NotWritablePrimary));
        assert_eq!(classify_state_change(Some(13435), ""), Some(StateChange::NotWritablePrimary));
        assert_eq!(classify_state_change(Some(10058), ""), Some(StateChange::NotWritablePrimary));
        for c in RECOVERING_CODES {
            assert_eq!(classify_state_change(Some(c), "not master"), Some(StateChange::NodeIsRecovering));
        }
    }

    #[test]
    fn message_used_only_without_code() {
        assert_eq!(classify_state_change(None, "not master"), Some(StateChange::NotWritablePrimary));
        assert_eq!(classify_state_change(None, "not primary"), Some(StateChange::NotWritablePrimary));
        // "not master or secondary" is recovering, although it contains "not master".
        assert_eq!(
            classify_state_change(None, "not master or secondary"),
            Some(StateChange::NodeIsRecovering)
        );
        assert_eq!(classify_state_change(None, "node is recovering"), Some(StateChange::NodeIsRecovering));
        assert_eq!(classify_state_change(None, "some other error"), None);
    }

    #[test]
    fn shutdown_codes() {
        assert!(is_shutdown_code(Some(11600)));
        assert!(is_shutdown_code(Some(91)));
        assert!(!is_shutdown_code(Some(189)));
        assert!(!is_shutdown_code(None));
    }

    #[test]
    fn write_errors_are_not_errors_but_write_concern_errors_are() {
        let r = bson::doc! {"ok": 1, "writeErrors": [{"code": 10107, "errmsg": "x"}]};
        assert!(ApplicationErrorKind::from_response(&r).is_none());
        let r = bson::doc! {"ok": 1, "writeConcernError": {"code": 91, "errmsg": "shutdown"}};
        let (k, _) = ApplicationErrorKind::from_response(&r).unwrap();
        assert!(matches!(k, ApplicationErrorKind::Command { code: Some(91), write_concern: true, .. }));
    }
}

#[cfg(test)]
mod decision_tests {
    use super::*;
    use crate::sdam::{ServerType, TopologySettings};
    use bson::doc;

    fn a() -> ServerAddress {
        ServerAddress::tcp("a", 27017)
    }

    fn tv(counter: i64) -> TopologyVersion {
        TopologyVersion { process_id: ObjectId::from_bytes([1; 12]), counter }
    }

    fn topology() -> TopologyDescription {
        let mut td = TopologyDescription::new(TopologySettings {
            seeds: vec![a()],
            set_name: Some("rs".into()),
            ..Default::default()
        });
        let reply = doc! {"ok": 1, "isWritablePrimary": true, "setName": "rs", "hosts": ["a:27017"],
        "maxWireVersion": 9, "topologyVersion": {"processId": tv(1).process_id, "counter": 1_i64}};
        td.apply(ServerDescription::from_hello_document(a(), &reply, None, None));
        td
    }

    fn command(code: i32, counter: Option<i64>, wire: i32) -> ApplicationError {
        ApplicationError {
            address: a(),
            generation: 0,
            service_id: None,
            max_wire_version: Some(wire),
            phase: ErrorPhase::AfterHandshake,
            kind: ApplicationErrorKind::Command {
                code: Some(code),
                message: "x".into(),
                topology_version: counter.map(tv),
                write_concern: false,
            },
            labels: vec![],
        }
    }

    #[test]
    fn state_change_marks_unknown_and_clears_only_on_shutdown_or_pre_4_2() {
        let td = topology();
        let d = decide(&td, 0, &command(10107, Some(2), 9));
        assert!(d.mark_unknown.is_some() && d.request_immediate_check && d.clear_pool.is_none());
        assert_eq!(d.mark_unknown.as_ref().unwrap().topology_version, Some(tv(2)));
        assert!(decide(&td, 0, &command(91, Some(2), 9)).clear_pool.is_some());
        assert!(decide(&td, 0, &command(10107, Some(2), 7)).clear_pool.is_some());
    }

    #[test]
    fn stale_errors_are_ignored() {
        let td = topology();
        let mut e = command(10107, Some(2), 9);
        e.generation = 0;
        assert_eq!(decide(&td, 1, &e).ignored, Some(IgnoredBecause::StaleGeneration));
        // An equal topologyVersion is stale too.
        assert_eq!(
            decide(&td, 0, &command(10107, Some(1), 9)).ignored,
            Some(IgnoredBecause::StaleTopologyVersion)
        );
        // A missing one is not.
        assert!(decide(&td, 0, &command(10107, None, 9)).mark_unknown.is_some());
    }

    #[test]
    fn network_errors_and_timeouts() {
        let mut td = topology();
        let mut e = command(0, None, 9);
        e.kind = ApplicationErrorKind::Timeout;
        assert_eq!(decide(&td, 0, &e).ignored, Some(IgnoredBecause::NotRelevant));
        e.phase = ErrorPhase::ConnectionEstablishment;
        assert_eq!(decide(&td, 0, &e).ignored, Some(IgnoredBecause::NotRelevant));
        e.phase = ErrorPhase::Authentication;
        assert!(decide(&td, 0, &e).mark_unknown.is_some());
        e.kind = ApplicationErrorKind::Network;
        e.phase = ErrorPhase::AfterHandshake;
        let d = decide(&td, 0, &e);
        assert!(d.mark_unknown.is_some() && d.clear_pool.is_some() && d.cancel_check);
        td.apply_error_decision(&d);
        assert_eq!(td.server(&a()).unwrap().server_type, ServerType::Unknown);
        assert_eq!(td.topology_type(), TopologyType::ReplicaSetNoPrimary);
        e.labels = vec![SYSTEM_OVERLOADED_ERROR.into()];
        assert_eq!(decide(&td, 0, &e).ignored, Some(IgnoredBecause::NotRelevant));
    }

    #[test]
    fn load_balanced_never_marks_unknown() {
        let td = TopologyDescription::new(TopologySettings {
            seeds: vec![a()],
            load_balanced: true,
            ..Default::default()
        });
        let sid = ObjectId::from_bytes([7; 12]);
        let mut e = command(91, None, 13);
        e.service_id = Some(sid);
        let d = decide(&td, 0, &e);
        assert!(d.mark_unknown.is_none() && !d.request_immediate_check);
        assert_eq!(d.clear_pool, Some(ClearPool { service_id: Some(sid), interrupt_in_use: false }));
        // A shutdown error in the handshake's hello (no serviceId yet) is ignored.
        e.service_id = None;
        assert_eq!(decide(&td, 0, &command(91, None, 13)).ignored, Some(IgnoredBecause::NotRelevant));
    }
}
