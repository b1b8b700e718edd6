//! A topology with `serverMonitoringMode=auto` under a FaaS environment variable polls: one
//! monitoring connection per server. Its own test binary (one test, one process) so setting
//! the variable races with nothing.

use std::time::Duration;

use actors::TopologyBuilder;
use mongo_sim::Cluster;
use protocol::address::ServerAddress;
use protocol::sdam::{ServerType, TopologySettings};
use protocol::uri::ServerMonitoringMode;

#[test]
fn auto_mode_topology_polls_under_aws_lambda() {
    // Alone in a process of its own: it uses an environment variable.
    if integration_tests::child_process::alone(
        module_path!(),
        "auto_mode_topology_polls_under_aws_lambda",
        &[],
    ) {
        return;
    }
    // SAFETY: the only test of this process (`alone`), before any other thread reads the environment.
    unsafe { std::env::set_var("AWS_EXECUTION_ENV", "AWS_Lambda_java8") };
    let cluster = Cluster::replica_set(3).start().expect("sim");
    let seeds: Vec<ServerAddress> =
        cluster.hosts().iter().map(|h| ServerAddress::parse(h).expect("sim host")).collect();
    actix::System::new().block_on(async {
        let topology = TopologyBuilder::new()
            .settings(TopologySettings {
                seeds,
                heartbeat_frequency: Duration::from_millis(500),
                ..TopologySettings::default()
            })
            .monitoring_mode(ServerMonitoringMode::Auto)
            .start()
            .expect("valid options");
        topology
            .wait_for(
                |s| {
                    s.servers.len() == 3
                        && s.description.servers().all(|d| d.server_type != ServerType::Unknown)
                },
                Duration::from_secs(5),
            )
            .await
            .expect("discovery");
        // Several heartbeats, each member on one connection, never an awaitable hello.
        tokio::time::sleep(Duration::from_millis(1300)).await;
        let counters = cluster.counters();
        let current: Vec<u64> = counters.members.iter().map(|m| m.current_connections).collect();
        assert_eq!(current, [1, 1, 1], "polling: no RTT connection");
        assert!(counters.members.iter().all(|m| m.connections_opened == 1), "{counters:?}");
        assert!(counters.members.iter().all(|m| m.hellos >= 3), "{counters:?}");
        assert_eq!(counters.total.awaited_hellos, 0);
        topology.close().await.expect("close");
        let deadline = std::time::Instant::now() + Duration::from_secs(1);
        while cluster.counters().total.current_connections > 0 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(cluster.counters().total.current_connections, 0);
    });
}
