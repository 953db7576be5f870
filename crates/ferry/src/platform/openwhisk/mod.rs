//! Apache OpenWhisk: [`client`] is the `openwhisk` backend (the controller's REST API);
//! [`server`] the Action Interface (`/init` and `/run`, `FERRY_ROLE=openwhisk`) and
//! [`actionloop`] the executable under the ActionLoop proxy.

pub(crate) mod actionloop;
pub(crate) mod client;
pub(crate) mod server;

pub use self::client::OpenWhiskConfig;

/// OpenWhisk's default limit on an activation's parameters and result
/// (`whisk.activation.payload.max`, 1 MiB).
pub(crate) const MAX_PAYLOAD: usize = 1 << 20;

/// The ActionLoop proxy's result pipe.
pub(crate) const RESULT_FD: i32 = 3;

/// The line OpenWhisk waits for on both streams after each activation.
pub(crate) const ACTIVATION_SENTINEL: &str = "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX";

/// Whether this process looks started by the ActionLoop proxy: fd 3 is a pipe and the proxy's
/// `__OW_*` variables are set.
pub(crate) fn started_by_proxy() -> bool {
    let proxy_env = std::env::vars_os().any(|(key, _)| key.to_string_lossy().starts_with("__OW_"));
    proxy_env && fd_is_pipe(RESULT_FD)
}

fn fd_is_pipe(fd: i32) -> bool {
    // SAFETY: fstat only writes into the zeroed struct we own.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut stat) == 0 && (stat.st_mode & libc::S_IFMT) == libc::S_IFIFO
    }
}
