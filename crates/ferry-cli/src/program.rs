//! Which program a command works on: a binary target of a package in the current cargo
//! workspace (`-p`, `--bin`), and the directory its build artifacts live in
//! (`target/ferry/<binary>`, or `--dir`).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use cargo_metadata::{Metadata, MetadataCommand, Package, TargetKind};

/// Selects the program: shared by `build`, `deploy` and `ls`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ProgramArgs {
    /// The package of the program (default: the package in the current directory, or the
    /// workspace's only package with a binary).
    #[arg(short = 'p', long, value_name = "PACKAGE")]
    pub package: Option<String>,
    /// The program's binary target (default: the package's only binary, or its `default-run`).
    #[arg(long, value_name = "NAME")]
    pub bin: Option<String>,
    /// Where the build artifacts are written and read (default: `target/ferry/<binary>`).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// A program of the workspace.
#[derive(Debug, Clone)]
pub struct Program {
    /// The package name.
    pub package: String,
    /// The binary target's name.
    pub bin: String,
    /// The package's version.
    pub version: String,
    /// The artifacts directory.
    pub dir: PathBuf,
    /// The package's directory (where its `Cargo.toml` is).
    pub root: PathBuf,
    /// cargo's target directory.
    pub target_dir: PathBuf,
}

impl ProgramArgs {
    /// Resolves the program with `cargo metadata` in the current directory.
    pub fn resolve(&self) -> anyhow::Result<Program> {
        let metadata = MetadataCommand::new()
            .no_deps()
            .exec()
            .context("cannot read the cargo workspace (`cargo metadata` failed)")?;
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let package = pick_package(&metadata, self.package.as_deref(), &cwd)?;
        let bin = pick_bin(package, self.bin.as_deref())?;
        let target_dir = metadata.target_directory.clone().into_std_path_buf();
        let dir = self
            .dir
            .clone()
            .unwrap_or_else(|| target_dir.join("ferry").join(&bin));
        let root = package
            .manifest_path
            .parent()
            .map_or_else(|| cwd.clone(), |dir| dir.as_std_path().to_path_buf());
        Ok(Program {
            root,
            target_dir: target_dir.clone(),
            package: package.name.to_string(),
            bin,
            version: package.version.to_string(),
            dir,
        })
    }

    /// The artifacts directory: `--dir`, or that of the resolved program.
    pub fn artifacts_dir(&self) -> anyhow::Result<PathBuf> {
        match &self.dir {
            Some(dir) => Ok(dir.clone()),
            None => Ok(self.resolve()?.dir),
        }
    }
}

fn has_bin(package: &Package) -> bool {
    package
        .targets
        .iter()
        .any(|t| t.kind.contains(&TargetKind::Bin))
}

fn pick_package<'m>(
    metadata: &'m Metadata,
    name: Option<&str>,
    cwd: &Path,
) -> anyhow::Result<&'m Package> {
    let members = metadata.workspace_packages();
    if let Some(name) = name {
        return members
            .iter()
            .copied()
            .find(|p| p.name.as_str() == name)
            .with_context(|| {
                format!(
                    "no package `{name}` in this workspace; packages with binaries: {}",
                    names(members.iter().copied().filter(|p| has_bin(p)))
                )
            });
    }
    // The package whose directory holds the current directory, innermost first.
    let here = members
        .iter()
        .copied()
        .filter(|p| {
            p.manifest_path
                .parent()
                .is_some_and(|dir| cwd.starts_with(dir.as_std_path()))
        })
        .max_by_key(|p| p.manifest_path.as_str().len());
    if let Some(package) = here {
        if has_bin(package) {
            return Ok(package);
        }
        bail!(
            "package `{}` has no binary; choose a program with `-p`",
            package.name
        );
    }
    let with_bins: Vec<&Package> = members.iter().copied().filter(|p| has_bin(p)).collect();
    match with_bins.as_slice() {
        [only] => Ok(only),
        [] => bail!("this workspace has no package with a binary"),
        many => bail!(
            "this workspace has several programs ({}); choose one with `-p`",
            names(many.iter().copied())
        ),
    }
}

fn pick_bin(package: &Package, name: Option<&str>) -> anyhow::Result<String> {
    let bins: Vec<&str> = package
        .targets
        .iter()
        .filter(|t| t.kind.contains(&TargetKind::Bin))
        .map(|t| t.name.as_str())
        .collect();
    if let Some(name) = name {
        if bins.contains(&name) {
            return Ok(name.to_owned());
        }
        bail!(
            "package `{}` has no binary `{name}`; its binaries: {}",
            package.name,
            list(&bins)
        );
    }
    match bins.as_slice() {
        [only] => Ok((*only).to_owned()),
        [] => bail!("package `{}` has no binary", package.name),
        many => match &package.default_run {
            Some(default) => Ok(default.clone()),
            None => bail!(
                "package `{}` has several binaries ({}); choose one with `--bin`",
                package.name,
                list(many)
            ),
        },
    }
}

fn names<'a>(packages: impl Iterator<Item = &'a Package>) -> String {
    let names: Vec<&str> = packages.map(|p| p.name.as_str()).collect();
    list(&names)
}

fn list(items: &[&str]) -> String {
    if items.is_empty() {
        return "none".to_owned();
    }
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
