//! `serverMonitoringMode=auto` under a FaaS environment variable polls. Its own test binary
//! (one test, one process) so setting the variable races with nothing.

use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Context, Handler};
use actors::messages::{CheckOutcome, ServerCheckCompleted, StopActor};
use actors::monitor::{MonitorActor, MonitorOptions};
use mongo_sim::Cluster;
use parking_lot::Mutex;
use pool::connection::ConnectionOptions;
use protocol::address::ServerAddress;
use protocol::uri::ServerMonitoringMode;

struct Collector(Arc<Mutex<Vec<ServerCheckCompleted>>>);

impl Actor for Collector {
    type Context = Context<Self>;
}

impl Handler<ServerCheckCompleted> for Collector {
    type Result = ();

    fn handle(&mut self, msg: ServerCheckCompleted, _ctx: &mut Context<Self>) {
        self.0.lock().push(msg);
    }
}

#[test]
fn auto_mode_polls_under_aws_lambda() {
    // Alone in a process of its own: it uses an environment variable.
    if integration_tests::child_process::alone(module_path!(), "auto_mode_polls_under_aws_lambda", &[]) {
        return;
    }
    // SAFETY: the only test of this process (`alone`), before any other thread reads the environment.
    unsafe { std::env::set_var("AWS_EXECUTION_ENV", "AWS_Lambda_java8") };
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let address = ServerAddress::parse(&cluster.hosts()[0]).expect("sim host");
    actix::System::new().block_on(async {
        let log = Arc::new(Mutex::new(Vec::new()));
        let collector = Collector(Arc::clone(&log)).start();
        let options = ConnectionOptions::builder().build().expect("options");
        let mut options = MonitorOptions::new(address, Arc::new(options), collector.recipient());
        assert!(options.faas, "AWS_EXECUTION_ENV=AWS_Lambda_* is a FaaS platform");
        assert_eq!(options.mode, ServerMonitoringMode::Auto);
        assert!(!options.streaming_enabled());
        options.heartbeat_frequency = Duration::from_millis(500);
        let monitor = MonitorActor::new(options).expect("valid").start();
        tokio::time::sleep(Duration::from_millis(1300)).await;
        let counters = cluster.counters();
        assert_eq!(counters.members[0].current_connections, 1, "polling: no RTT connection");
        assert_eq!(counters.members[0].connections_opened, 1);
        assert_eq!(counters.members[0].awaited_hellos, 0);
        let reports = log.lock().clone();
        assert!(reports.len() >= 3, "{}", reports.len());
        assert!(reports.iter().all(|r| matches!(r.outcome, CheckOutcome::Succeeded { awaited: false, .. })));
        monitor.send(StopActor).await.expect("stop");
    });
}
