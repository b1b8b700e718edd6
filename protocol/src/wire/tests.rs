//! Unit tests for the wire codec.
