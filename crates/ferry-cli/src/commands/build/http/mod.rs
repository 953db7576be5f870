//! Plain HTTP (`FERRY_ROLE=http`): an OCI image FROM scratch with the static binary, and a
//! Knative Service per function ([`crate::knative`]) that runs it.

use std::path::PathBuf;

use anyhow::bail;

use super::{Built, oci};
use crate::artifacts::Linkage;
use crate::knative::KnativeApp;

pub fn package(built: &Built<'_>) -> anyhow::Result<Vec<PathBuf>> {
    if built.binary.linkage != Linkage::Static {
        bail!(
            "`{}` is dynamically linked, but the image is FROM scratch, which has no C library: build it static (drop `--dynamic`)",
            built.binary.path.display()
        );
    }
    let program = &built.program.bin;
    let image = oci::image(program, &built.program.version, built.binary, "http")?;
    let layout = built.artifacts.oci_layout();
    image.write_layout(&layout)?;
    let archive = built.artifacts.oci_archive(program);
    crate::artifacts::write_atomically(&archive, &image.archive()?)?;

    let image_ref = built
        .image
        .clone()
        .unwrap_or_else(|| format!("{program}:{}", built.program.version));
    let app = KnativeApp {
        app: built.app,
        image: &image_ref,
        namespace: built.namespace,
        env: &[],
    };
    let services = crate::knative::services(&app, built.manifest)?;
    let dir = built.artifacts.knative_dir();
    crate::knative::write(&dir, &services, built.manifest)?;
    Ok(vec![layout, archive, dir])
}
