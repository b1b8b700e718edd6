//! What the members counted: connections, hellos, commands, bytes. Updated without the
//! state lock ([`CounterCells`]) and read as snapshots ([`Counters`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use bson::{doc, Document};
use parking_lot::Mutex;

/// Counters of one member (or the sum over all members).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberCounters {
    /// Connections accepted.
    pub connections_opened: u64,
    /// Connections open right now (accepted and not yet closed).
    pub current_connections: u64,
    /// Plain (not awaitable) hello/isMaster commands, OP_QUERY included.
    pub hellos: u64,
    /// Awaitable hello replies (each streamed exhaust reply counts).
    pub awaited_hellos: u64,
    /// Replies sent as OP_COMPRESSED (after a client offered a compressor the simulator has).
    pub compressed_replies: u64,
    /// Bytes received from clients on every connection, as on the wire.
    pub bytes_in: u64,
    /// Bytes sent to clients on every connection, as on the wire.
    pub bytes_out: u64,
    /// Commands received, by name as sent (hello included).
    pub commands: BTreeMap<String, u64>,
    /// Requests received as OP_COMPRESSED, by `compressor:command` (`zstd:find`).
    pub compressed_commands: BTreeMap<String, u64>,
}

impl MemberCounters {
    /// How many times `name` was received.
    pub fn command(&self, name: &str) -> u64 {
        self.commands.get(name).copied().unwrap_or(0)
    }

    fn to_document(&self) -> Document {
        let commands: Document = self
            .commands
            .iter()
            .map(|(k, v)| (k.clone(), bson::Bson::Int64(i64::try_from(*v).unwrap_or(i64::MAX))))
            .collect();
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        doc! {
            "connectionsOpened": n(self.connections_opened),
            "currentConnections": n(self.current_connections),
            "hellos": n(self.hellos),
            "awaitedHellos": n(self.awaited_hellos),
            "compressedReplies": n(self.compressed_replies),
            "bytesIn": n(self.bytes_in),
            "bytesOut": n(self.bytes_out),
            "commands": commands,
            "compressedCommands": self
                .compressed_commands
                .iter()
                .map(|(k, v)| (k.clone(), bson::Bson::Int64(n(*v))))
                .collect::<Document>(),
        }
    }
}

/// A snapshot of the cluster's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Per member (per mongos, per load-balanced service), in index order.
    pub members: Vec<MemberCounters>,
    /// Sum over all members.
    pub total: MemberCounters,
}

impl Counters {
    /// The counters as the `simCounters` admin command returns them:
    /// `{total: {...}, members: [{...}, ...]}` with camelCase field names.
    pub fn to_document(&self) -> Document {
        doc! {
            "total": self.total.to_document(),
            "members": self.members.iter().map(MemberCounters::to_document).collect::<Vec<_>>(),
        }
    }
}

/// Per-member counters, updated without the state lock.
#[derive(Debug, Default)]
pub(crate) struct CounterCells {
    pub connections_opened: AtomicU64,
    pub hellos: AtomicU64,
    pub awaited_hellos: AtomicU64,
    pub compressed_replies: AtomicU64,
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    pub commands: Mutex<HashMap<String, u64>>,
    /// Requests that arrived compressed, by `compressor:command`.
    pub compressed_commands: Mutex<HashMap<String, u64>>,
}

impl CounterCells {
    /// Counts one command by name.
    pub(crate) fn command(&self, name: &str) {
        let mut map = self.commands.lock();
        match map.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                map.insert(name.to_owned(), 1);
            }
        }
    }

    /// Counts one request that arrived as OP_COMPRESSED.
    pub(crate) fn compressed_command(&self, compressor_id: u8, name: &str) {
        let compressor = match compressor_id {
            0 => "noop",
            1 => "snappy",
            2 => "zlib",
            3 => "zstd",
            _ => "unknown",
        };
        *self.compressed_commands.lock().entry(format!("{compressor}:{name}")).or_insert(0) += 1;
    }

    pub(crate) fn snapshot(&self, current_connections: usize) -> MemberCounters {
        MemberCounters {
            connections_opened: self.connections_opened.load(Ordering::Relaxed),
            current_connections: u64::try_from(current_connections).unwrap_or(u64::MAX),
            hellos: self.hellos.load(Ordering::Relaxed),
            awaited_hellos: self.awaited_hellos.load(Ordering::Relaxed),
            compressed_replies: self.compressed_replies.load(Ordering::Relaxed),
            bytes_in: self.bytes_in.load(Ordering::Relaxed),
            bytes_out: self.bytes_out.load(Ordering::Relaxed),
            commands: self.commands.lock().iter().map(|(k, v)| (k.clone(), *v)).collect(),
            compressed_commands: self
                .compressed_commands
                .lock()
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
        }
    }
}
