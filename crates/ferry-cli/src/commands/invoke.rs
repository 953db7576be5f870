//! `ferry invoke <function>`: one invocation on any backend, with JSON arguments, printing the
//! JSON output.
//!
//! The backend comes from `--backend` or `FERRY_BACKEND` and its usual settings (`FERRY_HTTP_URL`,
//! a wskprops file, AWS credentials…). `local` runs the function in a worker of `--program`;
//! `inline` cannot run here: the function lives in the program, not in `ferry`.

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
    /// name elsewhere.
    #[arg(long)]
    pub program: Option<PathBuf>,
    /// Invoke the function `ferry deploy` deployed under this app (`openwhisk`, `lambda`): its
    /// name comes from the program's manifest.
    #[arg(long, requires = "program")]
    pub app: Option<String>,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let arguments = arguments(args)?;
    let backend = match &args.backend {
        Some(name) => name.parse::<BackendKind>()?,
        None => BackendKind::from_env()?,
    };
    let mut deployed_name = None;
    if let Some(program) = &args.program {
        let manifest = super::manifest::read(program)?;
        let found = manifest
            .functions
            .iter()
            .find(|f| f.name == args.function || f.id == args.function);
        if let (Some(app), Some(function)) = (&args.app, found) {
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
                Context::lambda(LambdaConfig::from_env()?.route(&args.function, function))?
            }
            (other, Some(_)) => {
                bail!("`--app` names deployed functions on `openwhisk` and `lambda`, not `{other}`")
            }
            (BackendKind::Inline, None) => bail!(
                "`inline` runs functions inside the calling program; use `--backend local --program <binary>`"
            ),
            (BackendKind::Local, None) => {
                let Some(program) = &args.program else {
                    bail!("the local backend needs `--program <binary>`: the workers run it");
                };
                Context::local(LocalConfig::from_env()?.worker_exe(program))?
            }
            (other, None) => Context::new(other)?,
        };
        let output = ctx.invoke(&args.function, Codec::Json, arguments).await;
        ctx.shutdown().await;
        Ok(output?)
    })?;
    match serde_json::from_slice::<serde_json::Value>(&output) {
        Ok(value) => println!("{}", serde_json::to_string_pretty(&value)?),
        Err(_) => println!("{}", String::from_utf8_lossy(&output)),
    }
    Ok(())
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
