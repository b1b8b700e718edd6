//! `mongo-actors watch <URI>`: the live topology table, with SDAM events printed as they
//! happen (heartbeats only with `--heartbeats`).

use std::time::{Duration, Instant};

use actors::{Client, ClientOptions};
use protocol::sdam::events::SdamEvent;

use super::table::{render, to_json, LiveView};
use super::{ms, CliError};

/// What `watch` runs.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// The deployment.
    pub uri: String,
    /// Stop after this long (`None`: until Ctrl-C).
    pub duration: Option<Duration>,
    /// Also print heartbeat events.
    pub heartbeats: bool,
    /// Redraw the table in place (when stdout is a terminal).
    pub in_place: bool,
    /// Print JSON lines instead: `{"t": s, "event": {..}}` per event and
    /// `{"t": s, "topology": {..}}` every second.
    pub json: bool,
    /// Serve the status page here while watching.
    pub listen: Option<std::net::SocketAddr>,
}

/// One line for an event (`None` for heartbeats unless asked for).
pub fn describe(event: &SdamEvent, heartbeats: bool) -> Option<String> {
    Some(match event {
        SdamEvent::TopologyOpening(_) => "topology opening".to_string(),
        SdamEvent::TopologyClosed(_) => "topology closed".to_string(),
        // A change of a server's type is printed as a server event; this line only when the
        // topology's type changes.
        SdamEvent::TopologyDescriptionChanged(e)
            if e.previous_description.topology_type() != e.new_description.topology_type() =>
        {
            format!(
                "topology {} -> {}",
                e.previous_description.topology_type(),
                e.new_description.topology_type()
            )
        }
        SdamEvent::ServerOpening(e) => format!("server {} opening", e.address),
        SdamEvent::ServerClosed(e) => format!("server {} closed", e.address),
        SdamEvent::ServerDescriptionChanged(e) => {
            let mut line = format!(
                "server {}: {} -> {}",
                e.address,
                e.previous_description.server_type.as_str(),
                e.new_description.server_type.as_str()
            );
            if let Some(err) = &e.new_description.error {
                line.push_str(&format!(" ({err})"));
            }
            line
        }
        SdamEvent::ServerHeartbeatStarted(e) if heartbeats => {
            format!(
                "heartbeat started {}{}",
                e.connection_id.address,
                if e.awaited { " (awaited)" } else { "" }
            )
        }
        SdamEvent::ServerHeartbeatSucceeded(e) if heartbeats => {
            format!("heartbeat succeeded {} in {}", e.connection_id.address, ms(e.duration))
        }
        SdamEvent::ServerHeartbeatFailed(e) if heartbeats => {
            format!("heartbeat failed {} after {}: {}", e.connection_id.address, ms(e.duration), e.failure)
        }
        _ => return None,
    })
}

/// An event as JSON (`None` for heartbeats unless asked for): its spec name, the server, and
/// the types before and after a change.
pub fn event_json(event: &SdamEvent, heartbeats: bool) -> Option<serde_json::Value> {
    let mut v = serde_json::json!({"name": event.name()});
    match event {
        SdamEvent::TopologyDescriptionChanged(e) => {
            v["from"] = e.previous_description.topology_type().to_string().into();
            v["to"] = e.new_description.topology_type().to_string().into();
        }
        SdamEvent::ServerOpening(e) => v["address"] = e.address.to_string().into(),
        SdamEvent::ServerClosed(e) => v["address"] = e.address.to_string().into(),
        SdamEvent::ServerDescriptionChanged(e) => {
            v["address"] = e.address.to_string().into();
            v["from"] = e.previous_description.server_type.as_str().into();
            v["to"] = e.new_description.server_type.as_str().into();
            v["error"] = e.new_description.error.clone().into();
        }
        SdamEvent::ServerHeartbeatStarted(e) if heartbeats => {
            v["address"] = e.connection_id.address.to_string().into();
            v["awaited"] = e.awaited.into();
        }
        SdamEvent::ServerHeartbeatSucceeded(e) if heartbeats => {
            v["address"] = e.connection_id.address.to_string().into();
            v["durationMs"] = (e.duration.as_secs_f64() * 1000.0).into();
            v["awaited"] = e.awaited.into();
        }
        SdamEvent::ServerHeartbeatFailed(e) if heartbeats => {
            v["address"] = e.connection_id.address.to_string().into();
            v["durationMs"] = (e.duration.as_secs_f64() * 1000.0).into();
            v["failure"] = e.failure.clone().into();
        }
        SdamEvent::ServerHeartbeatStarted(_)
        | SdamEvent::ServerHeartbeatSucceeded(_)
        | SdamEvent::ServerHeartbeatFailed(_) => return None,
        _ => {}
    }
    Some(v)
}

/// Runs `watch`, printing to stdout.
pub async fn run(options: WatchOptions) -> Result<(), CliError> {
    let started = Instant::now();
    let (tx, events) = crossbeam_channel::unbounded();
    let mut client_options = ClientOptions::parse(&options.uri).await?;
    client_options.sdam_event_handler =
        Some(actors::event::EventHandler::from_subscriber(actors::events::sdam_channel(tx)));
    let client = Client::with_options(client_options)?;
    let page = options.listen.map(|l| super::page::Page::serve(&client, l)).transpose()?;
    if let Some(p) = &page {
        // On stderr: stdout stays the table's (or JSON lines').
        eprintln!("status page: {}", p.url);
    }
    let result = if options.json {
        run_json(options, client, events, started).await
    } else {
        run_table(options, client, events, started).await
    };
    if let Some(p) = page {
        p.stop().await;
    }
    result
}

/// `watch`: the live table, events above it.
async fn run_table(
    options: WatchOptions,
    client: Client,
    events: crossbeam_channel::Receiver<SdamEvent>,
    started: Instant,
) -> Result<(), CliError> {
    let topology = client.topology().clone();
    let mut rx = topology.watch();
    let mut view = LiveView::new(options.in_place, 10);
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        if options.duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        tokio::select! {
            _ = tick.tick() => {}
            changed = rx.changed() => {
                if changed.is_err() {
                    break;
                }
            }
            _ = &mut ctrl_c => break,
        }
        let log: Vec<String> = events
            .try_iter()
            .filter_map(|e| describe(&e, options.heartbeats))
            .map(|line| format!("[{:>9}] {line}", ms(started.elapsed())))
            .collect();
        let snapshot = rx.borrow_and_update().clone();
        let force = !log.is_empty();
        view.update(&log, &render(&snapshot), force);
    }
    let last = render(&topology.snapshot());
    client.shutdown().await;
    // The events of the shutdown (servers and topology closed) above the last table.
    let log: Vec<String> = events
        .try_iter()
        .filter_map(|e| describe(&e, options.heartbeats))
        .map(|line| format!("[{:>9}] {line}", ms(started.elapsed())))
        .collect();
    view.update(&log, &last, true);
    view.finish();
    Ok(())
}

/// `watch --json`: JSON lines, events as they come and the table every second.
async fn run_json(
    options: WatchOptions,
    client: Client,
    events: crossbeam_channel::Receiver<SdamEvent>,
    started: Instant,
) -> Result<(), CliError> {
    let t = || (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
    let print_events = |events: &crossbeam_channel::Receiver<SdamEvent>| {
        for e in events.try_iter() {
            if let Some(v) = event_json(&e, options.heartbeats) {
                println!("{}", serde_json::json!({"t": t(), "event": v}));
            }
        }
    };
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut ticks: u64 = 0;
    loop {
        if options.duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        tokio::select! {
            _ = tick.tick() => {}
            _ = &mut ctrl_c => break,
        }
        print_events(&events);
        if ticks.is_multiple_of(10) {
            println!("{}", serde_json::json!({"t": t(), "topology": to_json(&client.topology().snapshot())}));
        }
        ticks += 1;
    }
    let last = to_json(&client.topology().snapshot());
    client.shutdown().await;
    print_events(&events);
    println!("{}", serde_json::json!({"t": t(), "topology": last}));
    Ok(())
}
