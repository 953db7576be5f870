//! `ferry deploy --platform openwhisk`: every function of the manifest becomes an OpenWhisk
//! action (see [`crate::openwhisk`] for names, settings and the two kinds of code). The
//! controller's limits are checked first; with `--registry` the runtime image is pushed. A
//! missing action is created; one whose code (the `ferry:code-sha256` annotation against the
//! zip's or image's) or settings differ is replaced; the others are left alone. Four actions are
//! deployed at a time.
//!
//! A web program's web app is one more action, a web action deployed after the others; its URL
//! is printed.

use std::time::Duration;

use anyhow::bail;
use futures::StreamExt as _;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

use super::Args;
use crate::artifacts::Artifacts;
use crate::lambda::WEB_ROW;
use crate::openwhisk::{
    ActionCode, ActionDeployment, DesiredAction, explain_refusal, read_code, read_image,
    serves_concurrently,
};
use crate::table;

/// Actions deployed at once.
const PARALLEL: usize = 4;

pub fn run(args: &Args) -> anyhow::Result<()> {
    let artifacts = Artifacts::new(args.program.artifacts_dir()?);
    let (deployment, info, manifest) = ActionDeployment::new(
        &artifacts,
        args.lambda.app.as_deref(),
        &args.lambda.function_env()?,
        serves_concurrently(&args.registry),
    )?;
    let runtime = crate::commands::runtime()?;
    // A wrong host, bad credentials or limits the controller refuses stop the command before
    // anything is pushed or deployed.
    let deployed = runtime.block_on(preflight(&deployment))?;
    let code = match &args.registry.registry {
        Some(registry) => {
            let path = artifacts.openwhisk_image(&info.program);
            let code = read_image(&path, registry, &deployment.app)?;
            if let ActionCode::Image { reference, .. } = &code {
                crate::registry::push(&path, reference, args.registry.insecure_registry)?;
                println!("pushed {reference}");
            }
            code
        }
        None => {
            let concurrent: Vec<&str> = manifest
                .functions
                .iter()
                .filter(|f| f.config.concurrency > 1)
                .map(|f| f.name.as_str())
                .collect();
            if !concurrent.is_empty() {
                eprintln!(
                    "note: {} allow(s) concurrent invocations, which OpenWhisk's native \
                     ActionLoop runtime cannot serve: deployed with concurrency 1; deploy \
                     ferry's runtime image with `--registry` to keep it",
                    concurrent.join(", ")
                );
            }
            read_code(&artifacts.openwhisk_zip(&info.program))?
        }
    };
    runtime.block_on(deploy(&deployment, &code, &deployed))
}

/// The deployed actions, once the controller is reachable and allows every action's limits.
async fn preflight(deployment: &ActionDeployment) -> anyhow::Result<Vec<Value>> {
    let deployed = deployment.client.list().await?;
    if let Some(limits) = deployment.client.limits().await {
        let refused: Vec<String> = deployment
            .actions
            .iter()
            .chain(&deployment.web)
            .flat_map(|action| limits.refusals(action))
            .collect();
        if !refused.is_empty() {
            bail!(
                "openwhisk {} would refuse {} limit(s):\n  {}",
                deployment.client.api_host(),
                refused.len(),
                refused.join("\n  ")
            );
        }
    }
    Ok(deployed)
}

async fn deploy(
    deployment: &ActionDeployment,
    code: &ActionCode,
    deployed: &[Value],
) -> anyhow::Result<()> {
    let total = deployment.actions.len() + usize::from(deployment.web.is_some());
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} deploying to openwhisk [{bar:30}] {pos}/{len} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(120));
    let mut outcomes: Vec<anyhow::Result<(String, Value)>> =
        futures::stream::iter(&deployment.actions)
            .map(|action| {
                let bar = &bar;
                async move {
                    let outcome = deploy_one(deployment, action, code).await;
                    bar.inc(1);
                    bar.set_message(action.handler.clone());
                    outcome
                }
            })
            .buffered(PARALLEL)
            .collect()
            .await;
    // The web app comes last: its handlers call the functions.
    if let Some(web) = &deployment.web {
        bar.set_message(WEB_ROW);
        outcomes.push(deploy_one(deployment, web, code).await);
        bar.inc(1);
    }
    bar.finish_and_clear();

    let mut counts = [0usize; 3];
    let mut failures = Vec::new();
    let mut rows = Vec::new();
    let mut url = None;
    for (action, outcome) in deployment
        .actions
        .iter()
        .chain(&deployment.web)
        .zip(outcomes)
    {
        let result = match outcome {
            Ok((result, stored)) => {
                let slot = match result.as_str() {
                    "created" => 0,
                    "unchanged" => 2,
                    _ => 1,
                };
                counts[slot] += 1;
                if action.web {
                    url = Some(deployment.web_url(&stored));
                }
                result
            }
            Err(error) => {
                failures.push(format!("{}: {error:#}", action.name));
                "failed".to_owned()
            }
        };
        let shown = if action.web {
            WEB_ROW.to_owned()
        } else {
            action.handler.clone()
        };
        rows.push(vec![shown, action.name.clone(), result]);
    }
    print!(
        "{}",
        table::render(&["FUNCTION", "OPENWHISK ACTION", "RESULT"], &rows)
    );
    println!(
        "openwhisk {}: {} created, {} updated, {} unchanged{}",
        deployment.client.api_host(),
        counts[0],
        counts[1],
        counts[2],
        if failures.is_empty() {
            String::new()
        } else {
            format!(", {} failed", failures.len())
        }
    );
    if let Some(url) = url {
        println!("web app: {url}");
    }
    if !failures.is_empty() {
        bail!(
            "{} of {total} actions could not be deployed:\n  {}",
            failures.len(),
            failures.join("\n  ")
        );
    }
    let extras = deployment.extras(deployed);
    crate::commands::note_extras("action", "openwhisk", &deployment.app, &extras);
    Ok(())
}

/// Creates, replaces or leaves `action`: what it did, and the action as deployed.
async fn deploy_one(
    deployment: &ActionDeployment,
    action: &DesiredAction,
    code: &ActionCode,
) -> anyhow::Result<(String, Value)> {
    let client = &deployment.client;
    let document = deployment.document(action, code);
    let Some(deployed) = client.get(&action.name).await? else {
        let stored = client
            .put(&action.name, &document, false)
            .await
            .map_err(explain_refusal)?;
        return Ok(("created".to_owned(), stored));
    };
    let difference = deployment.difference(action, Some(code), &deployed);
    if difference.is_empty() {
        return Ok(("unchanged".to_owned(), deployed));
    }
    let stored = client
        .put(&action.name, &document, true)
        .await
        .map_err(explain_refusal)?;
    Ok((
        super::describe_update(difference.code, &difference.config),
        stored,
    ))
}
