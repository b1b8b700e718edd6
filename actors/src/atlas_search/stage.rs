//! The `$search` and `$searchMeta` stages around an operator.

use bson::{doc, Bson, Document};

use super::SearchOperator;

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
