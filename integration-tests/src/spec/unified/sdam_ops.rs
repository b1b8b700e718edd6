//! testRunner operations on topology descriptions: `recordTopologyDescription` (saved as a
//! topologyDescription entity), `assertTopologyType`, `waitForPrimaryChange`; and the read
//! preference of `runCommand`.

use std::time::Duration;

use bson::Document;
use protocol::sdam::TopologyDescription;

use super::{client, Ctx, Entity, R};

/// Runs `name` if it is one of these operations (`None`: not one of them).
pub(super) async fn testrunner_op(ctx: &mut Ctx, name: &str, args: &Document) -> Option<R<()>> {
    Some(match name {
        "recordTopologyDescription" => record(ctx, args),
        "assertTopologyType" => assert_type(ctx, args),
        "waitForPrimaryChange" => wait_for_primary_change(ctx, args).await,
        "failPoint" if is_lb(ctx) => lb_fail_point(ctx, args).await,
        _ => return None,
    })
}

fn current(ctx: &Ctx, args: &Document) -> R<TopologyDescription> {
    let c = client(ctx, args.get_str("client").unwrap_or(""))?;
    Ok(c.client.topology().snapshot().description.clone())
}

fn recorded<'a>(ctx: &'a Ctx, id: &str) -> R<&'a TopologyDescription> {
    match ctx.entities.get(id) {
        Some(Entity::TopologyDescription(d)) => Ok(d),
        _ => Err(format!("unknown topologyDescription entity {id}")),
    }
}

fn record(ctx: &mut Ctx, args: &Document) -> R<()> {
    let description = current(ctx, args)?;
    let id = args.get_str("id").map_err(|_| "recordTopologyDescription without id")?;
    ctx.entities.insert(id.to_string(), Entity::TopologyDescription(description));
    Ok(())
}

fn assert_type(ctx: &Ctx, args: &Document) -> R<()> {
    let d = recorded(ctx, args.get_str("topologyDescription").unwrap_or(""))?;
    let want = args.get_str("topologyType").unwrap_or("");
    let got = d.topology_type().as_str();
    if got == want {
        Ok(())
    } else {
        Err(format!("topology type {got}, expected {want}"))
    }
}

fn primary(d: &TopologyDescription) -> Option<protocol::ServerAddress> {
    d.servers().find(|s| s.server_type == protocol::sdam::ServerType::RsPrimary).map(|s| s.address.clone())
}

/// Waits until the client knows a primary other than the recorded description's.
async fn wait_for_primary_change(ctx: &Ctx, args: &Document) -> R<()> {
    let prior = primary(recorded(ctx, args.get_str("priorTopologyDescription").unwrap_or(""))?);
    let ms = args.get("timeoutMS").and_then(|v| v.as_i64().or(v.as_i32().map(i64::from))).unwrap_or(10_000);
    let deadline = tokio::time::Instant::now() + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    loop {
        let now = primary(&current(ctx, args)?);
        if now.is_some() && now != prior {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!("the primary is still {now:?} after {ms} ms (prior {prior:?})"));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `Criteria` for an operation's `readPreference` argument (mode only).
fn is_lb(ctx: &Ctx) -> bool {
    ctx.cluster.uri().contains("loadBalanced=true")
}

/// LB deployments: a client without `useMultipleMongoses` connects through a load balancer
/// in front of the first service only, like the spec's SINGLE_MONGOS_LB_URI.
pub(super) fn single_lb_uri(ctx: &Ctx, spec: &Document) -> R<Option<String>> {
    if !is_lb(ctx) || spec.get_bool("useMultipleMongoses").unwrap_or(false) {
        return Ok(None);
    }
    let sim = ctx.cluster.sim().ok_or("a single-service load balancer needs the simulator")?;
    let addr = sim.single_service_lb(0).map_err(|e| format!("single-service LB: {e}"))?;
    Ok(Some(format!("mongodb://{addr}/?loadBalanced=true")))
}

/// LB deployments: the fail point is set through the named client, so it lands on the service
/// that client's connection reaches (the unified format's rule; the services differ).
async fn lb_fail_point(ctx: &Ctx, args: &Document) -> R<()> {
    let c = client(ctx, args.get_str("client").unwrap_or(""))?;
    let fp = args.get_document("failPoint").map_err(|_| "failPoint without failPoint")?;
    c.client
        .database("admin")
        .run_command(fp.clone())
        .await
        .map(|_| ())
        .map_err(|e| format!("configureFailPoint: {e}"))
}
