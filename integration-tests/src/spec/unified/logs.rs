//! `observeLogMessages` and `expectLogMessages`: the client's `tracing` output captured per
//! client. A process-wide subscriber records the client crates' events while some client
//! observes logs; a client's messages are those carrying its topology id (every `command`,
//! `topology`, `serverSelection` and `connection` message has a `topologyId`), so several
//! clients in one test do not mix.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bson::{Bson, Document};
use parking_lot::Mutex;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};

use super::matching::matches;

/// The components a client can observe: unified name and `tracing` target.
const COMPONENTS: &[(&str, &str)] = &[
    ("command", "mongo_actors::command"),
    ("topology", "mongo_actors::topology"),
    ("serverSelection", "mongo_actors::server_selection"),
    ("connection", "mongo_actors::connection"),
];

/// Components whose every message names its topology (`topologyId`), so it can be
/// attributed to one client.
pub const ATTRIBUTABLE: &[&str] = &["command", "topology", "serverSelection", "connection"];

/// One captured message.
#[derive(Debug, Clone)]
struct LogRecord {
    level: Level,
    component: &'static str,
    /// The fields, `message` included.
    data: Document,
}

/// Observers alive; nothing is recorded while there are none.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
static RECORDS: Mutex<Vec<LogRecord>> = Mutex::new(Vec::new());
/// `Err` when another global subscriber was installed first.
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

struct Capture;

fn component(target: &str) -> Option<&'static str> {
    COMPONENTS.iter().find(|(_, t)| *t == target).map(|(c, _)| *c)
}

impl Subscriber for Capture {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        // Events and `enabled!` hints alike.
        if component(meta.target()).is_some() {
            Interest::sometimes()
        } else {
            Interest::never()
        }
    }
    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        ACTIVE.load(Ordering::SeqCst) > 0 && component(meta.target()).is_some()
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::DEBUG)
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        let Some(component) = component(meta.target()) else { return };
        let mut visitor = Fields(Document::new());
        event.record(&mut visitor);
        RECORDS.lock().push(LogRecord { level: *meta.level(), component, data: visitor.0 });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

struct Fields(Document);

impl Visit for Fields {
    fn record_f64(&mut self, f: &Field, v: f64) {
        self.0.insert(f.name(), v);
    }
    fn record_i64(&mut self, f: &Field, v: i64) {
        self.0.insert(f.name(), v);
    }
    fn record_u64(&mut self, f: &Field, v: u64) {
        self.0.insert(f.name(), i64::try_from(v).unwrap_or(i64::MAX));
    }
    fn record_bool(&mut self, f: &Field, v: bool) {
        self.0.insert(f.name(), v);
    }
    fn record_str(&mut self, f: &Field, v: &str) {
        self.0.insert(f.name(), v);
    }
    fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
        self.0.insert(f.name(), format!("{v:?}"));
    }
}

/// The spec's severity names, most severe first, with the `tracing` level they map to.
fn severity(name: &str) -> Option<u8> {
    Some(match name {
        "emergency" | "alert" | "critical" | "error" => 0,
        "warning" | "warn" | "notice" => 1,
        "informational" | "info" => 2,
        "debug" => 3,
        "trace" => 4,
        _ => return None,
    })
}

fn level_rank(l: Level) -> u8 {
    match l {
        Level::ERROR => 0,
        Level::WARN => 1,
        Level::INFO => 2,
        Level::DEBUG => 3,
        Level::TRACE => 4,
    }
}

fn level_name(l: Level) -> &'static str {
    ["error", "warn", "info", "debug", "trace"][usize::from(level_rank(l))]
}

/// A client entity's `observeLogMessages`: records its messages while alive.
pub(super) struct LogObserver {
    /// Component and most verbose severity rank observed.
    components: Vec<(String, u8)>,
    /// The client's topology id, from its TopologyOpening event.
    pub(super) topology_id: Arc<Mutex<Option<String>>>,
}

impl Drop for LogObserver {
    fn drop(&mut self) {
        if ACTIVE.fetch_sub(1, Ordering::SeqCst) == 1 {
            RECORDS.lock().clear();
        }
    }
}

/// The observer for a client entity spec, if it observes log messages.
pub(super) fn observer(spec: &Document) -> Result<Option<LogObserver>, String> {
    let Ok(observe) = spec.get_document("observeLogMessages") else { return Ok(None) };
    let mut components = Vec::new();
    for (c, level) in observe {
        let rank = level.as_str().and_then(severity).ok_or_else(|| format!("bad log level {level}"))?;
        components.push((c.clone(), rank));
    }
    INSTALLED
        .get_or_init(|| {
            tracing::dispatcher::set_global_default(tracing::Dispatch::new(Capture))
                .map_err(|e| format!("cannot capture log messages: {e}"))
        })
        .clone()?;
    // The command-logging tests' README: run with a large max document length, so whole
    // replies can be matched.
    actors::command_log::set_max_document_length(10_000);
    ACTIVE.fetch_add(1, Ordering::SeqCst);
    Ok(Some(LogObserver { components, topology_id: Arc::new(Mutex::new(None)) }))
}

/// Remembers the client's topology id from its SDAM events.
pub(super) fn note_topology(slot: &Mutex<Option<String>>, ev: &protocol::sdam::events::SdamEvent) {
    if let protocol::sdam::events::SdamEvent::TopologyOpening(e) = ev {
        *slot.lock() = Some(e.topology_id.0.to_string());
    }
}

impl LogObserver {
    /// The client's observed messages so far, as unified-format `{level, component, data}`.
    fn messages(&self) -> Vec<Document> {
        let id = self.topology_id.lock().clone();
        RECORDS
            .lock()
            .iter()
            .filter(|r| {
                self.components.iter().any(|(c, rank)| c == r.component && level_rank(r.level) <= *rank)
                    && id.is_some()
                    && r.data.get_str("topologyId").ok() == id.as_deref()
            })
            .map(|r| {
                bson::doc! {"level": level_name(r.level), "component": r.component, "data": r.data.clone()}
            })
            .collect()
    }
}

/// Checks one `expectLogMessages` entry against the observer's messages. Messages may trail
/// the last operation (a closing client's monitors), so this retries for a moment.
pub(super) async fn check(observer: Option<&LogObserver>, expected: &Document) -> Result<(), String> {
    let client = expected.get_str("client").unwrap_or("?");
    let observer = observer.ok_or_else(|| format!("client {client} does not observe log messages"))?;
    let empty = Vec::new();
    let want: Vec<&Document> =
        expected.get_array("messages").unwrap_or(&empty).iter().filter_map(Bson::as_document).collect();
    let ignore: Vec<&Document> =
        expected.get_array("ignoreMessages").unwrap_or(&empty).iter().filter_map(Bson::as_document).collect();
    let ignore_extra = expected.get_bool("ignoreExtraMessages").unwrap_or(false);
    let deadline = tokio::time::Instant::now() + Duration::from_millis(1000);
    loop {
        let actual: Vec<Document> = observer
            .messages()
            .into_iter()
            .filter(|m| !ignore.iter().any(|i| message_matches(i, m).is_ok()))
            .collect();
        let result = compare(&want, &actual, ignore_extra);
        if result.is_ok() || tokio::time::Instant::now() > deadline {
            return result.map_err(|e| {
                let seen: Vec<&str> = actual
                    .iter()
                    .map(|m| m.get_document("data").and_then(|d| d.get_str("message")).unwrap_or("?"))
                    .collect();
                format!("log messages of {client}: {e} (observed: {seen:?})")
            });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn compare(want: &[&Document], actual: &[Document], ignore_extra: bool) -> Result<(), String> {
    if actual.len() < want.len() || (!ignore_extra && actual.len() != want.len()) {
        return Err(format!("expected {} messages, observed {}", want.len(), actual.len()));
    }
    for (i, (w, a)) in want.iter().zip(actual).enumerate() {
        message_matches(w, a).map_err(|e| format!("message {i}: {e}"))?;
    }
    Ok(())
}

/// Matches an expected message: level, component, `failureIsRedacted` (the client writes
/// [`actors::command_log::REDACTED_FAILURE`] for a redacted failure), then the data as a root
/// document.
fn message_matches(expected: &Document, actual: &Document) -> Result<(), String> {
    if let Ok(redacted) = expected.get_bool("failureIsRedacted") {
        let failure = actual.get_document("data").and_then(|d| d.get_str("failure")).unwrap_or("");
        if (failure == actors::command_log::REDACTED_FAILURE) != redacted {
            return Err(format!("failureIsRedacted: expected {redacted}, the failure is {failure:?}"));
        }
    }
    for k in ["level", "component"] {
        if let Ok(want) = expected.get_str(k) {
            let got = actual.get_str(k).unwrap_or("");
            let same = if k == "level" { severity(want) == severity(got) } else { want == got };
            if !same {
                return Err(format!("{k}: expected {want}, got {got}"));
            }
        }
    }
    let empty = Document::new();
    let data = actual.get_document("data").unwrap_or(&empty);
    if let Ok(want) = expected.get_document("data") {
        matches(&Bson::Document(want.clone()), Some(&Bson::Document(data.clone())), true, "data")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn msg(level: &str, message: &str) -> Document {
        doc! {"level": level, "component": "topology", "data": {"message": message, "topologyId": "t", "serverPort": 27017_i64}}
    }

    #[test]
    fn levels_components_and_data() {
        let want = doc! {"level": "debug", "component": "topology",
        "data": {"message": "Starting server monitoring", "serverPort": {"$$type": ["int", "long"]}}};
        assert!(message_matches(&want, &msg("debug", "Starting server monitoring")).is_ok());
        assert!(message_matches(&want, &msg("info", "Starting server monitoring")).is_err());
        assert!(message_matches(&want, &msg("debug", "Stopped server monitoring")).is_err());
        let other = doc! {"level": "debug", "component": "connection", "data": {}};
        assert!(message_matches(&other, &msg("debug", "x")).is_err());
        // "warning" and "warn" are the same severity.
        assert!(message_matches(&doc! {"level": "warning"}, &doc! {"level": "warn"}).is_ok());
    }

    #[test]
    fn extra_messages_only_when_ignored() {
        let want = doc! {"level": "debug", "data": {"message": "a"}};
        let actual = vec![msg("debug", "a"), msg("debug", "b")];
        assert!(compare(&[&want], &actual, false).is_err());
        assert!(compare(&[&want], &actual, true).is_ok());
        assert!(compare(&[&want, &want], &actual[..1], true).is_err());
        assert_eq!(level_name(Level::WARN), "warn");
        assert!(severity("debug") > severity("error") && severity("bogus").is_none());
    }
}
