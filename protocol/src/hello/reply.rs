//! Typed parsing of a `hello` (or legacy `isMaster`) reply.
//!
//! [`HelloReply::parse`] validates the fields SDAM uses and normalises them: numbers may be
//! int32, int64 or double; host names are lower-cased; the hosts lists are sorted and
//! de-duplicated (SDAM treats them as sets). A field of the wrong type is an
//! [`Error::InvalidHelloReply`], never a panic.

use std::collections::BTreeMap;

use bson::oid::ObjectId;
use bson::{Bson, Document};

use crate::address::ServerAddress;
use crate::error::{Error, Result};
use crate::sdam::topology_version::TopologyVersion;

/// A parsed hello / legacy hello reply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HelloReply {
    /// `ok` was 1 (or true). When false, the remaining fields are not meaningful.
    pub ok: bool,
    /// `errmsg` of an `ok: 0` reply.
    pub errmsg: Option<String>,
    /// `code` of an `ok: 0` reply.
    pub code: Option<i32>,
    /// `isWritablePrimary`, or the legacy `ismaster` when the former is absent.
    pub is_writable_primary: bool,
    /// `helloOk`: the server supports the `hello` command.
    pub hello_ok: bool,
    /// `secondary`.
    pub secondary: bool,
    /// `arbiterOnly`.
    pub arbiter_only: bool,
    /// `hidden`.
    pub hidden: bool,
    /// `isreplicaset` (an RSGhost).
    pub is_replica_set: bool,
    /// `msg` (`"isdbgrid"` for a mongos).
    pub msg: Option<String>,
    /// `setName`.
    pub set_name: Option<String>,
    /// `setVersion`.
    pub set_version: Option<i64>,
    /// `electionId`.
    pub election_id: Option<ObjectId>,
    /// `primary`: the member's opinion of who the primary is.
    pub primary: Option<ServerAddress>,
    /// `me`: the address the member is configured with.
    pub me: Option<ServerAddress>,
    /// `hosts` (sorted, de-duplicated).
    pub hosts: Vec<ServerAddress>,
    /// `passives` (sorted, de-duplicated).
    pub passives: Vec<ServerAddress>,
    /// `arbiters` (sorted, de-duplicated).
    pub arbiters: Vec<ServerAddress>,
    /// `tags`.
    pub tags: BTreeMap<String, String>,
    /// `lastWrite.lastWriteDate`.
    pub last_write_date: Option<bson::DateTime>,
    /// `lastWrite.opTime` (opaque).
    pub op_time: Option<Bson>,
    /// `minWireVersion` (0 when absent).
    pub min_wire_version: i32,
    /// `maxWireVersion` (0 when absent).
    pub max_wire_version: i32,
    /// `logicalSessionTimeoutMinutes`.
    pub logical_session_timeout_minutes: Option<i64>,
    /// `topologyVersion`.
    pub topology_version: Option<TopologyVersion>,
    /// `serviceId` (behind a load balancer).
    pub service_id: Option<ObjectId>,
    /// `iscryptd`.
    pub iscryptd: bool,
    /// `maxBsonObjectSize`.
    pub max_bson_object_size: Option<i64>,
    /// `maxMessageSizeBytes`.
    pub max_message_size_bytes: Option<i64>,
    /// `maxWriteBatchSize`.
    pub max_write_batch_size: Option<i64>,
    /// `connectionId`: the server's id for this connection.
    pub connection_id: Option<i64>,
    /// `compression`: the compressors the server agreed to.
    pub compression: Vec<String>,
    /// `saslSupportedMechs`.
    pub sasl_supported_mechs: Option<Vec<String>>,
    /// `speculativeAuthenticate`.
    pub speculative_authenticate: Option<Document>,
}

fn invalid(field: &str, expected: &str, got: &Bson) -> Error {
    Error::InvalidHelloReply(format!("field '{field}' must be {expected}, got {got}"))
}

/// Reads any BSON number that holds an integral value (int32, int64 or an integral double).
pub fn bson_to_i64(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(d) if d.is_finite() && d.fract() == 0.0 && d.abs() < 9.0e18 => Some(*d as i64),
        _ => None,
    }
}

/// Truthiness as servers use it for flags: booleans, or numbers (legacy replies send `ok: 1.0`).
pub fn bson_truthy(v: &Bson) -> Option<bool> {
    match v {
        Bson::Boolean(b) => Some(*b),
        Bson::Int32(i) => Some(*i != 0),
        Bson::Int64(i) => Some(*i != 0),
        Bson::Double(d) => Some(*d != 0.0),
        _ => None,
    }
}

struct Fields<'a>(&'a Document);

impl Fields<'_> {
    fn present(&self, key: &str) -> Option<&Bson> {
        // A null value is treated like an absent field.
        self.0.get(key).filter(|v| !matches!(v, Bson::Null | Bson::Undefined))
    }

    fn flag(&self, key: &str) -> Result<bool> {
        match self.present(key) {
            None => Ok(false),
            Some(v) => bson_truthy(v).ok_or_else(|| invalid(key, "a boolean", v)),
        }
    }

    fn int(&self, key: &str) -> Result<Option<i64>> {
        match self.present(key) {
            None => Ok(None),
            Some(v) => bson_to_i64(v).map(Some).ok_or_else(|| invalid(key, "an integer", v)),
        }
    }

    fn int32(&self, key: &str) -> Result<Option<i32>> {
        match self.int(key)? {
            None => Ok(None),
            Some(i) => i32::try_from(i)
                .map(Some)
                .map_err(|_| Error::InvalidHelloReply(format!("field '{key}' out of range: {i}"))),
        }
    }

    fn string(&self, key: &str) -> Result<Option<String>> {
        match self.present(key) {
            None => Ok(None),
            Some(Bson::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(invalid(key, "a string", v)),
        }
    }

    fn object_id(&self, key: &str) -> Result<Option<ObjectId>> {
        match self.present(key) {
            None => Ok(None),
            Some(Bson::ObjectId(o)) => Ok(Some(*o)),
            Some(v) => Err(invalid(key, "an ObjectId", v)),
        }
    }

    fn address(&self, key: &str) -> Result<Option<ServerAddress>> {
        match self.string(key)? {
            None => Ok(None),
            Some(s) => parse_address(key, &s).map(Some),
        }
    }

    fn addresses(&self, key: &str) -> Result<Vec<ServerAddress>> {
        let Some(v) = self.present(key) else { return Ok(Vec::new()) };
        let arr = v.as_array().ok_or_else(|| invalid(key, "an array", v))?;
        let mut out = arr
            .iter()
            .map(|h| match h {
                Bson::String(s) => parse_address(key, s),
                other => Err(invalid(key, "an array of strings", other)),
            })
            .collect::<Result<Vec<_>>>()?;
        out.sort();
        out.dedup();
        Ok(out)
    }

    fn strings(&self, key: &str) -> Result<Option<Vec<String>>> {
        let Some(v) = self.present(key) else { return Ok(None) };
        let arr = v.as_array().ok_or_else(|| invalid(key, "an array", v))?;
        arr.iter()
            .map(|s| s.as_str().map(str::to_string).ok_or_else(|| invalid(key, "an array of strings", s)))
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    fn document(&self, key: &str) -> Result<Option<&Document>> {
        match self.present(key) {
            None => Ok(None),
            Some(Bson::Document(d)) => Ok(Some(d)),
            Some(v) => Err(invalid(key, "a document", v)),
        }
    }
}

fn parse_address(field: &str, s: &str) -> Result<ServerAddress> {
    // ServerAddress lower-cases host names, as SDAM requires for me/hosts/passives/arbiters.
    ServerAddress::parse(s).map_err(|e| Error::InvalidHelloReply(format!("field '{field}': {e}")))
}

impl TopologyVersion {
    /// Parses a `topologyVersion` subdocument (`{processId: ObjectId, counter: int64}`).
    pub fn from_document(doc: &Document) -> Result<Self> {
        let f = Fields(doc);
        let process_id = f
            .object_id("processId")?
            .ok_or_else(|| Error::InvalidHelloReply("topologyVersion.processId missing".into()))?;
        let counter = f
            .int("counter")?
            .ok_or_else(|| Error::InvalidHelloReply("topologyVersion.counter missing".into()))?;
        Ok(TopologyVersion { process_id, counter })
    }

    /// Reads the optional `topologyVersion` field of a reply or error document.
    pub fn from_reply(doc: &Document) -> Result<Option<Self>> {
        Fields(doc).document("topologyVersion")?.map(TopologyVersion::from_document).transpose()
    }
}

impl HelloReply {
    /// Parses a reply document. An `ok: 0` reply parses successfully with `ok == false`
    /// (and `errmsg`/`code`); only the error fields are read then.
    pub fn parse(doc: &Document) -> Result<Self> {
        let f = Fields(doc);
        let ok = match f.present("ok") {
            None => false,
            Some(v) => bson_truthy(v).ok_or_else(|| invalid("ok", "a number or boolean", v))?,
        };
        if !ok {
            return Ok(HelloReply {
                ok,
                errmsg: f.string("errmsg").ok().flatten(),
                code: f.int32("code").ok().flatten(),
                ..Default::default()
            });
        }
        // Drivers must check isWritablePrimary first and fall back to the legacy field.
        let is_writable_primary = if f.present("isWritablePrimary").is_some() {
            f.flag("isWritablePrimary")?
        } else {
            f.flag("ismaster")?
        };
        let tags = match f.document("tags")? {
            None => BTreeMap::new(),
            Some(d) => d
                .iter()
                .map(|(k, v)| match v {
                    Bson::String(s) => Ok((k.clone(), s.clone())),
                    other => Err(invalid("tags", "a document of strings", other)),
                })
                .collect::<Result<_>>()?,
        };
        let (last_write_date, op_time) = match f.document("lastWrite")? {
            None => (None, None),
            Some(lw) => {
                let date = match lw.get("lastWriteDate") {
                    None | Some(Bson::Null) => None,
                    Some(Bson::DateTime(d)) => Some(*d),
                    Some(v) => return Err(invalid("lastWrite.lastWriteDate", "a datetime", v)),
                };
                (date, lw.get("opTime").cloned())
            }
        };
        let topology_version = TopologyVersion::from_reply(doc)?;
        Ok(HelloReply {
            ok,
            errmsg: None,
            code: None,
            is_writable_primary,
            hello_ok: f.flag("helloOk")?,
            secondary: f.flag("secondary")?,
            arbiter_only: f.flag("arbiterOnly")?,
            hidden: f.flag("hidden")?,
            is_replica_set: f.flag("isreplicaset")?,
            msg: f.string("msg")?,
            set_name: f.string("setName")?,
            set_version: f.int("setVersion")?,
            election_id: f.object_id("electionId")?,
            primary: f.address("primary")?,
            me: f.address("me")?,
            hosts: f.addresses("hosts")?,
            passives: f.addresses("passives")?,
            arbiters: f.addresses("arbiters")?,
            tags,
            last_write_date,
            op_time,
            min_wire_version: f.int32("minWireVersion")?.unwrap_or(0),
            max_wire_version: f.int32("maxWireVersion")?.unwrap_or(0),
            logical_session_timeout_minutes: f.int("logicalSessionTimeoutMinutes")?,
            topology_version,
            service_id: f.object_id("serviceId")?,
            iscryptd: f.flag("iscryptd")?,
            max_bson_object_size: f.int("maxBsonObjectSize")?,
            max_message_size_bytes: f.int("maxMessageSizeBytes")?,
            max_write_batch_size: f.int("maxWriteBatchSize")?,
            connection_id: f.int("connectionId")?,
            compression: f.strings("compression")?.unwrap_or_default(),
            sasl_supported_mechs: f.strings("saslSupportedMechs")?,
            speculative_authenticate: f.document("speculativeAuthenticate")?.cloned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn parses_numbers_of_any_type_and_lowercases_hosts() {
        let r = HelloReply::parse(&doc! {
            "ok": 1.0, "ismaster": true, "setName": "rs", "setVersion": 3.0_f64,
            "hosts": ["B:27017", "a:27017", "b:27017"], "me": "A:27017",
            "maxWireVersion": 21_i64, "logicalSessionTimeoutMinutes": 30,
        })
        .unwrap();
        assert!(r.ok && r.is_writable_primary);
        assert_eq!(r.set_version, Some(3));
        assert_eq!(r.max_wire_version, 21);
        assert_eq!(r.hosts, vec![ServerAddress::tcp("a", 27017), ServerAddress::tcp("b", 27017)]);
        assert_eq!(r.me, Some(ServerAddress::tcp("a", 27017)));
        assert_eq!(r.logical_session_timeout_minutes, Some(30));
    }

    #[test]
    fn is_writable_primary_takes_precedence_over_ismaster() {
        let r = HelloReply::parse(&doc! {"ok": 1, "isWritablePrimary": false, "ismaster": true}).unwrap();
        assert!(!r.is_writable_primary);
    }

    #[test]
    fn malformed_fields_are_errors() {
        for d in [
            doc! {"ok": 1, "hosts": "a"},
            doc! {"ok": 1, "hosts": [1]},
            doc! {"ok": 1, "setVersion": "x"},
            doc! {"ok": 1, "maxWireVersion": 1.5},
            doc! {"ok": 1, "electionId": 1},
            doc! {"ok": 1, "topologyVersion": {"processId": 1, "counter": 1}},
            doc! {"ok": "yes"},
        ] {
            assert!(matches!(HelloReply::parse(&d), Err(Error::InvalidHelloReply(_))), "{d}");
        }
    }

    #[test]
    fn not_ok_reply() {
        let r = HelloReply::parse(&doc! {"ok": 0, "errmsg": "boom", "code": 1}).unwrap();
        assert!(!r.ok);
        assert_eq!(r.errmsg.as_deref(), Some("boom"));
        assert_eq!(r.code, Some(1));
    }
}
