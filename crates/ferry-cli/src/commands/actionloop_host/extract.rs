//! The action's code from `/init` to an `exec` file on disk: a zip (`binary: true`, base64) with
//! `exec` at its top level, or a script sent as text.

use std::io::Cursor;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

/// Writes the action into `dir` and returns the path of its executable.
pub fn install(dir: &Path, code: &str, binary: bool) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    let exec = dir.join("exec");
    if binary {
        let zip = base64_simd::STANDARD
            .decode_to_vec(code.trim())
            .context("the code is not valid base64")?;
        let mut archive =
            zip::ZipArchive::new(Cursor::new(zip)).context("the code is not a zip archive")?;
        archive
            .extract(dir)
            .with_context(|| format!("cannot extract the action into `{}`", dir.display()))?;
        if !exec.is_file() {
            bail!("the action zip has no `exec` at its top level");
        }
    } else {
        std::fs::write(&exec, code)
            .with_context(|| format!("cannot write `{}`", exec.display()))?;
    }
    std::fs::set_permissions(&exec, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make `{}` executable", exec.display()))?;
    Ok(exec)
}
