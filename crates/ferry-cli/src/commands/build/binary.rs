//! What the built binary is: a Linux ELF executable for which machine, linked how.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use object::read::elf::{ElfFile64, ProgramHeader as _};
use object::{Architecture, BinaryFormat, Endianness, Object as _};

use crate::artifacts::Linkage;

/// A built program binary, read into memory.
#[derive(Debug)]
pub struct Binary {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    pub architecture: Arch,
    pub linkage: Linkage,
}

/// The machines ferry packages for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Aarch64,
}

impl Arch {
    /// The name in `build.json` (Rust's `target_arch`).
    pub fn rust_name(self) -> &'static str {
        match self {
            Self::X86_64 => "x86_64",
            Self::Aarch64 => "aarch64",
        }
    }

    /// This machine's architecture, if ferry packages for it.
    pub fn host() -> Option<Self> {
        match std::env::consts::ARCH {
            "x86_64" => Some(Self::X86_64),
            "aarch64" => Some(Self::Aarch64),
            _ => None,
        }
    }
}

impl Binary {
    /// Reads and inspects the binary at `path`.
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read `{}`", path.display()))?;
        let file = object::File::parse(&*bytes)
            .with_context(|| format!("`{}` is not an executable ferry can read", path.display()))?;
        if file.format() != BinaryFormat::Elf {
            bail!(
                "`{}` is not a Linux (ELF) executable; serverless platforms run Linux binaries",
                path.display()
            );
        }
        let architecture = match file.architecture() {
            Architecture::X86_64 => Arch::X86_64,
            Architecture::Aarch64 => Arch::Aarch64,
            other => bail!(
                "`{}` is built for {other:?}; ferry packages x86_64 and aarch64 binaries",
                path.display()
            ),
        };
        let linkage = if has_interpreter(&bytes)? {
            Linkage::Dynamic
        } else {
            Linkage::Static
        };
        drop(file);
        Ok(Self {
            path: path.to_path_buf(),
            bytes,
            architecture,
            linkage,
        })
    }
}

/// Whether the ELF file names a dynamic loader (`PT_INTERP`): what `ldd` calls dynamically
/// linked. A static-pie binary (glibc with crt-static) has none.
fn has_interpreter(bytes: &[u8]) -> anyhow::Result<bool> {
    let elf = ElfFile64::<Endianness>::parse(bytes).context("not a 64-bit ELF file")?;
    let endian = elf.endian();
    Ok(elf
        .elf_program_headers()
        .iter()
        .any(|header| header.p_type(endian) == object::elf::PT_INTERP))
}
