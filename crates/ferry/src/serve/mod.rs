//! Worker side: serving this program's functions behind a platform's interface.
//!
//! - `local`: the embedded platform's workers (a Unix socket on fd 3);
//! - `openwhisk`: the OpenWhisk Action Interface (`/init` and `/run` over HTTP);
//! - `actionloop`: an executable under OpenWhisk's ActionLoop proxy (stdin lines, fd 3 results).

pub(crate) mod actionloop;
pub(crate) mod local;
pub(crate) mod openwhisk;

/// Resolves on SIGTERM (how platforms stop a container) or Ctrl-C.
pub(crate) async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = terminate => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
