//! Worker side: serving this program's functions behind a platform's interface.
//!
//! - `local`: the embedded platform's workers (a Unix socket on fd 3).

pub(crate) mod local;
