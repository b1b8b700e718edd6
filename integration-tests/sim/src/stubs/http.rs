//! A tiny HTTP/1.1 server for tests on `127.0.0.1:0`: the cloud endpoints a client asks for
//! credentials or tokens (EC2 instance metadata, ECS, STS, Azure, GCP), answered by a handler
//! the test gives. One request per connection (`Connection: close`), bodies by
//! `Content-Length`. It runs on its own threads, so it works from any runtime or none; it stops
//! when dropped. Every request is recorded for assertions.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;

/// One request as the stub read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `PUT`, `POST`, ...
    pub method: String,
    /// The path with its query string.
    pub path: String,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    /// The body as text.
    pub body: String,
}

/// A response: status, content type, body, and any more headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
    /// More headers.
    pub headers: Vec<(String, String)>,
}

impl Response {
    /// A response without extra headers.
    pub fn new(status: u16, content_type: &'static str, body: impl Into<String>) -> Self {
        Response { status, content_type, body: body.into(), headers: Vec::new() }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_owned(), value.into()));
        self
    }
}

type Handler = dyn Fn(&Request) -> Response + Send + Sync;

/// A running HTTP stub.
pub struct HttpStub {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for HttpStub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpStub").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl HttpStub {
    /// Binds `127.0.0.1:0` and answers every request with `handler`.
    pub fn start(handler: impl Fn(&Request) -> Response + Send + Sync + 'static) -> io::Result<HttpStub> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let thread = {
            let (requests, stop) = (requests.clone(), stop.clone());
            std::thread::Builder::new().name("http-stub".into()).spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let (handler, requests) = (handler.clone(), requests.clone());
                            std::thread::spawn(move || {
                                let _ = serve(stream, &*handler, &requests);
                            });
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(5))
                        }
                        Err(_) => break,
                    }
                }
            })?
        };
        Ok(HttpStub { addr, requests, stop, thread: Some(thread) })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().clone()
    }
}

impl Drop for HttpStub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads one request, answers it, closes.
fn serve(stream: TcpStream, handler: &Handler, requests: &Mutex<Vec<Request>>) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, path) =
        (parts.next().unwrap_or_default().to_owned(), parts.next().unwrap_or_default().to_owned());
    let mut headers = BTreeMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let length =
        headers.get("content-length").and_then(|l| l.parse::<usize>().ok()).unwrap_or(0).min(1 << 20);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let request = Request { method, path, headers, body: String::from_utf8_lossy(&body).into_owned() };
    let response = handler(&request);
    requests.lock().push(request);
    let extra: String = response.headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{}",
        response.status,
        if response.status < 400 { "OK" } else { "Error" },
        response.content_type,
        response.body.len(),
        response.body
    )?;
    stream.flush()
}
