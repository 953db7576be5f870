//! `ferry`: inspect, build, deploy and invoke ferry programs.

mod artifacts;
mod commands;
mod knative;
mod lambda;
mod naming;
mod openwhisk;
mod program;
mod registry;
mod table;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "ferry",
    version,
    about = "Single-source serverless functions for Rust"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a crate of ferry functions and a program that calls them, from a template.
    New(commands::new::Args),
    /// Build a program and package it for Lambda, OpenWhisk or HTTP (OCI image + Knative).
    Build(commands::build::Args),
    /// Create or update every function of a built program on a platform.
    Deploy(commands::deploy::Args),
    /// Compare the program's functions with those deployed on a platform.
    Ls(commands::ls::Args),
    /// Print the functions of a ferry program as JSON.
    Manifest(commands::manifest::Args),
    /// Serve /init and /run for any ActionLoop executable, with warm copies in parallel.
    ActionloopHost(commands::actionloop_host::Args),
    /// Invoke one function on any backend and print its output.
    Invoke(commands::invoke::Args),
    /// Rebuild and rerun the program (or restart its HTTP service) whenever its files change.
    Watch(commands::watch::Args),
}

/// Exit codes: 0 success, 1 the command failed, 2 bad usage (clap's own).
fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::New(args) => commands::new::run(&args),
        Command::Build(args) => commands::build::run(&args),
        Command::Deploy(args) => commands::deploy::run(&args),
        Command::Ls(args) => commands::ls::run(&args),
        Command::Manifest(args) => commands::manifest::run(&args),
        Command::ActionloopHost(args) => commands::actionloop_host::run(&args),
        Command::Invoke(args) => commands::invoke::run(&args),
        Command::Watch(args) => commands::watch::run(&args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
