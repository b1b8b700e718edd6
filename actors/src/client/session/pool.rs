//! Server sessions and their pool (driver sessions spec): an operation takes a server session
//! (its `lsid`) when the topology supports sessions and gives it back when it finishes; a
//! cursor keeps its session until it is exhausted or killed; an explicit session owns one
//! until it ends.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bson::{doc, Binary, Document};
use parking_lot::Mutex;

use super::tracking::Tracking;

/// A session is not reused when it would expire within this margin (the spec's one minute).
const EXPIRY_MARGIN: Duration = Duration::from_secs(60);

/// One server session: its id, when it was last used, and its transaction number.
#[derive(Debug)]
pub(crate) struct ServerSession {
    /// `{id: UUID}` (binary subtype 4).
    pub lsid: Document,
    /// `lsid` serialized once: every command of the session carries it.
    pub lsid_raw: bson::RawDocumentBuf,
    /// When an operation last used it.
    pub last_use: Instant,
    /// The last `txnNumber` sent (retryable writes increment it).
    pub txn_number: i64,
    /// A network error happened while it was in use: the server may still hold it, so it is
    /// discarded instead of reused.
    pub dirty: bool,
    /// A copy lent to a cursor of an explicit session: never returned to the pool.
    pub borrowed: bool,
    /// What an explicit session tracks across its operations (`None` for implicit sessions,
    /// which track nothing).
    pub tracking: Option<Box<Tracking>>,
}

impl ServerSession {
    fn new() -> Self {
        let id = Binary::from_uuid(bson::Uuid::new());
        let lsid = doc! { "id": id };
        ServerSession {
            lsid_raw: bson::RawDocumentBuf::try_from(&lsid).unwrap_or_default(),
            lsid,
            last_use: Instant::now(),
            txn_number: 0,
            dirty: false,
            borrowed: false,
            tracking: None,
        }
    }

    /// A copy with the same id for a cursor of an explicit session (the session keeps the
    /// original; releasing the copy does nothing).
    pub fn lend(&self) -> ServerSession {
        ServerSession {
            lsid: self.lsid.clone(),
            lsid_raw: self.lsid_raw.clone(),
            last_use: self.last_use,
            txn_number: self.txn_number,
            dirty: false,
            borrowed: true,
            tracking: None,
        }
    }

    /// The next transaction number, for a new retryable write.
    pub fn next_txn_number(&mut self) -> i64 {
        self.txn_number += 1;
        self.txn_number
    }

    fn expires_soon(&self, timeout_minutes: Option<i64>, now: Instant) -> bool {
        match timeout_minutes {
            Some(m) => {
                // A server's hostile minute count saturates instead of overflowing.
                let timeout = Duration::from_secs(u64::try_from(m.max(0)).unwrap_or(0).saturating_mul(60));
                now.saturating_duration_since(self.last_use) + EXPIRY_MARGIN >= timeout
            }
            None => false,
        }
    }
}

/// The pool of idle server sessions, most recently used first.
#[derive(Debug, Default)]
pub(crate) struct SessionPool {
    idle: Mutex<VecDeque<ServerSession>>,
}

impl SessionPool {
    /// Takes the most recently used session that does not expire soon, or a new one.
    pub fn acquire(&self, timeout_minutes: Option<i64>) -> ServerSession {
        let now = Instant::now();
        let mut idle = self.idle.lock();
        while let Some(mut s) = idle.pop_front() {
            if !s.expires_soon(timeout_minutes, now) {
                s.tracking = None;
                return s;
            }
        }
        drop(idle);
        ServerSession::new()
    }

    /// Gives a session back (dirty or expiring sessions are dropped), and prunes expired
    /// sessions from the back.
    pub fn release(&self, mut session: ServerSession, timeout_minutes: Option<i64>) {
        let now = Instant::now();
        session.last_use = now;
        let mut idle = self.idle.lock();
        while idle.back().is_some_and(|s| s.expires_soon(timeout_minutes, now)) {
            idle.pop_back();
        }
        if !session.dirty && !session.borrowed {
            idle.push_front(session);
        }
    }

    /// Takes every idle session (for `endSessions` at shutdown).
    pub fn drain(&self) -> Vec<ServerSession> {
        self.idle.lock().drain(..).collect()
    }

    /// How many idle sessions the pool holds.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.idle.lock().len()
    }

    /// Whether no idle session is pooled (nothing for `endSessions`).
    pub fn is_empty(&self) -> bool {
        self.idle.lock().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifo_reuse_and_dirty_sessions_are_dropped() {
        let pool = SessionPool::default();
        let a = pool.acquire(Some(30));
        let b = pool.acquire(Some(30));
        assert_ne!(a.lsid, b.lsid);
        let a_id = a.lsid.clone();
        let b_id = b.lsid.clone();
        pool.release(a, Some(30));
        pool.release(b, Some(30));
        assert_eq!(pool.acquire(Some(30)).lsid, b_id, "most recently used first");
        let mut a = pool.acquire(Some(30));
        assert_eq!(a.lsid, a_id);
        a.dirty = true;
        pool.release(a, Some(30));
        assert_eq!(pool.len(), 0);
    }

    #[test]
    fn expiring_sessions_are_not_reused() {
        let pool = SessionPool::default();
        let mut s = pool.acquire(Some(1));
        let id = s.lsid.clone();
        s.last_use = Instant::now();
        // A one-minute timeout: within the one-minute margin at once.
        pool.release(s, Some(1));
        assert_ne!(pool.acquire(Some(1)).lsid, id);
        let s = pool.acquire(Some(30));
        assert_eq!(
            s.lsid.get("id").and_then(|b| match b {
                bson::Bson::Binary(b) if b.bytes.len() == 16 => Some(b.subtype),
                _ => None,
            }),
            Some(bson::spec::BinarySubtype::Uuid)
        );
    }
}
