//! Options overridden by their connection-string names (`ClientOptions::parse(..).option(..)`,
//! a configuration file, the environment): each value read with the URI parser's rules, but an
//! invalid one refused instead of ignored, and written over the typed fields it names.

use protocol::uri::UriOptions;

use super::connection_string::ConnectionString;
use crate::error::{Error, Result};

/// Writes one typed field of the second connection string over the first's.
type CopyField = fn(&mut ConnectionString, &ConnectionString);

/// Which typed field each option (lower-case) is part of. The options without a field
/// (`timeoutMS`, `waitQueueTimeoutMS`, ...) travel with the parse itself.
const FIELDS: &[(&[&str], CopyField)] = &[
    (&["appname"], |to, from| to.app_name = from.app_name.clone()),
    (
        &[
            "tls",
            "ssl",
            "tlscafile",
            "tlscertificatekeyfile",
            "tlscertificatekeyfilepassword",
            "tlsallowinvalidcertificates",
            "tlsallowinvalidhostnames",
            "tlsinsecure",
        ],
        |to, from| to.tls = from.tls.clone(),
    ),
    (&["heartbeatfrequencyms"], |to, from| to.heartbeat_frequency = from.heartbeat_frequency),
    (&["localthresholdms"], |to, from| to.local_threshold = from.local_threshold),
    (&["readconcernlevel"], |to, from| to.read_concern = from.read_concern.clone()),
    (&["replicaset"], |to, from| to.replica_set = from.replica_set.clone()),
    (&["w", "journal", "wtimeoutms"], |to, from| to.write_concern = from.write_concern.clone()),
    (&["serverselectiontimeoutms"], |to, from| to.server_selection_timeout = from.server_selection_timeout),
    (&["maxpoolsize"], |to, from| to.max_pool_size = from.max_pool_size),
    (&["minpoolsize"], |to, from| to.min_pool_size = from.min_pool_size),
    (&["maxconnecting"], |to, from| to.max_connecting = from.max_connecting),
    (&["maxidletimems"], |to, from| to.max_idle_time = from.max_idle_time),
    (&["compressors", "zlibcompressionlevel"], |to, from| to.compressors = from.compressors.clone()),
    (&["connecttimeoutms"], |to, from| to.connect_timeout = from.connect_timeout),
    (&["retryreads"], |to, from| to.retry_reads = from.retry_reads),
    (&["retrywrites"], |to, from| to.retry_writes = from.retry_writes),
    (&["servermonitoringmode"], |to, from| to.server_monitoring_mode = from.server_monitoring_mode),
    (&["directconnection"], |to, from| to.direct_connection = from.direct_connection),
    (&["loadbalanced"], |to, from| to.load_balanced = from.load_balanced),
    (&["sockettimeoutms"], |to, from| to.socket_timeout = from.socket_timeout),
    (&["readpreference", "readpreferencetags", "maxstalenessseconds"], |to, from| {
        to.read_preference = from.read_preference.clone()
    }),
    (&["srvmaxhosts"], |to, from| to.srv_max_hosts = from.srv_max_hosts),
    (&["srvservicename"], |to, from| to.srv_service_name = from.srv_service_name.clone()),
    (&["maxadaptiveretries"], |to, from| to.max_adaptive_retries = from.max_adaptive_retries),
    (&["enableoverloadretargeting"], |to, from| {
        to.enable_overload_retargeting = from.enable_overload_retargeting
    }),
    (&["uuidrepresentation"], |to, from| to.uuid_representation = from.uuid_representation),
];

/// Applies `name=value` overrides to a connection string: the fields they name take the values
/// the URI parser reads from them (over the string's and over any edit); an unknown name or a
/// value the parser would only warn about is an error.
pub(crate) fn apply_overrides(cs: &mut ConnectionString, overrides: &[(String, String)]) -> Result<()> {
    if overrides.is_empty() {
        return Ok(());
    }
    let invalid = |message: String| Error::invalid_argument(message);
    if let Some((name, _)) =
        overrides.iter().find(|(n, _)| !UriOptions::NAMES.iter().any(|k| k.eq_ignore_ascii_case(n)))
    {
        return Err(invalid(format!("unknown option '{name}'")));
    }
    let mut parsed = cs.parsed.clone();
    let (options, warnings) = parsed.options.with_overrides(overrides).map_err(|e| invalid(e.to_string()))?;
    if let Some(w) = warnings.first() {
        return Err(invalid(w.clone()));
    }
    parsed.options = options;
    let fresh = ConnectionString::from(parsed);
    let named =
        |names: &[&str]| overrides.iter().any(|(n, _)| names.iter().any(|k| k.eq_ignore_ascii_case(n)));
    for (names, copy) in FIELDS {
        if named(names) {
            copy(cs, &fresh);
        }
    }
    override_credential(cs, &fresh.parsed.options, &named);
    cs.parsed = fresh.parsed;
    Ok(())
}

/// `authSource` names the database of a credential the string gave (alone it asks for no
/// authentication); `authMechanism` and its properties make one when there is none.
fn override_credential(cs: &mut ConnectionString, o: &UriOptions, named: &dyn Fn(&[&str]) -> bool) {
    if named(&["authmechanism", "authmechanismproperties"]) {
        let c = cs.credential.get_or_insert_with(Default::default);
        if named(&["authmechanism"]) {
            c.mechanism = o.auth_mechanism;
        }
        if named(&["authmechanismproperties"]) {
            c.mechanism_properties =
                o.auth_mechanism_properties.as_ref().map(protocol::uri::properties_document);
        }
    }
    if let (true, Some(c)) = (named(&["authsource"]), cs.credential.as_mut()) {
        c.source = o.auth_source.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overrides(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    #[test]
    fn an_override_wins_over_the_string_and_its_edits_only_for_the_fields_it_names() {
        let mut cs = ConnectionString::parse("mongodb://u:p@h/?maxPoolSize=5&w=2&journal=true").unwrap();
        cs.app_name = Some("edited".into());
        cs.max_pool_size = Some(9);
        let o = overrides(&[
            ("MAXPOOLSIZE", "7"),
            ("w", "majority"),
            ("timeoutMS", "300"),
            ("authSource", "db2"),
        ]);
        apply_overrides(&mut cs, &o).unwrap();
        assert_eq!((cs.max_pool_size, cs.app_name.as_deref()), (Some(7), Some("edited")));
        // One field per write concern: its other parts come from the string.
        let wc = cs.write_concern.clone().unwrap();
        assert_eq!((wc.w, wc.journal), (Some(protocol::uri::Acknowledgment::Majority), Some(true)));
        // An option without a field travels with the parse.
        assert_eq!(cs.parsed.options.timeout_ms, Some(300));
        assert_eq!(cs.credential.as_ref().and_then(|c| c.source.as_deref()), Some("db2"));
    }

    #[test]
    fn a_mechanism_override_makes_a_credential_and_a_bad_value_is_refused() {
        let mut cs = ConnectionString::parse("mongodb://h/").unwrap();
        apply_overrides(&mut cs, &overrides(&[("authMechanism", "MONGODB-X509")])).unwrap();
        let c = cs.credential.as_ref().unwrap();
        assert_eq!(c.mechanism, Some(protocol::uri::AuthMechanism::MongoDbX509));
        for (name, value) in [("maxPoolSize", "-1"), ("nope", "1")] {
            let e = apply_overrides(&mut cs, &overrides(&[(name, value)])).unwrap_err();
            assert!(matches!(*e.kind, crate::error::ErrorKind::InvalidArgument { .. }), "{name}: {e}");
        }
    }
}
