//! A connection string written back as a URI: what [`ConnectionString::parse`] reads again
//! into the same value (warnings aside).

use std::fmt::Write;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::credential::{properties_document, property_text, Credential};
use super::options::Acknowledgment;
use super::read_preference::TagSet;
use super::ConnectionString;
use crate::address::ServerAddress;

/// Everything but the unreserved characters of RFC 3986 is escaped, so no value can be read
/// as a delimiter (`@`, `/`, `?`, `&`, `=`, `,`, `:`).
const ESCAPED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

fn enc(s: &str) -> String {
    utf8_percent_encode(s, ESCAPED).to_string()
}

/// `k:v,k:v` with the keys in order, so the same set is always written the same way.
fn pairs<'a>(entries: impl Iterator<Item = (&'a String, &'a String)>) -> String {
    let mut v: Vec<_> = entries.map(|(k, v)| format!("{}:{}", enc(k), enc(v))).collect();
    v.sort();
    v.join(",")
}

fn tag_set(t: &TagSet) -> String {
    pairs(t.iter())
}

fn host(h: &ServerAddress) -> String {
    match h {
        // A socket path's slashes are escaped, as the spec requires of it.
        ServerAddress::Unix { path } => enc(&path.to_string_lossy()),
        tcp => tcp.to_string(),
    }
}

impl ConnectionString {
    /// The URI: scheme, credentials (the password included: keep it out of logs), hosts or
    /// SRV name, database and every option set, by the spec's names. Parsing it gives this
    /// value again.
    pub fn to_uri_string(&self) -> String {
        let mut uri = String::from(if self.srv_host.is_some() { "mongodb+srv://" } else { "mongodb://" });
        if let Some(user) = self.credential.as_ref().and_then(|c| c.username.as_deref()) {
            uri.push_str(&enc(user));
            if let Some(p) = self.credential.as_ref().and_then(|c| c.password.as_deref()) {
                let _ = write!(uri, ":{}", enc(p));
            }
            uri.push('@');
        }
        match &self.srv_host {
            Some(name) => uri.push_str(name),
            None => uri.push_str(&self.hosts.iter().map(host).collect::<Vec<_>>().join(",")),
        }
        uri.push('/');
        if let Some(db) = &self.default_database {
            uri.push_str(&enc(db));
        }
        let query = self.query();
        if !query.is_empty() {
            uri.push('?');
            uri.push_str(&query.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&"));
        }
        uri
    }

    /// What the `auth*` options say: the string's own options when the credential is what
    /// they give (the defaults it filled in are not written), else the credential's values
    /// (it was edited after parsing, and it is what a client authenticates with).
    fn auth_options(&self) -> Credential {
        let o = &self.options;
        let given = Credential {
            source: o.auth_source.clone(),
            mechanism: o.auth_mechanism,
            mechanism_properties: o.auth_mechanism_properties.as_ref().map(properties_document),
            ..Credential::default()
        };
        let Some(c) = &self.credential else { return given };
        let from_options =
            Credential { username: c.username.clone(), password: c.password.clone(), ..given.clone() }
                .finish(self.default_database.as_deref());
        if from_options.is_ok_and(|f| &f == c) {
            given
        } else {
            c.clone()
        }
    }

    /// Each option set, by name, its value escaped.
    fn query(&self) -> Vec<(&'static str, String)> {
        let o = &self.options;
        let mut q: Vec<(&'static str, String)> = Vec::new();
        macro_rules! put {
            ($name:literal, $value:expr) => {
                if let Some(v) = $value {
                    q.push(($name, enc(&v.to_string())));
                }
            };
        }
        put!("appname", o.app_name.as_ref());
        let c = self.auth_options();
        put!("authMechanism", c.mechanism.map(|m| m.as_str()));
        put!("authSource", c.source.as_ref());
        if let Some(p) = &c.mechanism_properties {
            let text: Vec<(String, String)> = p.iter().map(|(k, v)| (k.clone(), property_text(v))).collect();
            q.push(("authMechanismProperties", pairs(text.iter().map(|(k, v)| (k, v)))));
        }
        if let Some(list) = &o.compressors {
            q.push(("compressors", list.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(",")));
        }
        put!("connectTimeoutMS", o.connect_timeout_ms);
        put!("directConnection", o.direct_connection);
        put!("enableOverloadRetargeting", o.enable_overload_retargeting);
        put!("heartbeatFrequencyMS", o.heartbeat_frequency_ms);
        put!("journal", o.journal);
        put!("loadBalanced", o.load_balanced);
        put!("localThresholdMS", o.local_threshold_ms);
        put!("maxAdaptiveRetries", o.max_adaptive_retries);
        put!("maxConnecting", o.max_connecting);
        put!("maxIdleTimeMS", o.max_idle_time_ms);
        put!("maxPoolSize", o.max_pool_size);
        put!("maxStalenessSeconds", o.max_staleness_seconds);
        put!("minPoolSize", o.min_pool_size);
        put!("proxyHost", o.proxy_host.as_ref());
        put!("proxyPort", o.proxy_port);
        put!("proxyUsername", o.proxy_username.as_ref());
        put!("proxyPassword", o.proxy_password.as_ref().map(|p| p.expose()));
        put!("readConcernLevel", o.read_concern_level.as_ref());
        put!("readPreference", o.read_preference.map(|m| m.as_str()));
        for t in o.read_preference_tags.iter().flatten() {
            q.push(("readPreferenceTags", tag_set(t)));
        }
        put!("replicaSet", o.replica_set.as_ref());
        put!("retryReads", o.retry_reads);
        put!("retryWrites", o.retry_writes);
        put!("serverMonitoringMode", o.server_monitoring_mode.map(|m| m.as_str()));
        put!("serverSelectionTimeoutMS", o.server_selection_timeout_ms);
        put!("serverSelectionTryOnce", o.server_selection_try_once);
        put!("socketTimeoutMS", o.socket_timeout_ms);
        put!("srvMaxHosts", o.srv_max_hosts);
        put!("srvServiceName", o.srv_service_name.as_ref());
        put!("timeoutMS", o.timeout_ms);
        put!("tls", o.tls);
        put!("tlsAllowInvalidCertificates", o.tls_allow_invalid_certificates);
        put!("tlsAllowInvalidHostnames", o.tls_allow_invalid_hostnames);
        put!("tlsCAFile", o.tls_ca_file.as_ref());
        put!("tlsCertificateKeyFile", o.tls_certificate_key_file.as_ref());
        put!(
            "tlsCertificateKeyFilePassword",
            o.tls_certificate_key_file_password.as_ref().map(|p| p.expose())
        );
        put!("tlsDisableCertificateRevocationCheck", o.tls_disable_certificate_revocation_check);
        put!("tlsDisableOCSPEndpointCheck", o.tls_disable_ocsp_endpoint_check);
        put!("tlsInsecure", o.tls_insecure);
        put!("uuidRepresentation", o.uuid_representation.as_ref());
        put!(
            "w",
            o.w.as_ref().map(|w| match w {
                Acknowledgment::Nodes(n) => n.to_string(),
                Acknowledgment::Majority => "majority".to_string(),
                Acknowledgment::Custom(tag) => tag.clone(),
            })
        );
        put!("waitQueueTimeoutMS", o.wait_queue_timeout_ms);
        put!("wTimeoutMS", o.w_timeout_ms);
        put!("zlibCompressionLevel", o.zlib_compression_level);
        q
    }
}
