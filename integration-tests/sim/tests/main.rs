//! The simulator's own tests, one binary: each file checks one side of it with the raw wire
//! client (no driver involved).

// `bson::` is the bson the crate was built with (its bson-2 or bson-3 feature).
#[cfg(all(feature = "bson-2", not(feature = "bson-3")))]
extern crate bson2 as bson;
#[cfg(feature = "bson-3")]
extern crate bson3 as bson;

mod control;
mod crud;
mod wire;
