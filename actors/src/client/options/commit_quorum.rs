//! [`CommitQuorum`]: how many data-bearing members must be ready before an index build
//! commits (`createIndexes`' `commitQuorum`).

use bson::Bson;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How many data-bearing voting members must finish an index build before it commits.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommitQuorum {
    /// That many members (0 turns quorum voting off).
    Nodes(u32),
    /// Every data-bearing voting member (the server's default).
    VotingMembers,
    /// A majority of the voting members.
    Majority,
    /// The members a replica set tag names.
    Custom(String),
}

impl From<CommitQuorum> for Bson {
    fn from(q: CommitQuorum) -> Bson {
        match q {
            // A quorum past i32::MAX cannot be met: the server refuses it as it would any.
            CommitQuorum::Nodes(n) => i32::try_from(n).map_or(Bson::Int64(i64::from(n)), Bson::Int32),
            CommitQuorum::VotingMembers => Bson::String("votingMembers".into()),
            CommitQuorum::Majority => Bson::String("majority".into()),
            CommitQuorum::Custom(tag) => Bson::String(tag),
        }
    }
}

impl Serialize for CommitQuorum {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Bson::from(self.clone()).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for CommitQuorum {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum NumberOrName {
            Number(u32),
            Name(String),
        }
        Ok(match NumberOrName::deserialize(deserializer)? {
            NumberOrName::Number(n) => CommitQuorum::Nodes(n),
            NumberOrName::Name(s) if s == "votingMembers" => CommitQuorum::VotingMembers,
            NumberOrName::Name(s) if s == "majority" => CommitQuorum::Majority,
            NumberOrName::Name(s) => CommitQuorum::Custom(s),
        })
    }
}
