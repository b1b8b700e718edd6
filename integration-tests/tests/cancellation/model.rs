//! Cancellation proven against a model. Seeded random sequences of operations — inserts,
//! `$inc`/`$push` updates, finds, cursors with getMores, transactions (statements, commit,
//! abort, a dropped session), `and_run`, change streams, GridFS uploads, `end_session` — over
//! a few explicit sessions and the implicit one, each operation's future dropped after a
//! random number of polls, with latency and fail points injected by the simulator. After each
//! sequence the data is checked against what each operation may have done:
//!
//! | operation | may have done |
//! |---|---|
//! | acknowledged write | exactly once |
//! | cut off (or failed) write | at most once, and never after a later write of its session |
//! | transaction whose commit was acknowledged | all its acknowledged statements |
//! | transaction whose commit was cut off or failed | all or nothing |
//! | transaction aborted, dropped or never committed | nothing |
//! | acknowledged read | what the acknowledged writes before it wrote |
//! | acknowledged GridFS upload | its file, whole; a cut-off one: whole or absent |
//!
//! and the client must be left whole: no transaction open on the server once the sessions are
//! ended or dropped, every connection back in its pool, no pool cleared, and no operation
//! outside a transaction failing when nothing injected an error (a stale deadline or an
//! `and_run` state left on a session would).
//!
//! `CANCEL_MODEL_SEED` replays a run (the seed is printed); `CANCEL_MODEL_SEQUENCES` sets how
//! many sequences run at least (`make soak` runs many). Sequences go on until every operation
//! kind was dropped at every poll count below the one it typically completes in.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use actors::{ClientSession, TransactionState};
use bson::{doc, Bson, Document};
use futures_util::io::{AsyncReadExt, AsyncWriteExt};
use futures_util::{StreamExt, TryStreamExt};
use pool::cmap::CmapEvent;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::{setup, Setup};

/// Sequences in `make test`; more run until every kind is dropped at every await point.
const SEQUENCES: usize = 200;
/// Sequences at most before coverage is declared unreachable.
const MAX_SEQUENCES: usize = 600;
/// Operations per sequence.
const OPS: usize = 14;
/// An operation polled without a limit must end within this (a hang otherwise).
const HANG: Duration = Duration::from_secs(30);
/// Background aborts and check-ins must be done within this after a sequence.
const SETTLE: Duration = Duration::from_secs(15);
/// The documents the cursor operations read.
const FIXED: i32 = 7;

/// What the model distinguishes of an operation's end.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Acked,
    CutOff,
    Failed(String),
}

/// Operation kinds (coverage is counted per kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Kind {
    Insert,
    Inc,
    Find,
    Cursor,
    Statement,
    Commit,
    Abort,
    AndRun,
    ChangeStream,
    Upload,
    EndSession,
    /// A commit or abort of a transaction that sent nothing (nothing is sent for it either).
    EmptyEnd,
}

/// How a transaction ended, as far as its client knows.
#[derive(Debug, Clone, Copy, PartialEq)]
enum End {
    /// Not ended yet.
    Open,
    /// Its commit was acknowledged.
    Committed,
    /// Its commit was cut off or failed: all or nothing.
    Unknown,
    /// Aborted, dropped with its session, or ended by `end_session`.
    Nothing,
}

#[derive(Debug)]
struct Txn {
    docs: Vec<(String, Outcome)>,
    end: End,
}

/// An explicit session of a sequence, with its open transaction (an index in `Run::txns`).
struct Slot {
    session: ClientSession,
    counter: String,
    txn: Option<usize>,
}

/// `fut` polled at most `budget` times: its output (`None`: dropped there) and the polls used.
struct Budgeted<F: Future> {
    inner: Pin<Box<F>>,
    budget: usize,
    used: usize,
}

impl<F: Future> Future for Budgeted<F> {
    type Output = (Option<F::Output>, usize);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.used += 1;
        let used = self.used;
        match self.inner.as_mut().poll(cx) {
            Poll::Ready(v) => Poll::Ready((Some(v), used)),
            Poll::Pending if used >= self.budget => Poll::Ready((None, used)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// What one run of the model keeps: its random source, its records and its figures.
struct Run<'s> {
    s: &'s Setup,
    rng: SmallRng,
    seed: u64,
    seq: usize,
    next: usize,
    inserts: Vec<(String, Outcome)>,
    /// Per counter document: its operations in the order they were issued, and whether they
    /// share one session (so their order is checked).
    incs: BTreeMap<String, (bool, Vec<(i64, Outcome)>)>,
    txns: Vec<Txn>,
    uploads: Vec<(String, Outcome)>,
    violations: Vec<String>,
    /// The sequence's operations as they ran (printed with a violation).
    trace: Vec<String>,
    /// Per kind: the poll counts it was dropped at, and how often it completed in each.
    dropped: HashMap<Kind, BTreeSet<usize>>,
    completed: HashMap<Kind, BTreeMap<usize, usize>>,
    ops: usize,
    drops: usize,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<'s> Run<'s> {
    fn new(s: &'s Setup, seed: u64) -> Self {
        Run {
            s,
            rng: SmallRng::seed_from_u64(seed),
            seed,
            seq: 0,
            next: 0,
            inserts: Vec::new(),
            incs: BTreeMap::new(),
            txns: Vec::new(),
            uploads: Vec::new(),
            violations: Vec::new(),
            trace: Vec::new(),
            dropped: HashMap::new(),
            completed: HashMap::new(),
            ops: 0,
            drops: 0,
        }
    }

    fn id(&mut self, what: &str) -> String {
        self.next += 1;
        format!("q{}-{what}{}", self.seq, self.next)
    }

    fn coll(&self, name: &str) -> actors::Collection<Document> {
        self.s.database("model").collection::<Document>(name)
    }

    /// The poll count `kind` completes in most often: its await points are the ones below.
    fn typical(&self, kind: Kind) -> Option<usize> {
        let counts = self.completed.get(&kind)?;
        counts.iter().max_by_key(|(polls, n)| (**n, **polls)).map(|(polls, _)| *polls)
    }

    /// How many polls the next operation of `kind` gets: a poll count below its typical one
    /// that it was never dropped at half the time, else random, else no limit.
    fn budget(&mut self, kind: Kind) -> usize {
        let typical = self.typical(kind).unwrap_or(12);
        let most = self.completed.get(&kind).and_then(|c| c.keys().last().copied()).unwrap_or(12);
        let dropped = self.dropped.entry(kind).or_default();
        let missing = (1..typical).find(|n| !dropped.contains(n));
        match (missing, self.rng.random_range(0..100)) {
            (Some(n), 0..50) => n,
            (_, 0..70) => self.rng.random_range(1..=most + 2),
            _ => usize::MAX,
        }
    }

    /// Runs `fut` as an operation of `kind` under a budget of polls.
    async fn op<T, E: std::fmt::Display>(
        &mut self,
        kind: Kind,
        fut: impl Future<Output = Result<T, E>>,
    ) -> (Outcome, Option<T>) {
        let budget = self.budget(kind);
        self.ops += 1;
        let budgeted = Budgeted { inner: Box::pin(fut), budget, used: 0 };
        let Ok((out, used)) = tokio::time::timeout(HANG, budgeted).await else {
            panic!("seed {}: sequence {}: a {kind:?} hung for {HANG:?}", self.seed, self.seq);
        };
        let how = match &out {
            None => "cut off".to_string(),
            Some(Ok(_)) => "ok".to_string(),
            Some(Err(e)) => format!("failed: {e}"),
        };
        self.trace.push(format!("{kind:?} after {used} polls: {how}"));
        match out {
            None => {
                self.drops += 1;
                self.dropped.entry(kind).or_default().insert(used);
                (Outcome::CutOff, None)
            }
            Some(result) => {
                *self.completed.entry(kind).or_default().entry(used).or_default() += 1;
                match result {
                    Ok(v) => (Outcome::Acked, Some(v)),
                    Err(e) => (Outcome::Failed(e.to_string()), None),
                }
            }
        }
    }

    /// An operation outside a transaction, polled without a limit, failed: nothing injected an
    /// error it would see (fail points only hit retryable commands once).
    fn must_not_fail(&mut self, kind: Kind, outcome: &Outcome) {
        if let Outcome::Failed(e) = outcome {
            self.violate(format!("{kind:?} outside a transaction failed: {e}"));
        }
    }

    fn violate(&mut self, what: String) {
        let trace = self.trace.join("\n    ");
        self.violations
            .push(format!("seed {} sequence {}: {what}\n  operations:\n    {trace}", self.seed, self.seq));
    }

    /// The poll counts below the one each kind typically completes in that it was never
    /// dropped at: none once every await point of every kind was cut.
    fn covered(&self) -> Vec<(Kind, Vec<usize>)> {
        let mut missing = Vec::new();
        for kind in self.completed.keys() {
            let typical = self.typical(*kind).unwrap_or(0);
            let dropped = self.dropped.get(kind);
            let gaps: Vec<usize> = (1..typical).filter(|n| !dropped.is_some_and(|d| d.contains(n))).collect();
            if !gaps.is_empty() {
                missing.push((*kind, gaps));
            }
        }
        missing.sort();
        missing
    }
}

/// One sequence: sessions, operations, then every session ended or dropped, and the checks.
async fn sequence(run: &mut Run<'_>) {
    run.inserts.clear();
    run.incs.clear();
    run.txns.clear();
    run.uploads.clear();
    run.trace.clear();
    inject(run);
    let mut slots = Vec::new();
    for _ in 0..run.rng.random_range(1..=3) {
        slots.push(new_slot(run).await);
    }
    for _ in 0..OPS {
        let pick = run.rng.random_range(0..=slots.len());
        if let Some(slot) = slots.get(pick) {
            run.trace.push(format!("on {}", slot.counter));
        } else {
            run.trace.push("implicit".to_string());
        }
        match slots.get_mut(pick) {
            Some(slot) if slot.txn.is_some() => in_transaction(run, slot).await,
            Some(slot) => with_session(run, slot).await,
            None => implicit(run).await,
        }
    }
    for slot in slots {
        if let Some(t) = slot.txn {
            // Ended or dropped, its transaction is aborted.
            run.txns[t].end = End::Nothing;
        }
        let ending = if run.rng.random_bool(0.5) { "ended" } else { "dropped" };
        run.trace.push(format!("{}: {ending} in {:?}", slot.counter, slot.session.transaction_state()));
        if ending == "ended" {
            slot.session.end_session().await;
        }
    }
    let cluster = run.s.cluster();
    for i in 0..3 {
        cluster.set_latency(i, Duration::from_millis(2));
    }
    run.s.fail_point_off().await;
    settle(run).await;
    check_data(run).await;
}

/// Latency and a fail point for this sequence: retryable commands hit once with a retryable
/// error, or held a while.
fn inject(run: &mut Run<'_>) {
    let cluster = run.s.cluster();
    for i in 0..3 {
        cluster.set_latency(i, Duration::from_millis(run.rng.random_range(1..=4)));
    }
}

async fn arm_fail_point(run: &mut Run<'_>) {
    let data = match run.rng.random_range(0..3) {
        0 => doc! {"failCommands": ["insert", "update", "find"], "errorCode": 6},
        1 => {
            doc! {"failCommands": ["insert", "update", "find", "aggregate"], "blockConnection": true, "blockTimeMS": 15}
        }
        _ => return,
    };
    run.s.fail_point(doc! {"times": 1}.into(), data).await;
}

async fn new_slot(run: &mut Run<'_>) -> Slot {
    let session = run.s.client.start_session().await.expect("session");
    let counter = run.id("ctr");
    let lsid =
        bson::RawDocumentBuf::try_from(session.id()).map(|d| hex::encode(d.as_bytes())).unwrap_or_default();
    run.trace.push(format!("{counter} is lsid {lsid}"));
    run.incs.insert(counter.clone(), (true, Vec::new()));
    Slot { session, counter, txn: None }
}

/// One operation of the implicit session.
async fn implicit(run: &mut Run<'_>) {
    arm_fail_point(run).await;
    match run.rng.random_range(0..6) {
        0 => insert(run, None).await,
        1 => {
            let counter = format!("q{}-ctr-implicit", run.seq);
            run.incs.entry(counter.clone()).or_insert((false, Vec::new()));
            inc(run, None, &counter).await;
        }
        2 => find(run, None).await,
        3 => cursor(run, None).await,
        4 => change_stream(run).await,
        _ => upload(run).await,
    }
}

/// One operation of an explicit session outside a transaction (`end_session` puts a new
/// session in its slot).
async fn with_session(run: &mut Run<'_>, slot: &mut Slot) {
    arm_fail_point(run).await;
    match run.rng.random_range(0..8) {
        0 => insert(run, Some(&mut slot.session)).await,
        1 => {
            let counter = slot.counter.clone();
            inc(run, Some(&mut slot.session), &counter).await;
        }
        2 => find(run, Some(&mut slot.session)).await,
        3 => cursor(run, Some(&mut slot.session)).await,
        4 | 5 => {
            run.s.fail_point_off().await;
            slot.session.start_transaction().await.expect("start a transaction");
            run.trace.push(format!("{}: startTransaction", slot.counter));
            run.txns.push(Txn { docs: Vec::new(), end: End::Open });
            slot.txn = Some(run.txns.len() - 1);
        }
        6 => and_run(run, &mut slot.session).await,
        _ => {
            let mut fresh = new_slot(run).await;
            std::mem::swap(slot, &mut fresh);
            let end = async move {
                fresh.session.end_session().await;
                Ok::<_, BoxError>(())
            };
            let (outcome, _) = run.op(Kind::EndSession, end).await;
            run.must_not_fail(Kind::EndSession, &outcome);
        }
    }
}

/// The next step of a session's open transaction: a statement, the commit, the abort, or
/// dropping the session.
async fn in_transaction(run: &mut Run<'_>, slot: &mut Slot) {
    let t = slot.txn.expect("a transaction");
    match run.rng.random_range(0..10) {
        0..5 => {
            let id = run.id("t");
            let coll = run.coll("docs");
            let doc = doc! {"_id": &id, "q": run.seq as i64};
            let (outcome, _) =
                run.op(Kind::Statement, coll.insert_one(doc).session(&mut slot.session).into_future()).await;
            run.txns[t].docs.push((id, outcome));
        }
        5..8 => {
            let kind = if run.txns[t].docs.is_empty() { Kind::EmptyEnd } else { Kind::Commit };
            let (outcome, _) = run.op(kind, slot.session.commit_transaction().into_future()).await;
            let end = match outcome {
                Outcome::Acked => End::Committed,
                // Cut off: as after UnknownTransactionCommitResult, the commit may be sent again.
                Outcome::CutOff if run.rng.random_bool(0.5) => {
                    match slot.session.commit_transaction().await {
                        Ok(()) => End::Committed,
                        Err(_) => End::Unknown,
                    }
                }
                _ => End::Unknown,
            };
            run.txns[t].end = end;
            slot.txn = None;
        }
        8 => {
            let kind = if run.txns[t].docs.is_empty() { Kind::EmptyEnd } else { Kind::Abort };
            let (outcome, _) = run.op(kind, slot.session.abort_transaction().into_future()).await;
            if let Outcome::Failed(e) = outcome {
                run.violate(format!("abortTransaction failed: {e}"));
            }
            run.txns[t].end = End::Nothing;
            slot.txn = None;
        }
        _ => {
            // Dropped with its transaction open: the drop aborts it in the background.
            run.txns[t].end = End::Nothing;
            run.trace.push(format!("{}: dropped in {:?}", slot.counter, slot.session.transaction_state()));
            let fresh = new_slot(run).await;
            drop(std::mem::replace(slot, fresh));
        }
    }
}

async fn insert(run: &mut Run<'_>, session: Option<&mut ClientSession>) {
    let id = run.id("i");
    let doc = doc! {"_id": &id, "q": run.seq as i64};
    // Some operations carry a timeout of their own (refused inside a stale and_run).
    let coll = if run.rng.random_bool(0.3) {
        run.coll("docs").with_timeout(Some(Duration::from_secs(20)))
    } else {
        run.coll("docs")
    };
    let (outcome, _) = match session {
        Some(s) => run.op(Kind::Insert, coll.insert_one(doc).session(s).into_future()).await,
        None => run.op(Kind::Insert, coll.insert_one(doc).into_future()).await,
    };
    run.must_not_fail(Kind::Insert, &outcome);
    run.inserts.push((id, outcome));
}

async fn inc(run: &mut Run<'_>, session: Option<&mut ClientSession>, counter: &str) {
    run.next += 1;
    let op = run.next as i64;
    let coll = run.coll("counters");
    let update =
        coll.update_one(doc! {"_id": counter}, doc! {"$inc": {"n": 1}, "$push": {"log": op}}).upsert(true);
    let (outcome, _) = match session {
        Some(s) => run.op(Kind::Inc, update.session(s).into_future()).await,
        None => run.op(Kind::Inc, update.into_future()).await,
    };
    run.must_not_fail(Kind::Inc, &outcome);
    if let Some((_, ops)) = run.incs.get_mut(counter) {
        ops.push((op, outcome));
    }
}

/// Reads back a document an acknowledged insert wrote.
async fn find(run: &mut Run<'_>, session: Option<&mut ClientSession>) {
    let acked: Vec<String> =
        run.inserts.iter().filter(|(_, o)| *o == Outcome::Acked).map(|(id, _)| id.clone()).collect();
    let Some(id) = acked.get(run.rng.random_range(0..acked.len().max(1))).cloned() else { return };
    let coll = run.coll("docs");
    let (outcome, found) = match session {
        Some(s) => run.op(Kind::Find, coll.find_one(doc! {"_id": &id}).session(s).into_future()).await,
        None => run.op(Kind::Find, coll.find_one(doc! {"_id": &id}).into_future()).await,
    };
    run.must_not_fail(Kind::Find, &outcome);
    if outcome == Outcome::Acked && found.flatten().is_none() {
        run.violate(format!("an acknowledged insert of {id} is not found"));
    }
}

/// Reads the fixed documents in batches of two (a find and three getMores).
async fn cursor(run: &mut Run<'_>, session: Option<&mut ClientSession>) {
    let coll = run.coll("fixed");
    let (outcome, docs) = match session {
        Some(s) => {
            let read = async {
                let mut cursor = coll.find(doc! {}).batch_size(2).session(&mut *s).await?;
                let mut docs = Vec::new();
                while let Some(d) = cursor.next(&mut *s).await {
                    docs.push(d?);
                }
                Ok::<_, actors::error::Error>(docs)
            };
            run.op(Kind::Cursor, read).await
        }
        None => {
            let read = async { coll.find(doc! {}).batch_size(2).await?.try_collect::<Vec<_>>().await };
            run.op(Kind::Cursor, read).await
        }
    };
    run.must_not_fail(Kind::Cursor, &outcome);
    if let Some(docs) = docs {
        if docs.len() != FIXED as usize {
            run.violate(format!("a cursor read {} of the {FIXED} fixed documents", docs.len()));
        }
    }
}

/// `and_run` inserting two documents; the callback counts the statements that returned.
async fn and_run(run: &mut Run<'_>, session: &mut ClientSession) {
    let (a, b) = (run.id("ra"), run.id("rb"));
    let q = run.seq as i64;
    let coll = run.coll("docs");
    let returned = Arc::new(AtomicUsize::new(0));
    let counted = returned.clone();
    let transaction = session.start_transaction().and_run2(async |s| {
        counted.store(0, Ordering::SeqCst);
        coll.insert_one(doc! {"_id": &a, "q": q}).session(&mut *s).await?;
        counted.fetch_add(1, Ordering::SeqCst);
        coll.insert_one(doc! {"_id": &b, "q": q}).session(&mut *s).await?;
        counted.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let (outcome, _) = run.op(Kind::AndRun, transaction).await;
    let statement =
        |n: usize| if returned.load(Ordering::SeqCst) > n { Outcome::Acked } else { Outcome::CutOff };
    let end = match &outcome {
        Outcome::Acked => End::Committed,
        _ => End::Unknown,
    };
    run.txns.push(Txn { docs: vec![(a, statement(0)), (b, statement(1))], end });
    if matches!(session.transaction_state(), TransactionState::Starting | TransactionState::InProgress) {
        run.violate(format!("and_run left the session in a transaction ({outcome:?})"));
    }
}

/// Opens a change stream, inserts, and waits for the insert's event.
async fn change_stream(run: &mut Run<'_>) {
    let id = run.id("c");
    let q = run.seq as i64;
    let coll = run.coll("docs");
    let watch = async {
        let mut stream = coll.watch().max_await_time(Duration::from_millis(50)).await?;
        coll.insert_one(doc! {"_id": &id, "q": q}).await?;
        while let Some(event) = stream.next().await {
            if event?.document_key == Some(doc! {"_id": &id}) {
                return Ok(());
            }
        }
        Err::<(), BoxError>("the change stream ended".into())
    };
    let (outcome, _) = run.op(Kind::ChangeStream, watch).await;
    run.must_not_fail(Kind::ChangeStream, &outcome);
    run.inserts.push((id, outcome));
}

/// A GridFS upload of three chunks and a bit.
async fn upload(run: &mut Run<'_>) {
    let name = run.id("f");
    let bucket = gridfs(run.s);
    let content = content_of(&name);
    let up = async {
        let mut up = bucket.open_upload_stream(name.clone()).await?;
        up.write_all(&content).await?;
        up.close().await?;
        Ok::<_, BoxError>(())
    };
    let (outcome, _) = run.op(Kind::Upload, up).await;
    run.must_not_fail(Kind::Upload, &outcome);
    run.uploads.push((name, outcome));
}

fn gridfs(s: &Setup) -> actors::gridfs::GridFsBucket {
    s.database("model").gridfs_bucket(actors::gridfs::GridFsBucketOptions {
        chunk_size_bytes: Some(1024),
        ..Default::default()
    })
}

fn content_of(name: &str) -> Vec<u8> {
    let seed = name.bytes().fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    (0..3500u32).map(|i| (i.wrapping_mul(seed) % 251) as u8).collect()
}

/// Waits until the server holds no open transaction and every connection is back, and checks
/// no pool was cleared.
async fn settle(run: &mut Run<'_>) {
    let deadline = tokio::time::Instant::now() + SETTLE;
    let cluster = run.s.cluster();
    loop {
        let open = cluster.open_transactions();
        let in_use = run.s.in_use();
        if open == 0 && in_use == 0 {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            let open = cluster.open_transaction_numbers();
            run.violate(format!("{SETTLE:?} after the sessions ended: transactions open on the server {open:?}, {in_use} connections checked out"));
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cleared = run.s.cmap.try_iter().filter(|e| matches!(e, CmapEvent::PoolCleared { .. })).count();
    if cleared > 0 {
        run.violate(format!("{cleared} pool clears"));
    }
}

/// The data against the model.
async fn check_data(run: &mut Run<'_>) {
    let q = run.seq as i64;
    let present: BTreeSet<String> = run
        .coll("docs")
        .find(doc! {"q": q})
        .await
        .expect("read the documents")
        .try_collect::<Vec<_>>()
        .await
        .expect("read the documents")
        .iter()
        .filter_map(|d| d.get_str("_id").ok().map(str::to_owned))
        .collect();
    let mut problems = Vec::new();
    for (id, outcome) in &run.inserts {
        if *outcome == Outcome::Acked && !present.contains(id) {
            problems.push(format!("the acknowledged insert {id} is missing"));
        }
    }
    for txn in &run.txns {
        problems.extend(check_txn(txn, &present));
    }
    for (counter, (ordered, ops)) in &run.incs {
        let found = run.coll("counters").find_one(doc! {"_id": counter}).await.expect("read a counter");
        problems.extend(check_counter(counter, *ordered, ops, found.as_ref()));
    }
    problems.extend(check_uploads(run).await);
    for p in problems {
        run.violate(p);
    }
}

fn check_txn(txn: &Txn, present: &BTreeSet<String>) -> Vec<String> {
    let acked: Vec<&String> =
        txn.docs.iter().filter(|(_, o)| *o == Outcome::Acked).map(|(id, _)| id).collect();
    let any: Vec<&String> = txn.docs.iter().map(|(id, _)| id).filter(|id| present.contains(*id)).collect();
    let acked_present = acked.iter().filter(|id| present.contains(**id)).count();
    match txn.end {
        End::Committed if acked_present < acked.len() => {
            vec![format!("a committed transaction lacks acknowledged writes: {txn:?}, present {any:?}")]
        }
        End::Unknown if acked_present != 0 && acked_present != acked.len() => {
            vec![format!("a transaction of unknown outcome applied in part: {txn:?}, present {any:?}")]
        }
        End::Unknown if acked_present == 0 && !acked.is_empty() && !any.is_empty() => {
            vec![format!("a transaction of unknown outcome applied in part: {txn:?}, present {any:?}")]
        }
        End::Nothing | End::Open if !any.is_empty() => {
            vec![format!("a transaction never committed applied writes: {txn:?}, present {any:?}")]
        }
        _ => Vec::new(),
    }
}

/// A counter's `$push` log: acknowledged operations once, others at most once, and (one
/// session) in the order they were issued.
fn check_counter(
    counter: &str,
    ordered: bool,
    ops: &[(i64, Outcome)],
    found: Option<&Document>,
) -> Vec<String> {
    let log: Vec<i64> = found
        .and_then(|d| d.get_array("log").ok())
        .map(|a| a.iter().filter_map(Bson::as_i64).collect())
        .unwrap_or_default();
    let n = found.and_then(|d| d.get_i32("n").ok().map(i64::from).or_else(|| d.get_i64("n").ok()));
    let mut problems = Vec::new();
    if n.unwrap_or(0) != log.len() as i64 {
        problems.push(format!("{counter}: n = {n:?} but {} pushes", log.len()));
    }
    for (op, outcome) in ops {
        let times = log.iter().filter(|x| *x == op).count();
        let ok = match outcome {
            Outcome::Acked => times == 1,
            _ => times <= 1,
        };
        if !ok {
            problems
                .push(format!("{counter}: operation {op} ({outcome:?}) applied {times} times: log {log:?}"));
        }
    }
    if ordered && log.windows(2).any(|w| w[0] > w[1]) {
        problems.push(format!("{counter}: a write applied after a later write of its session: log {log:?}"));
    }
    problems
}

async fn check_uploads(run: &Run<'_>) -> Vec<String> {
    let bucket = gridfs(run.s);
    let mut problems = Vec::new();
    for (name, outcome) in &run.uploads {
        let files: Vec<_> = bucket
            .find(doc! {"filename": name})
            .await
            .expect("list files")
            .try_collect()
            .await
            .expect("list files");
        let whole = match files.as_slice() {
            [] => *outcome != Outcome::Acked,
            [file] => {
                let mut back = Vec::new();
                let read = async {
                    let mut down = bucket.open_download_stream(file.id.clone()).await?;
                    down.read_to_end(&mut back).await?;
                    Ok::<_, BoxError>(())
                };
                read.await.is_ok() && back == content_of(name)
            }
            _ => false,
        };
        if !whole {
            problems.push(format!("upload {name} ({outcome:?}): {} files, or not whole", files.len()));
        }
    }
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_sequences_dropped_anywhere_keep_the_model() {
    let s = setup("").await;
    if s.deployment.sim().is_none() {
        integration_tests::deployment::print_skip("cancellation::model", "needs the simulator's controls");
        return;
    }
    let seed = std::env::var("CANCEL_MODEL_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        now.as_nanos() as u64
    });
    let sequences: usize =
        std::env::var("CANCEL_MODEL_SEQUENCES").ok().and_then(|v| v.parse().ok()).unwrap_or(SEQUENCES);
    eprintln!("cancellation model: seed {seed} (CANCEL_MODEL_SEED={seed} replays it)");
    let fixed = s.database("model").collection::<Document>("fixed");
    let _ = s.database("model").drop().await;
    fixed.insert_many((0..FIXED).map(|i| doc! {"_id": i})).await.expect("seed the fixed documents");
    let started = std::time::Instant::now();
    let mut run = Run::new(&s, seed);
    while run.seq < sequences.max(1) || (!run.covered().is_empty() && run.seq < MAX_SEQUENCES.max(sequences))
    {
        sequence(&mut run).await;
        run.seq += 1;
        assert!(run.violations.is_empty(), "the model was violated:\n{}", run.violations.join("\n"));
    }
    let mut kinds: Vec<_> = run.completed.iter().collect();
    kinds.sort_by_key(|(k, _)| **k);
    for (kind, counts) in kinds {
        let dropped: Vec<_> = run.dropped.get(kind).into_iter().flatten().collect();
        eprintln!("  {kind:?}: completed in (polls: times) {counts:?}; dropped at polls {dropped:?}");
    }
    eprintln!(
        "cancellation model: seed {seed}: {} sequences, {} operations, {} dropped, 0 violations, {:.1} s",
        run.seq,
        run.ops,
        run.drops,
        started.elapsed().as_secs_f64()
    );
    let missing = run.covered();
    assert!(missing.is_empty(), "seed {seed}: poll counts never dropped at: {missing:?}");
    assert!(run.completed.len() >= 10, "seed {seed}: kinds that ever completed: {:?}", run.completed.keys());
}
