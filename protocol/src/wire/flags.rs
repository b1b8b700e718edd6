//! A tiny bit-flag newtype generator (avoids a `bitflags` dependency for three small types).

/// Defines a `Copy` newtype over `u32` with named flag constants and set operations.
macro_rules! flag_type {
    ($(#[$meta:meta])* $name:ident { $($(#[$fmeta:meta])* $flag:ident = $bit:expr;)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name(u32);

        impl $name {
            $($(#[$fmeta])* pub const $flag: Self = Self(1 << $bit);)*

            /// No flags set.
            pub const fn empty() -> Self {
                Self(0)
            }

            /// Wraps raw bits as they appear on the wire, keeping unknown bits.
            pub const fn from_bits_retain(bits: u32) -> Self {
                Self(bits)
            }

            /// The raw bits as sent on the wire.
            pub const fn bits(self) -> u32 {
                self.0
            }

            /// Whether every bit of `other` is set in `self`.
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }

            /// Sets or clears the bits of `other`.
            pub fn set(&mut self, other: Self, value: bool) {
                if value {
                    self.0 |= other.0;
                } else {
                    self.0 &= !other.0;
                }
            }
        }

        impl std::ops::BitOr for $name {
            type Output = Self;
            fn bitor(self, rhs: Self) -> Self {
                Self(self.0 | rhs.0)
            }
        }

        impl std::ops::BitOrAssign for $name {
            fn bitor_assign(&mut self, rhs: Self) {
                self.0 |= rhs.0;
            }
        }
    };
}

pub(crate) use flag_type;
