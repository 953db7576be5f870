//! The program as an ActionLoop executable (`exec` under OpenWhisk's official proxy):
//!
//! - with `__OW_WAIT_FOR_ACK` set, `{"ok":true}` on fd 3 first (never otherwise);
//! - then one JSON line per activation on stdin (`{"value": {...}, "action_name", ...}`), and one
//!   result line on fd 3 for every line, even an empty one or one that is not UTF-8, written after the function's stdout and stderr are flushed: an object
//!   output as it is, any other output as `{"result": output}`, a failure as `{"error": message}`;
//! - the other keys of each line become the invocation's `__OW_<KEY>` metadata
//!   ([`crate::Invocation::metadata`]), not process environment;
//! - the function is chosen by the runtime's one rule ([`crate::runtime`]): `FERRY_FUNCTION`,
//!   else the activation's `action_name` (last segment), else the program's only function;
//! - a sync body that overruns its timeout retires the executable: it answers that activation,
//!   then exits with status 2 so the proxy's container is replaced;
//! - nothing depends on `PATH` or any inherited variable: the proxy gives an almost empty
//!   environment. The proxy itself writes the sentinels and runs one activation at a time.

use std::fs::File;
use std::io::{BufRead, BufWriter, Write};
use std::os::fd::FromRawFd;
use std::process::ExitCode;

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::RESULT_FD;
use crate::Registry;
use crate::runtime::Runtime;

pub(crate) fn serve(registry: &'static Registry) -> ExitCode {
    serve_lines(registry, |runtime| {
        move |line: String| {
            let runtime = runtime.clone();
            async move { activate(&runtime, &line).await }
        }
    })
}

/// The ActionLoop protocol around `handler`: checks fd 3, acknowledges when asked, builds the
/// worker runtime, then answers every stdin line with the JSON value `handler(runtime)` makes of
/// it, one line on fd 3 after the activation's stdout and stderr are flushed, until stdin ends or
/// the runtime retires. Shared by the functions ([`serve`]) and a web app's router
/// ([`crate::web`]).
pub(crate) fn serve_lines<H, F>(
    registry: &'static Registry,
    handler: impl FnOnce(Arc<Runtime>) -> H,
) -> ExitCode
where
    H: FnMut(String) -> F,
    F: std::future::Future<Output = Value>,
{
    // SAFETY: F_GETFD only inspects the descriptor table.
    if unsafe { libc::fcntl(RESULT_FD, libc::F_GETFD) } < 0 {
        eprintln!("error: FERRY_ROLE=actionloop expects the proxy's result pipe on fd 3");
        return ExitCode::from(2);
    }
    // SAFETY: fd 3 is open (checked above) and is the proxy's result pipe, ours alone.
    let mut results = BufWriter::new(unsafe { File::from_raw_fd(RESULT_FD) });
    let runtime = match crate::runtime::serve::runtime() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    if std::env::var_os("__OW_WAIT_FOR_ACK").is_some_and(|v| !v.is_empty())
        && answer(&mut results, &json!({ "ok": true })).is_err()
    {
        return ExitCode::from(2);
    }
    let pipeline = match crate::runtime::serve::worker_context() {
        Ok(ctx) => Arc::new(Runtime::new(registry, ctx)),
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let mut handler = handler(pipeline.clone());
    let stdin = std::io::stdin();
    // Every line gets exactly one answer, whatever it holds: the proxy hands each answer to the
    // caller whose line it sent last, so a line left unanswered would shift every later answer
    // to the wrong caller.
    for line in stdin.lock().split(b'\n') {
        let Ok(line) = line else { break };
        let result = match String::from_utf8(line) {
            Ok(line) if line.trim().is_empty() => json!({ "error": "the activation is empty" }),
            Ok(line) => runtime.block_on(handler(line)),
            Err(e) => {
                json!({ "error": format!("the activation is not utf-8: {}", e.utf8_error()) })
            }
        };
        // The activation's own logs come first: the proxy writes its sentinels after our answer.
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        if answer(&mut results, &result).is_err() {
            return ExitCode::from(2);
        }
        if let Some(reason) = pipeline.retired_because() {
            eprintln!("error: actionloop executable retired: {reason}");
            // The stuck thread would keep the runtime from shutting down: leave it behind.
            runtime.shutdown_background();
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

fn answer(results: &mut BufWriter<File>, value: &Value) -> std::io::Result<()> {
    serde_json::to_writer(&mut *results, value)?;
    results.write_all(b"\n")?;
    results.flush()
}

/// Runs the function activation `line` names (see [`Runtime::choose`]) and returns its answer.
pub(crate) async fn activate(runtime: &Runtime, line: &str) -> Value {
    let body: Map<String, Value> = match serde_json::from_str(line) {
        Ok(Value::Object(body)) => body,
        Ok(_) => return json!({ "error": "the activation must be a JSON object" }),
        Err(e) => return json!({ "error": format!("invalid activation: {e}") }),
    };
    let action_name = body
        .get("action_name")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let registration = match runtime.choose(&[(
        "the activation's `action_name`",
        action_name.as_deref().unwrap_or_default(),
    )]) {
        Ok(registration) => registration,
        Err(error) => return json!({ "error": error.to_string() }),
    };
    super::server::run_activation(runtime, registration, body)
        .await
        .unwrap_or_else(|failure| super::server::error_result(&failure))
}
