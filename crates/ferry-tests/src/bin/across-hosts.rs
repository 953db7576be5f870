//! A program whose three functions each run on a host of their own: the host program of
//! `tests/across_hosts.rs` (in one network namespace) and, with `FERRY_ROLE=http`, its three
//! services (each in another). Every function appends the name of the host it ran on
//! (`ACROSS_HOSTS_NAME`) to a trail, so an output shows where each step ran.
//!
//! As a host it runs, printing one JSON line per outcome on stdout:
//!
//! 1. `healthy`: a chained flow `first_hop` → `second_hop` → `third_hop`, the same flow
//!    orchestrated, and a fan-out onto each function, all quick;
//! 2. `load`: chained flows and fan-outs whose steps sleep `--step-ms`, started at once; once
//!    they are in flight it prints `{"event":"in-flight"}` (the test cuts a host off then) and
//!    prints every outcome as it comes;
//! 3. `recovered`, after a line on stdin (the test brings the host back): the flow and a
//!    fan-out again.

use std::io::BufRead;
use std::time::{Duration, Instant};

use ferry::{Context, Flow, FlowMode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Where a value has been, and how long each step sleeps.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trail {
    pub hops: Vec<String>,
    pub step_ms: u64,
}

async fn hop(mut trail: Trail) -> Trail {
    tokio::time::sleep(Duration::from_millis(trail.step_ms)).await;
    let host = std::env::var("ACROSS_HOSTS_NAME").unwrap_or_else(|_| "?".to_owned());
    trail.hops.push(host);
    trail
}

/// The first step: served by the first service.
#[ferry::function(concurrency = 64, timeout = "30s")]
pub async fn first_hop(trail: Trail) -> Trail {
    hop(trail).await
}

/// The second step: served by the second service.
#[ferry::function(concurrency = 64, timeout = "30s")]
pub async fn second_hop(trail: Trail) -> Trail {
    hop(trail).await
}

/// The third step: served by the third service.
#[ferry::function(concurrency = 64, timeout = "30s")]
pub async fn third_hop(trail: Trail) -> Trail {
    hop(trail).await
}

#[derive(Debug, clap::Parser)]
#[command(about = "a chained flow and fan-outs across three services, before and after a cut")]
struct Args {
    /// How long each step of the `load` phase sleeps (ms).
    #[arg(long, default_value_t = 1500)]
    step_ms: u64,
    /// Chained flows in the `load` phase.
    #[arg(long, default_value_t = 4)]
    flows: usize,
    /// Tasks of each fan-out in the `load` phase (one fan-out per function).
    #[arg(long, default_value_t = 6)]
    tasks: u64,
}

fn print(line: &Value) {
    println!("{line}");
}

fn trail(step_ms: u64) -> Trail {
    Trail {
        hops: Vec::new(),
        step_ms,
    }
}

fn flow() -> Flow<Trail, Trail> {
    Flow::start::<FirstHop>()
        .then::<SecondHop>()
        .then::<ThirdHop>()
}

/// An outcome as JSON: the hops, or the error's kind, function, flow stage, task and message.
fn outcome(result: &ferry::Result<Option<Trail>>) -> Value {
    match result {
        Ok(Some(trail)) => json!({ "hops": trail.hops }),
        Ok(None) => json!({ "hops": null }),
        Err(error) => {
            let kind = serde_json::to_value(error.kind()).unwrap_or_default();
            json!({ "error": {
                "kind": kind["kind"],
                "function": error.function(),
                "stage": error.flow_stage(),
                "task": error.task(),
                "message": error.to_string(),
            }})
        }
    }
}

/// A fan-out of `tasks` calls of one function: each task's outcome.
async fn fan_out(ctx: &Context, function: &str, tasks: u64, step_ms: u64) -> Vec<Value> {
    let results = match function {
        "first_hop" => {
            let tasks = (0..tasks).map(|_| FirstHop {
                trail: trail(step_ms),
            });
            ctx.map(tasks).progress(false).settle().await
        }
        "second_hop" => {
            let tasks = (0..tasks).map(|_| SecondHop {
                trail: trail(step_ms),
            });
            ctx.map(tasks).progress(false).settle().await
        }
        _ => {
            let tasks = (0..tasks).map(|_| ThirdHop {
                trail: trail(step_ms),
            });
            ctx.map(tasks).progress(false).settle().await
        }
    };
    results
        .into_iter()
        .enumerate()
        .map(|(task, result)| {
            let mut line = outcome(&result.map(Some));
            line["task"] = json!(task);
            line
        })
        .collect()
}

/// Prints a fan-out's outcomes; `took` is how long it ran.
fn fan_out_lines(phase: &str, function: &str, outcomes: Vec<Value>, took: Duration) {
    for mut line in outcomes {
        line["phase"] = json!(phase);
        line["what"] = json!("fan-out");
        line["function"] = json!(function);
        line["ms"] = json!(took.as_millis() as u64);
        print(&line);
    }
}

const FUNCTIONS: [&str; 3] = ["first_hop", "second_hop", "third_hop"];

#[ferry::main]
async fn main(ctx: Context, args: Args) -> ferry::Result<()> {
    // 1. Every host reachable: quick steps.
    let started = Instant::now();
    for mode in [FlowMode::Chained, FlowMode::Orchestrated] {
        let result = flow().mode(mode).run(&ctx, trail(0)).await;
        let mut line = outcome(&result);
        line["phase"] = json!("healthy");
        line["what"] = json!(format!("{mode:?}").to_lowercase());
        print(&line);
    }
    for function in FUNCTIONS {
        let outcomes = fan_out(&ctx, function, 4, 0).await;
        fan_out_lines("healthy", function, outcomes, started.elapsed());
    }

    // 2. Slow steps in flight when the test cuts a host off.
    let started = Instant::now();
    let mut flows = Vec::new();
    for _ in 0..args.flows {
        let run = flow().run(&ctx, trail(args.step_ms));
        flows.push(tokio::spawn(async move { (run.await, started.elapsed()) }));
    }
    let mut fan_outs = Vec::new();
    for function in FUNCTIONS {
        let ctx = ctx.clone();
        let (tasks, step_ms) = (args.tasks, args.step_ms);
        fan_outs.push(tokio::spawn(async move {
            let outcomes = fan_out(&ctx, function, tasks, step_ms).await;
            (function, outcomes, started.elapsed())
        }));
    }
    // Long enough for every request to be sent, well within the first step.
    tokio::time::sleep(Duration::from_millis(args.step_ms / 4)).await;
    print(&json!({ "event": "in-flight" }));
    for flow in flows {
        let (result, took) = flow
            .await
            .map_err(|e| ferry::Error::config(e.to_string()))?;
        let mut line = outcome(&result);
        line["phase"] = json!("load");
        line["what"] = json!("chained");
        line["ms"] = json!(took.as_millis() as u64);
        print(&line);
    }
    for fan_out in fan_outs {
        let (function, outcomes, took) = fan_out
            .await
            .map_err(|e| ferry::Error::config(e.to_string()))?;
        fan_out_lines("load", function, outcomes, took);
    }
    print(&json!({ "event": "waiting" }));

    // 3. Once the test says the host is back: the same calls again.
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| ferry::Error::config(e.to_string()))?;
    let started = Instant::now();
    let result = flow().run(&ctx, trail(0)).await;
    let mut line = outcome(&result);
    line["phase"] = json!("recovered");
    line["what"] = json!("chained");
    line["ms"] = json!(started.elapsed().as_millis() as u64);
    print(&line);
    let outcomes = fan_out(&ctx, "third_hop", 4, 0).await;
    fan_out_lines("recovered", "third_hop", outcomes, started.elapsed());
    print(&json!({ "event": "done" }));
    Ok(())
}
