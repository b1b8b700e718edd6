//! The application's extension point: a server selector (the spec's `serverSelector`) that
//! filters the suitable servers, and the helper that types a closure as one.

use std::fmt;
use std::sync::Arc;

use protocol::sdam::{ServerDescription, TopologyDescription};

/// An application-provided server selector (the spec's `serverSelector`): it receives the
/// suitable servers and returns those that should still be considered suitable. It runs
/// after suitability (and deprioritization) and before the latency window.
///
/// Implemented for closures with the same signature; [`selector_fn`] helps the compiler
/// infer a closure's lifetimes.
pub trait ServerSelector: Send + Sync {
    /// Filters the suitable servers.
    fn filter<'a>(
        &self,
        topology: &'a TopologyDescription,
        suitable: Vec<&'a Arc<ServerDescription>>,
    ) -> Vec<&'a Arc<ServerDescription>>;

    /// How the selector appears in the log's `selector` string; by default
    /// `custom server selector`.
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("custom server selector")
    }
}

impl<F> ServerSelector for F
where
    F: for<'a> Fn(
            &'a TopologyDescription,
            Vec<&'a Arc<ServerDescription>>,
        ) -> Vec<&'a Arc<ServerDescription>>
        + Send
        + Sync,
{
    fn filter<'a>(
        &self,
        topology: &'a TopologyDescription,
        suitable: Vec<&'a Arc<ServerDescription>>,
    ) -> Vec<&'a Arc<ServerDescription>> {
        self(topology, suitable)
    }
}

/// Gives a closure the higher-ranked signature [`ServerSelector`] needs (closures bound to a
/// variable otherwise get one fixed lifetime).
///
/// ```
/// use selection::{selector_fn, ServerSelector};
/// // Keeps the suitable server with the highest port.
/// let highest_port = selector_fn(|_, mut servers| {
///     servers.sort_by_key(|s| s.address.port());
///     servers.split_off(servers.len().saturating_sub(1))
/// });
/// let _: &dyn ServerSelector = &highest_port;
/// ```
pub fn selector_fn<F>(f: F) -> F
where
    F: for<'a> Fn(
            &'a TopologyDescription,
            Vec<&'a Arc<ServerDescription>>,
        ) -> Vec<&'a Arc<ServerDescription>>
        + Send
        + Sync,
{
    f
}
