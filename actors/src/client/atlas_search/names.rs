//! The named settings of some operators: their values on the wire are strings.

use bson::Bson;

/// Declares an enum of named values with `Other(String)` for one this client does not name.
macro_rules! named {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $wire:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
            /// A value by its name.
            Other(String),
        }

        impl $name {
            /// The name sent.
            pub fn name(&self) -> &str {
                match self {
                    $($name::$variant => $wire,)*
                    $name::Other(s) => s,
                }
            }
        }

        impl From<$name> for Bson {
            fn from(value: $name) -> Bson {
                Bson::String(value.name().to_string())
            }
        }
    };
}

named! {
    /// The order in which `autocomplete` matches the query's tokens.
    TokenOrder {
        /// In any order.
        Any = "any",
        /// Next to each other, in order.
        Sequential = "sequential",
    }
}

named! {
    /// Whether `text` matches documents with all the query's terms or any of them.
    MatchCriteria {
        /// Any term.
        Any = "any",
        /// Every term.
        All = "all",
    }
}

named! {
    /// How `geoShape` relates the indexed shape to the query's geometry.
    Relation {
        /// The indexed shape contains the geometry.
        Contains = "contains",
        /// They do not overlap.
        Disjoint = "disjoint",
        /// They overlap.
        Intersects = "intersects",
        /// The indexed shape lies within the geometry.
        Within = "within",
    }
}
