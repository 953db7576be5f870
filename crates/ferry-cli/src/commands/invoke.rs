//! `ferry invoke <function>`: one invocation on any backend, with JSON arguments, printing the
//! JSON output.
//!
//! The backend comes from `--backend` or `FERRY_BACKEND` and its usual settings (`FERRY_HTTP_URL`,
//! a wskprops file, AWS credentials…). `local` runs the function in a worker of `--program`;
//! `inline` cannot run here: the function lives in the program, not in `ferry`.
//!
//! Without `--program`, the program is the one the last `ferry build` built in the current crate
//! (`target/ferry/<program>/build.json`).

use std::io::Read as _;
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use ferry::{BackendKind, Codec, Context, LambdaConfig, LocalConfig, OpenWhiskConfig};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The function's name or id.
    pub function: String,
    /// The arguments as a JSON object keyed by parameter name (default `{}`).
    #[arg(long, conflicts_with = "file")]
    pub data: Option<String>,
    /// Read the arguments from a file (`-` for stdin).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Where the function runs: `local`, `http`, `openwhisk` or `lambda` (default
    /// `FERRY_BACKEND`, else `local`).
    #[arg(long)]
    pub backend: Option<String>,
    /// The ferry program whose function it is: needed by `local` and `--app`, and checks the
    /// name elsewhere (default: what the last `ferry build` of the current crate built).
    #[arg(long)]
    pub program: Option<PathBuf>,
    /// Invoke the function `ferry deploy` deployed under this app (`openwhisk`, `lambda`): its
    /// name comes from the program's manifest.
    #[arg(long)]
    pub app: Option<String>,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let arguments = arguments(args)?;
    let backend = match &args.backend {
        Some(name) => name.parse::<BackendKind>()?,
        None => BackendKind::from_env()?,
    };
    let built = match &args.program {
        Some(_) => None,
        None => last_build(),
    };
    let program = args
        .program
        .clone()
        .or_else(|| built.as_ref().and_then(|(info, _)| info.binary.clone()));
    if let (Some((info, _)), Some(program)) = (&built, &program) {
        eprintln!(
            "note: `{}` of package `{}`, from the last `ferry build` here",
            program.display(),
            info.package
        );
    }
    if args.app.is_some() && program.is_none() {
        bail!(
            "`--app` finds deployed functions by the program's manifest: give `--program <binary>`, or run `ferry build` in the program's crate first"
        );
    }
    // In a crate that was built, a deployed function is found as `ferry deploy` named it by
    // default: under the program's name, unless `--app` (or `FERRY_APP`) says otherwise.
    let app = args.app.clone().or_else(|| {
        let deployed = matches!(backend, BackendKind::Lambda | BackendKind::OpenWhisk);
        let app_set = ferry::config::APP.text().is_some();
        built
            .as_ref()
            .filter(|_| deployed && !app_set)
            .map(|(info, _)| info.program.clone())
    });
    let mut deployed_name = None;
    if let Some(program) = &program {
        let manifest = match &built {
            Some((_, manifest)) => manifest.clone(),
            None => super::manifest::read(program)?,
        };
        let found = manifest
            .functions
            .iter()
            .find(|f| f.name == args.function || f.id == args.function);
        if let (Some(app), Some(function)) = (&app, found) {
            let handler = crate::naming::handler(&manifest, function);
            let hash = crate::naming::config_hash(&function.config, handler);
            deployed_name = Some(crate::naming::lambda_name(app, handler, &hash)?);
        }
        if found.is_none() {
            let names: Vec<String> = manifest
                .functions
                .iter()
                .map(|f| format!("`{}`", f.name))
                .collect();
            bail!(
                "`{}` has no function `{}`; it has {}",
                program.display(),
                args.function,
                names.join(", ")
            );
        }
    }
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let output = runtime.block_on(async {
        let ctx = match (backend, deployed_name) {
            (BackendKind::OpenWhisk, Some(action)) => {
                Context::openwhisk(OpenWhiskConfig::from_env()?.actions(action))?
            }
            (BackendKind::Lambda, Some(function)) => {
                Context::lambda(LambdaConfig::load().await?.route(&args.function, function))?
            }
            (other, Some(_)) => {
                bail!("`--app` names deployed functions on `openwhisk` and `lambda`, not `{other}`")
            }
            (BackendKind::Inline, None) => bail!(
                "`inline` runs functions inside the calling program; use `--backend local --program <binary>`"
            ),
            (BackendKind::Local, None) => {
                let Some(program) = &program else {
                    bail!(
                        "the local backend needs `--program <binary>` (or a `ferry build` of the current crate): the workers run it"
                    );
                };
                Context::local(LocalConfig::from_env()?.worker_exe(program))?
            }
            (other, None) => Context::new(other)?,
        };
        let output = ctx.invoke(&args.function, Codec::Json, arguments).await;
        ctx.shutdown().await;
        output.map_err(|error| explain(error, backend, app.as_deref()))
    })?;
    match serde_json::from_slice::<serde_json::Value>(&output) {
        Ok(value) => println!("{}", serde_json::to_string_pretty(&value)?),
        Err(_) => println!("{}", String::from_utf8_lossy(&output)),
    }
    Ok(())
}

/// The program and manifest of the last `ferry build` in the current crate, if there is one.
fn last_build() -> Option<(crate::artifacts::BuildInfo, ferry_core::Manifest)> {
    let dir = crate::program::ProgramArgs::default()
        .artifacts_dir()
        .ok()?;
    let artifacts = crate::artifacts::Artifacts::new(dir);
    Some((artifacts.build_info().ok()?, artifacts.manifest().ok()?))
}

/// The error with what to do about it: whose failure it was, and for a function the platform
/// does not know, how deployed functions are named.
fn explain(error: ferry::Error, backend: BackendKind, app: Option<&str>) -> anyhow::Error {
    use ferry::ErrorKind;
    let deployed = matches!(backend, BackendKind::Lambda | BackendKind::OpenWhisk);
    let hint = match (error.kind(), app) {
        (ErrorKind::UnknownFunction { .. }, None) if deployed => Some(
            "`ferry deploy` names functions `<app>-<function>-<config hash>`: give `--app <app>` (the program's name unless deployed with `--app`) with `--program <binary>`, or run `ferry invoke` in the program's crate after `ferry build`"
                .to_owned(),
        ),
        (ErrorKind::UnknownFunction { .. }, Some(app)) if deployed => Some(format!(
            "no function of app `{app}` is deployed under that name: `ferry ls --platform {backend}` shows what is, and `--app` names another app"
        )),
        (ErrorKind::UnknownFunction { .. }, _) => {
            Some("`ferry manifest <binary>` lists the program's functions".to_owned())
        }
        (
            ErrorKind::Platform { .. } | ErrorKind::Unavailable { .. } | ErrorKind::Throttled { .. },
            _,
        ) => Some("this is the platform's failure, not the function's".to_owned()),
        _ => None,
    };
    match hint {
        Some(hint) => anyhow::anyhow!("{error}\nhint: {hint}"),
        None => anyhow::Error::new(error),
    }
}

fn arguments(args: &Args) -> anyhow::Result<Vec<u8>> {
    let text = match (&args.data, &args.file) {
        (Some(data), _) => data.clone().into_bytes(),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut input = Vec::new();
            std::io::stdin()
                .read_to_end(&mut input)
                .context("cannot read the arguments from stdin")?;
            input
        }
        (None, Some(path)) => std::fs::read(path)
            .with_context(|| format!("cannot read the arguments from `{}`", path.display()))?,
        (None, None) => b"{}".to_vec(),
    };
    match serde_json::from_slice::<serde_json::Value>(&text) {
        Ok(serde_json::Value::Object(_)) => Ok(text),
        Ok(other) => {
            bail!("the arguments must be a JSON object keyed by parameter name, not `{other}`")
        }
        Err(e) => bail!("the arguments are not JSON: {e}"),
    }
}
