//! Where bson 2 and bson 3 differ: the names of `protocol::bson_compat`, each the selected
//! bson's item (the simulator's `bson-2` and `bson-3` features select the same one).

#[allow(unused_imports)]
pub(crate) use protocol::bson_compat::*;
