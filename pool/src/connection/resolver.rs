//! The host-name resolution hook of [`ConnectionOptions`](super::ConnectionOptions).
//!
//! By default a connection resolves its host with the system resolver
//! (`tokio::net::lookup_host`). A client configured with its own DNS resolver (for
//! `mongodb+srv`, or a test DNS stub) installs a [`HostResolver`] so that the hosts an SRV
//! lookup returns are resolved by the same name servers.

use std::fmt;
use std::io;
use std::net::SocketAddr;

use futures_util::future::BoxFuture;

/// Resolves a host name to the socket addresses to try, in order.
pub trait HostResolver: Send + Sync + fmt::Debug {
    /// The addresses of `host:port`. An empty list is reported as a connection error.
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>>;
}

/// The default resolver: `tokio::net::lookup_host` (the system's resolver).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl HostResolver for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.collect()) })
    }
}
