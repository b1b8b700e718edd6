//! [`ServerInfo`]: the public, read-only view of one server that a
//! [`SelectionCriteria::Predicate`](crate::cluster::selection_criteria::SelectionCriteria::Predicate) receives
//! (the official `mongodb::ServerInfo`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;
use std::time::Duration;

use bson::DateTime;
use protocol::sdam::{ServerDescription, ServerType};
use protocol::ServerAddress;
use serde::Serialize;

use crate::error::{Error, ErrorKind};

/// What the client knows of one server: its address, type, round-trip time and what its last
/// `hello` reply said. Borrowed from the topology snapshot.
#[derive(Clone)]
pub struct ServerInfo<'a> {
    description: Cow<'a, ServerDescription>,
    tags: OnceLock<Option<HashMap<String, String>>>,
    error: OnceLock<Option<Error>>,
}

impl<'a> ServerInfo<'a> {
    /// The view of `description`.
    pub fn new_borrowed(description: &'a ServerDescription) -> Self {
        ServerInfo { description: Cow::Borrowed(description), tags: OnceLock::new(), error: OnceLock::new() }
    }

    /// The view of an owned `description` (an SDAM event's).
    pub(crate) fn new_owned(description: ServerDescription) -> ServerInfo<'static> {
        ServerInfo { description: Cow::Owned(description), tags: OnceLock::new(), error: OnceLock::new() }
    }

    /// The server's address.
    pub fn address(&self) -> &ServerAddress {
        &self.description.address
    }

    /// The round-trip time the monitor measured (a moving average), if any.
    pub fn average_round_trip_time(&self) -> Option<Duration> {
        self.description.round_trip_time
    }

    /// When the server was last checked, if it was.
    pub fn last_update_time(&self) -> Option<DateTime> {
        let at = self.description.last_update_time?;
        let ago = i64::try_from(at.elapsed().as_millis()).unwrap_or(i64::MAX);
        Some(DateTime::from_millis(DateTime::now().timestamp_millis().saturating_sub(ago)))
    }

    /// `maxWireVersion` from the last reply.
    pub fn max_wire_version(&self) -> Option<i32> {
        self.description.max_wire_version
    }

    /// `minWireVersion` from the last reply.
    pub fn min_wire_version(&self) -> Option<i32> {
        self.description.min_wire_version
    }

    /// The replica set's name, for a member.
    pub fn replica_set_name(&self) -> Option<&str> {
        self.description.set_name.as_deref()
    }

    /// The replica set's configuration version, for a member.
    pub fn replica_set_version(&self) -> Option<i32> {
        self.description.set_version.and_then(|v| i32::try_from(v).ok())
    }

    /// The server's type.
    pub fn server_type(&self) -> ServerType {
        self.description.server_type
    }

    /// The member's tags, when its last reply succeeded.
    pub fn tags(&self) -> Option<&HashMap<String, String>> {
        self.tags
            .get_or_init(|| {
                (self.description.error.is_none() && self.description.server_type.is_known())
                    .then(|| self.description.tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            })
            .as_ref()
    }

    /// Why the last check failed, if it did.
    pub fn error(&self) -> Option<&Error> {
        self.error
            .get_or_init(|| {
                self.description.error.as_ref().map(|message| {
                    Error::from(ErrorKind::Internal { message: format!("server check failed: {message}") })
                })
            })
            .as_ref()
    }
}

impl Serialize for ServerInfo<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.description.serialize(s)
    }
}

impl fmt::Debug for ServerInfo<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerInfo")
            .field("address", self.address())
            .field("server_type", &self.server_type())
            .field("average_round_trip_time", &self.average_round_trip_time())
            .field("replica_set_name", &self.replica_set_name())
            .field("error", &self.description.error)
            .finish()
    }
}

impl fmt::Display for ServerInfo<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{ Address: {}, Type: {:?}", self.address(), self.server_type())?;
        if let Some(rtt) = self.average_round_trip_time() {
            write!(f, ", Average RTT: {rtt:?}")?;
        }
        if let Some(e) = &self.description.error {
            write!(f, ", Error: {e}")?;
        }
        f.write_str(" }")
    }
}
