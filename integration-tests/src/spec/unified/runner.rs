//! Runs one unified test: a fresh simulated deployment, the entities, the operations, then the
//! expected events and the outcome.

use futures_util::StreamExt;
use futures_util::TryStreamExt;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actors::{Client, ClientOptions};
use bson::{doc, Bson, Document};
use parking_lot::Mutex;

use super::logs;
use super::matching::matches;
use super::traces;
use crate::deployment::Deployment;
use mongo_sim::Cluster;

#[path = "sdam_ops.rs"]
mod sdam_ops;
#[path = "sessions.rs"]
mod sessions;

/// An observed event.
#[derive(Debug, Clone)]
enum Event {
    Command(actors::command_events::CommandEvent),
    Cmap(pool::cmap::events::CmapEvent),
    Sdam(protocol::sdam::events::SdamEvent),
}

struct ClientEntity {
    client: Client,
    events: Arc<Mutex<Vec<Event>>>,
    /// CheckedOut minus CheckedIn CMAP events, observed or not.
    checked_out: Arc<std::sync::atomic::AtomicI64>,
    /// From `observeLogMessages`.
    logs: Option<logs::LogObserver>,
    /// From `observeTracingMessages`.
    traces: Option<traces::TraceObserver>,
}

enum Entity {
    Client(ClientEntity),
    Database {
        client: String,
        name: String,
        /// From `databaseOptions`.
        options: actors::DatabaseOptions,
    },
    Collection {
        client: String,
        db: String,
        name: String,
        /// The database entity's options.
        db_options: actors::DatabaseOptions,
        /// From `collectionOptions`.
        options: actors::CollectionOptions,
    },
    /// A cursor from `createFindCursor`; `None` once closed.
    Cursor(Option<actors::Cursor>),
    /// A change stream from `createChangeStream`; `None` once closed.
    ChangeStream(Option<actors::ChangeStream<Document>>),
    /// An explicit session; `None` once ended.
    Session(Option<Box<actors::ClientSession>>),
    /// A GridFS bucket.
    Bucket(actors::gridfs::GridFsBucket),
    /// A thread: the operations `runOnThread` started on it, awaited by `waitForThread`.
    Thread(Vec<tokio::task::JoinHandle<R<()>>>),
    /// From `recordTopologyDescription`.
    TopologyDescription(protocol::sdam::TopologyDescription),
}

pub(super) struct Ctx {
    /// A fresh simulator, or the external deployment of `spec-runner --uri`.
    cluster: Deployment,
    /// Add the test user's credentials to every client's URI (simulators started with auth;
    /// an external URI carries its own).
    auth: bool,
    /// `failCommand`-style fail points set on an external deployment, turned off after the test
    /// (a simulator is thrown away instead).
    fail_points_set: Vec<String>,
    /// The longest `blockTimeMS` of those fail points: a command a timed-out client left
    /// blocked on the external server still runs that long after, and the next test waits it
    /// out before its setup (a late `delete` would remove the next test's initial data).
    blocked_for: Duration,
    sharded: bool,
    setup: Client,
    entities: HashMap<String, Entity>,
    /// Session ids, kept after `endSession` for `$$sessionLsid`.
    lsids: HashMap<String, Document>,
    /// Results saved with `saveResultAsEntity` (a snapshot time), for `$$matchesEntity`.
    values: HashMap<String, Bson>,
    /// The cursor the last `createFindCursor` opened, until it is saved as an entity.
    new_cursor: Option<actors::Cursor>,
    /// The stream the last `createChangeStream` opened, until it is saved as an entity.
    new_stream: Option<actors::ChangeStream<Document>>,
    /// The test sets fail points: its clients get a short heartbeatFrequencyMS, as the
    /// unified format allows, unless they set their own. A fail point on `hello` otherwise
    /// waits for the streaming monitor's next reply, up to the default 10 s.
    fail_points: bool,
    /// The identity provider a simulator with auth trusts for MONGODB-OIDC.
    oidc: Option<Arc<mongo_sim::stubs::oidc_issuer::OidcIssuer>>,
}

pub(super) type R<T> = Result<T, String>;

/// The user of deployments that require authentication (the spec's test user).
const USER: (&str, &str) = ("user", "pencil");

/// The runner's OIDC identity provider (simulators with auth trust it).
fn oidc_issuer() -> mongo_sim::stubs::oidc_issuer::OidcIssuer {
    mongo_sim::stubs::oidc_issuer::OidcIssuer::new("https://idp.unified.test", "mongodb-sim")
}

fn start_cluster(
    topology: &str,
    auth: bool,
    version: mongo_sim::ServerVersion,
    oidc: Option<&mongo_sim::stubs::oidc_issuer::OidcIssuer>,
) -> R<Cluster> {
    let builder = match topology {
        "single" => Cluster::standalone(),
        "sharded" => Cluster::sharded(2),
        // Two services, as the spec's multi-mongos LB; single-mongos clients get their own LB.
        "load-balanced" => Cluster::load_balanced(2),
        _ => Cluster::replica_set(3),
    };
    let builder = if auth { builder.user(USER.0, USER.1) } else { builder };
    let builder = match oidc {
        Some(idp) => builder.oidc(idp.sim_oidc()),
        None => builder,
    };
    builder.server_version(version).start().map_err(|e| format!("simulator did not start: {e}"))
}

fn with_credentials(uri: &str, auth: bool) -> String {
    match uri.strip_prefix("mongodb://") {
        Some(rest) if auth => format!("mongodb://{}:{}@{rest}", USER.0, USER.1),
        _ => uri.to_string(),
    }
}

fn uri_with(base: &str, options: &Document) -> String {
    let mut uri = base.to_string();
    for (k, v) in options {
        let value = match v {
            Bson::String(s) => s.clone(),
            Bson::Boolean(b) => b.to_string(),
            Bson::Int32(i) => i.to_string(),
            Bson::Int64(i) => i.to_string(),
            Bson::Double(d) => d.to_string(),
            other => other.to_string(),
        };
        uri = crate::deployment::with_options(&uri, &format!("{k}={value}"));
    }
    uri
}

/// Runs one test on a fresh simulated deployment of `topology`, or on the external one.
pub(super) async fn run_test(
    file: &Document,
    test: &Document,
    deployment: super::Deployment,
    target: &super::Target,
) -> R<()> {
    let super::Deployment { topology, auth, sim_version } = deployment;
    let oidc = (auth && matches!(target, super::Target::Simulator)).then(|| Arc::new(oidc_issuer()));
    let (cluster, auth) = match target {
        super::Target::Simulator => (
            Deployment::Sim(start_cluster(topology, auth, sim_version.unwrap_or_default(), oidc.as_deref())?),
            auth,
        ),
        super::Target::External(e) => (Deployment::Real(e.uri.clone()), false),
    };
    let setup = Client::with_uri_str(&with_credentials(&cluster.uri(), auth))
        .await
        .map_err(|e| format!("setup client: {e}"))?;
    if cluster.is_real() {
        // Transactions a previous test left open would hold locks (the unified format's advice).
        let _ = setup.database("admin").run_command(doc! {"killAllSessions": []}).await;
    }
    let mut ctx = Ctx {
        cluster,
        fail_points_set: Vec::new(),
        blocked_for: Duration::ZERO,
        sharded: topology == "sharded",
        auth,
        setup,
        entities: HashMap::new(),
        lsids: HashMap::new(),
        values: HashMap::new(),
        new_cursor: None,
        new_stream: None,
        fail_points: format!("{test}").contains("FailPoint\""),
        oidc,
    };
    let result = run_in(&mut ctx, file, test).await;
    for e in ctx.entities.values() {
        if let Entity::Client(c) = e {
            c.client.clone().shutdown().immediate(true).await;
        }
    }
    for name in std::mem::take(&mut ctx.fail_points_set) {
        let _ = ctx.cluster.configure_fail_point(doc! {"configureFailPoint": name, "mode": "off"}).await;
    }
    if ctx.cluster.is_real() && !ctx.blocked_for.is_zero() {
        // And a little for the command itself to run once released.
        tokio::time::sleep(ctx.blocked_for + Duration::from_millis(50)).await;
    }
    let _ = ctx.setup.shutdown().await;
    if let Some(sim) = ctx.cluster.sim() {
        sim.shutdown();
    }
    result
}

async fn run_in(ctx: &mut Ctx, file: &Document, test: &Document) -> R<()> {
    for data in file.get_array("initialData").map(|a| a.as_slice()).unwrap_or(&[]) {
        let Some(data) = data.as_document() else { continue };
        let db = ctx.setup.database(data.get_str("databaseName").unwrap_or("test"));
        let coll = data.get_str("collectionName").unwrap_or("test");
        let _ = db.run_command(doc! {"drop": coll}).await;
        let docs: Vec<Document> = data
            .get_array("documents")
            .map(|a| a.iter().filter_map(|d| d.as_document().cloned()).collect())
            .unwrap_or_default();
        // The format: create the collection (with `createOptions`, a capped one say) when
        // options are given or there are no documents, then insert the documents.
        let create_options = data.get_document("createOptions").ok();
        if docs.is_empty() || create_options.is_some() {
            let mut create = doc! {"create": coll};
            create.extend(create_options.cloned().unwrap_or_default());
            create.insert("writeConcern", doc! {"w": "majority"});
            db.run_command(create).await.map_err(|e| format!("initialData create: {e}"))?;
        }
        if !docs.is_empty() {
            db.collection::<bson::Document>(coll)
                .insert_many(docs)
                .await
                .map_err(|e| format!("initialData insert: {e}"))?;
        }
    }
    for e in file.get_array("createEntities").map(|a| a.as_slice()).unwrap_or(&[]) {
        if let Some(e) = e.as_document() {
            create_entity(ctx, e).await?;
        }
    }
    for (i, op) in test.get_array("operations").map(|a| a.as_slice()).unwrap_or(&[]).iter().enumerate() {
        let Some(op) = op.as_document() else { continue };
        run_operation(ctx, op)
            .await
            .map_err(|e| format!("operation {i} ({}): {e}", op.get_str("name").unwrap_or("?")))?;
    }
    for expected in test.get_array("expectEvents").map(|a| a.as_slice()).unwrap_or(&[]) {
        let Some(expected) = expected.as_document() else { continue };
        check_events(ctx, expected).await?;
    }
    for expected in test.get_array("expectLogMessages").map(|a| a.as_slice()).unwrap_or(&[]) {
        let Some(expected) = expected.as_document() else { continue };
        logs::check(client(ctx, expected.get_str("client").unwrap_or(""))?.logs.as_ref(), expected).await?;
    }
    for expected in test.get_array("expectTracingMessages").map(|a| a.as_slice()).unwrap_or(&[]) {
        let Some(expected) = expected.as_document() else { continue };
        let expected = with_lsids(expected, &ctx.lsids, &ctx.values);
        traces::check(client(ctx, expected.get_str("client").unwrap_or(""))?.traces.as_ref(), &expected)?;
    }
    for outcome in test.get_array("outcome").map(|a| a.as_slice()).unwrap_or(&[]) {
        let Some(outcome) = outcome.as_document() else { continue };
        let coll = ctx
            .setup
            .database(outcome.get_str("databaseName").unwrap_or("test"))
            .collection(outcome.get_str("collectionName").unwrap_or("test"));
        let options = actors::FindOptions { sort: Some(doc! {"_id": 1}), ..Default::default() };
        let actual = coll
            .find(doc! {})
            .with_options(options)
            .await
            .map_err(|e| format!("outcome find: {e}"))?
            .try_collect::<Vec<Document>>()
            .await
            .map_err(|e| format!("outcome find: {e}"))?;
        let expected = Bson::Array(outcome.get_array("documents").cloned().unwrap_or_default());
        let actual = Bson::Array(actual.into_iter().map(Bson::Document).collect());
        matches(&expected, Some(&actual), false, "outcome").map_err(|e| format!("outcome: {e}"))?;
    }
    Ok(())
}

async fn create_entity(ctx: &mut Ctx, e: &Document) -> R<()> {
    let Some((kind, spec)) = e.iter().next() else { return Ok(()) };
    let spec = spec.as_document().ok_or("entity spec must be a document")?;
    let id = spec.get_str("id").map_err(|_| "entity without id")?.to_string();
    let entity = match kind.as_str() {
        "client" => Box::pin(create_client(ctx, spec, &id)).await?,
        "database" => Entity::Database {
            client: {
                let c = spec.get_str("client").map_err(|_| "database without client")?;
                client(ctx, c)?;
                c.to_string()
            },
            name: spec.get_str("databaseName").map_err(|_| "database without name")?.to_string(),
            options: handle_options(spec.get_document("databaseOptions").ok())?.into(),
        },
        "collection" => create_collection(ctx, spec)?,
        "thread" => Entity::Thread(Vec::new()),
        "bucket" => {
            let db = spec.get_str("database").map_err(|_| "bucket without database")?;
            let Some(Entity::Database { client: c, name, options }) = ctx.entities.get(db) else {
                return Err(format!("unknown database entity {db}"));
            };
            let db = client(ctx, c)?.client.database_with_options(name, options.clone());
            let mut o = spec.get_document("bucketOptions").cloned().unwrap_or_default();
            let rp = o.remove("readPreference");
            let mut options: actors::gridfs::GridFsBucketOptions =
                protocol::bson_compat::deserialize_from_document(o)
                    .map_err(|e| format!("bucketOptions: {e}"))?;
            if let Some(Bson::Document(rp)) = rp {
                options.selection_criteria = Some(super::crud_ops::read_preference(&rp)?.into());
            }
            Entity::Bucket(db.gridfs_bucket(options))
        }
        "session" => create_session(ctx, spec, &id).await?,
        other => return Err(format!("entity {other} not supported")),
    };
    ctx.entities.insert(id, entity);
    Ok(())
}

/// A client entity's URI: the deployment's (or one host: a single mongos, a single load
/// balancer, `directConnection`), with the spec's `uriOptions` and the credentials.
fn client_uri(ctx: &Ctx, spec: &Document) -> R<String> {
    let empty = Document::new();
    // Sharded with useMultipleMongoses false (the default here): the first mongos only, the
    // one fail points are set on.
    let base = if let Some(base) = sdam_ops::single_lb_uri(ctx, spec)? {
        base
    } else if (ctx.sharded && !spec.get_bool("useMultipleMongoses").unwrap_or(false))
        || spec.get_document("uriOptions").and_then(|o| o.get_bool("directConnection")).unwrap_or(false)
    {
        // directConnection=true takes one host.
        format!("mongodb://{}/", ctx.cluster.seeds().first().cloned().unwrap_or_default())
    } else {
        ctx.cluster.uri()
    };
    let mut uri_options = spec.get_document("uriOptions").unwrap_or(&empty).clone();
    if ctx.fail_points && !uri_options.contains_key("heartbeatFrequencyMS") {
        uri_options.insert("heartbeatFrequencyMS", 500);
    }
    if uses_oidc(spec) {
        // The `$$placeholder` properties stand for the test environment's: here a callback
        // with the runner's identity provider ([`oidc_callback`]), set on the options.
        uri_options.remove("authMechanismProperties");
        no_placeholder(&uri_options)?;
        return Ok(uri_with(&base, &uri_options));
    }
    no_placeholder(&uri_options)?;
    Ok(uri_with(&with_credentials(&base, ctx.auth), &uri_options))
}

/// A `$$placeholder` the runner cannot replace is an error (unified test format).
fn no_placeholder(options: &Document) -> R<()> {
    fn has(b: &Bson) -> bool {
        match b {
            Bson::Document(d) => d.contains_key("$$placeholder") || d.values().any(has),
            Bson::Array(a) => a.iter().any(has),
            _ => false,
        }
    }
    match options.iter().find(|(_, v)| has(v)) {
        Some((k, _)) => Err(format!("uriOptions.{k} has a $$placeholder this runner cannot replace")),
        None => Ok(()),
    }
}

/// Whether a client entity authenticates with MONGODB-OIDC.
fn uses_oidc(spec: &Document) -> bool {
    spec.get_document("uriOptions")
        .and_then(|o| o.get_str("authMechanism"))
        .is_ok_and(|m| m == "MONGODB-OIDC")
}

/// The machine callback standing for `ENVIRONMENT:test`: a fresh token from the runner's
/// identity provider.
fn oidc_callback(ctx: &Ctx) -> R<actors::options::oidc::Callback> {
    use futures_util::FutureExt;
    let idp = ctx.oidc.clone().ok_or("MONGODB-OIDC needs the simulator's identity provider")?;
    Ok(actors::options::oidc::Callback::machine(move |_| {
        let token = idp.token("test_user1", Duration::from_secs(600));
        async move { Ok(actors::options::oidc::IdpServerResponse::builder().access_token(token).build()) }
            .boxed()
    }))
}

/// A client entity: its URI (the deployment's, or one host), and handlers that record the
/// events it observes and count checked-out connections.
async fn create_client(ctx: &mut Ctx, spec: &Document, id: &str) -> R<Entity> {
    let uri = client_uri(ctx, spec)?;
    let observe: Vec<String> = spec
        .get_array("observeEvents")
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    let ignore: Vec<String> = spec
        .get_array("ignoreCommandMonitoringEvents")
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    let events = Arc::new(Mutex::new(Vec::new()));
    let cmd_sink = events.clone();
    let observe_cmd = observe.clone();
    let observe_sensitive = spec.get_bool("observeSensitiveCommands").unwrap_or(false);
    // Request ids of redacted (security-sensitive) commands: their started event has an
    // empty body, which no other command has; replies and failures follow by id.
    let sensitive = Mutex::new(std::collections::HashSet::new());
    let cmd_handler = move |ev: &actors::command_events::CommandEvent| {
        use actors::command_events::CommandEvent as C;
        let name = command_event_name(ev);
        let cmd = ev.command_name();
        let redacted = match ev {
            C::Started { command, request_id, .. } if command.is_empty() => {
                sensitive.lock().insert(*request_id);
                true
            }
            C::Succeeded { request_id, .. } | C::Failed { request_id, .. } => {
                sensitive.lock().remove(request_id)
            }
            _ => false,
        };
        if observe_cmd.iter().any(|o| o == name)
            && !ignore.iter().any(|i| i == cmd)
            && cmd != "configureFailPoint"
            && (observe_sensitive || !redacted)
        {
            cmd_sink.lock().push(Event::Command(ev.clone()));
        }
    };
    let cmap_sink = events.clone();
    let observe_cmap = observe.clone();
    let checked_out = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let counter = checked_out.clone();
    let cmap_handler = move |ev: &pool::cmap::events::CmapEvent| {
        use std::sync::atomic::Ordering;
        match ev {
            pool::cmap::events::CmapEvent::CheckedOut { .. } => {
                counter.fetch_add(1, Ordering::SeqCst);
            }
            pool::cmap::events::CmapEvent::CheckedIn { .. } => {
                counter.fetch_sub(1, Ordering::SeqCst);
            }
            _ => {}
        }
        if observe_cmap.iter().any(|o| o == cmap_event_name(ev)) {
            cmap_sink.lock().push(Event::Cmap(ev.clone()));
        }
    };
    let sdam_sink = events.clone();
    let observe_sdam = observe.clone();
    let log_observer = logs::observer(spec)?;
    let topology_id = log_observer.as_ref().map(|o| o.topology_id.clone());
    let sdam_handler = move |ev: &protocol::sdam::events::SdamEvent| {
        if let Some(slot) = &topology_id {
            logs::note_topology(slot, ev);
        }
        if observe_sdam.iter().any(|o| o == sdam_event_name(ev)) {
            sdam_sink.lock().push(Event::Sdam(ev.clone()));
        }
    };
    let mut options = ClientOptions::parse(uri).await.map_err(|e| format!("client {id}: {e}"))?;
    if uses_oidc(spec) {
        let credential = options.credential.get_or_insert_with(Default::default);
        credential.oidc_callback = oidc_callback(ctx)?;
    }
    options.sdam_event_handler = Some(actors::event::EventHandler::subscriber(sdam_handler));
    options.command_event_handler = Some(actors::event::EventHandler::subscriber(cmd_handler));
    options.cmap_event_handler = Some(actors::event::EventHandler::subscriber(cmap_handler));
    if let Ok(api) = spec.get_document("serverApi") {
        let mut server_api = actors::options::ServerApi::v1();
        server_api.version = api.get_str("version").map_err(|_| "serverApi needs a version")?.parse()?;
        server_api.strict = api.get_bool("strict").ok();
        server_api.deprecation_errors = api.get_bool("deprecationErrors").ok();
        options.server_api = Some(server_api);
    }
    let traces = traces::observe(spec, &mut options)?;
    let client = Client::with_options(options).map_err(|e| format!("client {id}: {e}"))?;
    Ok(Entity::Client(ClientEntity { client, events, checked_out, logs: log_observer, traces }))
}

/// A collection entity of a database entity, with its read preference and timeoutMS.
fn create_collection(ctx: &Ctx, spec: &Document) -> R<Entity> {
    let db_id = spec.get_str("database").map_err(|_| "collection without database")?;
    let Some(Entity::Database { client, name, options }) = ctx.entities.get(db_id) else {
        return Err(format!("unknown database entity {db_id}"));
    };
    Ok(Entity::Collection {
        options: handle_options(spec.get_document("collectionOptions").ok())?,
        db_options: options.clone(),
        client: client.clone(),
        db: name.clone(),
        name: spec.get_str("collectionName").map_err(|_| "collection without name")?.to_string(),
    })
}

/// `databaseOptions` or `collectionOptions`: read preference, read and write concerns,
/// `timeoutMS`.
pub(super) fn handle_options(options: Option<&Document>) -> R<actors::CollectionOptions> {
    let Some(o) = options else { return Ok(Default::default()) };
    let mut rest = o.clone();
    let read_preference = match rest.remove("readPreference") {
        Some(Bson::Document(rp)) => Some(super::crud_ops::read_preference(&rp)?),
        _ => None,
    };
    if let Some(Bson::Document(wc)) = rest.get_mut("writeConcern") {
        // The unified format's spelling of the server's `wtimeout` and `j`.
        if let Some(t) = wc.remove("wtimeoutMS") {
            wc.insert("wtimeout", t);
        }
        if let Some(j) = wc.remove("journal") {
            wc.insert("j", j);
        }
    }
    let mut options: actors::CollectionOptions =
        protocol::bson_compat::deserialize_from_document(rest).map_err(|e| format!("entity options: {e}"))?;
    options.selection_criteria = read_preference.map(Into::into);
    Ok(options)
}

/// A session entity, whose `lsid` the runner remembers.
async fn create_session(ctx: &mut Ctx, spec: &Document, id: &str) -> R<Entity> {
    let c = spec.get_str("client").map_err(|_| "session without client")?;
    let session = client(ctx, c)?
        .client
        .start_session()
        .with_options(sessions::session_options(spec, &ctx.values)?)
        .await
        .map_err(|e| format!("session {id}: {e}"))?;
    ctx.lsids.insert(id.to_string(), session.id().clone());
    Ok(Entity::Session(Some(Box::new(session))))
}

/// `timeoutMS` of an options or arguments document (0: no limit).
pub(super) fn timeout_ms(d: &Document) -> Option<Duration> {
    millis(d, "timeoutMS")
}

/// A field of milliseconds (an int32, int64 or double) as a duration.
fn millis(d: &Document, key: &str) -> Option<Duration> {
    let v = d.get(key)?;
    let ms = v.as_i64().or(v.as_i32().map(i64::from)).or(v.as_f64().map(|f| f as i64))?;
    Some(Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
}

/// A collection handle with the entities' options and the operation's timeout.
fn collection_handle(
    ctx: &Ctx,
    c: &str,
    db: &str,
    coll: &str,
    (db_options, options): (&actors::DatabaseOptions, &actors::CollectionOptions),
    args: &Document,
) -> R<actors::Collection> {
    Ok(client(ctx, c)?
        .client
        .database_with_options(db, db_options.clone())
        .collection_with_options::<Document>(coll, options.clone())
        .with_timeout(timeout_ms(args)))
}

fn command_event_name(ev: &actors::command_events::CommandEvent) -> &'static str {
    match ev {
        actors::command_events::CommandEvent::Started { .. } => "commandStartedEvent",
        actors::command_events::CommandEvent::Succeeded { .. } => "commandSucceededEvent",
        _ => "commandFailedEvent",
    }
}

fn cmap_event_name(ev: &pool::cmap::events::CmapEvent) -> &'static str {
    use pool::cmap::events::CmapEvent as C;
    match ev {
        C::PoolCreated { .. } => "poolCreatedEvent",
        C::PoolReady { .. } => "poolReadyEvent",
        C::PoolCleared { .. } => "poolClearedEvent",
        C::PoolClosed { .. } => "poolClosedEvent",
        C::ConnectionCreated { .. } => "connectionCreatedEvent",
        C::ConnectionReady { .. } => "connectionReadyEvent",
        C::ConnectionClosed { .. } => "connectionClosedEvent",
        C::CheckOutStarted { .. } => "connectionCheckOutStartedEvent",
        C::CheckOutFailed { .. } => "connectionCheckOutFailedEvent",
        C::CheckedOut { .. } => "connectionCheckedOutEvent",
        C::CheckedIn { .. } => "connectionCheckedInEvent",
        #[allow(unreachable_patterns)]
        _ => "unknownCmapEvent",
    }
}

fn sdam_event_name(ev: &protocol::sdam::events::SdamEvent) -> &'static str {
    use protocol::sdam::events::SdamEvent as S;
    match ev {
        S::TopologyOpening(_) => "topologyOpeningEvent",
        S::TopologyClosed(_) => "topologyClosedEvent",
        S::TopologyDescriptionChanged(_) => "topologyDescriptionChangedEvent",
        S::ServerOpening(_) => "serverOpeningEvent",
        S::ServerClosed(_) => "serverClosedEvent",
        S::ServerDescriptionChanged(_) => "serverDescriptionChangedEvent",
        S::ServerHeartbeatStarted(_) => "serverHeartbeatStartedEvent",
        S::ServerHeartbeatSucceeded(_) => "serverHeartbeatSucceededEvent",
        S::ServerHeartbeatFailed(_) => "serverHeartbeatFailedEvent",
    }
}

fn event_name(ev: &Event) -> &'static str {
    match ev {
        Event::Sdam(s) => sdam_event_name(s),
        Event::Command(c) => command_event_name(c),
        Event::Cmap(c) => cmap_event_name(c),
    }
}

fn client<'a>(ctx: &'a Ctx, id: &str) -> R<&'a ClientEntity> {
    match ctx.entities.get(id) {
        Some(Entity::Client(c)) => Ok(c),
        _ => Err(format!("unknown client entity {id}")),
    }
}

async fn run_operation(ctx: &mut Ctx, op: &Document) -> R<()> {
    let name = op.get_str("name").unwrap_or("");
    let object = op.get_str("object").unwrap_or("");
    let empty = Document::new();
    let args = op.get_document("arguments").unwrap_or(&empty);
    let result = execute(ctx, name, object, args).await?;
    if let (Some(cursor), Ok(id)) = (ctx.new_cursor.take(), op.get_str("saveResultAsEntity")) {
        ctx.entities.insert(id.to_string(), Entity::Cursor(Some(cursor)));
    }
    if let (Some(stream), Ok(id)) = (ctx.new_stream.take(), op.get_str("saveResultAsEntity")) {
        ctx.entities.insert(id.to_string(), Entity::ChangeStream(Some(stream)));
    }
    if let (Ok(id), "getSnapshotTime" | "upload", Ok(Some(v))) =
        (op.get_str("saveResultAsEntity"), name, &result)
    {
        ctx.values.insert(id.to_string(), v.clone());
    }
    if let (Ok(id), "createCollection") = (op.get_str("saveResultAsEntity"), name) {
        // The new collection as an entity, with the database's options.
        if let Some(Entity::Database { client, name: db, options }) = ctx.entities.get(object) {
            let coll = args.get_str("collection").unwrap_or("").to_string();
            let entity = Entity::Collection {
                client: client.clone(),
                db: db.clone(),
                name: coll,
                db_options: options.clone(),
                options: Default::default(),
            };
            ctx.entities.insert(id.to_string(), entity);
        }
    }
    // `$$matchesEntity` in an expected result names a value saved earlier (an upload's id).
    let op = with_lsids(op, &ctx.lsids, &ctx.values);
    check_outcome(&op, result)
}

/// Checks an operation's result or error against its expectResult / expectError.
fn check_outcome(op: &Document, result: OpResult) -> R<()> {
    if op.get_bool("ignoreResultAndError").unwrap_or(false) {
        return Ok(());
    }
    match (result, op.get_document("expectError")) {
        (Ok(_), Ok(_)) => Err("expected an error, the operation succeeded".into()),
        (Err(e), Ok(expected)) => check_error(&e, expected),
        (Err(e), Err(_)) => Err(format!("unexpected error: {e}")),
        (Ok(actual), Err(_)) => match op.get("expectResult") {
            Some(expected) => {
                let root = !matches!(expected, Bson::Array(_));
                let actual = actual.unwrap_or(Bson::Null);
                if let Bson::Array(_) = expected {
                    // Documents of a result array are root-level documents too.
                    let (Bson::Array(e), Bson::Array(a)) = (expected, &actual) else {
                        return Err(format!("expected {expected}, got {actual}"));
                    };
                    if e.len() != a.len() {
                        return Err(format!("expected {} results, got {}: {actual}", e.len(), a.len()));
                    }
                    for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                        matches(ev, Some(av), true, &format!("result[{i}]"))?;
                    }
                    Ok(())
                } else {
                    matches(expected, Some(&actual), root, "result")
                }
            }
            None => Ok(()),
        },
    }
}

/// Whether the server reported the error (`isClientError: false`): a command or write error
/// of an operation (not of a connection's handshake), or a client bulk write stopped by one
/// or with write errors only.
fn is_server_side(e: &actors::Error) -> bool {
    use actors::ErrorKind as K;
    match &*e.kind {
        K::BulkWrite(_) => e.cause().is_none_or(is_server_side),
        K::Command(_) | K::Write(_) | K::InsertMany(_) | K::CollectionBulkWrite(_) => {
            e.pool_error().is_none()
        }
        _ => false,
    }
}

fn check_error(e: &actors::Error, expected: &Document) -> R<()> {
    let text = e.to_string();
    let server_side = is_server_side(e);
    if let Ok(want) = expected.get_bool("isClientError") {
        if want == server_side {
            return Err(format!("isClientError {want}, got {e}"));
        }
    }
    if let Ok(want) = expected.get_bool("isTimeoutError") {
        let timeout = e.is_timeout();
        if want != timeout {
            return Err(format!("isTimeoutError {want}, got {e}"));
        }
    }
    if let Ok(s) = expected.get_str("errorContains") {
        if !text.to_lowercase().contains(&s.to_lowercase()) {
            return Err(format!("error should contain {s:?}: {e}"));
        }
    }
    if let Some(code) = expected.get("errorCode") {
        let want = match code {
            Bson::Int32(i) => i64::from(*i),
            Bson::Int64(i) => *i,
            _ => -1,
        };
        if e.code().map(i64::from) != Some(want) {
            return Err(format!("errorCode {want}, got {:?}: {e}", e.code()));
        }
    }
    if let Ok(name) = expected.get_str("errorCodeName") {
        if !text.contains(name) {
            return Err(format!("errorCodeName {name}: {e}"));
        }
    }
    if let Ok(want) = expected.get_document("errorResponse") {
        let response = e
            .server_error()
            .map(|s| s.response.clone())
            .ok_or_else(|| format!("errorResponse: {e} has no server response"))?;
        matches(&Bson::Document(want.clone()), Some(&Bson::Document(response)), true, "errorResponse")?;
    }
    check_bulk_error(e, expected)?;
    let labels = e.labels();
    for l in expected.get_array("errorLabelsContain").map(|a| a.as_slice()).unwrap_or(&[]) {
        if !l.as_str().is_some_and(|l| e.contains_label(l)) {
            return Err(format!("error labels {labels:?} should contain {l}"));
        }
    }
    for l in expected.get_array("errorLabelsOmit").map(|a| a.as_slice()).unwrap_or(&[]) {
        if l.as_str().is_some_and(|l| e.contains_label(l)) {
            return Err(format!("error labels {labels:?} should omit {l}"));
        }
    }
    Ok(())
}

/// The parts of an expected error that only a bulk write has: the result of what succeeded
/// (`expectResult`), and a client bulk write's `writeErrors` and `writeConcernErrors`.
fn check_bulk_error(e: &actors::Error, expected: &Document) -> R<()> {
    use actors::options::PartialBulkWriteResult as P;
    let bulk = match &*e.kind {
        actors::ErrorKind::BulkWrite(b) => Some(b),
        _ => None,
    };
    if let Some(want) = expected.get("expectResult") {
        let partial = match e.partial_result() {
            Some(partial_result) => super::crud_ops::bulk_result(partial_result.clone()),
            None => bulk.and_then(|b| b.partial_result.as_ref()).map(|p| match p {
                P::Summary(s) => super::crud_ops::summary_bulk_result(s),
                P::Verbose(v) => super::crud_ops::verbose_bulk_result(v),
            }),
        };
        matches(want, partial.as_ref(), true, "expectError.expectResult")?;
    }
    if let Ok(want) = expected.get_document("writeErrors") {
        let b = bulk.ok_or_else(|| format!("writeErrors expected, got {e}"))?;
        let have: Document = b
            .write_errors
            .iter()
            .map(|(i, w)| {
                let d = protocol::bson_compat::serialize_to_document(w).unwrap_or_default();
                (i.to_string(), Bson::Document(d))
            })
            .collect();
        if want.len() != have.len() {
            return Err(format!("writeErrors: expected {want}, got {have}"));
        }
        for (k, v) in want {
            matches(v, have.get(k), true, &format!("writeErrors.{k}"))?;
        }
    }
    if let Ok(want) = expected.get_array("writeConcernErrors") {
        let b = bulk.ok_or_else(|| format!("writeConcernErrors expected, got {e}"))?;
        if want.len() != b.write_concern_errors.len() {
            return Err(format!("writeConcernErrors: expected {want:?}, got {:?}", b.write_concern_errors));
        }
        for (i, (w, have)) in want.iter().zip(&b.write_concern_errors).enumerate() {
            let d = Bson::Document(protocol::bson_compat::serialize_to_document(have).unwrap_or_default());
            matches(w, Some(&d), true, &format!("writeConcernErrors[{i}]"))?;
        }
    }
    Ok(())
}

pub(super) type OpResult = Result<Option<Bson>, actors::Error>;

async fn execute(ctx: &mut Ctx, name: &str, object: &str, args: &Document) -> R<OpResult> {
    // The CRUD spec's required argument: a malformed operation is the test's error.
    if matches!(name, "find" | "findOne" | "createFindCursor") && !args.contains_key("filter") {
        return Err(format!("{name} requires a filter"));
    }
    if object == "testRunner" {
        return testrunner(ctx, name, args).await.map(|()| Ok(None));
    }
    if matches!(ctx.entities.get(object), Some(Entity::Session(_))) {
        if let Some(result) = sessions::session_op(ctx, object, name, args).await {
            return result;
        }
    }
    if let Some(Entity::Session(slot)) = ctx.entities.get_mut(object) {
        let Some(session) = slot.as_mut() else { return Err(format!("session {object} has ended")) };
        let result = match name {
            "commitTransaction" => session.commit_transaction().await,
            "abortTransaction" => session.abort_transaction().await,
            "endSession" => {
                ctx.lsids.insert(object.to_string(), session.id().clone());
                slot.take();
                Ok(())
            }
            other => return Err(format!("session operation {other} not supported")),
        };
        return Ok(result.map(|()| None));
    }
    // An operation with a session takes the session out of its entity for the call.
    let mut session = match args.get_str("session") {
        Ok(sid) => match ctx.entities.get_mut(sid) {
            Some(Entity::Session(slot)) => {
                Some((sid.to_string(), slot.take().ok_or_else(|| format!("session {sid} has ended"))?))
            }
            _ => return Err(format!("unknown session entity {sid}")),
        },
        Err(_) => None,
    };
    let result = execute_inner(ctx, name, object, args, session.as_mut().map(|(_, s)| &mut **s)).await;
    if let Some((sid, s)) = session {
        ctx.lsids.insert(sid.clone(), s.id().clone());
        ctx.entities.insert(sid, Entity::Session(Some(s)));
    }
    result
}

async fn execute_inner(
    ctx: &mut Ctx,
    name: &str,
    object: &str,
    args: &Document,
    session: Option<&mut actors::ClientSession>,
) -> R<OpResult> {
    let empty = Document::new();
    if let Some(Entity::Cursor(cursor)) = ctx.entities.get_mut(object) {
        return cursor_op(cursor, name, args).await;
    }
    if let Some(Entity::ChangeStream(stream)) = ctx.entities.get_mut(object) {
        return stream_op(stream, name).await;
    }
    if name == "createChangeStream" {
        return create_change_stream(ctx, object, args, session).await;
    }
    match ctx.entities.get(object) {
        Some(Entity::Database { client: c, name: db, options }) => {
            let db = client(ctx, c)?
                .client
                .database_with_options(db, options.clone())
                .with_timeout(timeout_ms(args));
            let mut cursor = None;
            // Boxed: an operation's future is large in debug builds, and the runner's
            // match would hold every kind of it on the stack at once.
            let result = Box::pin(super::crud_ops::database_op(&db, name, args, &mut cursor, session)).await;
            ctx.new_cursor = cursor;
            result
        }
        Some(Entity::Collection { client: c, db, name: coll, db_options, options }) => {
            let coll = collection_handle(ctx, c, db, coll, (db_options, options), args)?;
            let mut cursor = None;
            let result =
                Box::pin(super::crud_ops::collection_op(&coll, name, args, &mut cursor, session)).await;
            ctx.new_cursor = cursor;
            result
        }
        Some(Entity::Client(c)) if name == "close" => {
            c.client.clone().shutdown().immediate(true).await;
            Ok(Ok(None))
        }
        Some(Entity::Client(c)) => Box::pin(super::crud_ops::client_op(&c.client, name, args, session)).await,
        Some(Entity::Cursor(_)) => Err(format!("cursor operation {name} not supported")),
        Some(Entity::ChangeStream(_)) => Err(format!("change stream operation {name} not supported")),
        Some(Entity::Thread(_)) => Err(format!("thread operation {name} not supported")),
        Some(Entity::Bucket(bucket)) => {
            let bucket = match args.get("timeoutMS") {
                Some(_) => bucket.with_timeout(timeout_ms(args)),
                None => bucket.clone(),
            };
            Box::pin(super::crud_ops::bucket_op(&bucket, name, args)).await
        }
        Some(Entity::Session(_)) => Err(format!("session operation {name} not supported")),
        Some(Entity::TopologyDescription(_)) => {
            Err(format!("topologyDescription operation {name} not supported"))
        }
        None => {
            let _ = empty;
            Err(format!("unknown entity {object}"))
        }
    }
}

/// A cursor entity's operation: `close`, `iterateUntilDocumentOrError`, `iterateOnce`.
async fn cursor_op(cursor: &mut Option<actors::Cursor>, name: &str, args: &Document) -> R<OpResult> {
    match name {
        "close" => {
            if let Some(c) = cursor.take() {
                c.close(timeout_ms(args)).await;
            }
            Ok(Ok(None))
        }
        "iterateUntilDocumentOrError" => {
            let Some(c) = cursor.as_mut() else { return Err("cursor is closed".into()) };
            match c.try_next().await {
                Ok(Some(d)) => Ok(Ok(Some(Bson::Document(d)))),
                Ok(None) => Err("cursor exhausted before a document".into()),
                Err(e) => Ok(Err(e)),
            }
        }
        "iterateOnce" => {
            let Some(c) = cursor.as_mut() else { return Err("cursor is closed".into()) };
            Ok(c.try_next_once().await.map(|d| d.map(Bson::Document)))
        }
        other => Err(format!("cursor operation {other} not supported")),
    }
}

/// A change stream entity's operation: `close`, `iterateUntilDocumentOrError`, `iterateOnce`.
async fn stream_op(stream: &mut Option<actors::ChangeStream<Document>>, name: &str) -> R<OpResult> {
    match name {
        "close" => {
            if let Some(s) = stream.take() {
                s.close().await;
            }
            Ok(Ok(None))
        }
        "iterateUntilDocumentOrError" => {
            let Some(s) = stream.as_mut() else { return Err("change stream is closed".into()) };
            match s.next().await {
                Some(Ok(d)) => Ok(Ok(Some(Bson::Document(d)))),
                Some(Err(e)) => Ok(Err(e)),
                None => Err("change stream ended before a document".into()),
            }
        }
        "iterateOnce" => {
            let Some(s) = stream.as_mut() else { return Err("change stream is closed".into()) };
            Ok(s.next_if_any().await.map(|d| d.map(Bson::Document)))
        }
        other => Err(format!("change stream operation {other} not supported")),
    }
}

/// `createChangeStream` on a client, database or collection entity.
async fn create_change_stream(
    ctx: &mut Ctx,
    object: &str,
    args: &Document,
    session: Option<&mut actors::ClientSession>,
) -> R<OpResult> {
    let target = match ctx.entities.get(object) {
        Some(Entity::Database { client: c, name: db, options }) => super::crud_ops::WatchTarget::Database(
            client(ctx, c)?.client.database_with_options(db, options.clone()),
        ),
        Some(Entity::Collection { client: c, db, name: coll, db_options, options }) => {
            super::crud_ops::WatchTarget::Collection(collection_handle(
                ctx,
                c,
                db,
                coll,
                (db_options, options),
                &Document::new(),
            )?)
        }
        Some(Entity::Client(c)) => super::crud_ops::WatchTarget::Client(c.client.clone()),
        _ => return Err(format!("createChangeStream on {object}, which cannot watch")),
    };
    Ok(match Box::pin(super::crud_ops::watch(target, args, session)).await? {
        Ok(stream) => {
            ctx.new_stream = Some(stream);
            Ok(None)
        }
        Err(e) => Err(e),
    })
}

/// Records a fail point set on the deployment: turned off after the test, and (with
/// `blockConnection`) how long a command it blocked may still run.
fn note_fail_point(ctx: &mut Ctx, fp: &Document) {
    if let Ok(name) = fp.get_str("configureFailPoint") {
        ctx.fail_points_set.push(name.to_owned());
    }
    let data = fp.get_document("data").ok();
    if data.and_then(|d| d.get_bool("blockConnection").ok()) == Some(true) {
        let block = data.and_then(|d| millis(d, "blockTimeMS")).unwrap_or_default();
        ctx.blocked_for = ctx.blocked_for.max(block);
    }
}

async fn testrunner(ctx: &mut Ctx, name: &str, args: &Document) -> R<()> {
    if let Some(r) = sdam_ops::testrunner_op(ctx, name, args).await {
        return r;
    }
    match name {
        "failPoint" => {
            let fp = args.get_document("failPoint").map_err(|_| "failPoint without failPoint")?;
            note_fail_point(ctx, fp);
            if let Some(result) = sessions::fail_point_through_client(ctx, args, fp).await {
                return result;
            }
            // Set on the server the operations will use: the primary, the mongos or the LB's service.
            ctx.cluster.configure_fail_point(fp.clone()).await.map_err(|e| format!("configureFailPoint: {e}"))
        }
        "targetedFailPoint" => {
            let fp = args.get_document("failPoint").map_err(|_| "targetedFailPoint without failPoint")?;
            let sid = args.get_str("session").unwrap_or("");
            let Some(Entity::Session(Some(session))) = ctx.entities.get(sid) else {
                return Err(format!("unknown or ended session {sid}"));
            };
            let host = session.pinned_server().map(ToString::to_string);
            note_fail_point(ctx, fp);
            let result = match host {
                Some(host) => ctx.cluster.configure_fail_point_on(&host, fp.clone()).await,
                None => return Err(format!("targetedFailPoint: session {sid} is not pinned to a server")),
            };
            result.map_err(|e| format!("configureFailPoint: {e}"))
        }
        "createEntities" => {
            for e in args.get_array("entities").map(|a| a.as_slice()).unwrap_or(&[]) {
                if let Some(e) = e.as_document() {
                    Box::pin(create_entity(ctx, e)).await?;
                }
            }
            Ok(())
        }
        "assertCollectionExists"
        | "assertCollectionNotExists"
        | "assertIndexExists"
        | "assertIndexNotExists" => assert_exists(ctx, name, args).await,
        "runOnThread" => run_on_thread(ctx, args),
        "waitForThread" => {
            let thread = args.get_str("thread").unwrap_or("");
            let Some(Entity::Thread(tasks)) = ctx.entities.get_mut(thread) else {
                return Err(format!("unknown thread entity {thread}"));
            };
            for task in std::mem::take(tasks) {
                task.await.map_err(|e| format!("thread task: {e}"))??;
            }
            Ok(())
        }
        "assertNumberConnectionsCheckedOut" => assert_connections_checked_out(ctx, args).await,
        "assertSameLsidOnLastTwoCommands" | "assertDifferentLsidOnLastTwoCommands" => {
            assert_lsids(ctx, name, args).await
        }
        "assertSessionPinned"
        | "assertSessionUnpinned"
        | "assertSessionDirty"
        | "assertSessionNotDirty"
        | "assertSessionTransactionState" => assert_session(ctx, name, args),
        "wait" => {
            let ms = args.get("ms").and_then(|v| v.as_i64().or(v.as_i32().map(i64::from))).unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(u64::try_from(ms).unwrap_or(0))).await;
            Ok(())
        }
        "waitForEvent" | "assertEventCount" => wait_for_events(ctx, name, args).await,
        other => Err(format!("testRunner operation {other} not supported")),
    }
}

/// `assertSessionPinned`, `assertSessionUnpinned`, `assertSessionDirty`,
/// `assertSessionNotDirty` and `assertSessionTransactionState`.
fn assert_session(ctx: &Ctx, name: &str, args: &Document) -> R<()> {
    let sid = args.get_str("session").unwrap_or("");
    let Some(Entity::Session(Some(session))) = ctx.entities.get(sid) else {
        return Err(format!("unknown or ended session {sid}"));
    };
    let (what, have, want) = match name {
        "assertSessionPinned" | "assertSessionUnpinned" => {
            ("pinned", session.is_pinned().to_string(), (name == "assertSessionPinned").to_string())
        }
        "assertSessionDirty" | "assertSessionNotDirty" => {
            ("dirty", session.is_dirty().to_string(), (name == "assertSessionDirty").to_string())
        }
        _ => {
            let have = match session.transaction_state() {
                actors::TransactionState::None => "none",
                actors::TransactionState::Starting => "starting",
                actors::TransactionState::InProgress => "in_progress",
                actors::TransactionState::Committed => "committed",
                actors::TransactionState::Aborted => "aborted",
                _ => "unknown",
            };
            ("transaction state", have.to_string(), args.get_str("state").unwrap_or("").to_string())
        }
    };
    if have == want {
        Ok(())
    } else {
        Err(format!("session {sid}: {what} is {have}, expected {want}"))
    }
}

/// `assertCollectionExists`, `assertCollectionNotExists`, `assertIndexExists` and
/// `assertIndexNotExists`, checked through the runner's own client.
async fn assert_exists(ctx: &Ctx, name: &str, args: &Document) -> R<()> {
    let db = args.get_str("databaseName").map_err(|_| format!("{name} needs a databaseName"))?;
    let coll = args.get_str("collectionName").map_err(|_| format!("{name} needs a collectionName"))?;
    let database = ctx.setup.database(db);
    let (found, what) = match args.get_str("indexName") {
        Ok(index) => {
            let names = database.collection::<Document>(coll).list_index_names().await;
            (names.is_ok_and(|n| n.iter().any(|i| i == index)), format!("index {index} on {db}.{coll}"))
        }
        Err(_) => {
            let names = database.list_collection_names().await.map_err(|e| format!("{name}: {e}"))?;
            (names.iter().any(|c| c == coll), format!("collection {db}.{coll}"))
        }
    };
    let want = !name.contains("NotExists");
    if found == want {
        Ok(())
    } else {
        Err(format!("{name}: {what} {}", if found { "exists" } else { "does not exist" }))
    }
}

/// `runOnThread`: the operation runs as a task of the thread entity.
fn run_on_thread(ctx: &mut Ctx, args: &Document) -> R<()> {
    let thread = args.get_str("thread").unwrap_or("").to_string();
    let op = args.get_document("operation").map_err(|_| "runOnThread without operation")?.clone();
    let object = op.get_str("object").unwrap_or("");
    let empty = Document::new();
    let op_args = op.get_document("arguments").unwrap_or(&empty);
    let target = match ctx.entities.get(object) {
        Some(Entity::Collection { client: c, db, name: coll, db_options, options }) => {
            Ok(collection_handle(ctx, c, db, coll, (db_options, options), op_args)?)
        }
        Some(Entity::Database { client: c, name: db, options }) => Err(client(ctx, c)?
            .client
            .database_with_options(db, options.clone())
            .with_timeout(timeout_ms(op_args))),
        _ => return Err(format!("runOnThread supports database and collection operations, not on {object}")),
    };
    let task = tokio::spawn(async move {
        let name = op.get_str("name").unwrap_or("").to_string();
        let empty = Document::new();
        let args = op.get_document("arguments").unwrap_or(&empty);
        let result = match target {
            Ok(coll) => {
                let mut cursor = None;
                Box::pin(super::crud_ops::collection_op(&coll, &name, args, &mut cursor, None)).await?
            }
            Err(db) => Box::pin(super::crud_ops::database_op(&db, &name, args, &mut None, None)).await?,
        };
        check_outcome(&op, result).map_err(|e| format!("{name} on a thread: {e}"))
    });
    match ctx.entities.get_mut(&thread) {
        Some(Entity::Thread(tasks)) => tasks.push(task),
        _ => return Err(format!("unknown thread entity {thread}")),
    }
    Ok(())
}

/// `assertNumberConnectionsCheckedOut`, giving check-ins that trail a result a moment.
async fn assert_connections_checked_out(ctx: &Ctx, args: &Document) -> R<()> {
    let c = client(ctx, args.get_str("client").unwrap_or(""))?;
    c.client.flush_events().await;
    let want = args
        .get("connections")
        .and_then(|v| v.as_i32().map(i64::from).or(v.as_i64()))
        .ok_or("assertNumberConnectionsCheckedOut needs an integer connections argument")?;
    // Check-ins may trail the operation's result: give them a moment.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
    loop {
        let n = c.checked_out.load(std::sync::atomic::Ordering::SeqCst);
        if n == want {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!("expected {want} connections checked out, counted {n}"));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `assertSameLsidOnLastTwoCommands` and `assertDifferentLsidOnLastTwoCommands`.
async fn assert_lsids(ctx: &Ctx, name: &str, args: &Document) -> R<()> {
    let c = client(ctx, args.get_str("client").unwrap_or(""))?;
    // Handlers run on delivery threads: what the operations emitted first.
    c.client.flush_events().await;
    let lsids: Vec<Option<Bson>> = c
        .events
        .lock()
        .iter()
        .filter_map(|e| match e {
            Event::Command(actors::command_events::CommandEvent::Started { command, .. }) => {
                Some(command.get("lsid").cloned())
            }
            _ => None,
        })
        .collect();
    let [.., a, b] = lsids.as_slice() else {
        return Err(format!("{name}: fewer than two commandStartedEvents observed"));
    };
    let same = a.is_some() && a == b;
    if same == (name == "assertSameLsidOnLastTwoCommands") {
        Ok(())
    } else {
        Err(format!("{name}: lsids {a:?} and {b:?}"))
    }
}

/// `waitForEvent` (up to the spec's 10 s) and `assertEventCount`.
async fn wait_for_events(ctx: &Ctx, name: &str, args: &Document) -> R<()> {
    let c = client(ctx, args.get_str("client").unwrap_or(""))?;
    c.client.flush_events().await;
    let event = args.get_document("event").map_err(|_| "no event")?;
    let count = args.get("count").and_then(|v| v.as_i32().map(i64::from).or(v.as_i64())).unwrap_or(1);
    let count = usize::try_from(count).unwrap_or(0);
    // The spec's limit for waitForEvent.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let n = c.events.lock().iter().filter(|e| event_matches(event, e).is_ok()).count();
        if name == "assertEventCount" {
            return if n == count {
                Ok(())
            } else {
                // Which events they were says why (a second Unknown: from what error?).
                let seen: Vec<String> =
                    c.events.lock().iter().filter(|e| event_matches(event, e).is_ok()).map(brief).collect();
                Err(format!("expected {count} events {event}, saw {n}: {seen:?}"))
            };
        }
        if n >= count {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!("waited 10 s for {count} events {event}, saw {n}"));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One event in a line: a server description change as `old -> new (error)`.
fn brief(e: &Event) -> String {
    use protocol::sdam::events::SdamEvent;
    match e {
        Event::Sdam(SdamEvent::ServerDescriptionChanged(c)) => format!(
            "{}: {:?} -> {:?} ({})",
            c.address,
            c.previous_description.server_type,
            c.new_description.server_type,
            c.new_description.error.as_deref().unwrap_or("no error")
        ),
        other => format!("{other:?}").chars().take(300).collect(),
    }
}

async fn check_events(ctx: &Ctx, expected: &Document) -> R<()> {
    let c = client(ctx, expected.get_str("client").unwrap_or(""))?;
    c.client.flush_events().await;
    let kind = expected.get_str("eventType").unwrap_or("command");
    let ignore_extra = expected.get_bool("ignoreExtraEvents").unwrap_or(false);
    let want: Vec<Document> = expected
        .get_array("events")
        .map(|a| {
            a.iter().filter_map(Bson::as_document).map(|d| with_lsids(d, &ctx.lsids, &ctx.values)).collect()
        })
        .unwrap_or_default();
    let want: Vec<&Document> = want.iter().collect();
    // Events may trail the operation's result (check-ins, for example): give them a moment.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
    loop {
        let actual: Vec<Event> = c
            .events
            .lock()
            .iter()
            .filter(|e| {
                matches!(
                    (kind, e),
                    ("command", Event::Command(_)) | ("cmap", Event::Cmap(_)) | ("sdam", Event::Sdam(_))
                )
            })
            .cloned()
            .collect();
        let result = compare_events(&want, &actual, ignore_extra);
        if result.is_ok() || tokio::time::Instant::now() > deadline {
            return result.map_err(|e| {
                let names: Vec<&str> = actual.iter().map(event_name).collect();
                format!("{kind} events: {e} (observed: {names:?})")
            });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Replaces `{"$$sessionLsid": "<session>"}` by the session's id, and
/// `{"$$matchesEntity": "<id>"}` by the saved value.
fn with_lsids(d: &Document, lsids: &HashMap<String, Document>, values: &HashMap<String, Bson>) -> Document {
    fn walk(b: &Bson, lsids: &HashMap<String, Document>, values: &HashMap<String, Bson>) -> Bson {
        match b {
            Bson::Document(d) => {
                if let (1, Ok(id)) = (d.len(), d.get_str("$$matchesEntity")) {
                    return values
                        .get(id)
                        .cloned()
                        .unwrap_or_else(|| Bson::String(format!("no entity {id}")));
                }
                if let (1, Ok(sid)) = (d.len(), d.get_str("$$sessionLsid")) {
                    // An unknown session matches nothing.
                    return lsids
                        .get(sid)
                        .cloned()
                        .map_or(Bson::String(format!("no session {sid}")), Bson::Document);
                }
                Bson::Document(d.iter().map(|(k, v)| (k.clone(), walk(v, lsids, values))).collect())
            }
            Bson::Array(a) => Bson::Array(a.iter().map(|v| walk(v, lsids, values)).collect()),
            other => other.clone(),
        }
    }
    d.iter().map(|(k, v)| (k.clone(), walk(v, lsids, values))).collect()
}

fn compare_events(want: &[&Document], actual: &[Event], ignore_extra: bool) -> R<()> {
    if actual.len() < want.len() || (!ignore_extra && actual.len() != want.len()) {
        return Err(format!("expected {} events, observed {}", want.len(), actual.len()));
    }
    for (i, (w, a)) in want.iter().zip(actual).enumerate() {
        event_matches(w, a).map_err(|e| format!("event {i}: {e}"))?;
    }
    Ok(())
}

fn event_matches(expected: &Document, actual: &Event) -> R<()> {
    let Some((name, fields)) = expected.iter().next() else { return Err("empty event".into()) };
    if name != event_name(actual) {
        return Err(format!("expected {name}, got {}", event_name(actual)));
    }
    let empty = Document::new();
    let fields = fields.as_document().unwrap_or(&empty);
    let mut actual_doc = Document::new();
    match actual {
        Event::Command(ev) => {
            use actors::command_events::CommandEvent as C;
            let (db, conn) = match ev {
                C::Started { command, database_name, connection, .. } => {
                    actual_doc.insert("command", command.clone());
                    (database_name, connection)
                }
                C::Succeeded { reply, database_name, connection, .. } => {
                    actual_doc.insert("reply", reply.clone());
                    (database_name, connection)
                }
                C::Failed { database_name, connection, .. } => (database_name, connection),
                #[allow(unreachable_patterns)]
                _ => return Err("unknown command event".into()),
            };
            actual_doc.insert("commandName", ev.command_name());
            actual_doc.insert("databaseName", db.as_str());
            actual_doc.insert("hasServiceId", conn.service_id.is_some());
            actual_doc.insert("hasServerConnectionId", conn.server_connection_id.is_some());
        }
        Event::Sdam(ev) => {
            use protocol::sdam::events::SdamEvent as S;
            match ev {
                S::ServerDescriptionChanged(e) => {
                    actual_doc.insert(
                        "previousDescription",
                        doc! {"type": e.previous_description.server_type.as_str()},
                    );
                    actual_doc
                        .insert("newDescription", doc! {"type": e.new_description.server_type.as_str()});
                }
                S::TopologyDescriptionChanged(e) => {
                    actual_doc.insert(
                        "previousDescription",
                        doc! {"type": e.previous_description.topology_type().as_str()},
                    );
                    actual_doc
                        .insert("newDescription", doc! {"type": e.new_description.topology_type().as_str()});
                }
                S::ServerHeartbeatStarted(e) => {
                    actual_doc.insert("awaited", e.awaited);
                }
                S::ServerHeartbeatSucceeded(e) => {
                    actual_doc.insert("awaited", e.awaited);
                }
                S::ServerHeartbeatFailed(e) => {
                    actual_doc.insert("awaited", e.awaited);
                }
                _ => {}
            }
        }
        Event::Cmap(ev) => {
            use pool::cmap::events::CmapEvent as C;
            match ev {
                C::PoolCleared { service_id, interrupt_in_use_connections, .. } => {
                    actual_doc.insert("hasServiceId", service_id.is_some());
                    actual_doc.insert("interruptInUseConnections", *interrupt_in_use_connections);
                }
                C::ConnectionClosed { reason, .. } => {
                    actual_doc.insert("reason", lower_first(&format!("{reason:?}")));
                }
                C::CheckOutFailed { reason, .. } => {
                    actual_doc.insert("reason", lower_first(&format!("{reason:?}")));
                }
                _ => {}
            }
        }
    }
    for (k, v) in fields {
        let p = format!("{name}.{k}");
        // The runner builds only the fields it checks; a driver's descriptions carry more.
        let root = true;
        if !actual_doc.contains_key(k) && !matches!(k.as_str(), "command" | "reply") {
            // Fields the runner cannot observe are not checked only if the file asks for none.
            return Err(format!("{p}: field not observable by the runner"));
        }
        matches(v, actual_doc.get(k), root, &p)?;
    }
    Ok(())
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_lowercase().chain(c).collect()).unwrap_or_default()
}
