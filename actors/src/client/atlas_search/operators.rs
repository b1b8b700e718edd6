//! The search operators: for each, its kind, the function that starts it with what it
//! requires, and the setters of its options.

use bson::{Bson, Document};

use super::names::{MatchCriteria, Relation, TokenOrder};
use super::parameters::private::Parameter;
use super::parameters::{
    BsonNumber, DocumentOrArray, NearOrigin, RangeValue, SearchOperatorParam, StringOrArray,
};
use super::search::SearchOperator;

/// A string as BSON.
fn text_of(value: impl AsRef<str>) -> Bson {
    Bson::String(value.as_ref().to_owned())
}

/// Clauses as a BSON array.
fn clauses(operators: impl IntoIterator<Item = impl SearchOperatorParam>) -> Bson {
    Bson::Array(operators.into_iter().map(Parameter::to_bson).collect())
}

/// Declares an operator: its kind, its function (the server's name and required fields)
/// and its setters. A field is converted with `via`, else as a [`Parameter`].
macro_rules! operator {
    ($(#[$doc:meta])*
     $kind:ident = $function:ident($wire:literal $(, $arg:ident: $ty:ty => $key:literal $(via $conv:path)?)*) {
        $($(#[$sdoc:meta])* $setter:ident($sty:ty) => $skey:literal $(via $sconv:path)?;)*
     }) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $kind;

        $(#[$doc])*
        pub fn $function($($arg: $ty),*) -> SearchOperator<$kind> {
            #[allow(unused_mut)]
            let mut spec = Document::new();
            $(spec.insert($key, operator!(@convert $arg $(via $conv)?));)*
            SearchOperator::new($wire, spec)
        }

        impl SearchOperator<$kind> {
            $(
                $(#[$sdoc])*
                pub fn $setter(self, value: $sty) -> Self {
                    self.set($skey, operator!(@convert value $(via $sconv)?))
                }
            )*
        }
    };
    (@convert $value:ident via $conv:path) => { $conv($value) };
    (@convert $value:ident) => { Parameter::to_bson($value) };
}

operator! {
    /// `autocomplete`: words that start with what the user typed so far (the paths need an
    /// `autocomplete` mapping).
    Autocomplete = autocomplete("autocomplete", path: impl StringOrArray => "path", query: impl StringOrArray => "query") {
        /// The order of the query's tokens.
        token_order(TokenOrder) => "tokenOrder";
        /// Match despite typos (`{maxEdits: 1}`...).
        fuzzy(Document) => "fuzzy";
        /// How matches are scored.
        score(Document) => "score";
    }
}

operator! {
    /// `compound`: clauses that must, must not or should match, and filters.
    Compound = compound("compound") {
        /// Clauses every result matches (they add to the score).
        must(impl IntoIterator<Item = impl SearchOperatorParam>) => "must" via clauses;
        /// Clauses no result matches.
        must_not(impl IntoIterator<Item = impl SearchOperatorParam>) => "mustNot" via clauses;
        /// Clauses that raise the score of the results that match them.
        should(impl IntoIterator<Item = impl SearchOperatorParam>) => "should" via clauses;
        /// Clauses every result matches, without adding to the score.
        filter(impl IntoIterator<Item = impl SearchOperatorParam>) => "filter" via clauses;
        /// How many `should` clauses a result must match.
        minimum_should_match(i32) => "minimumShouldMatch";
        /// How matches are scored.
        score(Document) => "score";
    }
}

operator! {
    /// `embeddedDocument`: an operator over each element of an array of documents.
    EmbeddedDocument = embedded_document("embeddedDocument", path: impl StringOrArray => "path", operator: impl SearchOperatorParam => "operator") {
        /// How matches are scored.
        score(Document) => "score";
    }
}

operator! {
    /// `equals`: the field holds exactly `value`.
    Equals = equals("equals", path: impl StringOrArray => "path", value: impl Into<Bson> => "value") {
        /// How matches are scored.
        score(Document) => "score";
    }
}

operator! {
    /// `exists`: the field is present.
    Exists = exists("exists", path: impl StringOrArray => "path") {
        /// How matches are scored.
        score(Document) => "score";
    }
}

operator! {
    /// `facet`: groups of the results (`$searchMeta`), built with the [`facet`](mod@super::facet) module.
    Facet = facet("facet", facets: Document => "facets") {
        /// The operator whose results are grouped.
        operator(impl SearchOperatorParam) => "operator";
    }
}

operator! {
    /// `geoShape`: shapes in the relation to `geometry`.
    GeoShape = geo_shape("geoShape", path: impl StringOrArray => "path", relation: Relation => "relation", geometry: Document => "geometry") {
        /// How matches are scored.
        score(Document) => "score";
    }
}

operator! {
    /// `geoWithin`: points within a box, a circle or a geometry (set one).
    GeoWithin = geo_within("geoWithin", path: impl StringOrArray => "path") {
        /// Within this box.
        geo_box(Document) => "box";
        /// Within this circle.
        circle(Document) => "circle";
        /// Within this polygon or multipolygon.
        geometry(Document) => "geometry";
        /// How matches are scored.
        score(Document) => "score";
    }
}

operator! {
    /// `in`: the field holds one of the values.
    SearchIn = search_in("in", path: impl StringOrArray => "path", value: impl Into<Bson> => "value") {
        /// How matches are scored.
        score(Document) => "score";
    }
}

operator! {
    /// `moreLikeThis`: documents like these.
    MoreLikeThis = more_like_this("moreLikeThis", like: impl DocumentOrArray => "like") {
        /// How matches are scored.
        score(Document) => "score";
    }
}

operator! {
    /// `near`: values close to `origin`, scored by distance (`pivot`: where the score halves).
    Near = near("near", path: impl StringOrArray => "path", origin: impl NearOrigin => "origin", pivot: impl BsonNumber => "pivot") {
        /// How matches are scored.
        score(Document) => "score";
    }
}

operator! {
    /// `phrase`: the words of `query` in order.
    Phrase = phrase("phrase", path: impl StringOrArray => "path", query: impl StringOrArray => "query") {
        /// How many other words may come between them.
        slop(i32) => "slop";
        /// The synonym mapping to apply.
        synonyms(impl AsRef<str>) => "synonyms" via text_of;
        /// How matches are scored.
        score(Document) => "score";
    }
}

operator! {
    /// `queryString`: a Lucene-style query over `default_path` and the paths it names.
    QueryString = query_string("queryString", default_path: impl StringOrArray => "defaultPath", query: impl AsRef<str> => "query" via text_of) {}
}

operator! {
    /// `range`: values between bounds (set at least one).
    Range = range("range", path: impl StringOrArray => "path") {
        /// Greater than.
        gt(impl RangeValue) => "gt";
        /// Greater than or equal to.
        gte(impl RangeValue) => "gte";
        /// Less than.
        lt(impl RangeValue) => "lt";
        /// Less than or equal to.
        lte(impl RangeValue) => "lte";
        /// How matches are scored.
        score(Document) => "score";
    }
}

operator! {
    /// `regex`: values matching a regular expression.
    Regex = regex("regex", path: impl StringOrArray => "path", query: impl AsRef<str> => "query" via text_of) {
        /// Run against analyzed fields too.
        allow_analyzed_field(bool) => "allowAnalyzedField";
        /// How matches are scored.
        score(Document) => "score";
    }
}

operator! {
    /// `text`: full-text search of `query` (analyzed as the index says).
    Text = text("text", path: impl StringOrArray => "path", query: impl StringOrArray => "query") {
        /// Match despite typos (`{maxEdits: 1}`...).
        fuzzy(Document) => "fuzzy";
        /// All the query's terms, or any.
        match_criteria(MatchCriteria) => "matchCriteria";
        /// The synonym mapping to apply.
        synonyms(impl AsRef<str>) => "synonyms" via text_of;
        /// How matches are scored.
        score(Document) => "score";
    }
}

operator! {
    /// `wildcard`: values matching a pattern with `*` and `?`.
    Wildcard = wildcard("wildcard", path: impl StringOrArray => "path", query: impl AsRef<str> => "query" via text_of) {
        /// Run against analyzed fields too.
        allow_analyzed_field(bool) => "allowAnalyzedField";
        /// How matches are scored.
        score(Document) => "score";
    }
}
