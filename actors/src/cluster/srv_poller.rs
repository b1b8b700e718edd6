//! The SRV poller ("Polling SRV Records for mongos Discovery"): re-resolves the SRV records
//! of a `mongodb+srv` URI and sends the hosts to the topology actor
//! ([`UpdateSrvHosts`]).
//!
//! - It runs only for `mongodb+srv` without `loadBalanced=true`, and polls only while the
//!   topology is Unknown or Sharded; once it becomes anything else it stops for good.
//! - Every `rescan_interval` (rescanSRVIntervalMS, default 60 s) it looks the records up
//!   again, fresh (no cache). Hosts outside the SRV host's domain are skipped; a DNS error or
//!   no valid host keeps the current hosts and retries after
//!   min(heartbeatFrequencyMS, rescan interval).
//! - TXT records are not looked up again. `srvMaxHosts` is honoured by the topology actor's
//!   SDAM rule; the poller shuffles the hosts so new ones are admitted at random.
//! - It stops when the topology closes, or on [`StopActor`].
//!
//! The Client starts it right after the topology:
//! `SrvPoller::start(&topology, &options)?` (returns `None` when polling does not apply).

use std::time::Duration;

use actix::prelude::*;
use actix::WeakAddr;
use protocol::sdam::TopologyType;

use crate::cluster::messages::{StopActor, UpdateSrvHosts};
use crate::cluster::srv::{DomainMismatch, ResolverConfig, SrvInfo, SrvResolver};
use crate::cluster::topology::{Topology, TopologyActor};
use crate::error::{Error, Result};

/// The default rescanSRVIntervalMS.
pub const DEFAULT_RESCAN_INTERVAL: Duration = Duration::from_secs(60);

/// The smallest rescan interval accepted (tests use short ones; production keeps 60 s).
pub const MIN_RESCAN_INTERVAL: Duration = Duration::from_millis(50);

/// What the poller needs.
#[derive(Debug, Clone)]
pub struct SrvPollerOptions {
    /// The SRV host, service name and srvMaxHosts of the URI.
    pub srv: SrvInfo,
    /// The DNS servers.
    pub resolver_config: ResolverConfig,
    /// rescanSRVIntervalMS.
    pub rescan_interval: Duration,
    /// heartbeatFrequencyMS: the retry delay after a failed rescan (if shorter).
    pub heartbeat_frequency: Duration,
}

/// The SRV polling actor. Start it with [`SrvPoller::start`].
pub struct SrvPoller {
    options: SrvPollerOptions,
    resolver: SrvResolver,
    topology: WeakAddr<TopologyActor>,
    snapshots: tokio::sync::watch::Receiver<std::sync::Arc<crate::cluster::snapshot::TopologySnapshot>>,
    rescans: u64,
}

impl std::fmt::Debug for SrvPoller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SrvPoller").field("options", &self.options).field("rescans", &self.rescans).finish()
    }
}

impl SrvPoller {
    /// Starts polling for `topology` (a client starts it for a `mongodb+srv` URI that is not
    /// load balanced: [`ClientOptions::srv_poller_options`](crate::ClientOptions::srv_poller_options)).
    /// Must run inside an actix system. Fails with [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument) for a rescan
    /// interval below [`MIN_RESCAN_INTERVAL`], or [`ErrorKind::DnsResolve`](crate::error::ErrorKind::DnsResolve) if the resolver cannot be
    /// created.
    pub fn start(topology: &Topology, options: SrvPollerOptions) -> Result<Addr<SrvPoller>> {
        if options.rescan_interval < MIN_RESCAN_INTERVAL {
            return Err(Error::invalid_argument(format!(
                "the SRV rescan interval must be at least {MIN_RESCAN_INTERVAL:?}"
            )));
        }
        let resolver = SrvResolver::new(&options.resolver_config)?;
        Ok(SrvPoller {
            options,
            resolver,
            topology: topology.actor().downgrade(),
            snapshots: topology.watch(),
            rescans: 0,
        }
        .start())
    }

    /// Whether polling still applies: the topology is open and Unknown or Sharded.
    fn should_poll(&self) -> bool {
        let snapshot = self.snapshots.borrow();
        !snapshot.closed
            && matches!(snapshot.description.topology_type(), TopologyType::Unknown | TopologyType::Sharded)
    }

    fn schedule(&mut self, delay: Duration, ctx: &mut Context<Self>) {
        ctx.run_later(delay, |act, ctx| act.rescan(ctx));
    }

    fn rescan(&mut self, ctx: &mut Context<Self>) {
        if !self.should_poll() {
            tracing::debug!(target: "mongo_actors::srv", host = %self.options.srv.host, "SRV polling stops: the topology is not Unknown or Sharded");
            ctx.stop();
            return;
        }
        self.rescans += 1;
        let resolver = self.resolver.clone();
        let host = self.options.srv.host.clone();
        let service = self.options.srv.service_name.clone();
        let lookup = async move {
            resolver.clear_cache();
            resolver.lookup_srv(&host, &service, DomainMismatch::Skip).await
        };
        ctx.spawn(lookup.into_actor(self).map(|result, act, ctx| {
            let retry = act.options.heartbeat_frequency.min(act.options.rescan_interval);
            // The topology may have changed type during the lookup.
            if !act.should_poll() {
                ctx.stop();
                return;
            }
            match result {
                Ok(lookup) => {
                    let mut hosts = lookup.hosts;
                    selection::with_thread_rng(|rng| selection::rand::seq::SliceRandom::shuffle(hosts.as_mut_slice(), rng));
                    match act.topology.upgrade() {
                        Some(topology) => topology.do_send(UpdateSrvHosts { hosts }),
                        None => {
                            ctx.stop();
                            return;
                        }
                    }
                    act.schedule(act.options.rescan_interval, ctx);
                }
                Err(e) => {
                    tracing::warn!(target: "mongo_actors::srv", error = %e, "SRV rescan failed; keeping the current hosts");
                    act.schedule(retry, ctx);
                }
            }
        }));
    }
}

impl Actor for SrvPoller {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // Stop as soon as the topology closes, not at the next rescan.
        let mut rx = self.snapshots.clone();
        ctx.spawn(
            async move {
                let _ = rx.wait_for(|s| s.closed).await;
            }
            .into_actor(self)
            .map(|_, _, ctx| ctx.stop()),
        );
        self.schedule(self.options.rescan_interval, ctx);
    }
}

impl Handler<StopActor> for SrvPoller {
    type Result = ();

    fn handle(&mut self, _msg: StopActor, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
