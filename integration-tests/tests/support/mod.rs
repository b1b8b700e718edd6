//! What the client tests share: a client of a deployment (the simulator, or the real one
//! `MONGODB_URI` names; see `integration_tests::deployment`) that records its command and CMAP
//! events.
// Each test crate uses a different part of this module.
#![allow(dead_code)]

pub mod alloc;

use std::time::Duration;

use actors::command_events::CommandEvent;
use actors::{Client, ClientOptions, Database};
use bson::{doc, Bson, Document};
use integration_tests::deployment::Deployment;
use mongo_sim::Cluster;
use pool::cmap::CmapEvent;

/// How long discovery may take.
pub const WAIT: Duration = Duration::from_secs(10);

/// A deployment and a client of it.
pub struct Setup {
    pub deployment: Deployment,
    pub client: Client,
    /// Command events, in order.
    pub events: crossbeam_channel::Receiver<CommandEvent>,
    /// CMAP events, in order.
    pub cmap: crossbeam_channel::Receiver<CmapEvent>,
    /// Unique to this setup: the client's `appname` (so fail points on a shared real
    /// deployment only touch this client) and, on a real deployment, a suffix of the
    /// databases it uses (so tests running at once do not see each other's data).
    pub tag: String,
}

impl Setup {
    /// The simulator. Tests that call this need simulator-only controls: on a real deployment
    /// they are not applicable, and say so.
    ///
    /// # Panics
    /// On a real deployment, naming the reason.
    pub fn cluster(&self) -> &Cluster {
        self.deployment
            .sim()
            .expect("this test needs the simulator's controls; it does not apply to MONGODB_URI")
    }

    /// Whether the deployment is a replica set (retryable writes, transactions); otherwise
    /// prints that `test` does not apply, needing `what`, and returns false.
    pub fn replica_set_or_not_applicable(&self, test: &str, what: &str) -> bool {
        let single = self.client.topology().snapshot().description.topology_type()
            == protocol::sdam::TopologyType::Single;
        let standalone = single
            && self
                .client
                .topology()
                .snapshot()
                .description
                .servers()
                .all(|s| s.server_type == protocol::sdam::ServerType::Standalone);
        if standalone {
            integration_tests::deployment::print_skip(
                test,
                &format!("needs a replica set ({what}); the deployment is a standalone"),
            );
        }
        !standalone
    }

    /// The database `name`, suffixed with this setup's tag on a real deployment.
    pub fn database(&self, name: &str) -> Database {
        if self.deployment.is_real() {
            self.client.database(&format!("{name}_{}", self.tag))
        } else {
            self.client.database(name)
        }
    }

    /// Sets the `failCommand` fail point on the primary with `mode` and `data`; on a real
    /// deployment it only applies to this client (`appName`).
    pub async fn fail_point(&self, mode: Bson, mut data: Document) {
        if self.deployment.is_real() {
            data.insert("appName", self.tag.clone());
        }
        self.deployment
            .configure_fail_point(doc! {"configureFailPoint": "failCommand", "mode": mode, "data": data})
            .await
            .expect("fail point");
    }
}

impl Setup {
    /// Turns the `failCommand` fail point off.
    pub async fn fail_point_off(&self) {
        self.deployment
            .configure_fail_point(doc! {"configureFailPoint": "failCommand", "mode": "off"})
            .await
            .expect("fail point off");
    }
}

/// A client of `deployment`, with URI options `extra` (`a=1&b=2`) appended.
pub async fn connect_to(deployment: Deployment, extra: &str) -> Setup {
    let tag = format!("t{}", &bson::oid::ObjectId::new().to_hex()[16..]);
    let uri = deployment.uri();
    let extra = if extra.contains("appname=") { extra.to_owned() } else { format!("appname={tag}&{extra}") };
    let extra = extra.trim_end_matches('&');
    let uri = integration_tests::deployment::with_options(&uri, extra);
    let mut options = ClientOptions::parse(&uri).await.expect("uri");
    let (tx, events) = crossbeam_channel::unbounded();
    options.command_event_handler = Some(actors::event::EventHandler::subscriber(tx));
    let (tx, cmap) = crossbeam_channel::unbounded();
    options.cmap_event_handler = Some(actors::event::EventHandler::subscriber(tx));
    let client = Client::with_options(options).expect("client");
    Setup { deployment, client, events, cmap, tag }
}

/// A client of a simulated `cluster`, with URI options `extra` appended.
pub async fn connect(cluster: Cluster, extra: &str) -> Setup {
    connect_to(Deployment::Sim(cluster), extra).await
}

/// A client of a new replica set of `members` (or of `MONGODB_URI`), once it knows the
/// primary.
pub async fn replica_set_with_primary(members: usize, extra: &str) -> Setup {
    replica_set_configured(members, extra, |b| b).await
}

/// [`replica_set_with_primary`], with the simulator's builder changed by `configure`.
pub async fn replica_set_configured(
    members: usize,
    extra: &str,
    configure: impl FnOnce(mongo_sim::ClusterBuilder) -> mongo_sim::ClusterBuilder,
) -> Setup {
    let deployment = Deployment::replica_set(members, configure).expect("deployment");
    let s = connect_to(deployment, extra).await;
    s.client
        .topology()
        .wait_for(
            |t| {
                t.primary().is_some()
                    || (t.description.topology_type() == protocol::sdam::TopologyType::Single
                        && t.description
                            .servers()
                            .all(|s| s.server_type != protocol::sdam::ServerType::Unknown))
            },
            WAIT,
        )
        .await
        .expect("discovery");
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
