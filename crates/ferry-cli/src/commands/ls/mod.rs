//! `ferry ls --platform <platform>`: the program's functions next to those deployed, one module
//! per platform. It answers "what would `ferry deploy` with the same flags change?".

mod lambda;
mod openwhisk;

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
    #[command(flatten, next_help_heading = "Deployment")]
    pub lambda: crate::lambda::LambdaArgs,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    match args.platform {
        Platform::Lambda => lambda::run(args),
        Platform::Openwhisk => openwhisk::run(args),
        Platform::Http => bail!(
            "`ferry ls --platform http` is not available: Knative Services are listed by `kubectl get ksvc`"
        ),
    }
}

/// A deployed function's state: `deployed`, or what is outdated (`code`, and the settings named
/// in `config`).
fn describe_state(code: bool, config: &[&str]) -> String {
    let config = config.join(", ");
    match (code, config.is_empty()) {
        (false, true) => "deployed".to_owned(),
        (true, true) => "outdated code".to_owned(),
        (false, false) => format!("outdated config ({config})"),
        (true, false) => format!("outdated code and config ({config})"),
    }
}
