//! `ferry ls --platform <platform>`: the program's functions next to those deployed, one module
//! per platform. It answers "what would `ferry deploy` with the same flags change?".

mod lambda;
mod openwhisk;

use anyhow::bail;

pub use super::deploy::Args;
use crate::artifacts::Platform;

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
