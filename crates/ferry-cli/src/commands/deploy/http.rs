//! `ferry deploy --platform http` (or `knative`): pushes the program's HTTP image to
//! `--registry` and writes a Knative Service per function for the pushed image (see
//! [`crate::knative`]), whose routes name every function's in-cluster URL; with `--apply` the
//! Services are applied through the Kubernetes API ([`crate::knative::apply`]), four at a time.
//!
//! It also writes `http/routes.env` (`FERRY_BACKEND=http` and `FERRY_HTTP_ROUTES`) for host
//! programs: with `--domain`, the Services' external URLs (Knative's default domain template);
//! without, their in-cluster URLs, for hosts that run in the cluster.

use std::path::Path;

use anyhow::bail;
use futures::StreamExt as _;

use super::Args;
use crate::artifacts::Artifacts;
use crate::knative::apply::Cluster;
use crate::knative::{KnativeApp, Service};
use crate::lambda::WEB_ROW;
use crate::table;

/// Services applied at once.
const PARALLEL: usize = 4;

pub fn run(args: &Args) -> anyhow::Result<()> {
    let Some(registry) = &args.registry.registry else {
        bail!(
            "`ferry deploy --platform http` pushes the program's image: name the registry the \
             cluster pulls from with `--registry HOST[:PORT][/PATH]`"
        );
    };
    let knative = &args.knative;
    let artifacts = Artifacts::new(args.program.artifacts_dir()?);
    let info = artifacts.build_info()?;
    let manifest = artifacts.manifest()?;
    let app = args.lambda.app.as_deref().unwrap_or(&info.program);
    let archive = artifacts.oci_archive(&info.program);
    let image = crate::registry::image(
        &archive,
        registry,
        app,
        "run `ferry build --platform http` first",
    )?;
    let services = crate::knative::services(
        &KnativeApp {
            app,
            image: &image.reference,
            namespace: &knative.namespace,
            env: &args.lambda.env,
        },
        &manifest,
    )?;
    let runtime = crate::commands::runtime()?;
    // No kubeconfig, an unreachable cluster or one without Knative stops the command before
    // anything is pushed.
    let cluster = if knative.apply {
        Some(runtime.block_on(async {
            let cluster = Cluster::connect().await?;
            let deployed = cluster.deployed(&knative.namespace, app).await?;
            anyhow::Ok((cluster, deployed))
        })?)
    } else {
        None
    };

    crate::registry::push(&archive, &image.reference, args.registry.insecure_registry)?;
    println!("pushed {}", image.reference);
    let dir = artifacts.knative_dir();
    crate::knative::write(&dir, &services, &manifest)?;
    // How a user starts the program as a host: the binary `ferry build` made, else its name.
    let program = info
        .binary
        .as_deref()
        .map_or_else(|| info.program.clone(), relative);
    let routes = write_routes(
        &artifacts,
        &services,
        &knative.namespace,
        knative.domain.as_deref(),
        &program,
    )?;

    match cluster {
        Some((cluster, deployed)) => {
            runtime.block_on(apply(
                &cluster,
                &knative.namespace,
                app,
                &services,
                &deployed,
            ))?;
        }
        None => {
            let rows: Vec<Vec<String>> = services
                .iter()
                .map(|s| vec![shown(s), s.name.clone()])
                .collect();
            print!("{}", table::render(&["FUNCTION", "KNATIVE SERVICE"], &rows));
            println!(
                "wrote {} knative service(s) to {}: `kubectl apply -f {}` (or `ferry deploy --apply`)",
                services.len(),
                relative(&dir),
                relative(&dir)
            );
        }
    }
    if let (Some(domain), Some(web)) = (&knative.domain, services.iter().find(|s| s.web)) {
        println!(
            "web app: {}/",
            crate::knative::external_url(&web.name, &knative.namespace, domain)
        );
    }
    println!("{routes}");
    Ok(())
}

/// The function a table row shows: its handler, or `(web)`.
fn shown(service: &Service) -> String {
    if service.web {
        WEB_ROW.to_owned()
    } else {
        service.handler.clone()
    }
}

/// `path` relative to the current directory when it is inside it.
fn relative(path: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(|p| p.display().to_string()))
        .unwrap_or_else(|| path.display().to_string())
}

/// Writes `http/routes.env` and returns the line that says how host programs use it.
fn write_routes(
    artifacts: &Artifacts,
    services: &[Service],
    namespace: &str,
    domain: Option<&str>,
    program: &str,
) -> anyhow::Result<String> {
    let routes = match domain {
        Some(domain) => crate::knative::routes(services, |service| {
            crate::knative::external_url(&service.name, namespace, domain)
        }),
        None => crate::knative::routes(services, |service| {
            crate::knative::in_cluster_url(&service.name, namespace)
        }),
    };
    let path = artifacts.routes_env();
    let text = format!(
        "{}=http\n{}={routes}\n",
        ferry::config::BACKEND.name,
        ferry::config::HTTP_ROUTES.name
    );
    crate::artifacts::write_atomically(&path, text.as_bytes())?;
    let path = relative(&path);
    Ok(match domain {
        Some(_) => format!(
            "host programs reach the services with the routes in {path}: `env $(cat {path}) {program}`"
        ),
        None => format!(
            "{path} holds the services' in-cluster urls, for host programs in the cluster; give \
             `--domain` (the cluster's knative domain) for hosts outside it"
        ),
    })
}

async fn apply(
    cluster: &Cluster,
    namespace: &str,
    app: &str,
    services: &[Service],
    deployed: &[String],
) -> anyhow::Result<()> {
    // The web app comes last: its handlers call the functions.
    let (web, functions): (Vec<&Service>, Vec<&Service>) = services.iter().partition(|s| s.web);
    let mut outcomes: Vec<anyhow::Result<&'static str>> = futures::stream::iter(&functions)
        .map(|service| cluster.apply(namespace, service))
        .buffered(PARALLEL)
        .collect()
        .await;
    for service in &web {
        outcomes.push(cluster.apply(namespace, service).await);
    }
    let mut counts = [0usize; 3];
    let mut failures = Vec::new();
    let mut rows = Vec::new();
    for (service, outcome) in functions.iter().chain(&web).zip(outcomes) {
        let result = match outcome {
            Ok(result) => {
                counts[match result {
                    "created" => 0,
                    "updated" => 1,
                    _ => 2,
                }] += 1;
                result.to_owned()
            }
            Err(error) => {
                failures.push(format!("{}: {error:#}", service.name));
                "failed".to_owned()
            }
        };
        rows.push(vec![shown(service), service.name.clone(), result]);
    }
    print!(
        "{}",
        table::render(&["FUNCTION", "KNATIVE SERVICE", "RESULT"], &rows)
    );
    println!(
        "knative {} namespace {namespace}: {} created, {} updated, {} unchanged{}",
        cluster.server,
        counts[0],
        counts[1],
        counts[2],
        if failures.is_empty() {
            String::new()
        } else {
            format!(", {} failed", failures.len())
        }
    );
    if !failures.is_empty() {
        bail!(
            "{} of {} knative services could not be applied:\n  {}",
            failures.len(),
            services.len(),
            failures.join("\n  ")
        );
    }
    let extras: Vec<&str> = deployed
        .iter()
        .map(String::as_str)
        .filter(|name| !services.iter().any(|s| s.name == *name))
        .collect();
    if !extras.is_empty() {
        println!(
            "note: {} knative service(s) of app `{app}` are no longer in the program \
             (`kubectl get ksvc -n {namespace} -l app.kubernetes.io/name={}` lists them): {}",
            extras.len(),
            crate::naming::dns_label(app),
            extras.join(", ")
        );
    }
    Ok(())
}
