//! Building hello commands: the connection handshake and the monitoring checks.
//!
//! The documents built here carry no `$db`: the connection layer adds it (OP_MSG) or uses the
//! `admin.$cmd` namespace (OP_QUERY).

use std::time::Duration;

use bson::{doc, Bson, Document};
use serde::{Deserialize, Serialize};

use super::metadata::ClientMetadata;
use crate::sdam::TopologyVersion;

/// The legacy hello command name, still needed for the first handshake message.
pub const LEGACY_HELLO: &str = "isMaster";
/// The modern hello command name.
pub const HELLO: &str = "hello";

/// A Stable API version (the official `ServerApiVersion`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ServerApiVersion {
    /// Version 1, sent as `apiVersion: "1"`.
    #[serde(rename = "1")]
    V1,
}

impl ServerApiVersion {
    /// The `apiVersion` string.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerApiVersion::V1 => "1",
        }
    }
}

impl std::fmt::Display for ServerApiVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ServerApiVersion {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "1" => Ok(ServerApiVersion::V1),
            other => Err(format!("unknown Stable API version {other:?}")),
        }
    }
}

/// A declared Stable API version, sent with every command when configured (the official
/// `ServerApi`, built with [`ServerApi::builder`] or [`ServerApi::v1`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, typed_builder::TypedBuilder)]
#[builder(field_defaults(setter(into)))]
#[non_exhaustive]
pub struct ServerApi {
    /// `apiVersion`.
    pub version: ServerApiVersion,
    /// `apiStrict`.
    #[builder(default)]
    pub strict: Option<bool>,
    /// `apiDeprecationErrors`.
    #[builder(default)]
    pub deprecation_errors: Option<bool>,
}

impl ServerApi {
    /// Stable API version 1, with the server's defaults for `strict` and
    /// `deprecation_errors`.
    pub fn v1() -> ServerApi {
        ServerApi { version: ServerApiVersion::V1, strict: None, deprecation_errors: None }
    }

    /// `apiStrict`: the server refuses commands and options outside the version.
    #[must_use]
    pub fn strict(mut self, strict: bool) -> ServerApi {
        self.strict = Some(strict);
        self
    }

    /// `apiDeprecationErrors`: the server refuses what the version deprecates.
    #[must_use]
    pub fn deprecation_errors(mut self, errors: bool) -> ServerApi {
        self.deprecation_errors = Some(errors);
        self
    }

    /// Appends the API fields to a command.
    pub fn append_to(&self, cmd: &mut Document) {
        cmd.insert("apiVersion", self.version.as_str());
        if let Some(s) = self.strict {
            cmd.insert("apiStrict", s);
        }
        if let Some(d) = self.deprecation_errors {
            cmd.insert("apiDeprecationErrors", d);
        }
    }
}

/// What the handshake needs besides the client metadata.
#[derive(Debug, Clone, Default)]
pub struct HandshakeOptions {
    /// `loadBalanced=true`: send `hello` over OP_MSG with `loadBalanced: true`.
    pub load_balanced: bool,
    /// A Stable API version; forces `hello` too.
    pub server_api: Option<ServerApi>,
    /// Compressors to offer (`compression`).
    pub compressors: Vec<String>,
    /// `saslSupportedMechs: "<source>.<user>"`, when the mechanism is to be negotiated.
    pub sasl_supported_mechs: Option<String>,
    /// `speculativeAuthenticate`, when the auth mechanism supports it.
    pub speculative_authenticate: Option<Document>,
}

/// A hello command and how it must be sent.
#[derive(Debug, Clone, PartialEq)]
pub struct HelloCommand {
    /// The command document (without `$db`).
    pub body: Document,
    /// True when this is legacy hello, which the first handshake message sends as OP_QUERY.
    pub legacy: bool,
    /// Set the OP_MSG exhaustAllowed flag (streaming monitor checks).
    pub exhaust_allowed: bool,
}

impl HelloCommand {
    /// The initial handshake on a new connection: legacy hello with `helloOk: true`, unless load
    /// balanced or a Stable API version is set, in which case `hello`.
    ///
    /// ```
    /// use protocol::hello::command::{HandshakeOptions, HelloCommand};
    /// use protocol::hello::metadata::ClientMetadata;
    /// let meta = ClientMetadata::new(Some("app".into())).unwrap();
    /// let cmd = HelloCommand::handshake(&HandshakeOptions::default(), &meta);
    /// assert!(cmd.legacy);
    /// assert_eq!(cmd.body.get_bool("helloOk").unwrap(), true);
    /// ```
    pub fn handshake(opts: &HandshakeOptions, metadata: &ClientMetadata) -> Self {
        let legacy = !opts.load_balanced && opts.server_api.is_none();
        let mut body = if legacy {
            doc! { LEGACY_HELLO: 1, "helloOk": true }
        } else {
            doc! { HELLO: 1 }
        };
        body.insert("backpressure", "2");
        body.insert("client", metadata.to_document());
        if !opts.compressors.is_empty() {
            body.insert(
                "compression",
                opts.compressors.iter().map(|c| Bson::from(c.as_str())).collect::<Vec<_>>(),
            );
        }
        if opts.load_balanced {
            body.insert("loadBalanced", true);
        }
        if let Some(user) = &opts.sasl_supported_mechs {
            body.insert("saslSupportedMechs", user.as_str());
        }
        if let Some(spec) = &opts.speculative_authenticate {
            body.insert("speculativeAuthenticate", spec.clone());
        }
        if let Some(api) = &opts.server_api {
            api.append_to(&mut body);
        }
        HelloCommand { body, legacy, exhaust_allowed: false }
    }

    /// A monitoring check after the handshake. `hello_ok` is whether the handshake reply said
    /// `helloOk: true` (then `hello`, else legacy hello). With `awaitable`, the check carries the
    /// server's last `topologyVersion` and `maxAwaitTimeMS` (streaming protocol) and allows exhaust.
    pub fn monitoring(
        hello_ok: bool,
        awaitable: Option<(&TopologyVersion, Duration)>,
        api: Option<&ServerApi>,
    ) -> Self {
        let mut body = if hello_ok {
            doc! { HELLO: 1 }
        } else {
            doc! { LEGACY_HELLO: 1 }
        };
        let exhaust_allowed = awaitable.is_some();
        if let Some((topology_version, max_await)) = awaitable {
            body.insert(
                "topologyVersion",
                doc! { "processId": topology_version.process_id, "counter": topology_version.counter },
            );
            body.insert("maxAwaitTimeMS", i64::try_from(max_await.as_millis()).unwrap_or(i64::MAX));
        }
        if let Some(api) = api {
            api.append_to(&mut body);
        }
        HelloCommand { body, legacy: !hello_ok, exhaust_allowed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> ClientMetadata {
        ClientMetadata::with_env(None, |_| None, false).unwrap()
    }

    #[test]
    fn handshake_legacy_by_default() {
        let c = HelloCommand::handshake(&HandshakeOptions::default(), &meta());
        assert!(c.legacy);
        assert_eq!(c.body.keys().next().map(String::as_str), Some(LEGACY_HELLO));
        assert!(c.body.get_bool("helloOk").unwrap());
        assert_eq!(c.body.get_str("backpressure").unwrap(), "2");
        assert!(c.body.get_document("client").is_ok());
        assert!(c.body.get("loadBalanced").is_none());
    }

    #[test]
    fn handshake_load_balanced_uses_hello() {
        let opts = HandshakeOptions { load_balanced: true, ..Default::default() };
        let c = HelloCommand::handshake(&opts, &meta());
        assert!(!c.legacy);
        assert_eq!(c.body.keys().next().map(String::as_str), Some(HELLO));
        assert!(c.body.get_bool("loadBalanced").unwrap());
        assert!(c.body.get("helloOk").is_none());
    }

    #[test]
    fn handshake_with_api_and_auth() {
        let opts = HandshakeOptions {
            server_api: Some(ServerApi {
                version: ServerApiVersion::V1,
                strict: Some(true),
                deprecation_errors: None,
            }),
            sasl_supported_mechs: Some("admin.user".into()),
            compressors: vec!["zstd".into()],
            ..Default::default()
        };
        let c = HelloCommand::handshake(&opts, &meta());
        assert!(!c.legacy);
        assert_eq!(c.body.get_str("apiVersion").unwrap(), "1");
        assert!(c.body.get_bool("apiStrict").unwrap());
        assert_eq!(c.body.get_str("saslSupportedMechs").unwrap(), "admin.user");
        assert_eq!(c.body.get_array("compression").unwrap().len(), 1);
    }

    #[test]
    fn monitoring_commands() {
        let poll = HelloCommand::monitoring(true, None, None);
        assert_eq!(poll.body, doc! { "hello": 1 });
        assert!(!poll.exhaust_allowed);
        let legacy = HelloCommand::monitoring(false, None, None);
        assert!(legacy.legacy);
        let oid = bson::oid::ObjectId::new();
        let tv = TopologyVersion { process_id: oid, counter: 3 };
        let stream = HelloCommand::monitoring(true, Some((&tv, Duration::from_secs(10))), None);
        assert!(stream.exhaust_allowed);
        assert_eq!(stream.body.get_i64("maxAwaitTimeMS").unwrap(), 10_000);
        assert_eq!(
            stream.body.get_document("topologyVersion").unwrap(),
            &doc! { "processId": oid, "counter": 3_i64 }
        );
        // Monitoring checks never carry handshake arguments.
        assert!(stream.body.get("client").is_none());
    }
}
