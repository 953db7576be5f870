//! The example end to end on both backends: the count is right and the JSON summary is the last
//! stdout line.

use std::process::Command;

fn summary(backend: &str, n: u32) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_nqueens"))
        .args([
            "--backend",
            backend,
            "--n",
            &n.to_string(),
            "--tasks",
            "32",
            "--json",
        ])
        .env("FERRY_PROGRESS", "never")
        .output()
        .expect("run nqueens");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    serde_json::from_str(stdout.lines().last().unwrap()).expect("last line is json")
}

#[test]
fn counts_twelve_queens_on_inline_and_local() {
    for backend in ["inline", "local"] {
        let json = summary(backend, 12);
        assert_eq!(json["result"], 14200, "{backend}: {json}");
        assert_eq!(json["backend"], backend);
        assert!(json["tasks"].as_u64().unwrap() >= 32);
        assert!(json["speedup"].is_number());
    }
}
