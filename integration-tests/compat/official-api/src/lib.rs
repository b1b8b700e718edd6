//! Empty: the crate exists for its dependency (see Cargo.toml).
