//! Test infrastructure for mongo-actors: the spec conformance runner (and, later, the
//! cluster simulator).

pub mod spec;
