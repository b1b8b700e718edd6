//! One HTTP/1.1 GET (hyper) for the Azure and GCP token endpoints: plain HTTP to the
//! instance metadata service, bounded by the callback's deadline, the body capped.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;
use tokio::time::Instant;

/// The largest body read (a token endpoint's answer is a few KiB).
const MAX_BODY: usize = 1 << 20;

/// GETs `http://{authority}{path}` with `headers`; the status and the body as text.
pub(crate) async fn get(
    authority: &str,
    path: &str,
    headers: &[(&str, &str)],
    deadline: Instant,
) -> Result<(u16, String), String> {
    tokio::time::timeout_at(deadline, exchange(authority, path, headers))
        .await
        .map_err(|_| format!("no answer from http://{authority} in time"))?
}

async fn exchange(authority: &str, path: &str, headers: &[(&str, &str)]) -> Result<(u16, String), String> {
    let e = |what: &str, err: &dyn std::fmt::Display| format!("http://{authority}{path}: {what}: {err}");
    let stream = tokio::net::TcpStream::connect(authority).await.map_err(|err| e("connect", &err))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|err| e("handshake", &err))?;
    // The connection drives the exchange; it ends with this request.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut request = hyper::Request::get(path).header("host", authority);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let request = request.body(Empty::<Bytes>::new()).map_err(|err| e("request", &err))?;
    let response = sender.send_request(request).await.map_err(|err| e("request", &err))?;
    let status = response.status().as_u16();
    let body = Limited::new(response.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|err| e("body", &err))?
        .to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}
