//! `ferry build --platform lambda|openwhisk|http`: builds the program with cargo, checks it is a
//! ferry program, writes its manifest, and packages it for each platform asked for (see
//! [`crate::artifacts`] for the layout).
//!
//! Binaries are linked statically unless `--dynamic` is given: a binary linked against this
//! machine's glibc fails to start on an older one (Lambda's `provided.al2023` has glibc 2.34,
//! ActionLoop images their own), and the HTTP image is FROM scratch, with no C library at all.
//! Static means crt-static on `*-linux-gnu` targets and the default on `*-linux-musl`, linked
//! at a fixed address unless `--pie`; it needs an explicit `--target` (the host's by default)
//! so that build scripts and proc macros, which must stay dynamic, are not linked statically
//! too.

mod binary;
pub(crate) mod cargo;
mod http;
mod lambda;
pub(crate) mod oci;
mod openwhisk;
mod zip;

use std::path::PathBuf;

use anyhow::{Context as _, bail};
use ferry_core::Manifest;

use self::binary::{Arch, Binary};
use crate::artifacts::{Artifacts, BuildInfo, Linkage, Platform, write_atomically};
use crate::program::{Program, ProgramArgs};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The platforms to package for (repeat or separate with commas).
    #[arg(long, value_enum, required = true, value_delimiter = ',')]
    pub platform: Vec<Platform>,
    #[command(flatten)]
    pub program: ProgramArgs,
    /// The target triple (default: this machine's).
    #[arg(long, value_name = "TRIPLE")]
    pub target: Option<String>,
    /// Link statically (the default): crt-static on `*-linux-gnu`, musl's default on
    /// `*-linux-musl`.
    #[arg(long = "static", conflicts_with = "dynamic")]
    pub static_: bool,
    /// Link dynamically against the build machine's C library (not for `--platform http`).
    #[arg(long)]
    pub dynamic: bool,
    /// Keep a static binary position-independent (static-pie), so that its load address is
    /// randomised; it then relocates itself at every start (about 0.4 ms of a cold start for a
    /// program of ferry's size). By default a static binary is linked at a fixed address.
    #[arg(long, conflicts_with = "dynamic")]
    pub pie: bool,
    /// The cargo profile.
    #[arg(long, default_value = "release", value_name = "PROFILE")]
    pub profile: String,
    /// Strip debug info from the binary (`strip = "debuginfo"` in the profile): much smaller
    /// zips and images; panics keep function names but lose file and line.
    #[arg(long)]
    pub strip: bool,
    /// Prefix of the Knative Service names (default: the binary's name).
    #[arg(long)]
    pub app: Option<String>,
    /// The image reference the Knative Services run (default: `<binary>:<version>`); push the
    /// `oci-archive` there (`ferry deploy --platform http --registry` pushes it and writes the
    /// Services again for the pushed image).
    #[arg(long, value_name = "REFERENCE")]
    pub image: Option<String>,
    /// The Kubernetes namespace of the Knative Services, which their routes to each other name.
    #[arg(long, default_value = "default", value_name = "NAMESPACE")]
    pub namespace: String,
    /// Show cargo's own output instead of a progress line.
    #[arg(short, long)]
    pub verbose: bool,
}

/// What the platform packagers get.
pub struct Built<'a> {
    pub program: &'a Program,
    pub artifacts: &'a Artifacts,
    pub binary: &'a Binary,
    pub manifest: &'a Manifest,
    pub app: &'a str,
    pub image: Option<String>,
    pub namespace: &'a str,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let mut platforms: Vec<Platform> = Vec::new();
    for platform in &args.platform {
        if !platforms.contains(platform) {
            platforms.push(*platform);
        }
    }
    let linkage = if args.dynamic {
        Linkage::Dynamic
    } else {
        Linkage::Static
    };
    crate::knative::check_namespace(&args.namespace)?;
    if linkage == Linkage::Dynamic && platforms.contains(&Platform::Http) {
        bail!(
            "`--platform http` builds an image FROM scratch, which has no C library: it needs a static binary; drop `--dynamic`"
        );
    }

    let program = args.program.resolve()?;
    let host = cargo::host_triple()?;
    // A static build always names its target (see the module docs); a dynamic one for the host
    // shares `target/<profile>` with ordinary builds.
    let target = match (&args.target, linkage) {
        (Some(target), _) => Some(target.clone()),
        (None, Linkage::Static) => Some(host.clone()),
        (None, Linkage::Dynamic) => None,
    };
    if let Some(target) = &target {
        if linkage == Linkage::Static {
            cargo::static_rustflags(target, args.pie)?;
        }
        cargo::check_target_installed(target)?;
    }

    let path = cargo::build(&cargo::BuildRequest {
        program: &program,
        profile: &args.profile,
        target: target.as_deref(),
        linkage,
        position_independent: args.pie,
        strip: args.strip,
        verbose: args.verbose,
    })?;
    let binary = Binary::read(&path)?;
    if linkage == Linkage::Static && binary.linkage != Linkage::Static {
        bail!(
            "cargo produced a dynamically linked `{}` although a static build was asked for; are rustflags set elsewhere (`.cargo/config.toml`) overriding `+crt-static`?",
            path.display()
        );
    }
    if Arch::host() != Some(binary.architecture) {
        bail!(
            "`{}` is built for {}, so it cannot run here to print its manifest; build on a {} machine",
            path.display(),
            binary.architecture.rust_name(),
            binary.architecture.rust_name()
        );
    }
    let manifest = crate::commands::manifest::read(&path)?;

    let artifacts = Artifacts::new(program.dir.clone());
    let info = BuildInfo {
        program: program.bin.clone(),
        package: program.package.clone(),
        version: program.version.clone(),
        target: target.unwrap_or(host),
        profile: args.profile.clone(),
        linkage: binary.linkage,
        architecture: binary.architecture.rust_name().to_owned(),
        binary: Some(path.clone()),
    };
    write_atomically(
        &artifacts.manifest_path(),
        serde_json::to_string_pretty(&manifest)?.as_bytes(),
    )?;
    write_atomically(
        &artifacts.build_info_path(),
        serde_json::to_string_pretty(&info)?.as_bytes(),
    )?;

    let app = args.app.clone().unwrap_or_else(|| program.bin.clone());
    let built = Built {
        program: &program,
        artifacts: &artifacts,
        binary: &binary,
        manifest: &manifest,
        app: &app,
        image: args.image.clone(),
        namespace: &args.namespace,
    };
    let mut written: Vec<(Platform, Vec<PathBuf>)> = Vec::new();
    for platform in platforms {
        let bar = cargo::spinner(format!("packaging for {}", platform.name()));
        let paths = match platform {
            Platform::Lambda => lambda::package(&built),
            Platform::Openwhisk => openwhisk::package(&built),
            Platform::Http => http::package(&built),
        }
        .with_context(|| format!("cannot package `{}` for {}", program.bin, platform.name()));
        bar.finish_and_clear();
        written.push((platform, paths?));
    }

    summary(&artifacts, &manifest, &binary, &written);
    Ok(())
}

fn summary(
    artifacts: &Artifacts,
    manifest: &Manifest,
    binary: &Binary,
    written: &[(Platform, Vec<PathBuf>)],
) {
    let relative = |path: &std::path::Path| -> String {
        std::env::current_dir()
            .ok()
            .and_then(|cwd| path.strip_prefix(cwd).ok().map(|p| p.display().to_string()))
            .unwrap_or_else(|| path.display().to_string())
    };
    println!(
        "{} ({} function{}, {:.1} MiB, {} {}) -> {}",
        binary
            .path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        manifest.functions.len(),
        if manifest.functions.len() == 1 {
            ""
        } else {
            "s"
        },
        binary.bytes.len() as f64 / (1 << 20) as f64,
        binary.architecture.rust_name(),
        match binary.linkage {
            Linkage::Static => "static",
            Linkage::Dynamic => "dynamic",
        },
        relative(&artifacts.dir)
    );
    println!("  manifest    {}", relative(&artifacts.manifest_path()));
    for (platform, paths) in written {
        for path in paths {
            let size = std::fs::metadata(path)
                .ok()
                .filter(|m| m.is_file())
                .map(|m| format!(" ({:.1} MiB)", m.len() as f64 / (1 << 20) as f64))
                .unwrap_or_default();
            println!("  {:<11} {}{size}", platform.name(), relative(path));
        }
    }
}
