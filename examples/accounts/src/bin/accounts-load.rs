//! Measures the accounts service as the article did, one JSON line per run on stdout
//! (`scripts/reproduce.sh accounts` records them):
//!
//! ```sh
//! accounts-load wrk --connections 20,50,100,200,300 --seconds 6   # Gatling's figures, with wrk
//! accounts-load decode --runs 20                                  # what a client pays to decode
//! ```
//!
//! Each starts the `accounts` binary next to it on a loopback port and loads every route of the
//! article (`/account/1`, `/account/2`, `/accountList`) in JSON and in protobuf.

use std::process::ExitCode;

use accounts::load::{self, Error, FORMATS, ROUTES, Server};
use clap::Parser;

#[derive(Parser)]
#[command(about = "Loads the accounts service as the Kitura article measured it")]
enum Measurement {
    /// Every route in both formats at each number of connections, with wrk (two threads); a
    /// request unanswered after `timeout` seconds is a timeout.
    Wrk {
        #[arg(long, value_delimiter = ',', default_value = "20,50,100,200,300")]
        connections: Vec<u32>,
        #[arg(long, default_value_t = 6)]
        seconds: u32,
        #[arg(long, default_value_t = 2)]
        timeout: u32,
    },
    /// Every route in both formats: `runs` requests and decodes into the prost or serde types,
    /// after `warm_up` unmeasured ones.
    Decode {
        #[arg(long, default_value_t = 20)]
        runs: u32,
        #[arg(long, default_value_t = 3)]
        warm_up: u32,
    },
}

fn run(measurement: Measurement) -> Result<(), Error> {
    let program = std::env::current_exe()?.with_file_name("accounts");
    let server = Server::start(&program)?;
    for route in ROUTES {
        for &format in FORMATS {
            let line = match measurement {
                Measurement::Wrk {
                    ref connections,
                    seconds,
                    timeout,
                } => {
                    let mut lines = Vec::new();
                    for &n in connections {
                        let run = load::wrk(&server.address, route, format, n, seconds, timeout)?;
                        eprintln!(
                            "{route} {} {n}: {:.1}/s, mean {:.1} ms, p95 {:.1} ms, {} timeouts, {} errors",
                            format.0,
                            run.requests_per_second,
                            run.mean_ms,
                            run.p95_ms,
                            run.timeouts,
                            run.errors
                        );
                        lines.push(serde_json::to_string(&run)?);
                    }
                    lines.join("\n")
                }
                Measurement::Decode { runs, warm_up } => {
                    let run = load::decode(&server.address, route, format, runs, warm_up)?;
                    serde_json::to_string(&run)?
                }
            };
            println!("{line}");
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Measurement::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
