//! The selection algorithm: criteria, and the steps that tie suitability, the application's
//! selector, the latency window and the power of two choices together.

use std::fmt;
use std::sync::Arc;

use protocol::sdam::{ServerDescription, TopologyDescription};
use protocol::ServerAddress;
use rand::Rng;

use crate::error::{Error, Result};
use crate::read_preference::ReadPreference;
use crate::selector::ServerSelector;
use crate::suitability::{collect_suitable, Operation};
use crate::window::{choose_in_window, retain_in_latency_window, with_thread_rng, OperationCounts};
use crate::Servers;

/// What one selection looks for: the operation (read with a read preference, or write), the
/// addresses deprioritized by earlier attempts of the same operation, and an optional
/// application selector. Cheap to copy; borrows everything.
#[derive(Clone, Copy)]
pub struct SelectionQuery<'a> {
    operation: Operation<'a>,
    deprioritized: &'a [ServerAddress],
    selector: Option<&'a dyn ServerSelector>,
}

impl fmt::Debug for SelectionQuery<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SelectionQuery")
            .field("operation", &self.operation)
            .field("deprioritized", &self.deprioritized)
            .field("selector", &self.selector.map(|_| "custom"))
            .finish()
    }
}

impl<'a> SelectionQuery<'a> {
    /// Criteria for a read with `read_preference`.
    pub fn read(read_preference: &'a ReadPreference) -> Self {
        SelectionQuery { operation: Operation::Read(read_preference), deprioritized: &[], selector: None }
    }

    /// Criteria for a write.
    pub fn write() -> Self {
        SelectionQuery { operation: Operation::Write, deprioritized: &[], selector: None }
    }

    /// Criteria for any data-bearing server that `filter` keeps (the official predicate
    /// criteria); an application selector may still be added.
    pub fn any(filter: &'a dyn ServerSelector) -> Self {
        SelectionQuery { operation: Operation::Any(filter), deprioritized: &[], selector: None }
    }

    /// Avoids these servers (typically where a retried attempt failed) unless nothing else is
    /// suitable.
    #[must_use]
    pub fn with_deprioritized(mut self, addresses: &'a [ServerAddress]) -> Self {
        self.deprioritized = addresses;
        self
    }

    /// Adds an application-provided selector.
    #[must_use]
    pub fn with_selector(mut self, selector: &'a dyn ServerSelector) -> Self {
        self.selector = Some(selector);
        self
    }

    /// The operation.
    pub fn operation(&self) -> Operation<'a> {
        self.operation
    }

    /// The read preference, for reads.
    pub fn read_preference(&self) -> Option<&'a ReadPreference> {
        match self.operation {
            Operation::Read(rp) => Some(rp),
            Operation::Write | Operation::Any(_) => None,
        }
    }

    /// The deprioritized addresses.
    pub fn deprioritized(&self) -> &'a [ServerAddress] {
        self.deprioritized
    }

    /// The application selector, if any.
    pub fn selector(&self) -> Option<&'a dyn ServerSelector> {
        self.selector
    }
}

impl fmt::Display for SelectionQuery<'_> {
    /// The log's `selector` string: `ReadPreference { mode: nearest, tag_sets: [{dc: "ny"}] }`
    /// or `Write`, then the custom selector and deprioritized servers if any.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.operation {
            Operation::Read(rp) => write!(f, "ReadPreference {{ {rp} }}")?,
            Operation::Write => f.write_str("Write")?,
            Operation::Any(filter) => filter.describe(f)?,
        }
        if let Some(s) = self.selector {
            f.write_str(" and ")?;
            s.describe(f)?;
        }
        if !self.deprioritized.is_empty() {
            f.write_str(", deprioritized: [")?;
            for (i, a) in self.deprioritized.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{a}")?;
            }
            f.write_str("]")?;
        }
        Ok(())
    }
}

/// Checks what must hold before any server is looked at: the topology is compatible, and the
/// read preference suits the topology (see [`ReadPreference::validate_for_topology`]).
pub fn validate(topology: &TopologyDescription, criteria: &SelectionQuery<'_>) -> Result<()> {
    if let Some(e) = topology.compatibility_error() {
        return Err(Error::IncompatibleTopology(e.to_string()));
    }
    if let Some(rp) = criteria.read_preference() {
        rp.validate_for_topology(topology)?;
    }
    Ok(())
}

/// The suitable servers (steps 2 to 4 of the spec's algorithm): validates, finds the
/// servers suitable by topology type and operation leaving deprioritized servers out unless
/// that leaves none, then applies the application selector. An empty list means "nothing
/// suitable yet": the caller waits for a topology change.
pub fn suitable_servers<'a>(
    topology: &'a TopologyDescription,
    criteria: &SelectionQuery<'_>,
) -> Result<Servers<'a>> {
    validate(topology, criteria)?;
    let mut out = Servers::new();
    let deprioritized = criteria.deprioritized;
    if !deprioritized.is_empty() {
        collect_suitable(topology, criteria.operation, &|a| !deprioritized.contains(a), &mut out);
    }
    if out.is_empty() {
        collect_suitable(topology, criteria.operation, &|_| true, &mut out);
    }
    if let (Some(selector), false) = (criteria.selector, out.is_empty()) {
        out = selector.filter(topology, out.into_vec()).into_iter().collect();
    }
    Ok(out)
}

/// Keeps the servers within the topology's latency window (`localThresholdMS` from its
/// settings).
pub fn in_latency_window(topology: &TopologyDescription, servers: &mut Servers<'_>) {
    retain_in_latency_window(servers, topology.settings().local_threshold);
}

/// One selection attempt with this thread's RNG: `Ok(None)` if no server is suitable yet
/// (wait for a topology change and retry), `Err` if the topology or read preference make
/// selection impossible. The caller increments the chosen server's `operationCount`.
pub fn select_server<'a>(
    topology: &'a TopologyDescription,
    criteria: &SelectionQuery<'_>,
    counts: &(impl OperationCounts + ?Sized),
) -> Result<Option<&'a Arc<ServerDescription>>> {
    with_thread_rng(|rng| select_server_with_rng(topology, criteria, counts, rng))
}

/// [`select_server`] with a given random source (for deterministic tests).
pub fn select_server_with_rng<'a, R: Rng + ?Sized>(
    topology: &'a TopologyDescription,
    criteria: &SelectionQuery<'_>,
    counts: &(impl OperationCounts + ?Sized),
    rng: &mut R,
) -> Result<Option<&'a Arc<ServerDescription>>> {
    let mut servers = suitable_servers(topology, criteria)?;
    in_latency_window(topology, &mut servers);
    Ok(choose_in_window(&servers, counts, rng))
}
