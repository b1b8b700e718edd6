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
mod stage;

pub mod facet;

pub use names::{MatchCriteria, Relation, TokenOrder};
pub use operators::*;
pub use parameters::{
    BsonNumber, DocumentOrArray, NearOrigin, RangeValue, SearchOperatorParam, StringOrArray,
};
pub use stage::{search, search_meta, AtlasSearch, AtlasSearchMeta};

use std::marker::PhantomData;

use bson::{doc, Bson, Document};

/// One search operator (`text`, `compound`, `range`...) with its settings; `T` names which,
/// so each has only its own setters.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOperator<T> {
    name: &'static str,
    spec: Document,
    _kind: PhantomData<fn() -> T>,
}

impl<T> SearchOperator<T> {
    fn new(name: &'static str, spec: Document) -> Self {
        SearchOperator { name, spec, _kind: PhantomData }
    }

    /// Sets one field of the operator's specification.
    fn set(mut self, key: &str, value: impl Into<Bson>) -> Self {
        self.spec.insert(key, value);
        self
    }

    /// A `$search` stage of this operator alone.
    pub fn into_stage(self) -> Document {
        search(self).into_stage()
    }

    /// A `$searchMeta` stage of this operator alone.
    pub fn into_stage_meta(self) -> Document {
        search_meta(self).into_stage()
    }

    /// The operator with its kind forgotten (to put operators of several kinds in one list).
    pub fn unit(self) -> SearchOperator<()> {
        SearchOperator::new(self.name, self.spec)
    }

    /// `{name: spec}`: how the operator appears inside a stage or another operator.
    fn into_document(self) -> Document {
        doc! { self.name: self.spec }
    }
}

/// A single operator is a list of one (where a setter takes several).
impl<T> IntoIterator for SearchOperator<T> {
    type Item = SearchOperator<T>;
    type IntoIter = std::iter::Once<SearchOperator<T>>;

    fn into_iter(self) -> Self::IntoIter {
        std::iter::once(self)
    }
}
