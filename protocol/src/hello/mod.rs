//! The hello command: building handshake and monitoring commands, client metadata, and parsing
//! replies.

pub mod command;
pub mod metadata;
pub mod reply;
