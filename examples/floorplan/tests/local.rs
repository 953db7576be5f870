//! The distributed search on the local platform (workers are this example's binary), and the
//! program end to end: the area is the sequential one, the JSON summary is the last stdout
//! line, and a malformed input ends the program with the parser's message.

use std::process::Command;

use ferry::{Context, LocalConfig};
use floorplan::{Floorplan, INITIAL_BOUND, PlaceCells, Placement, distributed, prefixes, solve};

fn input_path(name: &str) -> String {
    format!("{}/inputs/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn bots_input(name: &str) -> Floorplan {
    Floorplan::parse(&std::fs::read_to_string(input_path(name)).unwrap()).unwrap()
}

fn workers() -> Context {
    Context::local(
        LocalConfig::default()
            .max_workers(2)
            .worker_exe(env!("CARGO_BIN_EXE_floorplan")),
    )
    .expect("local platform")
}

#[ferry::test]
async fn tasks_on_workers_find_the_sequential_area_of_input_5() {
    let plan = bots_input("input.5");
    let sequential = solve(&plan).best.unwrap();
    let ctx = workers();
    for (cutoff, in_flight) in [(2, 4), (4, 2), (4, 64)] {
        let split = prefixes(&plan, cutoff);
        let tasks = split.prefixes.len() as u64;
        let run = distributed(&ctx, &plan, split.prefixes, in_flight)
            .await
            .unwrap();
        assert_eq!(run.tasks, tasks);
        let best = run.best.expect("a floorplan");
        assert_eq!(best.area, sequential.area, "cutoff {cutoff}");
        best.check(&plan).unwrap();
    }
    ctx.shutdown().await;
}

#[ferry::test]
async fn a_worker_refuses_a_bad_prefix_with_its_reason() {
    let ctx = workers();
    let error = ctx
        .call(PlaceCells {
            floorplan: bots_input("input.5"),
            prefix: vec![Placement {
                cell: 3,
                shape: 0,
                top: 0,
                lhs: 0,
            }],
            bound: INITIAL_BOUND,
        })
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("the chain places cell 1 there"), "{error}");
    ctx.shutdown().await;
}

fn program(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_floorplan"))
        .args(args)
        .env("FERRY_PROGRESS", "never")
        .env_remove("FERRY_BACKEND")
        .output()
        .expect("run floorplan")
}

#[test]
fn the_program_reports_the_known_area_on_inline_and_local() {
    let input = input_path("input.5");
    for backend in ["inline", "local"] {
        let output = program(&["--backend", backend, "--input", &input, "--json", "--board"]);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let json: serde_json::Value =
            serde_json::from_str(stdout.lines().last().unwrap()).expect("last line is JSON");
        assert_eq!(json["result"], 216, "{backend}: {json}");
        assert_eq!(json["backend"], backend);
        // Cutoff 4 by default: the 562 ways to lay down the first four cells.
        assert_eq!(json["tasks"], 562);
        assert!(json["speedup"].is_number());
        assert!(json["sequential_seconds"].is_number());
        assert!(stdout.contains("minimum area 216 (12×18)"), "{stdout}");
        // The drawing: 12 rows of 18 squares.
        assert!(stdout.lines().filter(|l| l.len() == 18).count() >= 12);
    }
}

#[test]
fn the_program_times_several_runs() {
    let input = input_path("input.5");
    let output = program(&[
        "--backend",
        "inline",
        "--input",
        &input,
        "--cutoff",
        "2",
        "--warmup",
        "1",
        "--runs",
        "3",
        "--skip-sequential",
        "--json",
    ]);
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let json: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(json["runs"].as_array().unwrap().len(), 3);
    assert_eq!(
        (json["result"].as_u64(), json["tasks"].as_u64()),
        (Some(216), Some(45))
    );
    assert!(json["speedup"].is_null());
}

#[test]
fn the_program_refuses_a_malformed_input_with_the_line() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join("floorplan-malformed.txt");
    std::fs::write(&path, "2\n\n1\n2 3\n0 -1\n2\n\n1\n4 one\n-1 1\n0\n").unwrap();
    let output = program(&["--backend", "inline", "--input", path.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("line 9: the columns of shape 1 of cell 2 must be an integer, not `one`"),
        "{stderr}"
    );
    assert!(stderr.contains("floorplan-malformed.txt"), "{stderr}");
}

#[test]
fn the_program_checks_the_known_area() {
    // input.5 with a wrong known area: the search is right, the claim is not.
    let text = std::fs::read_to_string(input_path("input.5")).unwrap();
    let wrong = text.trim_end().trim_end_matches("216").to_owned() + "215\n";
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("floorplan-wrong-area.txt");
    std::fs::write(&path, wrong).unwrap();
    let output = program(&["--backend", "inline", "--input", path.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the input's known minimum area is 215, the run found 216"),
        "{stderr}"
    );
}
