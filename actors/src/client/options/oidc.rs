//! MONGODB-OIDC callbacks (the official `options::oidc`): a [`Callback`] returns an access
//! token when a connection authenticates. A machine callback gets a workload's token (a file,
//! a metadata service); a human callback signs a person in with the identity provider the server
//! names ([`IdpServerInfo`]) and may return a refresh token for next time. The client caches
//! the token, calls the callback one call at a time, and authenticates again when the server
//! says the token expired.
//!
//! ```
//! use futures_util::FutureExt;
//! use mongo_actors::options::oidc::{Callback, CallbackContext, IdpServerResponse};
//! use mongo_actors::options::{AuthMechanism, Credential};
//!
//! let credential = Credential::builder()
//!     .mechanism(AuthMechanism::MongoDbOidc)
//!     .oidc_callback(Callback::machine(|_context: CallbackContext| {
//!         async move {
//!             let token = std::fs::read_to_string("/var/run/secrets/token")?;
//!             Ok(IdpServerResponse::builder().access_token(token).build())
//!         }
//!         .boxed()
//!     }))
//!     .build();
//! # let _ = credential;
//! ```

use std::fmt;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use pool::connection::{OidcAuthenticator, OidcFlow, TokenFunction};
pub use protocol::oidc::{CallbackContext, IdpServerInfo, IdpServerResponse};

use crate::error::Result;

/// A MONGODB-OIDC token callback; the default is none. Made with [`Callback::machine`] or
/// [`Callback::human`]; cloning shares the function.
#[derive(Clone, Default)]
pub struct Callback {
    function: Option<(Arc<TokenFunction>, OidcFlow)>,
}

impl fmt::Debug for Callback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.function {
            None => f.write_str("Callback(none)"),
            Some((_, flow)) => write!(f, "Callback({flow:?})"),
        }
    }
}

impl Callback {
    /// A machine (workload) callback: called with a deadline, returns a token without a person.
    pub fn machine<F>(function: F) -> Callback
    where
        F: Fn(CallbackContext) -> BoxFuture<'static, Result<IdpServerResponse>> + Send + Sync + 'static,
    {
        Callback::new(function, OidcFlow::Machine)
    }

    /// A human callback: called with the identity provider's info (and a refresh token when
    /// there is one), may take up to five minutes; called only for hosts in `ALLOWED_HOSTS`.
    pub fn human<F>(function: F) -> Callback
    where
        F: Fn(CallbackContext) -> BoxFuture<'static, Result<IdpServerResponse>> + Send + Sync + 'static,
    {
        Callback::new(function, OidcFlow::Human)
    }

    fn new<F>(function: F, flow: OidcFlow) -> Callback
    where
        F: Fn(CallbackContext) -> BoxFuture<'static, Result<IdpServerResponse>> + Send + Sync + 'static,
    {
        // The connections take errors as text: the callback's error is reported inside the
        // authentication error.
        let function: Arc<TokenFunction> =
            Arc::new(move |context| function(context).map(|r| r.map_err(|e| e.to_string())).boxed());
        Callback { function: Some((function, flow)) }
    }

    /// Whether a function is set.
    pub(crate) fn is_set(&self) -> bool {
        self.function.is_some()
    }

    /// A fresh authenticator (and token cache) for one client.
    pub(crate) fn authenticator(&self, allowed_hosts: Option<Vec<String>>) -> Option<Arc<OidcAuthenticator>> {
        let (function, flow) = self.function.clone()?;
        let authenticator = OidcAuthenticator::new(function, flow);
        Some(Arc::new(match allowed_hosts {
            Some(hosts) => authenticator.with_allowed_hosts(hosts),
            None => authenticator,
        }))
    }
}
