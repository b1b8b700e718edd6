//! CMAP `cmap-format` tests, every file including the `style: integration` ones, run offline:
//! a mock [`Establisher`] emulates the `failCommand` fail point on the handshake (`hello` /
//! `isMaster`: `times` / `alwaysOn`, `blockConnection` + `blockTimeMS`, `errorCode`,
//! `closeConnection`, `appName`). Each file runs on a current-thread runtime with paused time,
//! so `wait`, block times and timeouts are virtual. Test threads are tokio tasks.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use parking_lot::Mutex;
use pool::cmap::{
    CheckoutPurpose, CmapEvent, EstablishRequest, Established, Establisher, Pool, PoolConnection,
    PoolOptions, PooledConnection,
};
use protocol::address::ServerAddress;
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How long `waitForEvent` waits when the test gives no timeout (virtual time).
const DEFAULT_WAIT_FOR_EVENT: Duration = Duration::from_secs(10);

/// The `failCommand` fail point as far as the handshake is concerned.
#[derive(Debug, Clone)]
struct FailPoint {
    /// `None`: `alwaysOn`; `Some(n)`: fires `n` more times.
    remaining: Option<u64>,
    commands: Vec<String>,
    block: Option<Duration>,
    close_connection: bool,
    error_code: Option<i32>,
    app_name: Option<String>,
}

impl FailPoint {
    fn parse(v: &Value) -> Result<Self, String> {
        let obj = v.as_object().ok_or("failPoint is not an object")?;
        if obj.get("configureFailPoint").and_then(Value::as_str) != Some("failCommand") {
            return Err(format!("unsupported fail point {:?}", obj.get("configureFailPoint")));
        }
        let remaining = match obj.get("mode") {
            Some(Value::String(s)) if s == "alwaysOn" => None,
            Some(Value::Object(m)) => {
                Some(m.get("times").and_then(Value::as_u64).ok_or("mode.times must be a number")?)
            }
            other => return Err(format!("unsupported fail point mode {other:?}")),
        };
        let data = obj.get("data").and_then(Value::as_object).ok_or("failPoint.data missing")?;
        let mut fp = FailPoint {
            remaining,
            commands: Vec::new(),
            block: None,
            close_connection: false,
            error_code: None,
            app_name: None,
        };
        let mut block_connection = false;
        for (key, value) in data {
            match key.as_str() {
                "failCommands" => {
                    fp.commands = value
                        .as_array()
                        .ok_or("failCommands must be an array")?
                        .iter()
                        .map(|c| c.as_str().map(str::to_string).ok_or("failCommands holds a non-string"))
                        .collect::<Result<_, _>>()?;
                }
                "closeConnection" => {
                    fp.close_connection = value.as_bool().ok_or("closeConnection must be a bool")?
                }
                "blockConnection" => {
                    block_connection = value.as_bool().ok_or("blockConnection must be a bool")?
                }
                "blockTimeMS" => {
                    fp.block =
                        Some(Duration::from_millis(value.as_u64().ok_or("blockTimeMS must be a number")?))
                }
                "errorCode" => {
                    fp.error_code = Some(
                        value
                            .as_i64()
                            .and_then(|c| i32::try_from(c).ok())
                            .ok_or("errorCode must be an int32")?,
                    )
                }
                "appName" => {
                    fp.app_name = Some(value.as_str().ok_or("appName must be a string")?.to_string())
                }
                other => return Err(format!("unsupported fail point field '{other}'")),
            }
        }
        if !block_connection {
            fp.block = None;
        }
        Ok(fp)
    }

    /// Whether the handshake of a connection with `app_name` trips the fail point now
    /// (consuming one of its `times`).
    fn fire(&mut self, app_name: Option<&str>) -> bool {
        let handshake = self.commands.iter().any(|c| c == "hello" || c == "isMaster");
        let app_ok = self.app_name.as_deref().is_none_or(|a| Some(a) == app_name);
        if !handshake || !app_ok {
            return false;
        }
        match &mut self.remaining {
            None => true,
            Some(0) => false,
            Some(n) => {
                *n -= 1;
                true
            }
        }
    }
}

/// A connection that does no I/O.
#[derive(Debug)]
pub struct MockConnection;

impl PoolConnection for MockConnection {
    fn is_closed(&self) -> bool {
        false
    }
}

/// Establishes [`MockConnection`]s, applying the test's fail point to the handshake.
struct MockEstablisher {
    fail_point: Arc<Mutex<Option<FailPoint>>>,
    app_name: Option<String>,
}

impl Establisher for MockEstablisher {
    type Connection = MockConnection;

    fn establish(
        &self,
        request: EstablishRequest,
    ) -> BoxFuture<'static, pool::Result<Established<MockConnection>>> {
        let fired = {
            let mut fp = self.fail_point.lock();
            let app_name = self.app_name.as_deref();
            fp.as_mut().and_then(|f| f.fire(app_name).then(|| f.clone()))
        };
        Box::pin(async move {
            let address = request.address.clone();
            if let Some(fp) = fired {
                if let Some(block) = fp.block {
                    let until = Instant::now() + block;
                    let limit = request.deadline.map_or(until, |d| d.min(until));
                    tokio::select! {
                        _ = tokio::time::sleep_until(limit) => {}
                        _ = request.cancel.cancelled() => {
                            return Err(pool::Error::Interrupted { address, reason: "interrupted by the pool".into() });
                        }
                    }
                    if limit < until {
                        return Err(pool::Error::Timeout { address, phase: pool::Phase::Hello });
                    }
                }
                if fp.close_connection {
                    let source = Arc::new(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
                    return Err(pool::Error::Io { address, phase: pool::Phase::Hello, source });
                }
                if let Some(code) = fp.error_code {
                    return Err(pool::Error::Command {
                        address,
                        error: Box::new(protocol::reply::ServerError::command(
                            code,
                            "failCommand fail point",
                        )),
                    });
                }
            }
            Ok(Established { connection: MockConnection, service_id: None })
        })
    }
}

/// Why an operation stopped: a pool error (matched against the test's `error`) or a runner
/// problem (always a failure).
#[derive(Debug)]
enum OpError {
    Pool(pool::Error),
    Runner(String),
}

impl From<String> for OpError {
    fn from(s: String) -> Self {
        OpError::Runner(s)
    }
}

impl From<&str> for OpError {
    fn from(s: &str) -> Self {
        OpError::Runner(s.to_string())
    }
}

#[derive(Clone)]
struct Ctx {
    pool: Pool<MockEstablisher>,
    events: Arc<Mutex<Vec<CmapEvent>>>,
    event_notify: Arc<Notify>,
    labeled: Arc<Mutex<HashMap<String, PooledConnection<MockConnection>>>>,
    /// Unlabeled check-outs stay checked out until the test ends.
    unlabeled: Arc<Mutex<Vec<PooledConnection<MockConnection>>>>,
}

impl Ctx {
    fn count(&self, name: &str) -> usize {
        self.events.lock().iter().filter(|e| e.name() == name).count()
    }

    async fn wait_for_event(&self, name: &str, count: usize, timeout: Duration) -> Result<(), OpError> {
        let deadline = Instant::now() + timeout;
        loop {
            let notified = self.event_notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.count(name) >= count {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Err(OpError::Runner(format!(
                    "waitForEvent: saw {} of {count} {name} events after {timeout:?}",
                    self.count(name)
                )));
            }
        }
    }
}

struct TestThread {
    ops: mpsc::UnboundedSender<Value>,
    task: JoinHandle<Result<(), OpError>>,
}

/// Runs one operation (in the main thread when `threads` is given).
async fn run_op(
    ctx: &Ctx,
    op: &Value,
    threads: Option<&mut HashMap<String, TestThread>>,
) -> Result<(), OpError> {
    let obj = op.as_object().ok_or("operation is not an object")?;
    let name = obj.get("name").and_then(Value::as_str).ok_or("operation without a name")?;
    let str_arg = |key: &str| -> Result<String, OpError> {
        obj.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("{name}: missing '{key}'").into())
    };
    let ms_arg = |key: &str| obj.get(key).and_then(Value::as_u64).map(Duration::from_millis);
    match name {
        "start" => {
            let threads = threads.ok_or("start outside the main thread")?;
            let target = str_arg("target")?;
            let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
            let thread_ctx = ctx.clone();
            let task = tokio::spawn(async move {
                while let Some(op) = rx.recv().await {
                    thread_op(thread_ctx.clone(), op).await?;
                }
                Ok(())
            });
            threads.insert(target, TestThread { ops: tx, task });
        }
        "wait" => tokio::time::sleep(ms_arg("ms").ok_or("wait: missing ms")?).await,
        "waitForThread" => {
            let threads = threads.ok_or("waitForThread outside the main thread")?;
            let target = str_arg("target")?;
            let thread =
                threads.remove(&target).ok_or_else(|| format!("waitForThread: unknown thread {target}"))?;
            drop(thread.ops);
            thread.task.await.map_err(|e| format!("thread {target} died: {e}"))??;
        }
        "waitForEvent" => {
            let event = str_arg("event")?;
            let count = obj.get("count").and_then(Value::as_u64).ok_or("waitForEvent: missing count")?;
            let timeout = ms_arg("timeout").unwrap_or(DEFAULT_WAIT_FOR_EVENT);
            ctx.wait_for_event(&event, usize::try_from(count).unwrap_or(usize::MAX), timeout).await?;
        }
        "checkOut" => {
            let conn = ctx.pool.check_out(None, CheckoutPurpose::Other).await.map_err(OpError::Pool)?;
            match obj.get("label").and_then(Value::as_str) {
                Some(label) => {
                    ctx.labeled.lock().insert(label.to_string(), conn);
                }
                None => ctx.unlabeled.lock().push(conn),
            }
        }
        "checkIn" => {
            let label = str_arg("connection")?;
            let conn = ctx
                .labeled
                .lock()
                .remove(&label)
                .ok_or_else(|| format!("checkIn: no connection '{label}'"))?;
            conn.check_in();
        }
        "clear" => {
            let interrupt = obj.get("interruptInUseConnections").and_then(Value::as_bool).unwrap_or(false);
            ctx.pool.clear(None, interrupt);
        }
        "close" => ctx.pool.close(),
        "ready" => ctx.pool.ready(),
        other => return Err(format!("unsupported operation '{other}'").into()),
    }
    Ok(())
}

/// An operation of a test thread, boxed to break the type cycle with `start`.
fn thread_op(ctx: Ctx, op: Value) -> BoxFuture<'static, Result<(), OpError>> {
    Box::pin(async move { run_op(&ctx, &op, None).await })
}

fn pool_options(v: Option<&Value>) -> Result<(PoolOptions, Option<String>), String> {
    let mut b = PoolOptions::builder();
    let mut app_name = None;
    let Some(v) = v else { return Ok((b.build().map_err(|e| e.to_string())?, None)) };
    let obj = v.as_object().ok_or("poolOptions is not an object")?;
    for (key, value) in obj {
        let num = || value.as_u64().ok_or(format!("poolOptions.{key} must be a non-negative integer"));
        let count = || num().and_then(|n| u32::try_from(n).map_err(|e| e.to_string()));
        b = match key.as_str() {
            "maxPoolSize" => b.max_pool_size(count()?),
            "minPoolSize" => b.min_pool_size(count()?),
            "maxConnecting" => b.max_connecting(count()?),
            "maxIdleTimeMS" => b.max_idle_time(Duration::from_millis(num()?)),
            "waitQueueTimeoutMS" => b.wait_queue_timeout(Duration::from_millis(num()?)),
            "backgroundThreadIntervalMS" => {
                let ms = value.as_i64().ok_or("backgroundThreadIntervalMS must be an integer")?;
                b.maintenance_interval((ms >= 0).then(|| Duration::from_millis(ms.unsigned_abs())))
            }
            "appName" => {
                app_name = Some(value.as_str().ok_or("appName must be a string")?.to_string());
                b
            }
            other => return Err(format!("unsupported pool option '{other}'")),
        };
    }
    Ok((b.build().map_err(|e| e.to_string())?, app_name))
}

fn duration_ms(d: &Duration) -> Value {
    json!(d.as_secs_f64() * 1000.0)
}

/// The spec test's view of an event.
fn event_json(e: &CmapEvent) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), json!(e.name()));
    m.insert("address".into(), json!(e.address().to_string()));
    if let Some(id) = e.connection_id() {
        m.insert("connectionId".into(), json!(id));
    }
    match e {
        CmapEvent::PoolCreated { options, .. } => {
            m.insert("options".into(), serde_json::to_value(options).unwrap_or(Value::Null));
        }
        CmapEvent::PoolCleared { service_id, interrupt_in_use_connections, .. } => {
            m.insert("interruptInUseConnections".into(), json!(interrupt_in_use_connections));
            if let Some(s) = service_id {
                m.insert("serviceId".into(), json!(s.to_hex()));
            }
        }
        CmapEvent::ConnectionReady { duration, .. } | CmapEvent::CheckedOut { duration, .. } => {
            m.insert("duration".into(), duration_ms(duration));
        }
        CmapEvent::ConnectionClosed { reason, .. } => {
            m.insert("reason".into(), json!(reason.as_str()));
        }
        CmapEvent::CheckOutFailed { reason, duration, .. } => {
            m.insert("reason".into(), json!(reason.as_str()));
            m.insert("duration".into(), duration_ms(duration));
        }
        _ => {}
    }
    Value::Object(m)
}

/// The spec test's view of an error.
fn error_json(e: &pool::Error, address: &ServerAddress) -> Value {
    let kind = match e {
        pool::Error::PoolClosed { .. } => "PoolClosedError",
        pool::Error::PoolCleared { .. } => "PoolClearedError",
        pool::Error::WaitQueueTimeout { .. } => "WaitQueueTimeoutError",
        pool::Error::Timeout { .. } => "TimeoutError",
        pool::Error::Command { .. } => "CommandError",
        _ => "ConnectionError",
    };
    json!({"type": kind, "message": e.to_string(), "address": address.to_string()})
}

fn is_placeholder(v: &Value) -> bool {
    v.as_i64() == Some(42) || v.as_str() == Some("42")
}

/// The spec's MATCH: `expected` is a subset of `actual`, with 42 / "42" matching any value.
fn check_match(expected: &Value, actual: Option<&Value>, path: &str) -> Result<(), String> {
    let actual = actual.filter(|a| !a.is_null());
    if is_placeholder(expected) {
        return actual.map(|_| ()).ok_or(format!("{path}: expected a value, found none"));
    }
    let Some(actual) = actual else {
        return if expected.is_null() {
            Ok(())
        } else {
            Err(format!("{path}: expected {expected}, found none"))
        };
    };
    match expected {
        Value::Array(items) => {
            let got = actual.as_array().ok_or(format!("{path}: expected an array, got {actual}"))?;
            for (i, item) in items.iter().enumerate() {
                check_match(item, got.get(i), &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        Value::Object(fields) => {
            let got = actual.as_object().ok_or(format!("{path}: expected an object, got {actual}"))?;
            for (key, value) in fields {
                check_match(value, got.get(key), &format!("{path}.{key}"))?;
            }
            Ok(())
        }
        Value::Number(n) => match (n.as_f64(), actual.as_f64()) {
            (Some(a), Some(b)) if a == b => Ok(()),
            _ => Err(format!("{path}: expected {expected}, got {actual}")),
        },
        _ if expected == actual => Ok(()),
        _ => Err(format!("{path}: expected {expected}, got {actual}")),
    }
}

/// Matches an actual error against the test's `error`. Messages are compared
/// case-insensitively as a prefix: ours go on to name the address and the time waited.
fn check_error(expected: &Value, actual: &Value) -> Result<(), String> {
    let mut expected = expected.clone();
    if let Some(message) = expected.as_object_mut().and_then(|o| o.remove("message")) {
        let want = message.as_str().ok_or("error.message must be a string")?.to_lowercase();
        let got = actual.get("message").and_then(Value::as_str).unwrap_or_default().to_lowercase();
        if !got.starts_with(&want) {
            return Err(format!("error.message: expected {want:?}, got {got:?}"));
        }
    }
    check_match(&expected, Some(actual), "error")
}

const KNOWN_KEYS: [&str; 10] = [
    "version",
    "style",
    "description",
    "runOn",
    "failPoint",
    "poolOptions",
    "operations",
    "error",
    "events",
    "ignore",
];

async fn run_test(test: Map<String, Value>) -> Result<(), String> {
    if let Some(key) = test.keys().find(|k| !KNOWN_KEYS.contains(&k.as_str())) {
        return Err(format!("unsupported test field '{key}'"));
    }
    if test.get("version").and_then(Value::as_u64) != Some(1) {
        return Err("unsupported test format version".into());
    }
    let (options, app_name) = pool_options(test.get("poolOptions"))?;
    let fail_point = test.get("failPoint").map(FailPoint::parse).transpose()?;
    let address = ServerAddress::tcp("localhost", 27017);
    let events: Arc<Mutex<Vec<CmapEvent>>> = Arc::default();
    let event_notify = Arc::new(Notify::new());
    let handler = {
        let events = events.clone();
        let notify = event_notify.clone();
        Arc::new(move |e: &CmapEvent| {
            events.lock().push(e.clone());
            notify.notify_waiters();
        })
    };
    let establisher = MockEstablisher { fail_point: Arc::new(Mutex::new(fail_point)), app_name };
    let pool = Pool::builder(address.clone(), establisher)
        .options(options)
        .event_handler(handler)
        .build()
        .map_err(|e| e.to_string())?;
    let ctx = Ctx { pool, events, event_notify, labeled: Arc::default(), unlabeled: Arc::default() };

    let operations = test.get("operations").and_then(Value::as_array).ok_or("operations missing")?;
    let mut threads: HashMap<String, TestThread> = HashMap::new();
    let mut main_error = None;
    for op in operations {
        match op.get("thread").and_then(Value::as_str) {
            Some(thread) => {
                let t = threads.get(thread).ok_or(format!("operation for unstarted thread {thread}"))?;
                // A thread that already failed drops further operations, as it stopped.
                let _ = t.ops.send(op.clone());
            }
            None => match run_op(&ctx, op, Some(&mut threads)).await {
                Ok(()) => {}
                Err(OpError::Runner(r)) => return Err(r),
                Err(OpError::Pool(e)) => {
                    main_error = Some(e);
                    break;
                }
            },
        }
    }

    match (test.get("error"), &main_error) {
        (Some(expected), Some(actual)) => check_error(expected, &error_json(actual, &address))?,
        (Some(expected), None) => return Err(format!("expected error {expected}, none was raised")),
        (None, Some(actual)) => return Err(format!("unexpected error: {actual}")),
        (None, None) => {}
    }

    let ignore: Vec<&str> = match test.get("ignore") {
        None => Vec::new(),
        Some(v) => v
            .as_array()
            .ok_or("ignore must be an array")?
            .iter()
            .map(|s| s.as_str().ok_or("ignore holds a non-string"))
            .collect::<Result<_, _>>()?,
    };
    let actual: Vec<Value> =
        ctx.events.lock().iter().filter(|e| !ignore.contains(&e.name())).map(event_json).collect();
    let expected = test.get("events").and_then(Value::as_array).ok_or("events missing")?;
    for (i, want) in expected.iter().enumerate() {
        check_match(want, actual.get(i), &format!("events[{i}]")).map_err(|e| {
            let got: Vec<String> = actual.iter().map(Value::to_string).collect();
            format!("{e}\nactual events:\n  {}", got.join("\n  "))
        })?;
    }
    for t in threads.into_values() {
        t.task.abort();
    }
    Ok(())
}

/// Runs one `cmap-format` test file.
pub fn run_file(path: &Path) -> Result<(), String> {
    let v = super::load_json(path)?;
    let test = match v {
        Value::Object(m) => m,
        _ => return Err("test file is not a JSON object".into()),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|e| format!("cannot build a runtime: {e}"))?;
    runtime.block_on(run_test(test))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_placeholders_and_subsets() {
        let actual =
            json!({"type": "ConnectionCheckedOut", "connectionId": 3, "duration": 1.5, "extra": true});
        assert!(check_match(
            &json!({"type": "ConnectionCheckedOut", "connectionId": 42}),
            Some(&actual),
            "e"
        )
        .is_ok());
        assert!(check_match(&json!({"connectionId": 4}), Some(&actual), "e").is_err());
        assert!(check_match(&json!({"address": 42}), Some(&actual), "e").is_err());
        assert!(check_match(&json!({"duration": "42"}), Some(&actual), "e").is_ok());
        assert!(check_match(&json!([1, 2]), Some(&json!([1, 2, 3])), "e").is_ok());
        assert!(check_match(&json!([1, 2]), Some(&json!([1])), "e").is_err());
    }

    #[test]
    fn error_message_is_a_case_insensitive_prefix() {
        let actual = json!({"type": "PoolClosedError", "message": "Attempted to check out a connection from closed connection pool for a:1"});
        let want = json!({"type": "PoolClosedError", "message": "attempted to check out a Connection from closed connection pool"});
        assert!(check_error(&want, &actual).is_ok());
        assert!(check_error(&json!({"type": "WaitQueueTimeoutError"}), &actual).is_err());
    }

    #[test]
    fn fail_point_times_and_app_name() {
        let mut fp = FailPoint::parse(&json!({
            "configureFailPoint": "failCommand",
            "mode": {"times": 2},
            "data": {"failCommands": ["hello"], "errorCode": 91, "appName": "x"}
        }))
        .unwrap();
        assert!(!fp.fire(Some("y")));
        assert!(!fp.fire(None));
        assert!(fp.fire(Some("x")));
        assert!(fp.fire(Some("x")));
        assert!(!fp.fire(Some("x")));
    }
}
