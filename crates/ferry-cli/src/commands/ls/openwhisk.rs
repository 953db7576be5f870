//! `ferry ls --platform openwhisk`: per function of the manifest, its action and state:
//! `deployed`, `missing`, `outdated code`, `outdated config (limits, …)`, and `extra` for
//! actions of the app (annotation `ferry:app`) that the program no longer has.
//!
//! The code is compared when the OpenWhisk zip has been built.

use futures::StreamExt as _;

use super::Args;
use crate::artifacts::Artifacts;
use crate::openwhisk::{ActionDeployment, read_code};
use crate::table;

pub fn run(args: &Args) -> anyhow::Result<()> {
    let artifacts = Artifacts::new(args.program.artifacts_dir()?);
    let (deployment, info, _manifest) =
        ActionDeployment::new(&artifacts, args.lambda.app.as_deref(), &args.lambda.env)?;
    let zip = artifacts.openwhisk_zip(&info.program);
    let code = crate::commands::code_if_built(&zip, read_code)?;
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
        for (name, id) in deployment.extras(&deployed) {
            rows.push(vec![id, name, "extra".to_owned()]);
        }
        print!(
            "{}",
            table::render(&["FUNCTION", "OPENWHISK ACTION", "STATE"], &rows)
        );
        Ok(())
    })
}
