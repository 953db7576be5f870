//! Start-up: one binary is the host program, a worker, or a manifest printer, decided by its
//! [`Role`] before any user code runs.

use std::future::Future;
use std::process::{ExitCode, Termination};

use crate::role::{Role, enter};
use crate::{Context, Registry};

/// Runs a ferry program: as the host it builds a [`Context`] on the backend `--backend` names
/// (else `FERRY_BACKEND`, else `local`) and runs `main` with it; as a worker it serves the
/// program's functions; asked for the manifest it prints it. `#[ferry::main]` expands to this.
///
/// The host reads ferry's own options from the command line, whatever else it holds:
/// `--backend <inline|local|http|openwhisk|lambda>`, and `--help`, which lists them. A program
/// with options of its own takes them through [`run_with_args`], which puts both in one
/// `--help`.
///
/// `main` runs as a task on the multi-thread runtime rather than on the thread that started
/// it, so its invocations are sent and answered on the runtime's own threads; hence its future
/// must be `Send` (on this machine that halves the local platform's round trip, see
/// docs/benchmarks.md). A panic in `main` propagates as it would from `fn main`.
///
/// Returns the exit code: `main`'s (as `fn main` would), or 2 when start-up fails (duplicate
/// function ids, a bad setting).
pub fn run<F, Fut>(main: F) -> ExitCode
where
    F: FnOnce(Context) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: Termination + Send,
{
    start(HostOptions::from_command_line, move |ctx, ()| main(ctx))
}

/// [`run`] for a program with command-line options of its own: `A` (a `clap::Parser`) is
/// parsed together with ferry's `--backend`, and `--help` shows both.
/// `#[ferry::main] async fn main(ctx: Context, args: A)` expands to this.
///
/// ```no_run
/// #[derive(clap::Parser)]
/// struct Args {
///     /// How many tasks.
///     #[arg(long, default_value_t = 8)]
///     tasks: u32,
/// }
///
/// #[ferry::main]
/// async fn main(ctx: ferry::Context, args: Args) -> ferry::Result<()> {
///     println!("{} tasks on {}", args.tasks, ctx.backend_kind());
///     Ok(())
/// }
/// ```
pub fn run_with_args<A, F, Fut>(main: F) -> ExitCode
where
    A: clap::Parser + Send + 'static,
    F: FnOnce(Context, A) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: Termination + Send,
{
    start(HostOptions::with_program_args::<A>, main)
}

// ferry's own command-line options, read by every host. (A plain comment: a doc comment would
// become the `about` of every program's command.)
#[derive(Debug, Clone, clap::Args)]
struct HostOptions {
    /// Where functions run [default: `FERRY_BACKEND`, else local]
    #[arg(
        long,
        value_enum,
        value_name = "BACKEND",
        help_heading = "ferry options"
    )]
    backend: Option<crate::BackendKind>,
}

impl HostOptions {
    /// ferry's options among the program's arguments; the others are the program's own business.
    fn from_command_line() -> (Self, ()) {
        let mut args = std::env::args_os();
        let mut ours = vec![args.next().unwrap_or_default()];
        while let Some(arg) = args.next() {
            let text = arg.to_string_lossy();
            if text == "--backend" {
                ours.push(arg);
                ours.extend(args.next());
            } else if text.starts_with("--backend=") || text == "--help" || text == "-h" {
                ours.push(arg);
            }
        }
        let command = <Self as clap::Args>::augment_args(program_command());
        let matches = command.get_matches_from(ours);
        (Self::from_matches(&matches), ())
    }

    /// ferry's options and the program's, parsed as one command line.
    fn with_program_args<A: clap::Parser>() -> (Self, A) {
        let command = <Self as clap::Args>::augment_args(A::command());
        let matches = command.get_matches();
        let args = A::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        (Self::from_matches(&matches), args)
    }

    fn from_matches(matches: &clap::ArgMatches) -> Self {
        <Self as clap::FromArgMatches>::from_arg_matches(matches).unwrap_or_else(|e| e.exit())
    }

    fn backend(&self) -> crate::Result<crate::BackendKind> {
        self.backend.map_or_else(crate::BackendKind::from_env, Ok)
    }
}

/// The backend a host without options of its own was asked for on its command line (or
/// `FERRY_BACKEND`); `--help` prints ferry's options and exits. What `web::serve` reads.
pub(crate) fn backend_from_command_line() -> crate::Result<crate::BackendKind> {
    HostOptions::from_command_line().0.backend()
}

/// The command of a program that has no options of its own: named after its executable.
fn program_command() -> clap::Command {
    let name = std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|path| Some(path.file_name()?.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "program".to_owned());
    // Built once per process: leaking the name is what gives it the `'static` clap wants.
    clap::Command::new(&*Box::leak(name.into_boxed_str()))
        .about("A ferry program: its functions run on the backend chosen below.")
}

/// Everything `run` and `run_with_args` share: the role, then serving, or the host's `main`.
fn start<A, F, Fut>(parse: fn() -> (HostOptions, A), main: F) -> ExitCode
where
    A: Send + 'static,
    F: FnOnce(Context, A) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: Termination + Send,
{
    let registry = match Registry::global() {
        Ok(registry) => registry,
        Err(error) => return fail(&error),
    };
    let role = match entry() {
        Ok(role) => role,
        Err(error) => return fail(&error),
    };
    match role {
        Role::Manifest => print_manifest(false),
        #[cfg(feature = "local")]
        Role::LocalWorker => crate::platform::local::server::serve(registry),
        #[cfg(feature = "openwhisk")]
        Role::OpenWhisk => crate::platform::openwhisk::server::serve(registry),
        #[cfg(feature = "openwhisk")]
        Role::ActionLoop => crate::platform::openwhisk::actionloop::serve(registry),
        #[cfg(feature = "http")]
        Role::Http => crate::platform::http::server::serve(registry),
        #[cfg(feature = "lambda")]
        Role::Lambda => crate::platform::lambda::server::serve(registry),
        #[allow(unreachable_patterns)]
        Role::LocalWorker | Role::OpenWhisk | Role::ActionLoop | Role::Http | Role::Lambda => {
            fail(&crate::Error::config(format!(
                "this program was built without the ferry feature that serves {role:?}"
            )))
        }
        Role::Host => {
            // Only a host reads the command line: a worker's belongs to its platform.
            let (options, args) = parse();
            let backend = match options.backend() {
                Ok(backend) => backend,
                Err(error) => return fail(&error),
            };
            let runtime = match crate::runtime::serve::runtime() {
                Ok(runtime) => runtime,
                Err(error) => {
                    eprintln!("error: cannot start the async runtime: {error}");
                    return ExitCode::from(2);
                }
            };
            let code = runtime.block_on(async {
                let ctx = match Context::new(backend) {
                    Ok(ctx) => ctx,
                    Err(error) => return fail(&error),
                };
                let code = match tokio::spawn(main(ctx.clone(), args)).await {
                    Ok(output) => output.report(),
                    Err(e) => std::panic::resume_unwind(e.into_panic()),
                };
                ctx.shutdown().await;
                if report_wanted() {
                    eprint!(
                        "{}",
                        crate::metrics::report(ctx.backend_kind(), &ctx.stats().functions)
                    );
                }
                code
            });
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
            code
        }
    }
}

fn fail(error: &crate::Error) -> ExitCode {
    eprintln!("error: {error}");
    ExitCode::from(2)
}

/// Prints the manifest; `web` marks a program that serves a web app.
pub(crate) fn print_manifest(web: bool) -> ExitCode {
    match crate::Registry::global().map(crate::Registry::manifest) {
        Ok(mut manifest) => {
            manifest.web = web;
            let json = serde_json::to_string_pretty(&manifest).unwrap_or_default();
            // The marker lets tools recognise a ferry program before running it.
            let _ = std::hint::black_box(crate::manifest::PROGRAM_MARKER);
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(error) => fail(&error),
    }
}

/// `FERRY_LOG` (e.g. `debug`, `ferry=trace`) turns on logs to stderr; quiet otherwise. At
/// `debug` every invocation is a span, logged when it closes with its timings.
fn init_tracing() -> crate::Result<()> {
    let Some(filter) = crate::config::LOG.text() else {
        return Ok(());
    };
    let filter = tracing_subscriber::EnvFilter::try_new(&filter)
        .map_err(|e| crate::Error::config(format!("`FERRY_LOG` is not a log filter: {e}")))?;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
    Ok(())
}

/// What every entry into ferry does first ([`run`], [`crate::web::serve`]): logs, every
/// setting checked, and the role this process takes, recorded before any user code runs.
pub(crate) fn entry() -> crate::Result<Role> {
    init_tracing()?;
    crate::config::check()?;
    let role = Role::from_env().map_err(crate::Error::config)?;
    enter(role);
    Ok(role)
}

/// `FERRY_REPORT=1` prints the run report on stderr when the host's `main` returns: per
/// function, calls, errors, cold starts, p50/p99 and the estimated Lambda GB-seconds and cost.
fn report_wanted() -> bool {
    crate::config::REPORT.flag().unwrap_or(false)
}
