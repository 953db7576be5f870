//! One module per subcommand.

pub mod actionloop_host;
pub mod build;
pub mod deploy;
pub mod invoke;
pub mod ls;
pub mod manifest;
pub mod new;
pub mod watch;

use std::path::Path;

use anyhow::Context as _;

/// The runtime a platform command's requests run on.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// The built code at `zip` for comparison with what is deployed, or `None` (with a note) when
/// the program is not built for the platform.
fn code_if_built<C>(
    zip: &Path,
    read: impl FnOnce(&Path) -> anyhow::Result<C>,
) -> anyhow::Result<Option<C>> {
    if !zip.exists() {
        eprintln!(
            "note: `{}` is not built, so code is not compared",
            zip.display()
        );
        return Ok(None);
    }
    read(zip).map(Some)
}

/// Says which deployed functions (or actions) of `app` the program no longer has.
fn note_extras<T>(what: &str, platform: &str, app: &str, extras: &[(String, T)]) {
    if extras.is_empty() {
        return;
    }
    println!(
        "note: {} deployed {what}(s) of app `{app}` are no longer in the program (`ferry ls --platform {platform}` lists them): {}",
        extras.len(),
        extras
            .iter()
            .map(|(name, _)| name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
}
