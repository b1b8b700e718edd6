//! The macro of the GridFS bucket's builders: `IntoFuture` over the bucket's own async
//! functions.

/// `IntoFuture` (and [`Action`](super::Action)) for each action: `$run` takes the action
/// and gives its future.
macro_rules! gridfs_run_by {
    ($($action:ident => $out:ty, |$a:ident| $run:expr;)*) => {
        $(
            impl<'a> std::future::IntoFuture for $action<'a> {
                type Output = crate::error::Result<$out>;
                type IntoFuture = futures_util::future::BoxFuture<'a, crate::error::Result<$out>>;

                fn into_future(self) -> Self::IntoFuture {
                    let $a = self;
                    Box::pin(async move { $run.await })
                }
            }

            $crate::client::action::action! { impl<'a> for $action<'a>; }

            #[cfg(feature = "sync")]
            impl $action<'_> {
                /// Runs the action to completion, blocking (the sync API).
                pub fn run(self) -> crate::error::Result<<$out as crate::client::sync::runtime::IntoSync>::Sync> {
                    crate::client::sync::runtime::block_on(std::future::IntoFuture::into_future(self))
                        .map(crate::client::sync::runtime::IntoSync::into_sync)
                }
            }
        )*
    };
}

pub(crate) use gridfs_run_by;
