use super::*;

fn ok(s: &str) -> ConnectionString {
    match ConnectionString::parse(s) {
        Ok(cs) => cs,
        Err(e) => panic!("{s}: {e}"),
    }
}

fn err(s: &str) -> Error {
    match ConnectionString::parse(s) {
        Ok(cs) => panic!("{s} parsed: {cs:?}"),
        Err(e) => e,
    }
}

#[test]
fn debug_never_prints_passwords() {
    let cs = ok("mongodb://alice:hunter2-secret@h/?proxyHost=p&proxyUsername=u&proxyPassword=proxy-secret\
         &tlsCertificateKeyFilePassword=key-secret");
    let dbg = format!("{cs:?} {cs:#?}");
    for secret in ["hunter2-secret", "proxy-secret", "key-secret"] {
        assert!(!dbg.contains(secret), "{secret} leaked: {dbg}");
    }
    assert!(dbg.contains("alice"));
    assert_eq!(cs.credential.unwrap().password.as_deref(), Some("hunter2-secret"));
}

#[test]
fn basic_topology_options() {
    let cs = ok("mongodb://a:1,B:2/?replicaSet=rs&directConnection=false&heartbeatFrequencyMS=500");
    assert_eq!(cs.hosts, vec![ServerAddress::tcp("a", 1), ServerAddress::tcp("b", 2)]);
    assert_eq!(cs.options.replica_set.as_deref(), Some("rs"));
    assert_eq!(cs.options.direct_connection, Some(false));
    assert_eq!(cs.options.heartbeat_frequency_ms, Some(500));
    assert!(cs.credential.is_none());
    assert!(cs.warnings.is_empty());

    let cs = ok("mongodb://a/?loadBalanced=true");
    assert_eq!(cs.options.load_balanced, Some(true));
    assert!(matches!(err("mongodb://a,b/?loadBalanced=true"), Error::InvalidOption { .. }));
    assert!(matches!(err("mongodb://a/?loadBalanced=true&replicaSet=x"), Error::InvalidOption { .. }));
    let cs = ok("mongodb://a/?heartbeatFrequencyMS=499");
    assert_eq!(cs.options.heartbeat_frequency_ms, None);
    assert_eq!(cs.warnings.len(), 1);
}

#[test]
fn keys_are_case_insensitive_and_repeats_warn() {
    let cs = ok("mongodb://h/?REPLICASET=a&replicaset=b");
    assert_eq!(cs.options.replica_set.as_deref(), Some("b"));
    assert_eq!(cs.warnings.len(), 1);
    // An invalid repeat does not erase the earlier valid value.
    let cs = ok("mongodb://h/?journal=true&journal=maybe");
    assert_eq!(cs.options.journal, Some(true));
}

#[test]
fn srv() {
    let cs = ok("mongodb+srv://Cluster0.Example.com/?srvServiceName=custom&srvMaxHosts=3");
    assert!(cs.hosts.is_empty());
    assert_eq!(cs.srv_host.as_deref(), Some("cluster0.example.com"));
    assert_eq!(cs.srv_service_name(), "custom");
    assert!(cs.tls_enabled());
    assert!(!ok("mongodb+srv://a.b.c/?tls=false").tls_enabled());
    err("mongodb+srv://a.b.c:27017");
    err("mongodb+srv://a.b.c,d.e.f");
    err("mongodb+srv://a.b.c/?directConnection=true");
    err("mongodb://a/?srvMaxHosts=1");
    ok("mongodb+srv://a.b.c/?directConnection=false");
}

#[test]
fn read_preference_rules() {
    let cs = ok("mongodb://h/?readPreference=nearest&readPreferenceTags=dc:ny&readPreferenceTags=&maxStalenessSeconds=90");
    assert_eq!(cs.options.read_preference_tags.as_ref().map(Vec::len), Some(2));
    assert_eq!(cs.options.max_staleness_seconds, Some(90));
    err("mongodb://h/?maxStalenessSeconds=120");
    err("mongodb://h/?readPreference=primary&readPreferenceTags=dc:ny");
    let cs = ok("mongodb://h/?readPreference=secondary&maxStalenessSeconds=-1");
    assert_eq!(cs.options.max_staleness_seconds, None);
    assert!(cs.warnings.is_empty());
    // An empty tag set with primary is harmless.
    ok("mongodb://h/?readPreferenceTags=");
}

#[test]
fn timeout_and_monitoring() {
    let cs = ok("mongodb://h/?timeoutMS=0&serverMonitoringMode=poll");
    assert_eq!(cs.options.timeout_ms, Some(0));
    assert_eq!(cs.options.server_monitoring_mode, Some(ServerMonitoringMode::Poll));
    let cs = ok("mongodb://h/?timeoutMS=-1");
    assert_eq!(cs.options.timeout_ms, None);
    assert!(!cs.warnings.is_empty());
}

#[test]
fn userinfo_and_database() {
    let cs = ok("mongodb://%40l%3Ace%2F%3D@example.com/my%3Ddb");
    let c = cs.credential.unwrap();
    assert_eq!(c.username.as_deref(), Some("@l:ce/="));
    assert_eq!(c.password, None);
    assert_eq!(cs.default_database.as_deref(), Some("my=db"));
    err("mongodb://a:b:c@h");
    err("mongodb://a%zz@h");
    err("mongodb://h/my%20db");
    err("mongodb://h/a$b");
    // A database alone does not ask for authentication.
    assert!(ok("mongodb://h/admin").credential.is_none());
    // Nor does an authSource alone (auth spec), but an empty one is an error.
    assert!(ok("mongodb://h/?authSource=foo").credential.is_none());
    err("mongodb://h/?authSource=");
    err("mongodb://u:p@h/?authMechanism=MONGODB-CR");
}

#[test]
fn tls_rules() {
    err("mongodb://h/?tlsInsecure=true&tlsAllowInvalidHostnames=false");
    err("mongodb://h/?tls=true&ssl=false");
    let cs = ok("mongodb://h/?ssl=true&tls=true");
    assert_eq!(cs.options.tls, Some(true));
    assert!(cs.warnings.is_empty());
}

#[test]
fn wtimeout_deprecation() {
    let cs = ok("mongodb://h/?wtimeoutMS=10&wtimeout=5");
    assert_eq!(cs.options.w_timeout_ms, Some(10));
    let cs = ok("mongodb://h/?wtimeout=5");
    assert_eq!(cs.options.w_timeout_ms, Some(5));
    assert!(!cs.warnings.is_empty());
}

#[test]
fn unix_sockets() {
    let cs = ok("mongodb://%2Ftmp%2Fm.sock,rel%2Fx.sock/db.sock?w=majority");
    assert_eq!(cs.hosts[0], ServerAddress::Unix { path: "/tmp/m.sock".into() });
    assert_eq!(cs.hosts[1].port(), None);
    assert_eq!(cs.default_database.as_deref(), Some("db.sock"));
    assert_eq!(cs.options.w, Some(Acknowledgment::Majority));
    err("mongodb:///tmp/m.sock");
}

#[test]
fn serde_round_trip() {
    let cs = ok("mongodb://u:p@h/?w=2&compressors=zstd,zlib&readPreference=secondary&readPreferenceTags=a:b");
    let json = serde_json::to_string(&cs).unwrap();
    let back: ConnectionString = serde_json::from_str(&json).unwrap();
    // Everything comes back but the password, which serde never writes.
    let mut expected = cs.clone();
    expected.credential.as_mut().unwrap().password = Some("<redacted>".into());
    assert_eq!(back, expected);
    assert!(json.contains("\"password\":\"<redacted>\""), "{json}");
}

#[test]
fn secrets_are_redacted() {
    let uri = "mongodb://u:pa55@h/?tlsCertificateKeyFilePassword=k3y";
    let cs = ok(uri);
    for text in [format!("{cs:?}"), serde_json::to_string(&cs).unwrap()] {
        assert!(!text.contains("pa55") && !text.contains("k3y"), "{text}");
    }
    assert_eq!(redact_uri(uri), "mongodb://u:<redacted>@h/?tlsCertificateKeyFilePassword=<redacted>");
    assert_eq!(redact_uri("mongodb://h:27017/db"), "mongodb://h:27017/db");
    assert_eq!(redact_uri("mongodb://u:p/a?s@h/db"), "mongodb://u:<redacted>@h/db");
    // A password with an unescaped '/' or '?' is not echoed by the error.
    for bad in ["mongodb://u:pa55/w0rd@h", "mongodb://u:pa55?w0rd@h", "mongodb://u:pa55x/w0rd@h:1/db"] {
        let e = ConnectionString::parse(bad).unwrap_err().to_string();
        assert!(!e.contains("pa55") && !e.contains("w0rd"), "{bad}: {e}");
    }
}

#[test]
fn never_panics_on_odd_input() {
    for s in [
        "",
        "mongodb",
        "mongodb://",
        "mongodb://@",
        "mongodb://:@h",
        "mongodb://h/?",
        "mongodb://h/?=",
        "mongodb://h/?&&",
        "mongodb://[",
        "mongodb://[]",
        "mongodb://h:",
        "mongodb://h/%",
        "mongodb://é",
        "mongodbé://",
        "mongodb://h/?w=%",
        "mongodb://h/?readPreferenceTags=:",
        "mongodb+srv://",
        "mongodb://h?%ff=1",
    ] {
        let _ = ConnectionString::parse(s);
    }
}

proptest::proptest! {
    #[test]
    fn arbitrary_strings_do_not_panic(s in "\\PC*") {
        let _ = ConnectionString::parse(&s);
        let _ = ConnectionString::parse(&format!("mongodb://{s}"));
    }
}

#[test]
fn server_selection_try_once_is_typed_but_unused() {
    // In the uri-options table, so parsed without a warning; this multi-threaded driver
    // never acts on it (see `UriOptions::server_selection_try_once`).
    for (v, want) in [("false", false), ("TRUE", true)] {
        let cs = ok(&format!("mongodb://h/?serverSelectionTryOnce={v}"));
        assert_eq!(cs.options.server_selection_try_once, Some(want));
        assert!(cs.warnings.is_empty(), "{:?}", cs.warnings);
    }
    for v in ["invalid", ""] {
        let cs = ok(&format!("mongodb://h/?serverSelectionTryOnce={v}"));
        assert_eq!(cs.options.server_selection_try_once, None);
        assert_eq!(cs.warnings.len(), 1);
    }
}
