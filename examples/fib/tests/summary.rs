//! The example end to end on both backends: functions invoking functions give fib(20) and the
//! JSON summary is the last stdout line.

use std::process::Command;

fn summary(backend: &str) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_fib"))
        .args(["--backend", backend, "--n", "20", "--tasks", "40", "--json"])
        .env("FERRY_PROGRESS", "never")
        .output()
        .expect("run fib");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    serde_json::from_str(stdout.lines().last().unwrap()).expect("last line is json")
}

#[test]
fn computes_fib_20_on_inline_and_local() {
    for backend in ["inline", "local"] {
        let json = summary(backend);
        assert_eq!(json["result"], 6765, "{backend}: {json}");
        assert_eq!(json["backend"], backend);
        assert!(json["tasks"].as_u64().unwrap() > 1, "{json}");
    }
}
