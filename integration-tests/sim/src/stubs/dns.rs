//! A tiny authoritative DNS server for tests: UDP on `127.0.0.1:0`, answering SRV, TXT and A
//! queries from records the test sets (and changes) at run time. Messages are encoded with
//! hickory-proto. Unknown names get an empty NOERROR answer.
//!
//! It runs on its own thread (blocking UDP), so it works from any runtime or none; it stops
//! when dropped.
//!
//! ```no_run
//! use mongo_sim::stubs::dns::DnsStub;
//! let dns = DnsStub::start().unwrap();
//! dns.set_srv("_mongodb._tcp.cluster.test", &[("a.cluster.test", 27017)]);
//! dns.set_a("a.cluster.test", std::net::Ipv4Addr::LOCALHOST);
//! dns.set_txt("cluster.test", &["replicaSet=rs0"]);
//! // ResolverConfig::with_name_servers([dns.addr()]) points a client at it.
//! ```

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, SRV, TXT};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use parking_lot::Mutex;

/// The TTL of every answer (seconds).
pub const TTL: u32 = 1;

#[derive(Debug, Default)]
struct Records {
    srv: HashMap<String, Vec<(String, u16)>>,
    txt: HashMap<String, Vec<Vec<String>>>,
    a: HashMap<String, Ipv4Addr>,
}

/// A running DNS stub.
#[derive(Debug)]
pub struct DnsStub {
    addr: SocketAddr,
    records: Arc<Mutex<Records>>,
    queries: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

fn key(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

impl DnsStub {
    /// Binds `127.0.0.1:0` and starts answering.
    pub fn start() -> io::Result<DnsStub> {
        let socket = UdpSocket::bind("127.0.0.1:0")?;
        socket.set_read_timeout(Some(Duration::from_millis(50)))?;
        let addr = socket.local_addr()?;
        let records = Arc::new(Mutex::new(Records::default()));
        let queries = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (records, queries, stop) = (records.clone(), queries.clone(), stop.clone());
            std::thread::Builder::new().name("dns-stub".into()).spawn(move || {
                let mut buf = [0u8; 1500];
                while !stop.load(Ordering::Relaxed) {
                    let (n, peer) = match socket.recv_from(&mut buf) {
                        Ok(x) => x,
                        Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                            continue
                        }
                        Err(_) => break,
                    };
                    queries.fetch_add(1, Ordering::Relaxed);
                    if let Some(reply) = answer(&buf[..n], &records.lock()) {
                        let _ = socket.send_to(&reply, peer);
                    }
                }
            })?
        };
        Ok(DnsStub { addr, records, queries, stop, thread: Some(thread) })
    }

    /// The stub's address, for `ResolverConfig::with_name_servers`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many queries it received.
    pub fn queries(&self) -> usize {
        self.queries.load(Ordering::Relaxed)
    }

    /// Replaces the SRV records of `name` (e.g. `_mongodb._tcp.cluster.test`): `(target,
    /// port)` pairs. An empty list removes them.
    pub fn set_srv(&self, name: &str, targets: &[(&str, u16)]) {
        let v = targets.iter().map(|(t, p)| (t.to_string(), *p)).collect::<Vec<_>>();
        let mut r = self.records.lock();
        if v.is_empty() {
            r.srv.remove(&key(name));
        } else {
            r.srv.insert(key(name), v);
        }
    }

    /// Replaces the TXT records of `name`: one record per entry, each a single string.
    pub fn set_txt(&self, name: &str, records: &[&str]) {
        self.set_txt_split(name, &records.iter().map(|r| vec![*r]).collect::<Vec<_>>());
    }

    /// Replaces the TXT records of `name`: one record per entry, each made of several strings
    /// (which the client must concatenate).
    pub fn set_txt_split(&self, name: &str, records: &[Vec<&str>]) {
        let v: Vec<Vec<String>> = records.iter().map(|r| r.iter().map(|s| s.to_string()).collect()).collect();
        self.records.lock().txt.insert(key(name), v);
    }

    /// Sets the A record of `name`.
    pub fn set_a(&self, name: &str, ip: Ipv4Addr) {
        self.records.lock().a.insert(key(name), ip);
    }
}

impl Drop for DnsStub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The encoded reply to one query, `None` if it cannot be decoded.
fn answer(request: &[u8], records: &Records) -> Option<Vec<u8>> {
    let request = Message::from_vec(request).ok()?;
    let mut reply = Message::new(request.metadata.id, MessageType::Response, OpCode::Query);
    reply.metadata.authoritative = true;
    reply.metadata.recursion_desired = request.metadata.recursion_desired;
    reply.metadata.recursion_available = true;
    reply.metadata.response_code = ResponseCode::NoError;
    for query in &request.queries {
        reply.add_query(query.clone());
        let name = query.name().clone();
        let k = key(&name.to_utf8());
        match query.query_type() {
            RecordType::SRV => {
                for (target, port) in records.srv.get(&k).into_iter().flatten() {
                    let target = Name::from_str_relaxed(format!("{target}.")).ok()?;
                    reply.add_answer(Record::from_rdata(
                        name.clone(),
                        TTL,
                        RData::SRV(SRV::new(0, 0, *port, target)),
                    ));
                }
            }
            RecordType::TXT => {
                for strings in records.txt.get(&k).into_iter().flatten() {
                    reply.add_answer(Record::from_rdata(
                        name.clone(),
                        TTL,
                        RData::TXT(TXT::new(strings.clone())),
                    ));
                }
            }
            RecordType::A => {
                if let Some(ip) = records.a.get(&k) {
                    reply.add_answer(Record::from_rdata(name.clone(), TTL, RData::A(A(*ip))));
                }
            }
            _ => {}
        }
    }
    reply.to_vec().ok()
}
