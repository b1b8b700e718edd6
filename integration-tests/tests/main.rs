//! The end-to-end tests of mongo-actors, one binary: each file is a module (a linked test
//! binary per file cost most of a cold `make test`). Tests that change what is process-wide
//! (environment variables, the global tracing subscriber, the metrics recorder, the memory
//! measure) run themselves again as a child process (`integration_tests::child_process`).

// `bson::` names the bson this crate's features select, the one the crates below use.
protocol::select_bson!();

mod support;

// First in name order (see the module).
mod all_spec_suites;
mod auth_aws;
mod auth_mechanisms;
mod auth_oidc;
mod cancellation;
mod change_streams;
mod chaos;
mod client_config;
mod client_crud;
mod client_csot;
mod client_e2e;
mod client_lb;
mod client_lb_sdam;
mod client_ops;
mod client_sessions;
mod client_shutdown;
mod client_srv;
mod client_transactions;
mod command_logging;
mod gridfs;
mod hostile_server;
mod layering;
mod monitor_actor;
mod monitor_actor_faas;
mod official_driver;
mod options_effect;
#[cfg(feature = "otel")]
mod otel;
mod overload;
mod pool_connection;
mod pool_e2e;
mod sdam_actors_e2e;
mod sdam_actors_faas;
mod sdam_actors_live;
mod secrets;
mod seedlist_prose;
mod selection_actor_e2e;
mod shutdown;
mod sim_members;
mod sim_security;
mod stable_api;
mod web_status;
