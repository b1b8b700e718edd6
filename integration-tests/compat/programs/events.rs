//! Monitoring: command, pool and SDAM events through the three kinds of `EventHandler` (a
//! callback, an async callback, a tokio channel), with the event types matched as the
//! official documentation matches them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mongodb::bson::{doc, Document};
use mongodb::event::cmap::CmapEvent;
use mongodb::event::command::CommandEvent;
use mongodb::event::sdam::SdamEvent;
use mongodb::event::EventHandler;
use mongodb::options::ClientOptions;
use mongodb::{Client, Collection};

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let commands: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = commands.clone();
    let (cmap_tx, mut cmap_rx) = tokio::sync::mpsc::channel::<CmapEvent>(1_000);
    let sdam: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let sdam_seen = sdam.clone();

    let mut options = ClientOptions::parse(uri).await?;
    options.command_event_handler = Some(EventHandler::callback(move |event| {
        let line = match event {
            CommandEvent::Started(e) => format!("started {} on {}", e.command_name, e.db),
            CommandEvent::Succeeded(e) => format!("succeeded {}", e.command_name),
            CommandEvent::Failed(e) => format!("failed {}: {}", e.command_name, e.failure),
            _ => return,
        };
        seen.lock().unwrap().push(line);
    }));
    options.cmap_event_handler = Some(cmap_tx.into());
    options.sdam_event_handler = Some(EventHandler::async_callback(move |event| {
        let sdam = sdam_seen.clone();
        Box::pin(async move {
            let name = match event {
                SdamEvent::TopologyOpening(_) => "topology opening",
                SdamEvent::ServerOpening(_) => "server opening",
                SdamEvent::ServerDescriptionChanged(e) => {
                    assert_eq!(e.new_description.address(), &e.address);
                    "server description changed"
                }
                SdamEvent::TopologyDescriptionChanged(_) => "topology description changed",
                SdamEvent::ServerHeartbeatSucceeded(e) => {
                    assert!(e.reply.contains_key("ok"));
                    "heartbeat succeeded"
                }
                _ => "other",
            };
            sdam.lock().unwrap().push(name);
        })
    }));
    let client = Client::with_options(options)?;

    let coll: Collection<Document> = client.database(db).collection("events");
    coll.insert_one(doc! { "x": 1 }).await?;
    assert_eq!(coll.count_documents(doc! {}).await?, 1);
    // A command the server refuses: a failed event.
    let refused = client.database(db).run_command(doc! { "noSuchCommand": 1 }).await;
    assert!(refused.is_err());
    coll.drop().await?;

    // Events are delivered in the background: wait until the last one arrived.
    wait_for(|| commands.lock().unwrap().iter().any(|l| l.starts_with("failed noSuchCommand"))).await;
    let commands = commands.lock().unwrap().clone();
    assert!(commands.contains(&format!("started insert on {db}")), "{commands:?}");
    assert!(commands.contains(&"succeeded insert".to_string()), "{commands:?}");
    assert!(commands.contains(&"succeeded aggregate".to_string()), "{commands:?}");

    let mut checked_out = 0;
    let mut created = false;
    while let Ok(Some(event)) = tokio::time::timeout(Duration::from_millis(200), cmap_rx.recv()).await {
        match event {
            CmapEvent::PoolCreated(_) => created = true,
            CmapEvent::ConnectionCheckedOut(e) => {
                assert!(e.connection_id > 0);
                checked_out += 1;
            }
            _ => {}
        }
    }
    assert!(created, "no pool created event");
    assert!(checked_out >= 4, "{checked_out} check-outs");

    wait_for(|| sdam.lock().unwrap().contains(&"server description changed")).await;
    let sdam = sdam.lock().unwrap().clone();
    assert!(sdam.contains(&"topology opening"), "{sdam:?}");
    assert!(sdam.contains(&"server opening"), "{sdam:?}");
    Ok(())
}

/// Waits up to 5 s for `done`.
async fn wait_for(done: impl Fn() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for events");
}
