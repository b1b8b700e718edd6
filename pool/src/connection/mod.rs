//! One connection to a server (filled in next).
