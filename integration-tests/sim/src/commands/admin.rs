//! Admin commands: `configureFailPoint`, `replSetStepDown`, status commands, and the
//! simulator's own `sim*` control commands (same operations as the Rust API).

use std::time::Duration;

use bson::{doc, Document};

use super::context::Ctx;
use super::reply::{number, CmdError};
use crate::error::SimError;
use crate::state::Kind;

/// Whether this module implements `name`.
pub(crate) fn handles(name: &str) -> bool {
    matches!(
        name,
        "configureFailPoint"
            | "replSetStepDown"
            | "replSetFreeze"
            | "replSetGetStatus"
            | "replSetGetConfig"
            | "serverStatus"
            | "getParameter"
            | "getCmdLineOpts"
            | "connectionStatus"
            | "simStepDown"
            | "simElect"
            | "simKill"
            | "simRestart"
            | "simLatency"
            | "simPartition"
            | "simAddMember"
            | "simRemoveMember"
            | "simSetTags"
            | "simCounters"
    )
}

fn sim_err(e: SimError) -> CmdError {
    CmdError::new(2, "BadValue", e.to_string())
}

fn index(cmd: &Document, name: &str) -> Result<usize, CmdError> {
    number(cmd.get(name))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| CmdError::bad(format!("{name} needs a member index")))
}

fn millis(cmd: &Document, key: &str) -> Result<Duration, CmdError> {
    let ms = number(cmd.get(key)).unwrap_or(0);
    u64::try_from(ms).map(Duration::from_millis).map_err(|_| CmdError::bad(format!("{key} must be >= 0")))
}

/// Runs an admin command.
pub(crate) async fn run(ctx: &Ctx<'_>) -> Result<Document, CmdError> {
    let cmd = ctx.document()?;
    let shared = ctx.shared;
    let admin_only = !matches!(ctx.name, "connectionStatus");
    if admin_only && ctx.db != "admin" {
        return Err(CmdError::new(
            13,
            "Unauthorized",
            format!("{} may only be run against the admin database.", ctx.name),
        ));
    }
    let ok = || Ok(doc! {"ok": 1.0});
    if shared.remote.is_some() && ctx.name.starts_with("sim") && ctx.name != "simCounters" {
        // The other members are other processes: fault them through the process (or the
        // container engine), not through this one.
        return Err(CmdError::new(
            2,
            "BadValue",
            format!("{} controls an in-process set; this is one member process", ctx.name),
        ));
    }
    match ctx.name {
        "configureFailPoint" => {
            ctx.member.failpoints.configure(&cmd).map_err(sim_err)?;
            ok()
        }
        "replSetStepDown" => repl_set_step_down(ctx, &cmd),
        "replSetFreeze" => repl_set_freeze(ctx, &cmd),
        "simStepDown" => {
            shared.step_down(millis(&cmd, "gapMS")?, None).map_err(sim_err)?;
            ok()
        }
        "simElect" => {
            shared.elect(index(&cmd, "simElect")?).map_err(sim_err)?;
            ok()
        }
        "simKill" => {
            let i = index(&cmd, "simKill")?;
            tokio::task::block_in_place(|| shared.kill(i)).map_err(sim_err)?;
            ok()
        }
        "simRestart" => {
            let i = index(&cmd, "simRestart")?;
            // Re-binding may wait for the old listener to close on another runtime thread.
            tokio::task::block_in_place(|| shared.restart(i)).map_err(sim_err)?;
            ok()
        }
        "simLatency" => {
            shared.set_latency(index(&cmd, "simLatency")?, millis(&cmd, "ms")?).map_err(sim_err)?;
            ok()
        }
        "simPartition" => {
            let on = cmd.get_bool("on").map_err(|_| CmdError::bad("simPartition needs on: <bool>"))?;
            shared.partition(index(&cmd, "simPartition")?, on).map_err(sim_err)?;
            ok()
        }
        "simAddMember" => {
            let tags = cmd.get_document("tags").ok().cloned();
            let i = tokio::task::block_in_place(|| shared.add_member(tags)).map_err(sim_err)?;
            let host = shared.member(i).map(|m| m.addr.clone()).unwrap_or_default();
            Ok(doc! {"member": i64::try_from(i).unwrap_or(i64::MAX), "host": host, "ok": 1.0})
        }
        "simRemoveMember" => {
            let i = index(&cmd, "simRemoveMember")?;
            tokio::task::block_in_place(|| shared.remove_member(i)).map_err(sim_err)?;
            ok()
        }
        "simSetTags" => {
            let tags = cmd.get_document("tags").map_err(|_| CmdError::bad("simSetTags needs tags"))?.clone();
            shared.set_tags(index(&cmd, "simSetTags")?, tags).map_err(sim_err)?;
            ok()
        }
        "simCounters" => {
            let mut d = shared.counters().to_document();
            d.insert("ok", 1.0);
            Ok(d)
        }
        "replSetGetStatus" | "replSetGetConfig" => repl_set_status(ctx),
        "serverStatus" => server_status(ctx),
        "getParameter" => Ok(get_parameter(&cmd)),
        "getCmdLineOpts" => ok(),
        "connectionStatus" => {
            Ok(doc! {"authInfo": {"authenticatedUsers": [], "authenticatedUserRoles": []}, "ok": 1.0})
        }
        other => Err(CmdError::new(59, "CommandNotFound", format!("no such command: '{other}'"))),
    }
}

/// `getParameter`: the parameters asked for that the simulator has (as a mongod started with
/// `enableTestCommands`, without `requireApiVersion` or `acceptApiVersion2`).
fn get_parameter(cmd: &Document) -> Document {
    let known = [
        ("enableTestCommands", bson::Bson::Boolean(true)),
        ("requireApiVersion", bson::Bson::Boolean(false)),
        ("acceptApiVersion2", bson::Bson::Boolean(false)),
        ("transactionLifetimeLimitSeconds", bson::Bson::Int32(60)),
    ];
    let all = cmd.get_str("getParameter").is_ok_and(|p| p == "*");
    let mut reply = Document::new();
    for (name, value) in known {
        if all || cmd.contains_key(name) {
            reply.insert(name, value);
        }
    }
    reply.insert("ok", 1.0);
    reply
}

/// `serverStatus`: the process, its version and this member's connection count.
fn server_status(ctx: &Ctx<'_>) -> Result<Document, CmdError> {
    let shared = ctx.shared;
    let counters = shared.counters();
    let mine = counters.members.get(ctx.member.index).cloned().unwrap_or_default();
    let process = if matches!(shared.kind, Kind::Sharded | Kind::LoadBalanced) { "mongos" } else { "mongod" };
    Ok(doc! {
        "host": ctx.member.addr.as_str(),
        "version": shared.version.as_str(),
        "process": process,
        "pid": i64::from(std::process::id()),
        "localTime": bson::DateTime::now(),
        "connections": {"totalCreated": i64::try_from(mine.connections_opened).unwrap_or(i64::MAX)},
        "ok": 1.0,
    })
}

/// `replSetFreeze`: a secondary may not stand for election for the seconds asked.
fn repl_set_freeze(ctx: &Ctx<'_>, cmd: &Document) -> Result<Document, CmdError> {
    let shared = ctx.shared;
    if shared.kind != Kind::ReplicaSet {
        return Err(CmdError::new(76, "NoReplicationEnabled", "not running with --replSet"));
    }
    if shared.primary() == Some(ctx.member.index) {
        return Err(CmdError::new(95, "NotSecondary", "cannot freeze node when primary"));
    }
    // 0 unfreezes: the member may stand for election again at once.
    let secs = u64::try_from(number(cmd.get("replSetFreeze")).unwrap_or(0)).unwrap_or(0);
    let until = (secs > 0).then(|| std::time::Instant::now() + Duration::from_secs(secs));
    shared.state.lock().members[ctx.member.index].stepped_down_until = until;
    Ok(doc! {"ok": 1.0})
}

/// `replSetStepDown`: the primary steps down for the seconds asked (at least 1, default 60).
fn repl_set_step_down(ctx: &Ctx<'_>, cmd: &Document) -> Result<Document, CmdError> {
    let shared = ctx.shared;
    if shared.kind != Kind::ReplicaSet {
        return Err(CmdError::new(76, "NoReplicationEnabled", "not running with --replSet"));
    }
    if shared.primary() != Some(ctx.member.index) {
        return Err(CmdError::new(10107, "NotWritablePrimary", "not primary so can't step down"));
    }
    let secs = number(cmd.get("replSetStepDown")).unwrap_or(60).max(1);
    let secs = Duration::from_secs(u64::try_from(secs).unwrap_or(60));
    shared.step_down(Duration::ZERO, Some(secs)).map_err(sim_err)?;
    Ok(doc! {"ok": 1.0})
}

/// `replSetGetStatus` and `replSetGetConfig`: the members as mongod describes them.
fn repl_set_status(ctx: &Ctx<'_>) -> Result<Document, CmdError> {
    let shared = ctx.shared;
    if shared.kind != Kind::ReplicaSet {
        return Err(CmdError::new(76, "NoReplicationEnabled", "not running with --replSet"));
    }
    let st = shared.state.lock();
    let mut members = Vec::new();
    let mut config = Vec::new();
    for (i, (h, m)) in st.handles.iter().zip(&st.members).enumerate() {
        if m.removed {
            continue;
        }
        let id = i64::try_from(i).unwrap_or(i64::MAX);
        let (state, state_str) = if !m.alive {
            (8, "(not reachable/healthy)")
        } else if st.primary == Some(i) {
            (1, "PRIMARY")
        } else if m.arbiter {
            (7, "ARBITER")
        } else {
            (2, "SECONDARY")
        };
        let optime = st.optime(i);
        members.push(doc! {
            "_id": id,
            "name": h.addr.as_str(),
            "health": if m.alive { 1.0 } else { 0.0 },
            "state": state,
            "stateStr": state_str,
            "optime": {"ts": optime.ts, "t": optime.term},
            "optimeDate": optime.wall,
            "self": i == ctx.member.index,
        });
        config.push(doc! {
            "_id": id,
            "host": h.addr.as_str(),
            "arbiterOnly": m.arbiter,
            "hidden": m.hidden,
            "priority": m.priority,
            "tags": m.tags.clone(),
            "votes": 1,
        });
    }
    if ctx.name == "replSetGetStatus" {
        let my_state = members
            .iter()
            .find(|m| m.get_bool("self").unwrap_or(false))
            .and_then(|m| m.get_i32("state").ok())
            .unwrap_or(2);
        Ok(doc! {
            "set": shared.set_name.as_str(),
            "date": bson::DateTime::now(),
            "myState": my_state,
            "term": st.term,
            "members": members,
            "ok": 1.0,
        })
    } else {
        Ok(doc! {
            "config": {"_id": shared.set_name.as_str(), "version": st.set_version, "term": st.term, "members": config},
            "ok": 1.0,
        })
    }
}
