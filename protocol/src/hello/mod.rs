//! The hello handshake: the command, client metadata and typed reply parsing.

pub mod command;
pub mod metadata;
pub mod reply;
