//! The benchmark end to end, as a user runs it: 40 models through the monolith, the local
//! platform, the HTTP service and the OpenWhisk container, unthrottled (bounded and all at
//! once) and throttled, each run checked (by the binary) to leave SH equal to PS; and the
//! errors of a misused `--dispatch`.

use std::process::Command;

const RUNNERS: [&str; 4] = [
    "mono",
    "serverless-local",
    "serverless-http",
    "serverless-openwhisk",
];
const METRICS: [&str; 11] = [
    "seconds",
    "successes",
    "fails",
    "latMedian",
    "latAvg",
    "latStdDev",
    "latP95",
    "latP99",
    "latP99.9",
    "peakRssMiB",
    "benchPeakRssMiB",
];

#[test]
fn forty_models_sync_through_every_runner_and_leave_sh_equal_to_ps() {
    let directory = std::env::temp_dir().join(format!("shop-sync-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let (csv, all_at_once_csv, throttled_csv) = (
        directory.join("results.csv"),
        directory.join("all-at-once.csv"),
        directory.join("throttled.csv"),
    );
    let output = Command::new(env!("CARGO_BIN_EXE_shop-sync"))
        .args([
            "bench",
            "--models",
            "40",
            "--throttled-models",
            "12",
            "--delay-ms",
            "15",
        ])
        .args([
            "--runners",
            "mono,local,http,openwhisk",
            "--warm-up",
            "8",
            "--dispatch",
            "bounded,all-at-once",
            "--in-flight",
            "16",
            "--json",
        ])
        .arg("--csv")
        .arg(&csv)
        .arg("--all-at-once-csv")
        .arg(&all_at_once_csv)
        .arg("--throttled-csv")
        .arg(&throttled_csv)
        .env("FERRY_PROGRESS", "never")
        .env_remove("FERRY_ROLE")
        .env_remove("FERRY_BACKEND")
        .output()
        .expect("run the benchmark");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the benchmark failed:\n{stderr}");
    assert_eq!(
        stderr.matches("SH equals PS").count(),
        16,
        "a check per run, warm-up included:\n{stderr}"
    );

    let mut header = vec!["Models Count".to_owned()];
    for metric in METRICS {
        header.extend(RUNNERS.iter().map(|r| format!("{metric}({r})")));
    }
    for (path, models) in [
        (&csv, 40.0),
        (&all_at_once_csv, 40.0),
        (&throttled_csv, 12.0),
    ] {
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0], header.join(","));
        let row: Vec<f64> = lines[1].split(',').map(|v| v.parse().unwrap()).collect();
        assert_eq!(row.len(), header.len());
        let cell = |metric: &str, runner: &str| {
            row[header
                .iter()
                .position(|c| *c == format!("{metric}({runner})"))
                .unwrap()]
        };
        assert_eq!(row[0], models);
        for runner in RUNNERS {
            assert_eq!(cell("successes", runner), models, "{runner}");
            assert_eq!(cell("fails", runner), 0.0, "{runner}");
            assert!(cell("seconds", runner) > 0.0);
            let (median, p999) = (cell("latMedian", runner), cell("latP99.9", runner));
            assert!(
                median > 0.0 && median <= p999,
                "{runner}: median {median}, p99.9 {p999}"
            );
            // The runner's processes and the benchmarker's own each hold some memory.
            let (peak, bench) = (cell("peakRssMiB", runner), cell("benchPeakRssMiB", runner));
            assert!(
                peak > 1.0 && bench > 1.0,
                "{runner}: {peak} MiB, {bench} MiB"
            );
            if runner == "mono" {
                assert_eq!(peak, bench, "the monolith is the benchmarker's process");
            }
        }
    }
    // Throttled: 12 starts 15 ms apart take at least 11 gaps.
    let throttled = std::fs::read_to_string(&throttled_csv).unwrap();
    let seconds: f64 = throttled
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(seconds >= 0.165, "the throttled run took {seconds} s");

    let stdout = String::from_utf8(output.stdout).unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap()).expect("JSON last");
    let runs = summary["unthrottled"].as_array().unwrap();
    assert_eq!(runs.len(), 2 * RUNNERS.len());
    for (dispatch, in_flight) in [("bounded", 16), ("all-at-once", 40)] {
        let count = runs
            .iter()
            .filter(|run| run["dispatch"] == dispatch && run["in_flight"] == in_flight)
            .count();
        assert_eq!(count, RUNNERS.len(), "{dispatch}: {summary}");
    }
    for run in runs {
        let (partial, full) = (
            run["partial"].as_u64().unwrap(),
            run["full"].as_u64().unwrap(),
        );
        // The seeded plan puts models in all three starting states.
        assert!(partial > 0 && full > 0 && partial + full < 40, "{run}");
        assert!(run["qps"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(summary["throttled"][0]["delay_ms"], 15);
    let _ = std::fs::remove_dir_all(&directory);
}

/// Runs `bench` with `args` and returns its exit code and stderr, which clap fills when it
/// refuses them before anything starts.
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_shop-sync"))
        .arg("bench")
        .args(args)
        .env_remove("FERRY_ROLE")
        .output()
        .expect("run the benchmark");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_misused_dispatch_is_refused_with_a_clear_error() {
    let (code, stderr) = refused(&["--dispatch", "sideways"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("invalid value 'sideways' for '--dispatch <DISPATCH>'")
            && stderr.contains("[possible values: bounded, all-at-once]"),
        "{stderr}"
    );

    let (code, stderr) = refused(&["--dispatch", "bounded,all-at-once,bounded"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("names `bounded` twice"), "{stderr}");

    let (code, stderr) = refused(&["--dispatch", "all-at-once", "--in-flight", "64"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("`--in-flight` bounds `bounded` runs"),
        "{stderr}"
    );

    let (code, stderr) = refused(&["--in-flight", "0"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("invalid value '0' for '--in-flight"),
        "{stderr}"
    );
}
