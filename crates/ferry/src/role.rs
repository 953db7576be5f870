//! What this process is: the host program, a worker of some platform, or a manifest printer,
//! decided by `FERRY_ROLE` (or by what started it) before any user code runs; and the guard that
//! keeps a process started as a worker from starting hosts or workers of its own.

use std::sync::OnceLock;

use crate::Error;

/// Environment variable that selects the role of the process.
pub const ROLE_VAR: &str = crate::config::ROLE.name;
pub(crate) const ROLE_LOCAL_WORKER: &str = "local-worker";
/// Set by the local platform on the workers it starts: a process whose parent is not that host
/// merely inherited the role (a function started a program) and runs as a host.
pub(crate) const HOST_PID_VAR: &str = crate::config::LOCAL_HOST_PID.name;
pub(crate) const ROLE_MANIFEST: &str = "manifest";
pub(crate) const ROLE_OPENWHISK: &str = "openwhisk";
pub(crate) const ROLE_ACTIONLOOP: &str = "actionloop";
pub(crate) const ROLE_HTTP: &str = "http";
pub(crate) const ROLE_LAMBDA: &str = "lambda";

/// What this process was started as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Role {
    /// The program itself: runs `main` with a [`Context`](crate::Context).
    Host,
    /// A worker of the embedded local platform (`FERRY_ROLE=local-worker`).
    LocalWorker,
    /// Prints the manifest as JSON and exits (`FERRY_ROLE=manifest`).
    Manifest,
    /// Serves the OpenWhisk Action Interface on `$PORT` (`FERRY_ROLE=openwhisk`).
    OpenWhisk,
    /// Runs as an executable under OpenWhisk's ActionLoop proxy (`FERRY_ROLE=actionloop`, or
    /// detected: fd 3 is a pipe and `__OW_*` variables are set).
    ActionLoop,
    /// Serves every function over HTTP on `$PORT` (`FERRY_ROLE=http`).
    Http,
    /// The AWS Lambda custom runtime (`FERRY_ROLE=lambda`, or detected: `AWS_LAMBDA_RUNTIME_API`
    /// is set).
    Lambda,
}

impl Role {
    /// The role named by `FERRY_ROLE` (unset or empty: the host).
    pub fn from_env() -> Result<Self, String> {
        let plain = |error: Error| match error.kind() {
            crate::ErrorKind::Config { message } => message.clone(),
            _ => error.to_string(),
        };
        match crate::config::ROLE.word().map_err(plain)? {
            None if crate::platform::lambda::started_by_lambda() => Ok(Self::Lambda),
            None if crate::platform::openwhisk::started_by_proxy() => Ok(Self::ActionLoop),
            None | Some("host") => Ok(Self::Host),
            Some(ROLE_LOCAL_WORKER) if inherited_worker_role() => Ok(Self::Host),
            Some(ROLE_LOCAL_WORKER) => Ok(Self::LocalWorker),
            Some(ROLE_MANIFEST) => Ok(Self::Manifest),
            Some(ROLE_OPENWHISK) => Ok(Self::OpenWhisk),
            Some(ROLE_ACTIONLOOP) => Ok(Self::ActionLoop),
            Some(ROLE_HTTP) => Ok(Self::Http),
            Some(ROLE_LAMBDA) => Ok(Self::Lambda),
            Some(other) => Err(plain(crate::config::ROLE.invalid(other))),
        }
    }
}

/// The role this process took at ferry's entry ([`run`] or [`crate::web::serve`]), before any
/// user code ran; unset in a program whose `main` never handed over to ferry.
static ENTRY: OnceLock<Role> = OnceLock::new();

/// Records the role this process entered ferry as.
pub(crate) fn enter(role: Role) {
    let _ = ENTRY.set(role);
}

/// Whether this process may build a context on the local platform (`local`) or another
/// backend. A process started as a worker never starts hosts or workers of its own: that is how
/// a `main` that is not ferry's (`#[tokio::main]`, a test harness) would multiply processes,
/// each worker running `main` again as a new host.
pub(crate) fn check_may_host(local: bool, worker_exe_given: bool) -> crate::Result<()> {
    match ENTRY.get() {
        Some(Role::Host) => Ok(()),
        Some(_) if local => Err(Error::config(
            "a worker cannot start a local platform of its own: invoke functions through the \
             `Context` the function receives (a `ctx: Context` parameter, or a web handler's \
             `ctx: ferry::Context` argument)",
        )),
        Some(_) => Ok(()),
        None if started_as_local_worker() => {
            let error = Error::config(format!(
                "`{}` was started as a worker of the local platform, but its `main` does not hand \
                 over to ferry, so it ran as a new host instead of serving functions: make `main` \
                 `#[ferry::main] async fn main(ctx: Context)` (or call `ferry::run`) instead of \
                 `#[tokio::main]`, or point `LocalConfig::worker_exe` at a ferry program",
                this_executable()
            ));
            crate::platform::local::refuse_as_worker(&error);
            Err(error)
        }
        None if local && !worker_exe_given => Err(Error::config(format!(
            "the local platform starts its workers from this executable (`{}`), whose `main` is \
             not ferry's, so each worker would run `main` again instead of serving functions: \
             make `main` `#[ferry::main]` (or call `ferry::run`); in an integration test set \
             `LocalConfig::default().worker_exe(env!(\"CARGO_BIN_EXE_<your binary>\"))`, or use \
             `Context::inline()`",
            this_executable()
        ))),
        None => Ok(()),
    }
}

fn this_executable() -> String {
    std::env::current_exe().map_or_else(|_| "this program".to_owned(), |p| p.display().to_string())
}

/// Whether the local platform started this process as one of its workers (and the role was not
/// merely inherited through a function's child).
fn started_as_local_worker() -> bool {
    crate::config::ROLE.text().as_deref() == Some(ROLE_LOCAL_WORKER) && !inherited_worker_role()
}

/// Whether `FERRY_ROLE=local-worker` reached this process through a worker's child rather than
/// from the platform itself.
fn inherited_worker_role() -> bool {
    let Ok(Some(host)) = crate::config::LOCAL_HOST_PID.number::<u32>() else {
        return false;
    };
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    u32::try_from(parent).ok() != Some(host)
}
