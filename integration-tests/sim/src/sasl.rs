//! What every SASL mechanism of the simulator shares: its random numbers and the command's
//! `payload` (text for SCRAM and PLAIN, a BSON document for MONGODB-AWS and MONGODB-OIDC).

use bson::{Document, RawBsonRef, RawDocument};

use crate::commands::reply::CmdError;

/// Fills `buf` from the operating system's secure random source (through rustls' provider).
pub(crate) fn random(buf: &mut [u8]) {
    if rustls::crypto::ring::default_provider().secure_random.fill(buf).is_err() {
        // Never seen in practice; a predictable-but-unique fallback keeps tests running.
        let seed =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (seed >> ((i % 16) * 8)) as u8 ^ (i as u8);
        }
    }
}

/// The `payload` of a SASL command whose mechanism speaks BSON (MONGODB-AWS, MONGODB-OIDC).
pub(crate) fn payload_document(body: &RawDocument) -> Result<Document, CmdError> {
    let bytes = payload_bytes(body.get("payload").ok().flatten())?;
    Document::from_reader(bytes.as_slice())
        .map_err(|_| CmdError::bad("the SASL payload is not a BSON document"))
}

pub(crate) fn payload_bytes(v: Option<RawBsonRef<'_>>) -> Result<Vec<u8>, CmdError> {
    match v {
        Some(RawBsonRef::Binary(b)) => Ok(b.bytes.to_vec()),
        Some(RawBsonRef::String(s)) => Ok(s.as_bytes().to_vec()),
        _ => Err(CmdError::new(14, "TypeMismatch", "payload must be a BinData or string")),
    }
}
