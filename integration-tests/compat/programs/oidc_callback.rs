//! A service that authenticates with workload identity: a MONGODB-OIDC machine callback reading
//! a token, and a human callback for a CLI, set on the credential as the official documentation
//! shows. The client is built (nothing connects: the deployment has no identity provider), and
//! the credential keeps its values.

use std::time::{Duration, Instant};

use futures_util::FutureExt;
use mongodb::error::Error;
use mongodb::options::oidc::{Callback, CallbackContext, IdpServerInfo, IdpServerResponse};
use mongodb::options::{AuthMechanism, ClientOptions, Credential};
use mongodb::Client;

async fn token_from_file(_context: CallbackContext) -> Result<(String, Option<Instant>), Error> {
    Ok(("eyJhbGciOi.token.signature".to_string(), Some(Instant::now() + Duration::from_secs(3600))))
}

/// Runs the program against `uri` (in database `db`, unused: nothing is sent).
pub async fn run(uri: &str, _db: &str) -> mongodb::error::Result<()> {
    let mut options = ClientOptions::parse(uri).await?;
    let mut credential = Credential::builder().mechanism(AuthMechanism::MongoDbOidc).build();
    credential.oidc_callback = Callback::machine(move |context: CallbackContext| {
        async move {
            let (access_token, expires) = token_from_file(context).await?;
            Ok(IdpServerResponse::builder().access_token(access_token).expires(expires).build())
        }
        .boxed()
    });
    options.credential = Some(credential.clone());
    let client = Client::with_options(options)?;
    drop(client);
    assert_eq!(credential.mechanism, Some(AuthMechanism::MongoDbOidc));

    // A human callback sees the identity provider the server names.
    let human = Callback::human(|context: CallbackContext| {
        async move {
            let info: Option<IdpServerInfo> = context.idp_info;
            let issuer = info.map(|i| i.issuer).unwrap_or_default();
            Ok(IdpServerResponse::builder()
                .access_token(format!("token-for-{issuer}"))
                .refresh_token(None)
                .build())
        }
        .boxed()
    });
    let cli = Credential::builder().mechanism(AuthMechanism::MongoDbOidc).oidc_callback(human).build();
    assert_eq!(cli.username, None);
    let info = IdpServerInfo::builder().issuer("https://idp.example".to_string()).build();
    assert_eq!(info.issuer, "https://idp.example");
    Ok(())
}
