//! One module per subcommand.

pub mod actionloop_host;
pub mod invoke;
pub mod manifest;
