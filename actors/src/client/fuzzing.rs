//! Entry points for the fuzz targets (cargo feature `fuzzing`, off by default): a server's
//! reply read as the executor reads it. Not part of the API.

use bson::RawDocumentBuf;
use protocol::ServerAddress;

use super::executor::operation::{OpOutput, Operation, Reply};
use super::ops::cursor_reply::CursorReply;
use super::ops::get_more::GetMore;
use super::ops::write::WriteReply;
use crate::error::{Error, Result};

/// Which operation's reply the bytes are read as.
#[derive(Debug, Clone, Copy)]
pub enum ReplyKind {
    /// A `find` (or `aggregate`): its cursor and first batch, every document decoded.
    Find,
    /// A `getMore`: its next batch, every document decoded.
    GetMore,
    /// An `insert`, `update` or `delete`: `n`, `nModified`, `upserted`.
    Write,
}

impl ReplyKind {
    /// A kind from a fuzzer's byte.
    pub fn from_byte(b: u8) -> ReplyKind {
        match b % 3 {
            0 => ReplyKind::Find,
            1 => ReplyKind::GetMore,
            _ => ReplyKind::Write,
        }
    }
}

/// Reads `bytes` as the reply to a `kind` command: the wire layer's validation, the reply's
/// scan (`$clusterTime`, errors), its error classification, then the operation's own reading.
/// `Ok(None)` when the wire layer refuses the bytes (the executor never sees them); any other
/// outcome is a typed result, never a panic.
pub fn read_reply(kind: ReplyKind, bytes: &[u8]) -> Option<Result<()>> {
    protocol::wire::validate_document(bytes).ok()?;
    let raw = RawDocumentBuf::from_bytes(bytes.to_vec()).ok()?;
    let scan = protocol::reply::scan_raw_reply(&raw);
    let clean = scan.clean;
    let reply = Reply::new(raw);
    if !clean {
        let _ = protocol::reply::reply_error(&reply);
    }
    let out = OpOutput { reply, address: ServerAddress::tcp("fuzz", 27017), session: None, connection: None };
    Some(match kind {
        ReplyKind::Find => CursorReply::read(out, "db", "c").and_then(|c| drain(c.batch)),
        ReplyKind::GetMore => {
            let op = GetMore {
                db: "db",
                collection: "c",
                id: 1,
                batch_size: None,
                max_time_ms: None,
                comment: None,
            };
            op.handle_reply(out).and_then(|b| drain(b.batch))
        }
        ReplyKind::Write => {
            let w = WriteReply::parse(&out.reply);
            let _ = w.into_update_result();
            Ok(())
        }
    })
}

/// Decodes every document of a batch, as a cursor hands them out.
fn drain(mut docs: super::ops::cursor_reply::Docs) -> Result<()> {
    while let Some(d) = docs.pop_front() {
        let raw = d.as_raw()?;
        bson::Document::try_from(raw).map_err(|e| Error::deserialization(e.to_string()))?;
    }
    Ok(())
}
