//! How an [`Error`] prints: `Display` for people, `Debug` in the official shape (`kind`,
//! `labels`, `source`, `server_response`) with the server's reply printed once. With the
//! `redact-errors` feature both leave out what may identify a deployment or carry its data:
//! server addresses and host names (`<redacted>`), and the server's reply (`Debug`'s
//! `server_response`; `Error::server_response` still returns it to the program).

use std::fmt;

use super::{Error, ErrorKind};

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if cfg!(feature = "redact-errors") {
            return f.write_str(&redact_addresses(&self.plain_display()));
        }
        f.write_str(&self.plain_display())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if cfg!(feature = "redact-errors") {
            return f.write_str(&redact_addresses(&format!("{:?}", Plain(self))));
        }
        fmt::Debug::fmt(&Plain(self), f)
    }
}

impl Error {
    /// The message, addresses included.
    fn plain_display(&self) -> String {
        use std::fmt::Write as _;
        let mut s = self.kind.to_string();
        let context = self.context.as_deref();
        if let Some(actor) = context.and_then(|c| c.actor.as_ref()) {
            let _ = write!(s, " (the {actor} actor has stopped)");
        }
        if let Some(address) = context.and_then(|c| c.address.as_ref()) {
            let _ = write!(s, " (on {address})");
        }
        if let (ErrorKind::BulkWrite(_), Some(source)) = (&*self.kind, &self.source) {
            let _ = write!(s, "; stopped by: {source}");
        }
        #[cfg(feature = "error-backtrace")]
        if self.backtrace().status() == std::backtrace::BacktraceStatus::Captured {
            let _ = write!(s, ", backtrace: {}", self.backtrace());
        }
        s
    }
}

/// `Debug` of an error before redaction: the server's reply once (`server_response`), not
/// again inside the parsed server error the client keeps beside it.
struct Plain<'a>(&'a Error);

impl fmt::Debug for Plain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.0;
        let mut d = f.debug_struct("Error");
        d.field("kind", &e.kind).field("labels", &e.labels).field("source", &e.source.as_deref().map(Plain));
        if cfg!(feature = "redact-errors") {
            d.field("server_response", &e.server_response.as_ref().map(|_| Redacted));
        } else {
            d.field("server_response", &e.server_response);
        }
        if let Some(c) = e.context.as_deref() {
            // Redacted, the address and the causes print as text, for `redact_addresses`.
            let redact = cfg!(feature = "redact-errors");
            match &c.address {
                Some(_) if redact => d.field("address", &Redacted),
                a => d.field("address", a),
            };
            // A command error's reply is `server_response`; the rest of a pool error says
            // what the kind does not (the phase, the io error).
            if let Some(p) = c.pool.as_ref().filter(|p| !matches!(p, pool::Error::Command { .. })) {
                if redact {
                    d.field("pool", &format_args!("{p}"));
                } else {
                    d.field("pool", p);
                }
            }
            if let Some(s) = &c.selection {
                if redact {
                    d.field("selection", &format_args!("{s}"));
                } else {
                    d.field("selection", s);
                }
            }
            if let Some(a) = &c.actor {
                d.field("actor", a);
            }
        }
        #[cfg(feature = "error-backtrace")]
        d.field("backtrace", &e.backtrace());
        d.finish_non_exhaustive()
    }
}

struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// `text` with every server address (`host:port`, `[v6]:port`, a `.sock` path) written
/// `<redacted>`.
pub(crate) fn redact_addresses(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| is_host_char(c) || c == '[') {
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let len = bracketed_address_len(rest).unwrap_or_else(|| word_len(rest).max(1));
        let word = &rest[..len];
        out.push_str(if is_address(word) { "<redacted>" } else { word });
        rest = &rest[len..];
    }
    out.push_str(rest);
    out
}

fn is_host_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '%' | '/')
}

/// The length of `[v6]:port` at the start of `s`, if it starts with one.
fn bracketed_address_len(s: &str) -> Option<usize> {
    let close = s.find(']')?;
    let inside = &s[1..close];
    let v6 =
        !inside.is_empty() && inside.chars().all(|c| c.is_ascii_hexdigit() || matches!(c, ':' | '.' | '%'));
    let port = s[close + 1..].strip_prefix(':')?;
    let digits = port.bytes().take_while(u8::is_ascii_digit).count();
    (v6 && digits > 0).then_some(close + 2 + digits)
}

/// The length of the host-like word at the start of `s`, with its `:port` if it has one.
fn word_len(s: &str) -> usize {
    let host = s.find(|c: char| !is_host_char(c)).unwrap_or(s.len());
    let Some(port) = s[host..].strip_prefix(':') else { return host };
    match port.bytes().take_while(u8::is_ascii_digit).count() {
        0 => host,
        digits => host + 1 + digits,
    }
}

/// Whether a word is a server address: a host (or bracketed IPv6) and a port, or a Unix
/// domain socket path.
fn is_address(word: &str) -> bool {
    if word.ends_with(".sock") {
        return true;
    }
    match word.rsplit_once(':') {
        Some((host, port)) => !host.is_empty() && (1..=5).contains(&port.len()),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_found_and_nothing_else() {
        assert_eq!(
            redact_addresses("no server in [a.example.com:27017, 10.0.0.1:27018, [::1]:27019] (on /tmp/mongodb-27017.sock)"),
            "no server in [<redacted>, <redacted>, <redacted>] (on <redacted>)"
        );
        let kept = "E11000 duplicate key error collection: db.c index: _id_ dup key: { _id: 1 } at 12:30";
        assert_eq!(redact_addresses(kept), kept.replace("12:30", "<redacted>"));
        assert_eq!(redact_addresses("code: 11000, wire version 21"), "code: 11000, wire version 21");
    }

    #[test]
    fn the_server_reply_prints_once() {
        let reply = bson::doc! {"ok": 0, "errmsg": "no", "code": 2, "codeName": "BadValue", "marker": "m-1"};
        let server = protocol::reply::reply_error(&reply).expect("an error reply");
        let e = Error::command(protocol::ServerAddress::parse("db.example.com:27017").unwrap(), *server);
        let debug = format!("{e:?}");
        // RawDocumentBuf prints its bytes in hex: "m-1" is 6d2d31.
        let expected = if cfg!(feature = "redact-errors") { 0 } else { 1 };
        assert_eq!(debug.matches("6d2d31").count(), expected, "{debug}");
        assert_eq!(debug.contains("db.example.com"), !cfg!(feature = "redact-errors"), "{debug}");
        assert_eq!(e.to_string().contains("db.example.com:27017"), !cfg!(feature = "redact-errors"));
        assert!(e.server_response().is_some_and(|r| r.get_str("marker").ok() == Some("m-1")));
    }

    #[cfg(feature = "error-backtrace")]
    #[test]
    fn a_backtrace_is_captured_as_std_captures_one() {
        use std::backtrace::{Backtrace, BacktraceStatus};
        let e = Error::invalid_argument("x");
        assert_eq!(e.backtrace().status(), Backtrace::capture().status());
        if e.backtrace().status() == BacktraceStatus::Captured {
            assert!(e.backtrace().to_string().contains("a_backtrace_is_captured_as_std_captures_one"));
            assert!(e.to_string().contains(", backtrace: "));
        }
    }
}
