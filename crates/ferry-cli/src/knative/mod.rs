//! A program on Knative Serving: one `serving.knative.dev/v1` Service per function, and one for
//! a web program's web app, all running the program's HTTP image (`FERRY_ROLE=http`), which
//! serves every function at `POST /functions/{name}`. `ferry build --platform http` writes them
//! for the image it names; `ferry deploy --platform http` for the image it pushed, and applies
//! them with `--apply` ([`apply`]).
//!
//! Per function, a Service:
//!
//! - named `<app>-<function>-<config hash>` as a DNS label ([`naming::knative_name`]), in
//!   `--namespace` (`metadata.namespace`, so `kubectl apply` cannot put it elsewhere);
//! - `containerConcurrency` = the function's `concurrency`; memory request and limit =
//!   `memory_mb` Mi; `timeoutSeconds` = the timeout rounded up to whole seconds; readiness
//!   `/readyz` and liveness `/healthz` probes, port 8080;
//! - env `FERRY_ROLE=http`, `FERRY_FUNCTION` = the function's name (its id when ambiguous),
//!   `FERRY_BACKEND=http` and `FERRY_HTTP_ROUTES` = every function's in-cluster URL
//!   (`<function>=http://<service>.<namespace>.svc.cluster.local/functions/<function>`), so a
//!   function that calls another, and each stage of a chained flow, reaches the service of that
//!   function whatever its config hash; then every `--env KEY=VALUE`;
//! - annotations `ferry.dev/function-id`, `ferry.dev/route`, `ferry.dev/config-hash`, labels
//!   `app.kubernetes.io/name` (the app) and `app.kubernetes.io/managed-by: ferry`.
//!
//! A web program (`"web": true` in its manifest) gets one more Service, its web app, named
//! `<app>-web-<hash>` by the same rule as on Lambda and OpenWhisk (the default settings of a
//! function called `web`): the same image without `FERRY_FUNCTION`, so it serves its router, with
//! the same routes so that its handlers' `ctx: ferry::Context` reaches the functions; its
//! `containerConcurrency` is 0 (Knative's unbounded default: a router serves requests
//! concurrently) and it has no ferry probes (the router owns every path).

pub mod apply;

use std::path::Path;

use anyhow::{Context as _, bail};
use ferry_core::manifest::Manifest;
use serde_json::{Value, json};

use crate::commands::build::oci;
use crate::naming;

/// The flags of `ferry deploy --platform http`.
#[derive(Debug, Clone, clap::Args)]
pub struct KnativeArgs {
    /// The Kubernetes namespace of the Knative Services (HTTP only): their in-cluster URLs,
    /// which every Service's routes name, are `http://<service>.<namespace>.svc.cluster.local`.
    #[arg(long, default_value = "default", value_name = "NAMESPACE")]
    pub namespace: String,
    /// The cluster's Knative domain (HTTP only): `http/routes.env` gets the Services' external
    /// URLs, `http://<service>.<namespace>.<domain>` (`https://` when the domain is given with
    /// it), for host programs outside the cluster.
    #[arg(long, value_name = "DOMAIN")]
    pub domain: Option<String>,
    /// Apply the Services through the Kubernetes API (HTTP only; server-side apply, with the
    /// kubeconfig's current context): without it they are written for `kubectl apply -f`.
    #[arg(long)]
    pub apply: bool,
}

/// Writes every Service to `dir` as `<name>.yaml`, replacing what was there.
pub fn write(dir: &Path, services: &[Service], manifest: &Manifest) -> anyhow::Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)
            .with_context(|| format!("cannot replace `{}`", dir.display()))?;
    }
    for service in services {
        crate::artifacts::write_atomically(
            &dir.join(format!("{}.yaml", service.name)),
            service.yaml(manifest)?.as_bytes(),
        )?;
    }
    Ok(())
}

/// Annotation that marks the web app's Service.
pub const WEB_ANNOTATION: &str = "ferry.dev/web";

/// What every Service of a program shares.
#[derive(Debug, Clone)]
pub struct KnativeApp<'a> {
    /// Prefix of the Service names.
    pub app: &'a str,
    /// The image every Service runs.
    pub image: &'a str,
    /// Where the Services go: a DNS label.
    pub namespace: &'a str,
    /// Variables for every Service (`--env`), after ferry's own.
    pub env: &'a [(String, String)],
}

/// One Service as it should be deployed.
#[derive(Debug, Clone)]
pub struct Service {
    /// What the program calls the function (name, or id when ambiguous); `web` for the web app.
    pub handler: String,
    /// The Service's name.
    pub name: String,
    /// The web app's Service rather than a function's.
    pub web: bool,
    /// The Service as JSON (what `--apply` sends).
    pub document: Value,
}

impl Service {
    /// Its YAML, with a comment line saying what it serves.
    pub fn yaml(&self, manifest: &Manifest) -> anyhow::Result<String> {
        let what = if self.web {
            "the web app: its router on this service's URL".to_owned()
        } else {
            let id = manifest
                .functions
                .iter()
                .find(|f| naming::handler(manifest, f) == self.handler)
                .map_or("", |f| f.id.as_str());
            format!(
                "{} ({id}): POST /functions/{} on this service's URL",
                self.handler, self.handler
            )
        };
        Ok(format!(
            "# {what}.\n{}",
            serde_norway::to_string(&self.document)?
        ))
    }
}

/// Checks that `namespace` is a Kubernetes namespace name (a DNS label).
pub fn check_namespace(namespace: &str) -> anyhow::Result<()> {
    if namespace.is_empty() || naming::dns_label(namespace) != namespace {
        bail!(
            "the namespace `{namespace}` is not a dns label: lowercase letters, digits and `-`, \
             at most 63 characters, starting and ending with a letter or digit"
        );
    }
    Ok(())
}

/// The Service's address inside the cluster: `http://<service>.<namespace>.svc.cluster.local`.
pub fn in_cluster_url(service: &str, namespace: &str) -> String {
    format!("http://{service}.{namespace}.svc.cluster.local")
}

/// The Service's address from outside the cluster under Knative's default domain template
/// (`{{.Name}}.{{.Namespace}}.{{.Domain}}`): `http://<service>.<namespace>.<domain>`, or
/// `https://…` when `domain` starts with `https://`.
pub fn external_url(service: &str, namespace: &str, domain: &str) -> String {
    let (scheme, domain) = match domain.split_once("://") {
        Some((scheme, rest)) => (scheme, rest),
        None => ("http", domain),
    };
    format!(
        "{scheme}://{service}.{namespace}.{}",
        domain.trim_end_matches('/')
    )
}

/// `FERRY_HTTP_ROUTES` for `services`: every function's handler and its URL, the service's
/// address given by `base` followed by `/functions/<handler>`.
pub fn routes(services: &[Service], base: impl Fn(&Service) -> String) -> String {
    services
        .iter()
        .filter(|service| !service.web)
        .map(|service| {
            format!(
                "{}={}/functions/{}",
                service.handler,
                base(service),
                service.handler
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Every Service of the program (the functions' in manifest order, then the web app's).
pub fn services(app: &KnativeApp<'_>, manifest: &Manifest) -> anyhow::Result<Vec<Service>> {
    check_namespace(app.namespace)?;
    for (key, _) in app.env {
        if key == ferry::ROLE_VAR || key == ferry::config::FUNCTION.name {
            bail!(
                "`--env {key}=…` is not allowed: ferry sets `{key}` on every knative service \
                 (the image serves `FERRY_ROLE=http`)"
            );
        }
    }
    let labels = json!({
        "app.kubernetes.io/name": naming::dns_label(app.app),
        "app.kubernetes.io/managed-by": "ferry",
    });
    // Names first: the routes every Service carries name them all.
    let mut services = Vec::new();
    for function in &manifest.functions {
        let handler = naming::handler(manifest, function);
        let hash = naming::config_hash(&function.config, handler);
        let name = naming::knative_name(app.app, handler, &hash)?;
        let memory = format!("{}Mi", function.config.memory_mb);
        let timeout_seconds = function.config.timeout.as_millis().div_ceil(1000).max(1);
        let document = json!({
            "apiVersion": "serving.knative.dev/v1",
            "kind": "Service",
            "metadata": {
                "name": name,
                "namespace": app.namespace,
                "labels": labels,
                "annotations": {
                    "ferry.dev/function-id": function.id,
                    "ferry.dev/route": format!("/functions/{handler}"),
                    "ferry.dev/config-hash": hash,
                },
            },
            "spec": {
                "template": {
                    "spec": {
                        "containerConcurrency": function.config.concurrency,
                        "timeoutSeconds": timeout_seconds,
                        "containers": [{
                            "image": app.image,
                            "ports": [{ "containerPort": oci::PORT }],
                            "resources": {
                                "requests": { "memory": memory },
                                "limits": { "memory": memory },
                            },
                            "readinessProbe": {
                                "httpGet": { "path": "/readyz", "port": oci::PORT },
                            },
                            "livenessProbe": {
                                "httpGet": { "path": "/healthz", "port": oci::PORT },
                            },
                        }],
                    },
                },
            },
        });
        services.push(Service {
            handler: handler.to_owned(),
            name,
            web: false,
            document,
        });
    }
    if manifest.web {
        if services.iter().any(|s| s.handler == naming::WEB_HANDLER) {
            bail!(
                "function `{}` has the handler the web app is deployed with: rename it \
                 (`#[ferry::function(name = \"…\")]`) to deploy this web program",
                naming::WEB_HANDLER
            );
        }
        let config = ferry_core::naming::WEB_CONFIG;
        let hash = naming::config_hash(&config, naming::WEB_HANDLER);
        let name = naming::knative_name(app.app, naming::WEB_HANDLER, &hash)?;
        let memory = format!("{}Mi", config.memory_mb);
        let document = json!({
            "apiVersion": "serving.knative.dev/v1",
            "kind": "Service",
            "metadata": {
                "name": name,
                "namespace": app.namespace,
                "labels": labels,
                "annotations": {
                    WEB_ANNOTATION: "true",
                    "ferry.dev/config-hash": hash,
                },
            },
            "spec": {
                "template": {
                    "spec": {
                        "containerConcurrency": 0,
                        "timeoutSeconds": config.timeout.as_secs().max(1),
                        "containers": [{
                            "image": app.image,
                            "ports": [{ "containerPort": oci::PORT }],
                            "resources": {
                                "requests": { "memory": memory },
                                "limits": { "memory": memory },
                            },
                        }],
                    },
                },
            },
        });
        services.push(Service {
            handler: naming::WEB_HANDLER.to_owned(),
            name,
            web: true,
            document,
        });
    }

    let routes = routes(&services, |service| {
        in_cluster_url(&service.name, app.namespace)
    });
    for service in &mut services {
        let mut env: Vec<(String, String)> = vec![(ferry::ROLE_VAR.to_owned(), "http".to_owned())];
        if !service.web {
            env.push((
                ferry::config::FUNCTION.name.to_owned(),
                service.handler.clone(),
            ));
        }
        env.push((ferry::config::BACKEND.name.to_owned(), "http".to_owned()));
        env.push((ferry::config::HTTP_ROUTES.name.to_owned(), routes.clone()));
        // `--env` comes last and replaces ferry's value of the same variable.
        for (key, value) in app.env {
            match env.iter_mut().find(|(k, _)| k == key) {
                Some(slot) => slot.1 = value.clone(),
                None => env.push((key.clone(), value.clone())),
            }
        }
        service.document["spec"]["template"]["spec"]["containers"][0]["env"] = env
            .into_iter()
            .map(|(name, value)| json!({ "name": name, "value": value }))
            .collect();
    }
    Ok(services)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_inside_and_outside_the_cluster() {
        assert_eq!(
            in_cluster_url("app-f-00000000", "shop"),
            "http://app-f-00000000.shop.svc.cluster.local"
        );
        assert_eq!(
            external_url("app-f-00000000", "shop", "example.com"),
            "http://app-f-00000000.shop.example.com"
        );
        assert_eq!(
            external_url("app-f-00000000", "shop", "https://example.com/"),
            "https://app-f-00000000.shop.example.com"
        );
    }

    #[test]
    fn namespaces_are_dns_labels() {
        check_namespace("default").unwrap();
        check_namespace("team-a1").unwrap();
        for bad in ["", "Shop", "a_b", "-a", "a-", &"a".repeat(64)] {
            let error = check_namespace(bad).unwrap_err().to_string();
            assert!(error.contains("is not a dns label"), "{bad}: {error}");
        }
    }
}
