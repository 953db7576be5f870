//! The example end to end on both backends: the estimate is right and the JSON summary is the
//! last stdout line.

use std::process::Command;

fn summary(backend: &str) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_pi"))
        .args([
            "--backend",
            backend,
            "--tasks",
            "16",
            "--samples",
            "4000000",
            "--json",
        ])
        .env("FERRY_PROGRESS", "never")
        .output()
        .expect("run pi");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    serde_json::from_str(stdout.lines().last().unwrap()).expect("last line is json")
}

#[test]
fn estimates_pi_on_inline_and_local() {
    for backend in ["inline", "local"] {
        let json = summary(backend);
        let estimate = json["result"].as_f64().unwrap();
        assert!(
            (estimate - std::f64::consts::PI).abs() < 5e-3,
            "{backend}: {estimate}"
        );
        assert_eq!(json["tasks"], 16);
        assert_eq!(json["backend"], backend);
        for key in [
            "seconds",
            "sequential_seconds",
            "speedup",
            "workers",
            "cold_starts",
        ] {
            assert!(json[key].is_number(), "{backend}: {key} missing in {json}");
        }
    }
}
