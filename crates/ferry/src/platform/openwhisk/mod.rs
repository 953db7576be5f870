//! Apache OpenWhisk: [`client`] is the `openwhisk` backend (the controller's REST API);
//! [`server`] the Action Interface (`/init` and `/run`, `FERRY_ROLE=openwhisk`) and
//! [`actionloop`] the executable under the ActionLoop proxy.

#[cfg(feature = "openwhisk")]
pub(crate) mod actionloop;
#[cfg(feature = "openwhisk")]
pub(crate) mod client;
#[cfg(feature = "openwhisk")]
pub(crate) mod server;

#[cfg(feature = "openwhisk")]
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

/// An activation's result is a JSON object: an output that is not one travels as
/// `{"result": output}`, and so does an object whose only key is `result`, so that taking the
/// `result` out of a one-key `{"result": …}` always gives the output back.
pub(crate) fn wrap_result(output: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match output {
        serde_json::Value::Object(object) if !is_wrapped(&object) => object,
        other => serde_json::Map::from_iter([("result".to_owned(), other)]),
    }
}

/// The output an activation's result holds (see [`wrap_result`]).
pub(crate) fn unwrap_result(result: &[u8]) -> Option<Vec<u8>> {
    match serde_json::from_slice::<serde_json::Value>(result) {
        Ok(serde_json::Value::Object(mut object)) if is_wrapped(&object) => {
            serde_json::to_vec(&object.remove("result")?).ok()
        }
        _ => None,
    }
}

fn is_wrapped(object: &serde_json::Map<String, serde_json::Value>) -> bool {
    object.len() == 1 && object.contains_key("result")
}
