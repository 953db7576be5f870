//! `ferry ls --platform <platform>`: the program's functions next to those deployed, one module
//! per platform. It answers "what would `ferry deploy` with the same flags change?".

mod lambda;

use anyhow::bail;

use crate::artifacts::Platform;
use crate::program::ProgramArgs;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The platform to look at.
    #[arg(long, value_enum)]
    pub platform: Platform,
    #[command(flatten)]
    pub program: ProgramArgs,
    #[command(flatten, next_help_heading = "Lambda")]
    pub lambda: crate::lambda::LambdaArgs,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    match args.platform {
        Platform::Lambda => lambda::run(args),
        other => bail!(
            "`ferry ls --platform {}` is not available yet; only `lambda` is",
            other.name()
        ),
    }
}
