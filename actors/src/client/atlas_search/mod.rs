//! Atlas Search stages (`mongodb::atlas_search`): typed builders of `$search` and
//! `$searchMeta` and of the search operators, each ending in a pipeline stage document.
//!
//! ```
//! use mongo_actors::atlas_search::{compound, search, text, MatchCriteria};
//! use mongo_actors::bson::doc;
//!
//! let stage = search(compound().must(text("plot", "ship").match_criteria(MatchCriteria::All)))
//!     .index("movies")
//!     .into_stage();
//! assert_eq!(
//!     stage,
//!     doc! {"$search": {
//!         "compound": {"must": [{"text": {"path": "plot", "query": "ship", "matchCriteria": "all"}}]},
//!         "index": "movies",
//!     }}
//! );
//! ```
//!
//! Only an Atlas deployment runs these stages; any other server refuses them.

mod names;
mod operators;
mod parameters;
mod search;

pub mod facet;

pub use names::{MatchCriteria, Relation, TokenOrder};
pub use operators::*;
pub use parameters::{
    BsonNumber, DocumentOrArray, NearOrigin, RangeValue, SearchOperatorParam, StringOrArray,
};
pub use search::{search, search_meta, AtlasSearch, AtlasSearchMeta, SearchOperator};
