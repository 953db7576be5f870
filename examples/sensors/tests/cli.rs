//! The binary as a user runs it: the default run on the local platform, the load test over
//! one HTTP service per function, and clear errors for bad flags.

use std::process::{Command, Output};

fn sensors(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sensors"))
        .args(args)
        .env_remove("FERRY_ROLE")
        .env_remove("FERRY_BACKEND")
        .env("FERRY_PROGRESS", "never")
        .output()
        .expect("run sensors")
}

fn stdout_of(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "sensors failed:\n{stderr}");
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn the_default_run_prints_the_average_of_the_temperatures_it_read() {
    for backend in ["local", "inline"] {
        let output = sensors(&["--backend", backend, "--readings", "500", "--json"]);
        let stdout = stdout_of(&output);
        let summary: serde_json::Value =
            serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        assert_eq!(summary["readings"], 500, "{stdout}");
        assert_eq!(summary["backend"], backend);
        assert!(summary["temperatures"].as_u64().unwrap() > 50, "{stdout}");
        // One client: one instance saw every temperature, in order.
        assert_eq!(
            summary["moving_average"], summary["direct_average"],
            "{stdout}"
        );
        assert!(
            stdout.contains("readings were temperatures; moving average"),
            "{stdout}"
        );
    }
}

#[test]
fn the_load_test_measures_every_mode_without_errors() {
    let directory = std::env::temp_dir().join(format!("sensors-load-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let csv = directory.join("load.csv");
    let output = sensors(&[
        "load",
        "--clients",
        "1,4",
        "--seconds",
        "0.5",
        "--warm-up",
        "0.2",
        "--rows",
        "2000",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let stdout = stdout_of(&output);
    let mut tables = stdout.split("\n\n");
    let table: Vec<&str> = tables.next().unwrap().lines().collect();
    assert_eq!(table.len(), 4, "{stdout}");
    for mode in ["chained", "orchestrated", "orchestrator"] {
        assert!(table[0].contains(&format!("{mode} flows/s")), "{stdout}");
    }
    for (row, clients) in table[2..].iter().zip(["1", "4"]) {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 15, "{row}");
        assert_eq!(cells[0], clients, "{row}");
        assert_eq!(
            (cells[4], cells[8], cells[12]),
            ("0.00%", "0.00%", "0.00%"),
            "{row}"
        );
        for flows in [cells[1], cells[5], cells[9]] {
            assert!(flows.parse::<f64>().unwrap() > 0.0, "{row}");
        }
        assert!(
            cells[13].ends_with('x') && cells[14].ends_with('x'),
            "{row}"
        );
    }
    // CPU per flow by process: the caller, the sensor service, the four stages' services and
    // the orchestrator's (whole clock ticks: a short run may see none in a process).
    let cpu: Vec<&str> = tables.next().unwrap().lines().collect();
    assert_eq!(cpu.len(), 8, "{stdout}");
    assert!(
        cpu[0].contains("orchestrate") && cpu[0].contains("read"),
        "{stdout}"
    );
    for row in &cpu[2..] {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 10, "{row}");
        let cpu: Vec<f64> = cells[2..].iter().map(|c| c.parse().unwrap()).collect();
        assert!(cpu.iter().all(|&us| us >= 0.0) && cpu[7] > 0.0, "{row}");
    }
    let records = std::fs::read_to_string(&csv).unwrap();
    let mut lines = records.lines();
    assert_eq!(
        lines.next().unwrap(),
        "mode,clients,seconds,flows,errors,flows_per_second,mean_ms,p50_ms,p99_ms,error_rate,temperatures,\
         topology,keep_alive,one_cpu_per_service,cpu_caller_us,cpu_sensor_service_us,cpu_functions_us,cpu_total_us"
    );
    assert_eq!(lines.count(), 6);
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn one_service_can_serve_every_function() {
    let output = sensors(&[
        "load",
        "--topology",
        "single",
        "--modes",
        "chained,orchestrator",
        "--clients",
        "2",
        "--seconds",
        "0.5",
        "--warm-up",
        "0",
        "--rows",
        "2000",
    ]);
    let stdout = stdout_of(&output);
    let mut tables = stdout.split("\n\n");
    let table: Vec<&str> = tables.next().unwrap().lines().collect();
    let cells: Vec<&str> = table[2]
        .trim_matches('|')
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!(cells.len(), 10, "{stdout}");
    assert_eq!((cells[4], cells[8]), ("0.00%", "0.00%"), "{stdout}");
    assert!(cells[9].ends_with('x'), "{stdout}");
    let cpu: Vec<&str> = tables.next().unwrap().lines().collect();
    assert!(cpu[0].contains("every function"), "{stdout}");
}

/// Dyninka's setting: a connection per request, each service on one CPU.
#[test]
fn the_load_test_runs_without_keep_alive_on_one_cpu_per_service() {
    let directory = std::env::temp_dir().join(format!("sensors-one-cpu-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let csv = directory.join("load.csv");
    let output = sensors(&[
        "load",
        "--keep-alive",
        "off",
        "--one-cpu-per-service",
        "--modes",
        "chained,orchestrated",
        "--clients",
        "2",
        "--seconds",
        "0.5",
        "--warm-up",
        "0",
        "--rows",
        "2000",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let stdout = stdout_of(&output);
    let table: Vec<&str> = stdout.split("\n\n").next().unwrap().lines().collect();
    let cells: Vec<&str> = table[2]
        .trim_matches('|')
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!((cells[4], cells[8]), ("0.00%", "0.00%"), "{stdout}");
    let records = std::fs::read_to_string(&csv).unwrap();
    for record in records.lines().skip(1) {
        assert!(record.contains(",per-function,false,true,"), "{record}");
    }
    std::fs::remove_dir_all(&directory).unwrap();
}

/// `--stage-timings` and `--timeline`: a row per timed flow whose instants never go back, and
/// flows per bucket that add up to the table's.
#[test]
fn the_load_test_writes_stage_timings_and_a_timeline() {
    let directory = std::env::temp_dir().join(format!("sensors-stages-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let (timings, timeline) = (
        directory.join("timings.csv"),
        directory.join("timeline.csv"),
    );
    let output = sensors(&[
        "load",
        "--modes",
        "chained,orchestrated",
        "--clients",
        "2",
        "--seconds",
        "0.5",
        "--warm-up",
        "0",
        "--rows",
        "2000",
        "--stage-timings",
        timings.to_str().unwrap(),
        "--timeline",
        timeline.to_str().unwrap(),
    ]);
    stdout_of(&output);
    let records = std::fs::read_to_string(&timings).unwrap();
    let mut lines = records.lines();
    assert_eq!(
        lines.next().unwrap(),
        "mode,clients,flow,sent_second,read_started_us,read_finished_us,\
         keep_temperature_started_us,keep_temperature_finished_us,value_started_us,\
         value_finished_us,moving_average_started_us,moving_average_finished_us,received_us"
    );
    let mut modes = std::collections::BTreeSet::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        modes.insert(cells[0].to_owned());
        let instants: Vec<f64> = cells[4..].iter().map(|c| c.parse().unwrap()).collect();
        assert_eq!(instants.len(), 9, "{line}");
        assert!(instants.windows(2).all(|w| w[0] <= w[1]), "{line}");
    }
    assert_eq!(
        modes.into_iter().collect::<Vec<_>>(),
        ["chained", "orchestrated"]
    );
    let buckets = std::fs::read_to_string(&timeline).unwrap();
    let mut lines = buckets.lines();
    assert_eq!(
        lines.next().unwrap(),
        "mode,clients,second,bucket_seconds,flows,errors,flows_per_second"
    );
    let flows: u64 = lines
        .map(|line| line.split(',').nth(4).unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(flows > 0, "{buckets}");
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn bad_flags_are_refused_with_the_reason() {
    for (args, message) in [
        (
            &["load", "--clients", "1,0"][..],
            "--clients must be positive",
        ),
        (
            &["load", "--seconds", "0"][..],
            "--seconds must be a positive number",
        ),
        (
            &["--backend", "lambda"][..],
            "invalid value 'lambda' for '--backend",
        ),
        (&["--rows", "0"][..], "invalid value '0' for '--rows"),
        (
            &["load", "--keep-alive", "maybe"][..],
            "expected `on` or `off`, not `maybe`",
        ),
        (
            &["load", "--stage-timings", "t.csv"][..],
            "--stage-timings times chained and orchestrated flows",
        ),
    ] {
        let output = sensors(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}
