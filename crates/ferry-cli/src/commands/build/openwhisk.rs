//! OpenWhisk, two ways to deploy the same binary:
//!
//! - an ActionLoop native action, a zip with the binary as `exec` at the top level, for the
//!   platform's own runtime image (`openwhisk/dockerskeleton`, the Go ActionLoop proxy, one
//!   activation at a time); the program recognises the proxy by itself (fd 3 and `__OW_*`
//!   variables);
//! - ferry's own runtime image (`FERRY_ROLE=openwhisk`, FROM scratch, static binaries only),
//!   serving `/init` and `/run` with intra-container concurrency, for `blackbox` actions whose
//!   image `ferry deploy --registry` pushes.

use std::path::PathBuf;

use super::{Built, oci};
use crate::artifacts::Linkage;

pub fn package(built: &Built<'_>) -> anyhow::Result<Vec<PathBuf>> {
    let program = &built.program.bin;
    let path = built.artifacts.openwhisk_zip(program);
    let zip = super::zip::executable("exec", &built.binary.bytes)?;
    crate::artifacts::write_atomically(&path, &zip)?;
    let mut written = vec![path];
    let image = built.artifacts.openwhisk_image(program);
    if built.binary.linkage == Linkage::Static {
        let oci = oci::image(program, &built.program.version, built.binary, "openwhisk")?;
        crate::artifacts::write_atomically(&image, &oci.archive()?)?;
        written.push(image);
    } else if image.exists() {
        // An image of an older static build would be deployed as this one.
        std::fs::remove_file(&image)?;
    }
    Ok(written)
}
