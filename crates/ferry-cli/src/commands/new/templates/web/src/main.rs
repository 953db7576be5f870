//! Serves the app: on `$PORT` (8080) when run here, or as the platform that started it expects.
//!
//! ```text
//! cargo run
//! curl localhost:8080/hello/ferry        # hello, ferry!
//! curl localhost:8080/squares/4          # [1,4,9,16]
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    ferry::web::serve({{crate}}::app())
}
