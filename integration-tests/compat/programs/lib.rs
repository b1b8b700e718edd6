//! Programs written against the official `mongodb` 3.x API, in the style of its documentation,
//! and nothing else: `compat-ours` builds them against this client (renamed `mongodb` in its
//! Cargo.toml) and runs them; `compat-official` builds the same files against the official
//! crate. Each program takes a connection string and a database name of its own, checks what
//! it reads back, and returns the first error.
//!
//! A program joins this crate only when it compiles against both crates; what the official
//! API has and ours does not yet is listed in `../API-GAPS.md`.
#![allow(clippy::unwrap_used)]

pub mod bson_compat;
pub mod builders;
pub mod bulk_write;
pub mod change_streams;
pub mod client_fields;
pub mod client_options;
pub mod collections;
pub mod conversions;
pub mod crud;
pub mod errors;
pub mod events;
pub mod gridfs;
pub mod named_options;
pub mod oidc_callback;
pub mod raw_batches;
pub mod raw_cursor;
pub mod search_indexes;
pub mod search_stages;
pub mod selection;
pub mod session_cursors;
pub mod sync;
pub mod transactions;
pub mod typed_builder;
pub mod web_service;

/// Every program: its name, whether it needs a replica set (transactions, change streams),
/// and the program.
pub fn all() -> Vec<(&'static str, bool, Program)> {
    vec![
        ("crud", false, |uri, db| Box::pin(crud::run(uri, db))),
        ("web_service", false, |uri, db| Box::pin(web_service::run(uri, db))),
        ("builders", false, |uri, db| Box::pin(builders::run(uri, db))),
        ("bulk_write", false, |uri, db| Box::pin(bulk_write::run(uri, db))),
        ("client_options", false, |uri, db| Box::pin(client_options::run(uri, db))),
        ("client_fields", false, |uri, db| Box::pin(client_fields::run(uri, db))),
        ("collections", false, |uri, db| Box::pin(collections::run(uri, db))),
        ("conversions", false, |uri, db| Box::pin(conversions::run(uri, db))),
        ("errors", false, |uri, db| Box::pin(errors::run(uri, db))),
        ("events", false, |uri, db| Box::pin(events::run(uri, db))),
        ("gridfs", false, |uri, db| Box::pin(gridfs::run(uri, db))),
        ("named_options", false, |uri, db| Box::pin(named_options::run(uri, db))),
        ("oidc_callback", false, |uri, db| Box::pin(oidc_callback::run(uri, db))),
        ("raw_batches", false, |uri, db| Box::pin(raw_batches::run(uri, db))),
        ("raw_cursor", false, |uri, db| Box::pin(raw_cursor::run(uri, db))),
        ("search_indexes", false, |uri, db| Box::pin(search_indexes::run(uri, db))),
        ("search_stages", false, |uri, db| Box::pin(search_stages::run(uri, db))),
        ("selection", false, |uri, db| Box::pin(selection::run(uri, db))),
        ("session_cursors", false, |uri, db| Box::pin(session_cursors::run(uri, db))),
        ("sync", false, |uri, db| Box::pin(sync::run(uri, db))),
        ("typed_builder", false, |uri, db| Box::pin(typed_builder::run(uri, db))),
        ("transactions", true, |uri, db| Box::pin(transactions::run(uri, db))),
        ("change_streams", true, |uri, db| Box::pin(change_streams::run(uri, db))),
    ]
}

/// A program: connection string and database name in, the first error out.
pub type Program =
    for<'a> fn(
        &'a str,
        &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = mongodb::error::Result<()>> + 'a>>;
