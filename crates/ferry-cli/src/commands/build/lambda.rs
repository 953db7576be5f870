//! Lambda: one zip with the binary as `bootstrap`, shared by every function (the `Handler`,
//! read by the runtime as `_HANDLER`, picks the function).

use std::path::PathBuf;

use super::Built;

pub fn package(built: &Built<'_>) -> anyhow::Result<Vec<PathBuf>> {
    let path = built.artifacts.lambda_zip(&built.program.bin);
    let zip = super::zip::executable("bootstrap", &built.binary.bytes)?;
    crate::artifacts::write_atomically(&path, &zip)?;
    Ok(vec![path])
}
