//! Plain HTTP (`FERRY_ROLE=http`): an OCI image FROM scratch with the static binary, and a
//! Knative Service per function.

mod knative;

use std::path::PathBuf;

use anyhow::{Context as _, bail};

use super::{Built, oci};
use crate::artifacts::Linkage;

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
    let dir = built.artifacts.knative_dir();
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot replace `{}`", dir.display()))?;
    }
    for function in &built.manifest.functions {
        let (name, yaml) = knative::service(built.app, &image_ref, built.manifest, function)?;
        crate::artifacts::write_atomically(&dir.join(format!("{name}.yaml")), yaml.as_bytes())?;
    }
    Ok(vec![layout, archive, dir])
}
