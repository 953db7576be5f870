//! One module per subcommand.

pub mod manifest;
