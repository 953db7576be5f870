//! The accounts example's router, for tests that drive it through every platform.

fn main() -> std::process::ExitCode {
    ferry::web::serve(accounts::router())
}
