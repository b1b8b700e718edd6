//! `forward!`: a sync handle's methods, each the async handle's method of the same name and
//! signature (its action then runs with `.run()`), so the sync API has the official one's
//! methods themselves, not only through `Deref`.

/// Methods of `self.inner` with the same signature: `fn name(&self, arg: Type) -> Ret;`.
macro_rules! forward {
    ($($(#[$attr:meta])* fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(
            $(#[$attr])*
            pub fn $name(&self $(, $arg: $ty)*) -> $ret {
                self.inner.$name($($arg),*)
            }
        )*
    };
}
