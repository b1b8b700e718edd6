//! The client's status page for actix-web services (cargo feature `actix-web`): one line
//! mounts it,
//!
//! ```ignore
//! App::new().service(mongo_actors::web::status_scope(client.clone()))
//! ```
//!
//! and it serves:
//!
//! | route | what |
//! |---|---|
//! | `GET /` | a self-contained HTML page (no external assets) that redraws on every change |
//! | `GET /status` | the client's view as JSON ([`Status`]): servers, RTTs, pools, waiters, operations, failovers |
//! | `GET /events` | the same, as server-sent events (`event: status`), on every topology change and once a second |
//! | `GET /health` | 200 or 503 with the reason ([`Health`]), from the topology alone: never a command |
//!
//! [`StatusPage`] mounts it under a path and behind the service's own guard. Nothing it shows
//! holds a credential or a document: addresses, types, timings and counters.
//!
//! The numbers come from what the client's actors already keep (the topology's snapshots, the
//! pools' counters, the selection actor's waiters) and from a collector task per client (see
//! `collector.rs`) that keeps each server's RTT history and the failover timelines; once a
//! page is mounted, the executor also counts operations and their latencies.

mod collector;
mod health;
mod status;

use std::convert::Infallible;
use std::sync::Arc;

use actix_web::guard::Guard;
use actix_web::web::{self, Bytes};
use actix_web::{HttpResponse, Scope};

pub use health::HealthyWhen;
pub use status::{Failover, Health, OperationsStatus, PoolStatus, RttStatus, ServerStatus, Status};

use crate::client::stats::{OperationStats, StatusFeed};
use crate::client::Client;
use crate::error::{Error, Result};

const PAGE: &str = include_str!("page.html");

/// The status page's scope at the root of the app (`/`, `/status`, `/events`, `/health`);
/// [`StatusPage`] mounts it elsewhere.
pub fn status_scope(client: Client) -> Scope {
    StatusPage::new(client).scope()
}

/// Where and how the status page is mounted.
pub struct StatusPage {
    client: Client,
    path: String,
    healthy_when: HealthyWhen,
    guards: Vec<Box<dyn Guard>>,
}

impl StatusPage {
    /// The page of `client`, at the app's root, healthy while a server takes writes.
    pub fn new(client: Client) -> Self {
        StatusPage { client, path: String::new(), healthy_when: HealthyWhen::default(), guards: Vec::new() }
    }

    /// Mounts it under `path` (`"/db"`: `/db/`, `/db/status`...).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// What `/health` requires.
    pub fn healthy_when(mut self, rule: HealthyWhen) -> Self {
        self.healthy_when = rule;
        self
    }

    /// Serves only requests `guard` admits (the service's own authentication, say); others
    /// fall through to the app's other services.
    pub fn guard<G: Guard + 'static>(mut self, guard: G) -> Self {
        self.guards.push(Box::new(guard));
        self
    }

    /// The scope to give `App::service`.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument) when the path is
    /// neither empty nor an absolute path of plain segments (letters, digits, `-`, `_`, `.`)
    /// without a trailing `/`.
    pub fn build(self) -> Result<Scope> {
        let p = &self.path;
        // Plain segments only: the path is also written into the page's script.
        let plain = p.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.'));
        let valid = p.is_empty() || (p.starts_with('/') && !p.ends_with('/') && !p.contains("//") && plain);
        if !valid {
            return Err(Error::invalid_argument(format!(
                "the status page's path must be empty or like \"/db\" (absolute, no trailing '/', letters, digits, '-', '_', '.'): {p:?}"
            )));
        }
        Ok(self.scope())
    }

    fn scope(self) -> Scope {
        let feed = feed(&self.client);
        let state = web::Data::new(PageState {
            client: self.client,
            feed,
            base: self.path.clone(),
            healthy_when: self.healthy_when,
        });
        let mut scope = web::scope(&self.path).app_data(state);
        for guard in self.guards {
            scope = scope.guard(BoxedGuard(guard));
        }
        scope
            .route("", web::get().to(page))
            .route("/", web::get().to(page))
            .route("/status", web::get().to(status))
            .route("/events", web::get().to(events))
            .route("/health", web::get().to(health))
    }
}

struct BoxedGuard(Box<dyn Guard>);

impl Guard for BoxedGuard {
    fn check(&self, ctx: &actix_web::guard::GuardContext<'_>) -> bool {
        self.0.check(ctx)
    }
}

struct PageState {
    client: Client,
    feed: Arc<StatusFeed>,
    base: String,
    healthy_when: HealthyWhen,
}

/// The client's feed, made (and its collector started) by the first page mounted.
fn feed(client: &Client) -> Arc<StatusFeed> {
    let inner = &client.inner;
    inner
        .status
        .get_or_init(|| {
            let (latest, _) = tokio::sync::watch::channel(Arc::<str>::from("{}"));
            let feed = Arc::new(StatusFeed { operations: OperationStats::new(), latest });
            let snapshot = inner.topology.snapshot();
            let first = collector::Collector::default().status(inner, &snapshot, &feed);
            if let Ok(json) = serde_json::to_string(&first) {
                feed.latest.send_replace(json.into());
            }
            // On the client's own arbiter: the collector outlives any one HTTP worker.
            inner.host.arbiter().spawn(collector::run(Arc::downgrade(inner), feed.clone()));
            feed
        })
        .clone()
}

async fn page(state: web::Data<PageState>) -> HttpResponse {
    HttpResponse::Ok().content_type("text/html; charset=utf-8").body(PAGE.replace("__BASE__", &state.base))
}

async fn status(state: web::Data<PageState>) -> HttpResponse {
    let json = state.feed.latest.borrow().clone();
    HttpResponse::Ok().content_type("application/json").body(json.to_string())
}

async fn health(state: web::Data<PageState>) -> HttpResponse {
    let snapshot = state.client.topology().snapshot();
    let (ok, body) = health::health(&snapshot, state.healthy_when);
    let mut response = if ok { HttpResponse::Ok() } else { HttpResponse::ServiceUnavailable() };
    response.json(body)
}

async fn events(state: web::Data<PageState>) -> HttpResponse {
    let rx = state.feed.latest.subscribe();
    let stream = futures_util::stream::unfold((rx, true), |(mut rx, first)| async move {
        if !first && rx.changed().await.is_err() {
            return None;
        }
        let json = rx.borrow_and_update().clone();
        Some((Ok::<_, Infallible>(Bytes::from(format!("event: status\ndata: {json}\n\n"))), (rx, false)))
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .streaming(stream)
}
