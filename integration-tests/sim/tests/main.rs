//! The simulator's own tests, one binary: each file checks one side of it with the raw wire
//! client (no driver involved).

mod control;
mod crud;
mod wire;
