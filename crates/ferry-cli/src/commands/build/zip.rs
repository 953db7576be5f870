//! A zip holding one executable: the package format of Lambda (`bootstrap`) and OpenWhisk
//! (`exec`). Byte-for-byte reproducible (fixed time stamp, fixed mode), so an unchanged binary
//! gives an unchanged zip and `ferry deploy` can skip it by its hash.

use std::io::{Cursor, Write as _};

use anyhow::Context as _;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

/// A zip with `binary` as the executable `name` (mode 755).
pub fn executable(name: &str, binary: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .compression_level(Some(6))
        .last_modified_time(DateTime::default())
        .unix_permissions(0o755)
        .large_file(binary.len() as u64 >= u64::from(u32::MAX));
    zip.start_file(name, options)
        .context("cannot start the zip")?;
    zip.write_all(binary)
        .context("cannot compress the binary")?;
    Ok(zip.finish().context("cannot finish the zip")?.into_inner())
}
