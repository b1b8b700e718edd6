//! `$clusterTime` gossip, in one place: the greatest time the client has seen (advanced from
//! every reply), a session's own (advanced from its replies and by the user), and the one an
//! attempt sends, the greater of the two (sessions spec; sent only to a replica set or a
//! sharded cluster).

use std::sync::Arc;

use bson::{Document, RawDocumentBuf, Timestamp};
use parking_lot::Mutex;

/// The greatest `$clusterTime` a client has seen: its timestamp, to compare, and its bytes,
/// to send (every command to a replica set or a sharded cluster gossips it).
#[derive(Debug, Clone)]
pub(crate) struct ClusterTime {
    /// Its `clusterTime`.
    pub timestamp: Timestamp,
    /// The whole `$clusterTime` document (shared: every command's attempt sends it).
    pub raw: Arc<RawDocumentBuf>,
}

/// The client's `$clusterTime`, shared by every operation.
#[derive(Debug, Default)]
pub(crate) struct ClientClusterTime(Mutex<Option<ClusterTime>>);

impl ClientClusterTime {
    /// Keeps the greatest `$clusterTime` seen. Read from the reply's bytes: nothing is built
    /// unless the time moved forward.
    #[inline]
    pub(crate) fn advance(&self, ct: &bson::RawDocument) {
        let Ok(new) = ct.get_timestamp("clusterTime") else { return };
        let mut current = self.0.lock();
        if current.as_ref().is_none_or(|old| new > old.timestamp) {
            *current = Some(ClusterTime { timestamp: new, raw: Arc::new(ct.to_owned()) });
        }
    }

    /// The current time, shared (the lock is held only to clone the pointer).
    #[inline]
    pub(crate) fn get(&self) -> Option<ClusterTime> {
        self.0.lock().clone()
    }
}

/// The `clusterTime` timestamp of a `$clusterTime` document.
pub(crate) fn timestamp_of(ct: &Document) -> Option<Timestamp> {
    ct.get_timestamp("clusterTime").ok()
}

/// The `$clusterTime` an attempt sends: the session's when it is greater than the client's
/// (the user may have advanced it), else the client's.
pub(crate) enum ToSend {
    /// The session's, serialized for this attempt.
    Session(RawDocumentBuf),
    /// The client's, shared.
    Client(Arc<RawDocumentBuf>),
    /// None known yet.
    None,
}

impl ToSend {
    /// The greater of `client`'s time and `session`'s.
    #[inline]
    pub(crate) fn choose(
        client: &ClientClusterTime,
        session: Option<&Document>,
    ) -> Result<ToSend, crate::bson_compat::RawError> {
        let client = client.get();
        let session = session.filter(|s| match &client {
            Some(c) => timestamp_of(s).is_some_and(|s| s > c.timestamp),
            None => true,
        });
        Ok(match (session, client) {
            (Some(s), _) => ToSend::Session(RawDocumentBuf::try_from(s)?),
            (None, Some(c)) => ToSend::Client(c.raw),
            (None, None) => ToSend::None,
        })
    }

    /// The document to send.
    #[inline]
    pub(crate) fn as_raw(&self) -> Option<&bson::RawDocument> {
        match self {
            ToSend::Session(s) => Some(s),
            ToSend::Client(c) => Some(c),
            ToSend::None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    fn ct(t: u32) -> Document {
        doc! {"clusterTime": Timestamp { time: t, increment: 1 }, "signature": {"keyId": 1_i64}}
    }

    #[test]
    fn client_time_only_moves_forward() {
        let client = ClientClusterTime::default();
        client.advance(&RawDocumentBuf::try_from(&ct(5)).unwrap());
        client.advance(&RawDocumentBuf::try_from(&ct(3)).unwrap());
        assert_eq!(client.get().map(|c| c.timestamp.time), Some(5));
    }

    #[test]
    fn the_greater_of_session_and_client_is_sent() {
        let client = ClientClusterTime::default();
        let sent = |session: Option<&Document>| {
            let s = ToSend::choose(&client, session).unwrap();
            s.as_raw().map(|r| r.get_timestamp("clusterTime").unwrap().time)
        };
        assert_eq!(sent(None), None);
        assert_eq!(sent(Some(&ct(2))), Some(2));
        client.advance(&RawDocumentBuf::try_from(&ct(5)).unwrap());
        assert_eq!(sent(Some(&ct(2))), Some(5));
        assert_eq!(sent(Some(&ct(9))), Some(9));
    }
}
