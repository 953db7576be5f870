//! `ferry ls --platform lambda`: per function of the manifest, its Lambda function and state:
//!
//! - `deployed`: exists, with the zip's code and the desired settings;
//! - `missing`: no such function;
//! - `outdated code`, `outdated config (Timeout, …)`, `outdated code and config (…)`;
//! - `extra`: a function of the app (tag `ferry:app`) whose name the program no longer has,
//!   after a config change (a new name) or a removed function.
//!
//! The code is compared when the Lambda zip has been built; the role only when `--role` (or
//! `FERRY_LAMBDA_ROLE`) is given.
//!
//! A web program's web app is one more row, `(web)`, whose state also covers its Function URL
//! (`FunctionUrl` when there is none, `AuthType`, `Permission`), and a line with its URL.

use futures::StreamExt as _;

use super::Args;
use crate::artifacts::Artifacts;
use crate::lambda::{Deployment, UrlState, WEB_ROW, read_code};
use crate::table;

pub fn run(args: &Args) -> anyhow::Result<()> {
    let artifacts = Artifacts::new(args.program.artifacts_dir()?);
    let runtime = crate::commands::runtime()?;
    let (deployment, info, _manifest) =
        runtime.block_on(Deployment::new(&artifacts, &args.lambda, false))?;
    let zip = artifacts.lambda_zip(&info.program);
    let code = crate::commands::code_if_built(&zip, |zip| read_code(zip, &info.architecture))?;
    runtime.block_on(async {
        let deployed = deployment.deployed_names().await?;
        let states: Vec<anyhow::Result<String>> = futures::stream::iter(&deployment.functions)
            .map(|function| {
                let deployment = &deployment;
                let deployed = &deployed;
                let code = code.as_ref();
                async move {
                    if !deployed.contains(&function.name) {
                        return Ok("missing".to_owned());
                    }
                    let Some(deployed) = deployment.api.get_function(&function.name).await? else {
                        return Ok("missing".to_owned());
                    };
                    let difference = deployment.difference(function, code, &deployed);
                    Ok(super::describe_state(difference.code, &difference.config))
                }
            })
            .buffered(8)
            .collect()
            .await;
        let mut rows = Vec::new();
        for (function, state) in deployment.functions.iter().zip(states) {
            rows.push(vec![
                function.handler.clone(),
                function.name.clone(),
                state?,
            ]);
        }
        let mut url_line = None;
        if let Some(web) = &deployment.web {
            let name = &web.function.name;
            let found = match deployed.contains(name) {
                true => deployment.api.get_function(name).await?,
                false => None,
            };
            let state = match found {
                None => "missing".to_owned(),
                Some(found) => {
                    let mut difference =
                        deployment.difference(&web.function, code.as_ref(), &found);
                    let url = deployment.url_state(web).await?;
                    difference
                        .config
                        .extend(Deployment::url_difference(web, &url));
                    url_line = Some(describe_url(&url));
                    super::describe_state(difference.code, &difference.config)
                }
            };
            rows.push(vec![WEB_ROW.to_owned(), name.clone(), state]);
            url_line.get_or_insert_with(|| {
                "web app: not deployed (`ferry deploy` creates it and its function url)".to_owned()
            });
        }
        for (name, id) in deployment.extras(&deployed).await? {
            rows.push(vec![id, name, "extra".to_owned()]);
        }
        print!(
            "{}",
            table::render(&["FUNCTION", "LAMBDA FUNCTION", "STATE"], &rows)
        );
        if let Some(line) = url_line {
            println!("{line}");
        }
        Ok(())
    })
}

/// The line that shows the web app's Function URL.
fn describe_url(url: &UrlState) -> String {
    match &url.config {
        Some(config) => format!(
            "web app: {} (auth {})",
            config.function_url, config.auth_type
        ),
        None => "web app: no function url (`ferry deploy` creates it)".to_owned(),
    }
}
