//! Which of the client's queues was full when it refused work ([`ErrorKind::Overloaded`](super::ErrorKind::Overloaded)).

/// Which queue of [`ErrorKind::Overloaded`] was full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum OverloadedQueue {
    /// Operations waiting for a suitable server (`max_selection_waiters`).
    ServerSelection,
    /// Check-outs waiting for a connection of one server's pool (`max_wait_queue_size`).
    ConnectionPool,
}
