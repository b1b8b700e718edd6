//! One connection to a server.
//!
//! - [`ConnectionOptions`]: timeouts, TLS, handshake options and credential, validated by a
//!   builder or read from a connection string.
//! - [`Connection`]: TCP (connectTimeoutMS, TCP_NODELAY, keepalive), optional TLS, the `hello`
//!   handshake, SCRAM authentication, and OP_MSG / OP_QUERY round trips under one deadline,
//!   including exhaust replies for streaming monitors.
//! - [`ConnectionEstablisher`]: the pool's [`Establisher`](crate::cmap::Establisher).

pub mod auth;
mod conn;
mod connect;
mod establisher;
mod handshake;
mod options;
mod resolver;
mod stream;
mod tls;

#[cfg(feature = "aws-auth")]
pub use auth::aws::AwsCredentialCache;
pub use auth::oidc::{OidcAuthenticator, OidcFlow, TokenFunction, TokenFuture};
pub use auth::scram::ScramVersion;
pub use conn::{command_result, CommandBody, Connection, StreamDescription};
pub use establisher::ConnectionEstablisher;
pub use handshake::LB_NOT_SUPPORTED;
pub use options::{ConnectionOptions, ConnectionOptionsBuilder, DEFAULT_CONNECT_TIMEOUT};
pub use resolver::{HostResolver, SystemResolver};
pub use tls::TlsOptions;
