//! The typed versions of an index ([`IndexVersion`]), of a text index ([`TextIndexVersion`])
//! and of a `2dsphere` index ([`Sphere2DIndexVersion`]): each an `i32` on the wire, with
//! `Custom` for a version this client does not name yet.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Declares a version enum: its named versions, `Custom(u32)`, and serde as an `i32`.
macro_rules! index_version {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $n:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
            /// A version by its number (a newer server's, say).
            Custom(u32),
        }

        impl $name {
            /// The version's number.
            pub fn number(&self) -> u32 {
                #[allow(deprecated)]
                match self {
                    $($name::$variant => $n,)*
                    $name::Custom(n) => *n,
                }
            }

            fn of(n: u32) -> Self {
                #[allow(deprecated)]
                match n {
                    $($n => $name::$variant,)*
                    n => $name::Custom(n),
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let n = i32::try_from(self.number()).map_err(serde::ser::Error::custom)?;
                serializer.serialize_i32(n)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let n = i32::deserialize(deserializer)?;
                u32::try_from(n).map($name::of).map_err(serde::de::Error::custom)
            }
        }
    };
}

index_version! {
    /// The version of an index (`v`). Version 0 indexes are refused since MongoDB 3.2.
    #[non_exhaustive]
    IndexVersion {
        /// Version 0.
        #[deprecated = "refused since MongoDB 3.2"]
        V0 = 0,
        /// Version 1.
        V1 = 1,
        /// Version 2.
        V2 = 2,
    }
}

index_version! {
    /// The version of a `text` index (`textIndexVersion`).
    TextIndexVersion {
        /// Version 1.
        V1 = 1,
        /// Version 2.
        V2 = 2,
        /// Version 3.
        V3 = 3,
    }
}

index_version! {
    /// The version of a `2dsphere` index (`2dsphereIndexVersion`).
    Sphere2DIndexVersion {
        /// Version 2.
        V2 = 2,
        /// Version 3.
        V3 = 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_numbers_on_the_wire() {
        let d = bson::doc! {"v": crate::bson_compat::serialize_to_bson(&IndexVersion::V2).unwrap()};
        assert_eq!(d.get_i32("v").ok(), Some(2));
        let back: TextIndexVersion = crate::bson_compat::deserialize_from_bson(bson::Bson::Int32(7)).unwrap();
        assert_eq!(back, TextIndexVersion::Custom(7));
        assert!(
            crate::bson_compat::deserialize_from_bson::<Sphere2DIndexVersion>(bson::Bson::Int32(-1)).is_err()
        );
    }
}
