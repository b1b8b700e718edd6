//! `ClientOptions::from_config` with a TOML file and real process environment variables.
//! Alone in a process of its own (`crate::alone`): the environment is process-wide.

use std::path::PathBuf;

use mongo_actors::client::ClientOptions;
use protocol::uri::ReadPreferenceMode;

fn temp_toml(contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mongo-actors-config-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("client.toml");
    std::fs::write(&path, contents).expect("write config");
    path
}

// One test function: the steps share (and change) the process environment.
#[tokio::test]
async fn toml_file_plus_environment() {
    if crate::alone(module_path!(), "toml_file_plus_environment") {
        return;
    }
    let file = temp_toml(
        r#"
uri = "mongodb://file-host:27017/?maxPoolSize=5&appname=fromUri&retryReads=false"
app_name = "fromFile"
max_pool_size = 10
server_selection_timeout_ms = 4000
read_preference = "secondaryPreferred"
"#,
    );
    // SAFETY (edition 2024 wording; a plain call in 2021): no other thread reads the
    // environment of this process (`crate::alone`).
    std::env::set_var("MONGO_ACTORS_APP_NAME", "fromEnv");
    std::env::set_var("MONGO_ACTORS_MAX_POOL_SIZE", "20");
    std::env::set_var("MONGO_ACTORS_RETRY_WRITES", "false");

    let o = ClientOptions::from_config(None, Some(&file)).await.expect("valid configuration");
    // URI < file < environment.
    assert_eq!(o.app_name.as_deref(), Some("fromEnv"));
    assert_eq!(o.max_pool_size, Some(20));
    assert_eq!(o.retry_writes, Some(false));
    assert_eq!(o.server_selection_timeout, Some(std::time::Duration::from_millis(4000)));
    let mode = o.selection_criteria.as_ref().and_then(|c| c.as_read_pref()).map(|rp| rp.mode());
    assert_eq!(mode, Some(ReadPreferenceMode::SecondaryPreferred));
    assert_eq!(o.retry_reads, Some(false), "URI options the file does not set stay");
    assert_eq!(o.hosts[0].to_string(), "file-host:27017");

    // MONGO_ACTORS_URI replaces the file's uri; an explicit argument replaces both.
    std::env::set_var("MONGO_ACTORS_URI", "mongodb://env-host:1/");
    let o = ClientOptions::from_config(None, Some(&file)).await.expect("valid");
    assert_eq!(o.hosts[0].to_string(), "env-host:1");
    let o = ClientOptions::from_config(Some("mongodb://arg-host:2/"), Some(&file)).await.expect("valid");
    assert_eq!(o.hosts[0].to_string(), "arg-host:2");
    assert_eq!(o.max_pool_size, Some(20));

    // Bad environment values are typed errors.
    std::env::set_var("MONGO_ACTORS_MAX_POOL_SIZE", "lots");
    let r = ClientOptions::from_config(None, Some(&file)).await;
    assert!(
        r.as_ref().is_err_and(|e| matches!(*e.kind, mongo_actors::ErrorKind::InvalidArgument { .. })),
        "{r:?}"
    );
    std::env::set_var("MONGO_ACTORS_MAX_POOL_SIZE", "20");
    std::env::set_var("MONGO_ACTORS_HEARTBEAT_FREQUENCY_MS", "10");
    let r = ClientOptions::from_config(None, Some(&file)).await;
    assert!(
        r.as_ref().is_err_and(|e| matches!(&*e.kind, mongo_actors::ErrorKind::InvalidArgument { message, .. } if message.contains("heartbeatFrequencyMS"))),
        "{r:?}"
    );
    std::env::remove_var("MONGO_ACTORS_HEARTBEAT_FREQUENCY_MS");
    std::env::set_var("MONGO_ACTORS_MAX_POOLSIZE", "3");
    let r = ClientOptions::from_config(None, Some(&file)).await;
    assert!(
        r.as_ref().is_err_and(|e| matches!(*e.kind, mongo_actors::ErrorKind::InvalidArgument { .. })),
        "a misspelt variable is an error: {r:?}"
    );
    std::env::remove_var("MONGO_ACTORS_MAX_POOLSIZE");

    // Environment only, no file.
    let o = ClientOptions::from_config(None, None).await.expect("environment only");
    assert_eq!(o.hosts[0].to_string(), "env-host:1");
    assert_eq!(o.app_name.as_deref(), Some("fromEnv"));
    let _ = std::fs::remove_dir_all(file.parent().expect("dir"));
}
