//! A server's reply as the executor reads it: the wire layer's validation, the reply scan
//! (`$clusterTime`, error classification), then a find's cursor and first batch, a getMore's
//! next batch, or a write's counts, every batch document decoded. The input's first byte
//! chooses the operation. Whatever the bytes, the result is typed: no panic.
#![no_main]

use actors::client::fuzzing::{read_reply, ReplyKind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, reply)) = data.split_first() else { return };
    let _ = read_reply(ReplyKind::from_byte(kind), reply);
});
