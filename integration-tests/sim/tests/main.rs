//! The simulator's own tests, one binary: each file checks one side of it with the raw wire
//! client (no driver involved).

// `bson::` names the bson this crate's features select, the one the crates below use.
protocol::select_bson!();

mod control;
mod crud;
mod wire;
