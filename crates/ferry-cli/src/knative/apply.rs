//! `ferry deploy --platform http --apply`: the Services go to the cluster through the Kubernetes
//! API with server-side apply (field manager `ferry`, taking over fields another manager set), as
//! `kubectl apply --server-side --force-conflicts` would send them.
//!
//! The cluster is the current context of the kubeconfig (`KUBECONFIG`, else `~/.kube/config`),
//! with its credentials (certificates, tokens, exec plugins), or inside a pod its service
//! account. Without either, `--apply` is refused before anything is pushed.

use std::path::PathBuf;

use anyhow::{Context as _, anyhow, bail};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};

use super::Service;

/// The field manager of ferry's server-side applies.
pub const FIELD_MANAGER: &str = "ferry";

/// Knative Serving's Service resource.
fn knative_service() -> ApiResource {
    ApiResource {
        group: "serving.knative.dev".to_owned(),
        version: "v1".to_owned(),
        api_version: "serving.knative.dev/v1".to_owned(),
        kind: "Service".to_owned(),
        plural: "services".to_owned(),
    }
}

/// A connection to the cluster's API server.
pub struct Cluster {
    client: kube::Client,
    /// The API server's URL, for messages.
    pub server: String,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// Where a kubeconfig would be: `KUBECONFIG`'s paths, else `~/.kube/config`.
fn kubeconfig_paths() -> Vec<PathBuf> {
    match std::env::var_os("KUBECONFIG").filter(|value| !value.is_empty()) {
        Some(value) => std::env::split_paths(&value).collect(),
        None => std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(".kube").join("config"))
            .into_iter()
            .collect(),
    }
}

impl Cluster {
    /// Connects with the kubeconfig's current context, or the pod's service account; refuses
    /// when there is neither. Nothing is sent yet.
    pub async fn connect() -> anyhow::Result<Self> {
        let paths = kubeconfig_paths();
        let config = if paths.iter().any(|path| path.exists()) {
            kube::Config::from_kubeconfig(&kube::config::KubeConfigOptions::default())
                .await
                .map_err(|error| anyhow!(error))
                .with_context(|| {
                    format!(
                        "cannot use the kubeconfig `{}`",
                        std::env::join_paths(&paths)
                            .unwrap_or_default()
                            .to_string_lossy()
                    )
                })?
        } else if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some_and(|v| !v.is_empty()) {
            kube::Config::incluster()
                .map_err(|error| anyhow!(error))
                .context("cannot use the pod's service account")?
        } else {
            let looked = if paths.is_empty() {
                "`KUBECONFIG` is not set and `HOME` is not set".to_owned()
            } else {
                format!(
                    "there is no `{}`",
                    paths
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join("`, `")
                )
            };
            bail!(
                "`--apply` needs a kubeconfig: {looked} (set `KUBECONFIG`, or run inside the \
                 cluster); without `--apply` ferry writes the services for `kubectl apply -f`"
            );
        };
        let server = config.cluster_url.to_string();
        let client = kube::Client::try_from(config)
            .map_err(|error| anyhow!(error))
            .with_context(|| format!("cannot set up a client of the kubernetes api at {server}"))?;
        Ok(Self { client, server })
    }

    fn services(&self, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, &knative_service())
    }

    /// Applies `service` (server-side): `created`, `updated` or `unchanged` (the API server
    /// kept the object as it was).
    pub async fn apply(&self, namespace: &str, service: &Service) -> anyhow::Result<&'static str> {
        let api = self.services(namespace);
        let before = api
            .get_opt(&service.name)
            .await
            .map_err(|error| self.explain(error))?;
        // Strict: a field the CRD does not know is an error, not silently dropped.
        let params = PatchParams::apply(FIELD_MANAGER)
            .force()
            .validation_strict();
        let after = api
            .patch(&service.name, &params, &Patch::Apply(&service.document))
            .await
            .map_err(|error| self.explain(error))?;
        Ok(match before {
            None => "created",
            Some(before) if before.metadata.resource_version == after.metadata.resource_version => {
                "unchanged"
            }
            Some(_) => "updated",
        })
    }

    /// The Services ferry deployed for `app` in `namespace` (by their labels).
    pub async fn deployed(&self, namespace: &str, app: &str) -> anyhow::Result<Vec<String>> {
        let selector = format!(
            "app.kubernetes.io/managed-by=ferry,app.kubernetes.io/name={}",
            crate::naming::dns_label(app)
        );
        let list = self
            .services(namespace)
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|error| self.explain(error))?;
        Ok(list
            .items
            .into_iter()
            .filter_map(|s| s.metadata.name)
            .collect())
    }

    /// The API server's refusal or the broken connection, with what to check.
    fn explain(&self, error: kube::Error) -> anyhow::Error {
        match error {
            kube::Error::Api(response) => {
                let hint = match response.code {
                    404 if response.message.starts_with("namespaces ") => {
                        ": create the namespace first (`kubectl create namespace …`), or pick \
                         another with `--namespace`"
                    }
                    // Not a Service (those are looked up with `get_opt`): the resource itself.
                    404 => {
                        ": is Knative Serving installed in this cluster? (no \
                         `services.serving.knative.dev`)"
                    }
                    401 => ": the kubeconfig's credentials were not accepted",
                    403 => ": the kubeconfig's user may not apply knative services here",
                    _ => "",
                };
                // A Status names its reason; a bare answer (`404 page not found`) is its message.
                let answer = if response.reason.starts_with("Failed to parse") {
                    response.message.trim().trim_matches('"').trim().to_owned()
                } else {
                    format!(
                        "{} {}: {}",
                        response.code, response.reason, response.message
                    )
                };
                anyhow!(
                    "the kubernetes api server at {} answered {answer}{hint}",
                    self.server
                )
            }
            other => anyhow!(other).context(format!(
                "cannot reach the kubernetes api server at {}",
                self.server
            )),
        }
    }
}
