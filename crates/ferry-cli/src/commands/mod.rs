//! One module per subcommand.

pub mod actionloop_host;
pub mod build;
pub mod deploy;
pub mod invoke;
pub mod ls;
pub mod manifest;
