//! Every option type of the client's handles and operations, by what they configure:
//!
//! | file | options of |
//! |---|---|
//! | [`client`] | the client ([`ClientOptions`], from a URI or a builder) |
//! | [`connection_string`] | a parsed URI's options as typed fields ([`ConnectionString`]) |
//! | `from_uri` | the one way options flow: a parse → [`ConnectionString`] → [`ClientOptions`] |
//! | `overrides` | options overridden by their URI names (`.option(..)`, files, the environment) |
//! | `validate` | the combinations no options may hold, checked on the typed fields |
//! | `cluster_settings` | what the actors, connections and pools are built from (typed fields only) |
//! | `uri_notes` | what a parse said beyond the values: ignored, without effect, refused |
//! | `uri_writer` | a [`ConnectionString`] written back as a URI, for `Display` only |
//! | [`handle`] | database and collection handles |
//! | [`collation`] | [`Collation`] and its typed settings |
//! | [`crud`] | reads and writes (find, aggregate, insert, update, delete, findAndModify...) |
//! | [`admin`] | commands on namespaces and indexes, `run_command` |
//! | [`official_names`] | the official crate's names for options ours share (`ListCollectionsOptions`, `DropIndexOptions`...) |
//! | [`search_index`] | Atlas Search indexes and their actions |
//! | [`create_collection`] | `create_collection`, and a collection's options as `list_collections` reports them |

pub mod admin;
pub mod change_stream;
pub mod client;
mod cluster_settings;
pub mod collation;
pub mod commit_quorum;
pub mod compressor;
pub mod connection_string;
pub mod create_collection;
pub mod credential;
pub mod crud;
mod from_uri;
pub mod handle;
pub mod index_version;
pub mod official_names;
pub mod oidc;
pub(crate) mod overrides;
pub mod search_index;
pub mod tls;
pub(crate) mod uri_notes;
mod uri_writer;
mod validate;
pub mod write_model;

pub use self::admin::*;
pub use self::change_stream::*;
pub use self::client::*;
pub use self::collation::*;
pub use self::commit_quorum::CommitQuorum;
pub use self::compressor::Compressor;
pub use self::connection_string::{ConnectionString, HostInfo};
pub use self::create_collection::*;
pub use self::credential::Credential;
pub use self::crud::*;
pub use self::handle::*;
pub use self::index_version::{IndexVersion, Sphere2DIndexVersion, TextIndexVersion};
pub use self::official_names::*;
pub use self::search_index::*;
pub use self::tls::{Tls, TlsOptions};
pub use self::write_model::*;
