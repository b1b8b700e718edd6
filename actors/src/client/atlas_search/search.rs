//! A search operator and the `$search` and `$searchMeta` stages around it.

use std::marker::PhantomData;

use bson::{doc, Bson, Document};

/// A `$search` stage of `operator`, whose settings follow.
pub fn search<T>(operator: SearchOperator<T>) -> AtlasSearch {
    AtlasSearch { stage: operator.into_document() }
}

/// A `$searchMeta` stage of `operator` (the metadata of the results, not the results).
pub fn search_meta<T>(operator: SearchOperator<T>) -> AtlasSearchMeta {
    AtlasSearchMeta { stage: operator.into_document() }
}

/// A `$search` stage being built: see [`search`].
#[derive(Debug, Clone, PartialEq)]
pub struct AtlasSearch {
    stage: Document,
}

/// A `$searchMeta` stage being built: see [`search_meta`].
#[derive(Debug, Clone, PartialEq)]
pub struct AtlasSearchMeta {
    stage: Document,
}

/// Declares setters that set one field of the stage each.
macro_rules! stage_setters {
    ($($(#[$doc:meta])* $name:ident($value:ty) => $key:literal $(via $conv:path)?;)*) => {$(
        $(#[$doc])*
        pub fn $name(mut self, value: $value) -> Self {
            self.stage.insert($key, $($conv)?(value));
            self
        }
    )*};
}

fn string(value: impl Into<String>) -> Bson {
    Bson::String(value.into())
}

impl AtlasSearch {
    stage_setters! {
        /// Parallelize the search across segments (dedicated search nodes).
        concurrent(bool) => "concurrent";
        /// Count the results (`{type: "total"}` or `{type: "lowerBound"}`).
        count(Document) => "count";
        /// Highlight the matching terms of these paths.
        highlight(Document) => "highlight";
        /// The search index (default `default`).
        index(impl Into<String>) => "index" via string;
        /// Return only the fields stored in the index.
        return_stored_source(bool) => "returnStoredSource";
        /// Results after this pagination token.
        search_after(impl Into<String>) => "searchAfter" via string;
        /// Results before this pagination token.
        search_before(impl Into<String>) => "searchBefore" via string;
        /// Explain each result's score (`$meta: "searchScoreDetails"`).
        score_details(bool) => "scoreDetails";
        /// Sort by these fields instead of the score.
        sort(Document) => "sort";
    }

    /// The stage: `{$search: {...}}`.
    pub fn into_stage(self) -> Document {
        doc! { "$search": self.stage }
    }
}

impl AtlasSearchMeta {
    stage_setters! {
        /// Count the results (`{type: "total"}` or `{type: "lowerBound"}`).
        count(Document) => "count";
        /// The search index (default `default`).
        index(impl Into<String>) => "index" via string;
    }

    /// The stage: `{$searchMeta: {...}}`.
    pub fn into_stage(self) -> Document {
        doc! { "$searchMeta": self.stage }
    }
}

/// One search operator (`text`, `compound`, `range`...) with its settings; `T` names which,
/// so each has only its own setters.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOperator<T> {
    name: &'static str,
    spec: Document,
    _kind: PhantomData<fn() -> T>,
}

impl<T> SearchOperator<T> {
    pub(super) fn new(name: &'static str, spec: Document) -> Self {
        SearchOperator { name, spec, _kind: PhantomData }
    }

    /// Sets one field of the operator's specification.
    pub(super) fn set(mut self, key: &str, value: impl Into<Bson>) -> Self {
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
    pub(super) fn into_document(self) -> Document {
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
