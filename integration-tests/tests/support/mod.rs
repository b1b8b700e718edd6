//! What the client tests share: a client of a simulated deployment that records its command
//! and CMAP events.
// Each test crate uses a different part of this module.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use actors::command_events::CommandEvent;
use actors::{Client, ClientOptions};
use bson::{Bson, Document};
use integration_tests::sim::Cluster;
use pool::cmap::CmapEvent;

/// How long discovery may take.
pub const WAIT: Duration = Duration::from_secs(10);

/// A simulated deployment and a client of it.
pub struct Setup {
    pub cluster: Cluster,
    pub client: Client,
    /// Command events, in order.
    pub events: crossbeam_channel::Receiver<CommandEvent>,
    /// CMAP events, in order.
    pub cmap: crossbeam_channel::Receiver<CmapEvent>,
}

/// A client of `cluster`, with URI options `extra` (`a=1&b=2`) appended.
pub async fn connect(cluster: Cluster, extra: &str) -> Setup {
    let uri = cluster.uri();
    let sep = if uri.contains('?') { "&" } else { "?" };
    let uri = if extra.is_empty() { uri } else { format!("{uri}{sep}{extra}") };
    let mut options = ClientOptions::parse(&uri).await.expect("uri");
    let (tx, events) = crossbeam_channel::unbounded();
    options.command_event_handler = Some(Arc::new(tx));
    let (tx, cmap) = crossbeam_channel::unbounded();
    options.cmap_event_handler = Some(Arc::new(tx));
    let client = Client::with_options(options).await.expect("client");
    Setup { cluster, client, events, cmap }
}

/// A client of a new replica set of `members`, once it knows the primary.
pub async fn replica_set_with_primary(members: usize, extra: &str) -> Setup {
    let s = connect(Cluster::replica_set(members).start().expect("sim"), extra).await;
    s.client.topology().wait_for(|t| t.primary().is_some(), WAIT).await.expect("discovery");
    s
}

/// The command's `maxTimeMS`, if it has one.
pub fn max_time(command: &Document) -> Option<i64> {
    match command.get("maxTimeMS") {
        Some(Bson::Int64(i)) => Some(*i),
        Some(Bson::Int32(i)) => Some(i64::from(*i)),
        _ => None,
    }
}
