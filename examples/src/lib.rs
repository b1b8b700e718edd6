//! Runnable programs to copy from: the examples in `examples/`, and the `mongo-actors`
//! command-line tool (`demo`, `watch`, `select`) whose code lives in [`cli`]. The rest of this
//! library is the little the examples share: the command line (`--uri`, `--smoke`) and a minimal
//! HTTP/1.1 GET used by the smoke runs, so each example stays about one thing.

#![warn(missing_docs)]

// `bson::` names the bson this crate's features select, the one the crates below use.
protocol::select_bson!();

pub mod cli;

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The command line every example understands.
#[derive(Debug, Clone, Default)]
pub struct Args {
    /// `--uri URI`: run against this deployment instead of an embedded simulator.
    pub uri: Option<String>,
    /// `--smoke`: a short run that checks its own results and exits (non-zero on failure).
    pub smoke: bool,
    rest: Vec<String>,
}

impl Args {
    /// Reads `std::env::args()`.
    pub fn from_env() -> Args {
        Args::parse(std::env::args().skip(1))
    }

    /// Parses arguments (without the program name). Unknown flags are kept for [`Args::value`].
    pub fn parse(args: impl IntoIterator<Item = String>) -> Args {
        let mut parsed = Args::default();
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--uri" => parsed.uri = it.next(),
                "--smoke" => parsed.smoke = true,
                _ => parsed.rest.push(arg),
            }
        }
        parsed
    }

    /// Whether a flag without a value (e.g. `--mutual`) was given.
    pub fn rest_has(&self, flag: &str) -> bool {
        self.rest.iter().any(|a| a == flag)
    }

    /// The value after `flag` (e.g. `--listen 127.0.0.1:8080`), if given.
    pub fn value(&self, flag: &str) -> Option<&str> {
        let i = self.rest.iter().position(|a| a == flag)?;
        self.rest.get(i + 1).map(String::as_str)
    }
}

/// The error type of the examples' `main`s.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Fails with `message` unless `ok`: the smoke runs' assertion, an error rather than a panic.
pub fn check(ok: bool, message: impl Into<String>) -> Result<(), BoxError> {
    if ok {
        Ok(())
    } else {
        Err(message.into().into())
    }
}

/// NOT PART OF WHAT YOU COPY: the deployment an example runs against. With `--uri`, that
/// deployment; without it, an embedded simulated replica set of `members` on 127.0.0.1 (kept
/// alive by the returned guard), so the example runs on a machine without MongoDB. In your
/// own code, this is just your connection string.
pub fn deployment(args: &Args, members: usize) -> Result<(String, Option<mongo_sim::Cluster>), BoxError> {
    if let Some(uri) = &args.uri {
        return Ok((uri.clone(), None));
    }
    let cluster = mongo_sim::Cluster::replica_set(members).start()?;
    Ok((cluster.uri(), Some(cluster)))
}

/// Sends one HTTP/1.1 request (`Connection: close`) and returns the status code and body. Enough
/// for the smoke runs to call the example's own server without an HTTP client dependency.
pub async fn http_request(addr: &str, method: &str, path: &str) -> Result<(u16, String), BoxError> {
    http_request_with_body(addr, method, path, "").await
}

/// [`http_request`] with a JSON body.
pub async fn http_request_with_body(
    addr: &str,
    method: &str,
    path: &str,
    body: &str,
) -> Result<(u16, String), BoxError> {
    let io = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await?;
        Ok::<_, std::io::Error>(response)
    };
    let response =
        tokio::time::timeout(Duration::from_secs(10), io).await.map_err(|_| "HTTP request timed out")??;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n").ok_or("malformed HTTP response")?;
    let status =
        head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or("malformed HTTP status line")?;
    Ok((status, body.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_parse_uri_smoke_and_other_flags() {
        let a = Args::parse(["--uri", "mongodb://h", "--smoke", "--listen", "x:1"].map(String::from));
        assert_eq!(a.uri.as_deref(), Some("mongodb://h"));
        assert!(a.smoke);
        assert_eq!(a.value("--listen"), Some("x:1"));
        assert_eq!(a.value("--other"), None);
        assert!(a.rest_has("--listen"));
        assert!(!a.rest_has("--mutual"));
        assert!(!Args::parse(Vec::new()).smoke);
    }
}
