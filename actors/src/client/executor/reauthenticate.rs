//! Reauthentication (auth spec): a command answered `ReauthenticationRequired` (391) on a
//! connection that authenticated with MONGODB-OIDC runs the conversation again on that
//! connection (no new hello, no speculative attempt) and the command is sent once more. Other
//! mechanisms never get 391 from a server; there the error stands.

use pool::cmap::PooledConnection;
use pool::connection::Connection;
use tokio::time::Instant;

use crate::error::{Error, Result};

/// `ReauthenticationRequired`.
const REAUTHENTICATION_REQUIRED: i32 = 391;

/// Whether `e` asks `conn` to authenticate again.
pub(super) fn required(e: &Error, conn: &PooledConnection<Connection>) -> bool {
    e.code() == Some(REAUTHENTICATION_REQUIRED) && conn.authenticated_with_oidc()
}

/// Authenticates `conn` again within the operation's deadline. A connection that fails to is
/// closed: it is no longer authenticated. (Dropped midway, it is closed on check-in, as any
/// connection left mid-exchange.)
pub(super) async fn reauthenticate(
    conn: &mut PooledConnection<Connection>,
    deadline: Option<Instant>,
) -> Result<()> {
    tracing::debug!(address = %conn.address(), "reauthenticating after ReauthenticationRequired");
    let result = conn.reauthenticate(deadline).await;
    if result.is_err() {
        conn.close();
    }
    result.map_err(Error::from)
}
