//! What every platform's server shares: where to listen, how to stop, the async runtime a server
//! runs on, and the context its functions invoke functions with.

use std::net::SocketAddr;

/// The context functions served by this worker invoke functions with, and forward chained flow
/// stages with: the backend `FERRY_BACKEND` names (`http`, `openwhisk` or `lambda`, configured
/// from the environment as for a host), or else this worker itself.
pub(crate) fn worker_context() -> crate::Result<crate::Context> {
    use crate::BackendKind;
    match BackendKind::named()? {
        Some(kind @ (BackendKind::Http | BackendKind::OpenWhisk | BackendKind::Lambda)) => {
            crate::Context::new(kind)
        }
        _ => Ok(crate::Context::inline()),
    }
}

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

/// `FERRY_LISTEN` (`host:port`), else `0.0.0.0:$PORT`, else `0.0.0.0:8080`.
pub(crate) fn listen_address() -> Result<SocketAddr, String> {
    if let Some(listen) = crate::config::LISTEN.text() {
        return listen
            .parse()
            .map_err(|_| crate::config::LISTEN.invalid(&listen).to_string());
    }
    let port = match std::env::var("PORT") {
        Ok(port) => port
            .trim()
            .parse::<u16>()
            .map_err(|_| format!("`PORT` must be a port number, not `{port}`"))?,
        Err(_) => 8080,
    };
    Ok(SocketAddr::from(([0, 0, 0, 0], port)))
}

/// Pending connections the kernel queues for a server: a fan-out opens hundreds of connections
/// at once, and tokio's default of 1024 overflows into SYN retries that cost a second each.
const LISTEN_BACKLOG: u32 = 8192;

/// Binds a server's listener, with a backlog sized for fan-outs.
pub(crate) fn bind(address: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if address.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.set_nodelay(true)?;
    socket.bind(address)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Says where the server listens, on stderr: with port 0 in `FERRY_LISTEN` this is how a
/// supervisor (or a test) learns the port.
pub(crate) fn announce(listener: &tokio::net::TcpListener) -> std::io::Result<()> {
    eprintln!("ferry: listening on http://{}", listener.local_addr()?);
    Ok(())
}

/// Runs a server as a task on a fresh multi-thread runtime (so its work stays on runtime
/// threads) and turns how it ended into the process's exit code: 0, or 2 with the error on
/// stderr. Threads still running a timed-out sync body are left behind, not waited for.
pub(crate) fn run_to_exit<F, E>(what: &str, server: F) -> std::process::ExitCode
where
    F: std::future::Future<Output = Result<(), E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let runtime = match crate::runtime::serve::runtime() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return std::process::ExitCode::from(2);
        }
    };
    let outcome = runtime.block_on(async move { tokio::spawn(server).await });
    // A sync body past its timeout may still hold a blocking thread: do not wait for it.
    runtime.shutdown_background();
    match outcome {
        Ok(Ok(())) => std::process::ExitCode::SUCCESS,
        Ok(Err(error)) => {
            eprintln!("error: {what}: {error}");
            std::process::ExitCode::from(2)
        }
        Err(error) => {
            eprintln!("error: {what} stopped: {error}");
            std::process::ExitCode::from(2)
        }
    }
}

/// A multi-thread runtime with tokio's default threads (one per core, or
/// `TOKIO_WORKER_THREADS`).
pub(crate) fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    runtime_with_threads(None)
}

/// A multi-thread runtime; `None` threads means tokio's default.
pub(crate) fn runtime_with_threads(
    threads: Option<usize>,
) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = threads {
        builder.worker_threads(threads.max(1));
    }
    builder.enable_all().thread_name("ferry").build()
}
