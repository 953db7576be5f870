//! `ferry ls --platform openwhisk`: per function of the manifest, its action and state:
//! `deployed`, `missing`, `outdated code`, `outdated config (limits, …)`, and `extra` for
//! actions of the app (annotation `ferry:app`) that the program no longer has.
//!
//! The code is compared when the OpenWhisk zip (or with `--registry`, the image) has been
//! built. A web program's web app is one
//! more row, `(web)`, and a line with its web action's URL.

use futures::StreamExt as _;

use super::Args;
use crate::artifacts::Artifacts;
use crate::lambda::WEB_ROW;
use crate::openwhisk::{ActionDeployment, read_code, read_image, serves_concurrently};
use crate::table;

pub fn run(args: &Args) -> anyhow::Result<()> {
    let artifacts = Artifacts::new(args.program.artifacts_dir()?);
    let (deployment, info, _manifest) = ActionDeployment::new(
        &artifacts,
        args.lambda.app.as_deref(),
        &args.lambda.function_env()?,
        serves_concurrently(&args.registry),
    )?;
    let code = match &args.registry.registry {
        Some(registry) => {
            crate::commands::code_if_built(&artifacts.openwhisk_image(&info.program), |image| {
                read_image(image, registry, &deployment.app)
            })?
        }
        None => crate::commands::code_if_built(&artifacts.openwhisk_zip(&info.program), read_code)?,
    };
    let runtime = crate::commands::runtime()?;
    runtime.block_on(async {
        let deployed = deployment.client.list().await?;
        let states: Vec<anyhow::Result<String>> = futures::stream::iter(&deployment.actions)
            .map(|action| {
                let deployment = &deployment;
                let code = code.as_ref();
                async move {
                    let Some(deployed) = deployment.client.get(&action.name).await? else {
                        return Ok("missing".to_owned());
                    };
                    let difference = deployment.difference(action, code, &deployed);
                    Ok(super::describe_state(difference.code, &difference.config))
                }
            })
            .buffered(8)
            .collect()
            .await;
        let mut rows = Vec::new();
        for (action, state) in deployment.actions.iter().zip(states) {
            rows.push(vec![action.handler.clone(), action.name.clone(), state?]);
        }
        let mut url_line = None;
        if let Some(web) = &deployment.web {
            let state = match deployment.client.get(&web.name).await? {
                None => {
                    url_line = Some(
                        "web app: not deployed (`ferry deploy` creates its web action)".to_owned(),
                    );
                    "missing".to_owned()
                }
                Some(deployed) => {
                    url_line = Some(format!("web app: {}", deployment.web_url(&deployed)));
                    let difference = deployment.difference(web, code.as_ref(), &deployed);
                    super::describe_state(difference.code, &difference.config)
                }
            };
            rows.push(vec![WEB_ROW.to_owned(), web.name.clone(), state]);
        }
        for (name, id) in deployment.extras(&deployed) {
            rows.push(vec![id, name, "extra".to_owned()]);
        }
        print!(
            "{}",
            table::render(&["FUNCTION", "OPENWHISK ACTION", "STATE"], &rows)
        );
        if let Some(line) = url_line {
            println!("{line}");
        }
        Ok(())
    })
}
