//! What went wrong with a GridFS file.

/// What went wrong with a stored file (an [`Error::GridFs`](super::Error::GridFs)).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum GridFsErrorKind {
    /// No file has this id (or name).
    FileNotFound {
        /// The id or name asked for.
        identifier: String,
    },
    /// The file has fewer revisions than the one asked for.
    RevisionNotFound {
        /// The revision asked for.
        revision: i32,
    },
    /// A chunk is missing: chunk `n` came where chunk `expected` was due, or the chunks
    /// ended early.
    MissingChunk {
        /// The chunk due.
        expected: u32,
    },
    /// A chunk has the wrong length.
    WrongSizeChunk {
        /// The chunk.
        n: u32,
        /// Its length.
        actual: usize,
        /// The length it should have.
        expected: usize,
    },
    /// There are more chunks than the file's length accounts for.
    ExtraChunk {
        /// The first extra chunk.
        n: u32,
    },
    /// The upload stream was aborted, or already closed.
    UploadClosed,
}

impl std::fmt::Display for GridFsErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GridFsErrorKind::FileNotFound { identifier } => write!(f, "FileNotFound: no file {identifier}"),
            GridFsErrorKind::RevisionNotFound { revision } => {
                write!(f, "RevisionNotFound: no revision {revision}")
            }
            GridFsErrorKind::MissingChunk { expected } => {
                write!(f, "ChunkIsMissing: chunk {expected} is missing")
            }
            GridFsErrorKind::WrongSizeChunk { n, actual, expected } => {
                write!(f, "ChunkIsWrongSize: chunk {n} has {actual} bytes, not {expected}")
            }
            GridFsErrorKind::ExtraChunk { n } => write!(f, "ExtraChunk: chunk {n} is past the file's length"),
            GridFsErrorKind::UploadClosed => write!(f, "the upload stream is closed or aborted"),
        }
    }
}
