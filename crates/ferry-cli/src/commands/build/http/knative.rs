//! A Knative Service (`serving.knative.dev/v1`) per function. Every service runs the same image,
//! which serves all the program's functions at `POST /functions/{name}`; each service carries
//! one function's limits, and callers of that function use that service's URL:
//!
//! - `containerConcurrency` = the function's `concurrency` (requests one instance gets at once);
//! - memory request and limit = `memory_mb` Mi;
//! - `timeoutSeconds` = the timeout, rounded up to whole seconds;
//! - readiness `/readyz` and liveness `/healthz` probes, port 8080.

use ferry_core::manifest::{Manifest, ManifestFunction};
use serde_json::json;

use crate::commands::build::oci;
use crate::naming;

/// The Service for `function`: its name and its YAML.
pub fn service(
    app: &str,
    image: &str,
    manifest: &Manifest,
    function: &ManifestFunction,
) -> anyhow::Result<(String, String)> {
    let handler = naming::handler(manifest, function);
    let hash = naming::config_hash(&function.config, handler);
    let name = naming::knative_name(app, handler, &hash)?;
    let memory = format!("{}Mi", function.config.memory_mb);
    let timeout_seconds = function.config.timeout.as_millis().div_ceil(1000).max(1);
    let route = format!("/functions/{handler}");
    let service = json!({
        "apiVersion": "serving.knative.dev/v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "labels": {
                "app.kubernetes.io/name": naming::dns_label(app),
                "app.kubernetes.io/managed-by": "ferry",
            },
            "annotations": {
                "ferry.dev/function-id": function.id,
                "ferry.dev/route": route,
                "ferry.dev/config-hash": hash,
            },
        },
        "spec": {
            "template": {
                "spec": {
                    "containerConcurrency": function.config.concurrency,
                    "timeoutSeconds": timeout_seconds,
                    "containers": [{
                        "image": image,
                        "ports": [{ "containerPort": oci::PORT }],
                        "env": [{ "name": ferry::ROLE_VAR, "value": "http" }],
                        "resources": {
                            "requests": { "memory": memory },
                            "limits": { "memory": memory },
                        },
                        "readinessProbe": { "httpGet": { "path": "/readyz" } },
                        "livenessProbe": { "httpGet": { "path": "/healthz" } },
                    }],
                },
            },
        },
    });
    let yaml = format!(
        "# {} ({}): POST {route} on this service's URL.\n{}",
        function.name,
        function.id,
        serde_norway::to_string(&service)?
    );
    Ok((name, yaml))
}
