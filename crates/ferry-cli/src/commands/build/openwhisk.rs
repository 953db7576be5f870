//! OpenWhisk: an ActionLoop native action, a zip with the binary as `exec` at the top level.
//! The program recognises the ActionLoop proxy by itself (fd 3 and `__OW_*` variables).

use std::path::PathBuf;

use super::Built;

pub fn package(built: &Built<'_>) -> anyhow::Result<Vec<PathBuf>> {
    let path = built.artifacts.openwhisk_zip(&built.program.bin);
    let zip = super::zip::executable("exec", &built.binary.bytes)?;
    crate::artifacts::write_atomically(&path, &zip)?;
    Ok(vec![path])
}
