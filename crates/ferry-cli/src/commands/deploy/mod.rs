//! `ferry deploy --platform <platform>`: creates or updates every function of a built program
//! (`ferry build`) on a platform, one module per platform.

mod http;
mod lambda;
mod openwhisk;

use crate::artifacts::Platform;
use crate::program::ProgramArgs;

/// The flags of `ferry deploy`, which `ferry ls` shares: `ls` answers what `deploy` with the
/// same flags would change.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The platform the functions are deployed on.
    #[arg(long, value_enum)]
    pub platform: Platform,
    #[command(flatten)]
    pub program: ProgramArgs,
    #[command(flatten, next_help_heading = "Deployment")]
    pub lambda: crate::lambda::LambdaArgs,
    #[command(flatten, next_help_heading = "Deployment")]
    pub registry: crate::registry::RegistryArgs,
    #[command(flatten, next_help_heading = "Deployment")]
    pub knative: crate::knative::KnativeArgs,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    match args.platform {
        Platform::Lambda => lambda::run(args),
        Platform::Openwhisk => openwhisk::run(args),
        Platform::Http => http::run(args),
    }
}

/// How an update is reported: what differed (`code`, and the settings named in `config`).
fn describe_update(code: bool, config: &[&str]) -> String {
    let config = config.join(", ");
    match (code, config.is_empty()) {
        (true, true) => "updated code".to_owned(),
        (false, _) => format!("updated config ({config})"),
        (true, false) => format!("updated code and config ({config})"),
    }
}
