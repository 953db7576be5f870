//! `ferry deploy --platform lambda`: every function of the manifest becomes a Lambda function
//! (see [`crate::lambda`] for names and settings). A function that does not exist is created;
//! one whose code (`CodeSha256` against the zip's) or settings differ is updated; the others
//! are left alone. Four functions are deployed at a time.
//!
//! A web program's web app is one more function, deployed after the others, whose Function URL
//! (and public access, for `--function-url-auth none`) is then created or brought in line; the
//! URL is printed.

use std::time::Duration;

use anyhow::bail;
use futures::StreamExt as _;
use indicatif::{ProgressBar, ProgressStyle};

use super::Args;
use crate::artifacts::Artifacts;
use crate::lambda::api::{ApiError, CodeUpload, FunctionUrlConfig};
use crate::lambda::{Code, Deployment, Desired, DesiredWeb, Difference, WEB_ROW, read_code};
use crate::table;

/// Functions deployed at once.
const PARALLEL: usize = 4;

/// What deploying one function did.
#[derive(Debug)]
enum Outcome {
    Created,
    Updated(Difference),
    Unchanged,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let artifacts = Artifacts::new(args.program.artifacts_dir()?);
    let runtime = crate::commands::runtime()?;
    let (deployment, info, _manifest) =
        runtime.block_on(Deployment::new(&artifacts, &args.lambda, true))?;
    let code = read_code(&artifacts.lambda_zip(&info.program), &info.architecture)?;
    runtime.block_on(deploy(&deployment, &code))
}

async fn deploy(deployment: &Deployment, code: &Code) -> anyhow::Result<()> {
    let upload = deployment.upload(code).await?;
    if let CodeUpload::S3 { s3_bucket, s3_key } = &upload {
        eprintln!(
            "note: the code is {:.1} MiB, over Lambda's direct upload limit: it goes up through s3://{s3_bucket}/{s3_key}",
            code.zip.len() as f64 / f64::from(1 << 20)
        );
    }
    let upload = &upload;
    let deployed = deployment.deployed_names().await?;
    let total = deployment.functions.len() + usize::from(deployment.web.is_some());
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} deploying to lambda [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(120));
    let mut outcomes: Vec<(usize, Result<Outcome, ApiError>)> =
        futures::stream::iter(deployment.functions.iter().enumerate())
            .map(|(index, function)| {
                let bar = &bar;
                async move {
                    let outcome = deploy_one(deployment, function, code, upload).await;
                    bar.inc(1);
                    bar.set_message(function.handler.clone());
                    (index, outcome)
                }
            })
            .buffer_unordered(PARALLEL)
            .collect()
            .await;
    outcomes.sort_by_key(|(index, _)| *index);
    // The web app comes last: its handlers call the functions.
    let mut url = None;
    let web = match &deployment.web {
        Some(web) => {
            bar.set_message(WEB_ROW);
            let outcome =
                deploy_web(deployment, web, code, upload)
                    .await
                    .map(|(outcome, config)| {
                        url = Some(config);
                        outcome
                    });
            bar.inc(1);
            Some((&web.function, outcome))
        }
        None => None,
    };
    bar.finish_and_clear();

    let (mut created, mut updated, mut unchanged) = (0, 0, 0);
    // The same error for many functions (a role Lambda cannot assume, say) is reported once.
    let mut failures: Vec<(String, Vec<&str>)> = Vec::new();
    let mut rows = Vec::new();
    let functions = deployment
        .functions
        .iter()
        .map(|function| (function, function.handler.as_str()))
        .zip(outcomes.into_iter().map(|(_, outcome)| outcome))
        .chain(web.map(|(function, outcome)| ((function, WEB_ROW), outcome)));
    for ((function, shown), outcome) in functions {
        let result = match outcome {
            Ok(Outcome::Created) => {
                created += 1;
                "created".to_owned()
            }
            Ok(Outcome::Updated(difference)) => {
                updated += 1;
                super::describe_update(difference.code, &difference.config)
            }
            Ok(Outcome::Unchanged) => {
                unchanged += 1;
                "unchanged".to_owned()
            }
            Err(error) => {
                let cause = match error.status {
                    Some(status) => format!(
                        "{}: {} (http {})",
                        error.code,
                        error.message,
                        status.as_u16()
                    ),
                    None => error.message,
                };
                match failures.iter_mut().find(|(c, _)| *c == cause) {
                    Some((_, names)) => names.push(&function.name),
                    None => failures.push((cause, vec![&function.name])),
                }
                "failed".to_owned()
            }
        };
        rows.push(vec![shown.to_owned(), function.name.clone(), result]);
    }
    print!(
        "{}",
        table::render(&["FUNCTION", "LAMBDA FUNCTION", "RESULT"], &rows)
    );
    let failed: usize = failures.iter().map(|(_, names)| names.len()).sum();
    println!(
        "lambda {} ({}): {created} created, {updated} updated, {unchanged} unchanged{}",
        deployment.region,
        deployment.api.endpoint(),
        if failed == 0 {
            String::new()
        } else {
            format!(", {failed} failed")
        }
    );
    if let Some(url) = &url {
        println!("web app: {} (auth {})", url.function_url, url.auth_type);
    }
    if failed > 0 {
        let causes: Vec<String> = failures
            .iter()
            .map(|(cause, names)| format!("{cause}\n    for {}", names.join(", ")))
            .collect();
        bail!(
            "{failed} of {total} functions could not be deployed:\n  {}",
            causes.join("\n  ")
        );
    }
    let extras = deployment.extras(&deployed).await?;
    crate::commands::note_extras("function", "lambda", &deployment.app, &extras);
    Ok(())
}

/// Deploys the web app's function, then its Function URL: what changed in either.
async fn deploy_web(
    deployment: &Deployment,
    web: &DesiredWeb,
    code: &Code,
    upload: &CodeUpload,
) -> Result<(Outcome, FunctionUrlConfig), ApiError> {
    let outcome = deploy_one(deployment, &web.function, code, upload).await?;
    let (url, changed) = deployment.deploy_url(web).await?;
    let outcome = match outcome {
        Outcome::Created => Outcome::Created,
        Outcome::Updated(mut difference) => {
            difference.config.extend(changed);
            Outcome::Updated(difference)
        }
        Outcome::Unchanged if changed.is_empty() => Outcome::Unchanged,
        Outcome::Unchanged => Outcome::Updated(Difference {
            code: false,
            config: changed,
        }),
    };
    Ok((outcome, url))
}

async fn deploy_one(
    deployment: &Deployment,
    function: &Desired,
    code: &Code,
    upload: &CodeUpload,
) -> Result<Outcome, ApiError> {
    let api = &deployment.api;
    let Some(deployed) = api.get_function(&function.name).await? else {
        api.create_function(
            &function.name,
            &function.settings,
            upload,
            code.architecture,
            &function.tags,
        )
        .await?;
        return Ok(Outcome::Created);
    };
    let difference = deployment.difference(function, Some(code), &deployed);
    if difference.is_empty() {
        return Ok(Outcome::Unchanged);
    }
    // Lambda takes one update at a time: wait for the previous one (a creation, say) to end.
    api.wait_until_updated(&function.name).await?;
    if difference.code {
        api.update_code(&function.name, upload, code.architecture)
            .await?;
        api.wait_until_updated(&function.name).await?;
    }
    if !difference.config.is_empty() {
        api.update_configuration(&function.name, &function.settings)
            .await?;
        api.wait_until_updated(&function.name).await?;
    }
    Ok(Outcome::Updated(difference))
}
