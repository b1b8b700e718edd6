//! What went wrong with a GridFS file.

use bson::Bson;

use super::Error;

/// Why a GridFS operation failed ([`ErrorKind::GridFs`](super::ErrorKind::GridFs)).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum GridFsErrorKind {
    /// No file has that id or name.
    #[non_exhaustive]
    FileNotFound {
        /// The id or name looked for.
        identifier: GridFsFileIdentifier,
    },
    /// Files with the name exist, but not the revision asked for.
    #[non_exhaustive]
    RevisionNotFound {
        /// The revision asked for.
        revision: i32,
    },
    /// A chunk is missing: chunk `n` was expected next.
    #[non_exhaustive]
    MissingChunk {
        /// The chunk number expected.
        n: u32,
    },
    /// The upload stream was used after it was closed or aborted.
    UploadStreamClosed,
    /// Chunk `n` does not have the size the file's length and chunk size imply.
    #[non_exhaustive]
    WrongSizeChunk {
        /// Its size.
        actual_size: usize,
        /// The size it should have.
        expected_size: u32,
        /// The chunk number.
        n: u32,
    },
    /// The file has more or fewer chunks than its length implies.
    #[non_exhaustive]
    WrongNumberOfChunks {
        /// How many there were (at least).
        actual_number: u32,
        /// How many there should be.
        expected_number: u32,
    },
    /// Aborting an upload could not delete the chunks written so far.
    #[non_exhaustive]
    AbortError {
        /// The error that caused the abort, if an error did.
        original_error: Option<Error>,
        /// The error deleting the chunks.
        delete_error: Error,
    },
    /// An upload stream was closed or aborted while a write was still in progress.
    WriteInProgress,
}

/// How a GridFS file was looked for.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum GridFsFileIdentifier {
    /// By name.
    Filename(String),
    /// By id.
    Id(Bson),
}

impl std::fmt::Display for GridFsFileIdentifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GridFsFileIdentifier::Filename(name) => write!(f, "named {name:?}"),
            GridFsFileIdentifier::Id(id) => write!(f, "with id {id}"),
        }
    }
}

impl std::fmt::Display for GridFsErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GridFsErrorKind::FileNotFound { identifier } => write!(f, "FileNotFound: no file {identifier}"),
            GridFsErrorKind::RevisionNotFound { revision } => {
                write!(f, "RevisionNotFound: no revision {revision}")
            }
            GridFsErrorKind::MissingChunk { n } => write!(f, "ChunkIsMissing: chunk {n} is missing"),
            GridFsErrorKind::WrongSizeChunk { actual_size, expected_size, n } => {
                write!(f, "ChunkIsWrongSize: chunk {n} has {actual_size} bytes, not {expected_size}")
            }
            GridFsErrorKind::WrongNumberOfChunks { actual_number, expected_number } => {
                write!(f, "ExtraChunk: {actual_number} chunks, not {expected_number}")
            }
            GridFsErrorKind::UploadStreamClosed => write!(f, "the upload stream is closed or aborted"),
            GridFsErrorKind::AbortError { delete_error, .. } => {
                write!(f, "aborting the upload could not delete its chunks: {delete_error}")
            }
            GridFsErrorKind::WriteInProgress => write!(f, "a write to the upload stream is in progress"),
        }
    }
}
