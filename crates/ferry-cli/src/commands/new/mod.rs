//! `ferry new NAME [--template fanout|web|flow]`: a new crate whose only dependency is ferry,
//! with functions, a program, unit, inline and local-platform tests, and a README that says how
//! to run it here and deploy it.
//!
//! The `ferry` dependency is `--ferry-path`, else the ferry source this command was built from
//! when it is still there (a clone of the repository), else ferry of this command's version from
//! crates.io.

mod name;
mod template;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use self::template::Template;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The crate's name: its package, library and binary.
    pub name: String,
    /// What the crate starts as.
    #[arg(long, value_enum, default_value_t = Template::Fanout)]
    pub template: Template,
    /// Where to create the crate's directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub path: Option<PathBuf>,
    /// Depend on the ferry crate at this path (the directory holding its `Cargo.toml`).
    #[arg(long, value_name = "PATH")]
    pub ferry_path: Option<PathBuf>,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    name::check(&args.name)?;
    let dir = match &args.path {
        Some(parent) => parent.join(&args.name),
        None => PathBuf::from(&args.name),
    };
    let ferry = ferry_dependency(args.ferry_path.as_deref())?;
    let values = template::Values {
        name: args.name.clone(),
        ident: name::ident(&args.name),
        ferry: ferry.line(),
    };
    let created = create_dir(&dir)?;
    let written = args
        .template
        .files()
        .into_iter()
        .try_for_each(|file| write(&dir, file.path, &values.render(file.text)));
    if let Err(error) = written {
        if created {
            let _ = std::fs::remove_dir_all(&dir);
        }
        return Err(error);
    }

    println!(
        "created `{}` ({} template) in {}, depending on {}",
        args.name,
        args.template.name(),
        dir.display(),
        ferry.describe()
    );
    if let Some(workspace) = outside_its_workspace(&dir) {
        eprintln!(
            "note: `{}` lies under the cargo workspace `{workspace}`, which does not list it, so cargo refuses to build it: add it to that workspace's `members` (or `exclude`), or create it elsewhere with `--path`",
            dir.display()
        );
    }
    println!("next:\n  cd {}", dir.display());
    for (command, what) in args.template.next_steps() {
        println!("  {command:<34}# {what}");
    }
    Ok(())
}

/// The crate's `ferry` dependency.
#[derive(Debug)]
enum Ferry {
    Path(PathBuf),
    Version(&'static str),
}

impl Ferry {
    /// The line under `[dependencies]`.
    fn line(&self) -> String {
        match self {
            // A JSON string is a TOML basic string: the same escapes for `"`, `\` and controls.
            Self::Path(path) => format!(
                "ferry = {{ path = {} }}",
                serde_json::Value::from(path.display().to_string())
            ),
            Self::Version(version) => format!("ferry = \"{version}\""),
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Path(path) => format!("ferry at `{}`", path.display()),
            Self::Version(version) => format!("ferry {version} from crates.io"),
        }
    }
}

/// `--ferry-path`, else the ferry source this command was built from, else this version.
fn ferry_dependency(path: Option<&Path>) -> anyhow::Result<Ferry> {
    if let Some(path) = path {
        let dir = path
            .canonicalize()
            .with_context(|| format!("cannot find the ferry crate at `{}`", path.display()))?;
        if !is_ferry_crate(&dir) {
            bail!(
                "`{}` is not the ferry crate: it has no `Cargo.toml` with `name = \"ferry\"`",
                path.display()
            );
        }
        return Ok(Ferry::Path(dir));
    }
    let source = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../ferry"));
    match source.canonicalize() {
        Ok(dir) if is_ferry_crate(&dir) => Ok(Ferry::Path(dir)),
        _ => Ok(Ferry::Version(env!("CARGO_PKG_VERSION"))),
    }
}

fn is_ferry_crate(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("Cargo.toml")).is_ok_and(|manifest| {
        manifest
            .lines()
            .any(|line| line.replace(' ', "") == "name=\"ferry\"")
    })
}

/// Creates `dir`, or takes it when it is an empty directory; says whether it was created.
fn create_dir(dir: &Path) -> anyhow::Result<bool> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                bail!(
                    "`{}` already exists and is not empty; choose another name or `--path`",
                    dir.display()
                );
            }
            Ok(false)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create `{}`", dir.display()))?;
            Ok(true)
        }
        Err(_) if dir.exists() => bail!(
            "`{}` already exists and is not a directory; choose another name or `--path`",
            dir.display()
        ),
        Err(error) => Err(error).with_context(|| format!("cannot read `{}`", dir.display())),
    }
}

fn write(dir: &Path, relative: &str, text: &str) -> anyhow::Result<()> {
    let path = dir.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create `{}`", parent.display()))?;
    }
    std::fs::write(&path, text).with_context(|| format!("cannot write `{}`", path.display()))
}

/// The manifest of the cargo workspace that `dir` lies under without being listed (a new crate
/// inside a clone of ferry, say), as `cargo locate-project` reports it: it reads manifests only.
fn outside_its_workspace(dir: &Path) -> Option<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = std::process::Command::new(cargo)
        .args(["locate-project", "--workspace", "--message-format", "plain"])
        .current_dir(dir)
        .output()
        .ok()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.success() || !stderr.contains("believes it's in a workspace") {
        return None;
    }
    stderr
        .lines()
        .find_map(|line| line.trim().strip_prefix("workspace:"))
        .map(|manifest| manifest.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dependency_line_is_valid_toml_for_any_path() {
        let path = Ferry::Path(PathBuf::from(r#"/home/a "b"\c/ferry"#));
        assert_eq!(
            path.line(),
            r#"ferry = { path = "/home/a \"b\"\\c/ferry" }"#
        );
        let version = Ferry::Version("0.1.0");
        assert_eq!(version.line(), r#"ferry = "0.1.0""#);
    }

    #[test]
    fn the_ferry_this_command_was_built_from_is_the_default() {
        let Ferry::Path(dir) = ferry_dependency(None).unwrap() else {
            panic!("the source is here, so the dependency is a path");
        };
        assert!(
            dir.is_absolute() && dir.ends_with("crates/ferry"),
            "{}",
            dir.display()
        );
    }
}
