//! Runnable programs to copy from: the examples in `examples/`, and the `mongo-actors`
//! command-line tool (`demo`, `watch`, `select`) whose code lives in [`cli`].
#![warn(missing_docs)]

pub mod cli;
