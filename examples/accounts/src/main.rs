//! The accounts service: `cargo run --release -p accounts` serves it on `$PORT` (8080); as a
//! Lambda `bootstrap` or with `FERRY_ROLE=openwhisk` the same router serves those platforms.

fn main() -> std::process::ExitCode {
    ferry::web::serve(accounts::router())
}
