//! Names of deployed functions: `<app>-<function>-<hash>`, by the rules of [`ferry_core::naming`]
//! (which the `lambda` and `openwhisk` backends follow with `FERRY_APP`), plus Knative's
//! DNS-label names.

use anyhow::bail;
use ferry_core::FunctionConfig;
use ferry_core::manifest::{Manifest, ManifestFunction};

/// Longest Knative Service name: a DNS label (63) that still fits the revision suffix
/// (`-00001`).
const KNATIVE_MAX: usize = 57;

/// The 8-hex-digit config hash ([`ferry_core::naming`]).
pub fn config_hash(config: &FunctionConfig, handler: &str) -> String {
    ferry_core::naming::config_hash(config, handler)
}

/// What selects the function in the program (`_HANDLER` on Lambda, `main` on OpenWhisk): its
/// name, or its id when another function has the same name.
pub fn handler<'m>(manifest: &'m Manifest, function: &'m ManifestFunction) -> &'m str {
    ferry_core::naming::handler(
        &function.name,
        &function.id,
        manifest.functions.iter().map(|f| f.name.as_str()),
    )
}

/// The Lambda function name: letters, digits, `-` and `_`, at most 64 characters (the
/// function part is shortened to fit).
pub fn lambda_name(app: &str, handler: &str, hash: &str) -> anyhow::Result<String> {
    Ok(ferry_core::naming::deployed_name(app, handler, hash)?)
}

/// The handler of a program's web app where a function's would be ([`ferry_core::naming::WEB_HANDLER`]).
pub const WEB_HANDLER: &str = ferry_core::naming::WEB_HANDLER;

/// The deployed name of a program's web app: `<app>-web-<hash>` ([`ferry_core::naming::web_name`]),
/// on Lambda and OpenWhisk alike.
pub fn web_name(app: &str) -> anyhow::Result<String> {
    Ok(ferry_core::naming::web_name(app)?)
}

/// The OpenWhisk action name: the same as on Lambda (OpenWhisk admits those names).
pub fn action_name(app: &str, handler: &str, hash: &str) -> anyhow::Result<String> {
    lambda_name(app, handler, hash)
}

/// What every Lambda function name of `app` starts with.
pub fn lambda_prefix(app: &str) -> String {
    format!("{}-", ferry_core::naming::clean(app))
}

/// The Knative Service name: a lowercase DNS label, at most 57 characters.
pub fn knative_name(app: &str, handler: &str, hash: &str) -> anyhow::Result<String> {
    let app = dns_label(app);
    if !app.starts_with(|c: char| c.is_ascii_lowercase()) {
        bail!("the app name `{app}` must start with a letter to name Knative services");
    }
    join(
        &app,
        &dns_label(handler),
        hash,
        KNATIVE_MAX,
        "knative service",
    )
}

/// `text` as a Kubernetes label value or DNS label: lowercase letters, digits and single
/// dashes inside, at most 63 characters.
pub fn dns_label(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_alphanumeric() { c } else { '-' };
        if c != '-' || !(out.is_empty() || out.ends_with('-')) {
            out.push(c);
        }
    }
    out.truncate(63);
    out.trim_end_matches('-').to_owned()
}

fn join(app: &str, function: &str, hash: &str, max: usize, what: &str) -> anyhow::Result<String> {
    let fixed = app.len() + hash.len() + 2;
    if fixed + 1 > max {
        bail!(
            "the app name `{app}` is too long for a {what} name (at most {} characters)",
            max - hash.len() - 3
        );
    }
    let room = max - fixed;
    let function = if function.len() > room {
        function[..room].trim_end_matches('-')
    } else {
        function
    };
    Ok(format!("{app}-{function}-{hash}"))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_hash_is_of_the_documented_lines() {
        let config = FunctionConfig {
            memory_mb: 512,
            timeout: Duration::from_secs(30),
            concurrency: 1,
            idempotent: false,
        };
        // printf 'memory_mb=512\ntimeout_ms=30000\nconcurrency=1\nhandler=count-queens\n' | sha256sum
        assert_eq!(config_hash(&config, "count-queens"), "5e63fd26");
        assert_ne!(config_hash(&config, "other"), "5e63fd26");
    }

    #[test]
    fn names_fit_the_platforms() {
        assert_eq!(
            lambda_name("nqueens", "count-queens", "5e63fd26").unwrap(),
            "nqueens-count-queens-5e63fd26"
        );
        assert_eq!(
            lambda_name("app", "crate::module::f", "00000000").unwrap(),
            "app-crate--module--f-00000000"
        );
        let long = lambda_name("app", &"x".repeat(100), "00000000").unwrap();
        assert_eq!(long.len(), 64);
        assert!(lambda_name(&"a".repeat(60), "f", "00000000").is_err());

        assert_eq!(
            knative_name("My_App", "crate::Count_Queens", "5e63fd26").unwrap(),
            "my-app-crate-count-queens-5e63fd26"
        );
        assert_eq!(
            knative_name("a", &"y".repeat(80), "00000000")
                .unwrap()
                .len(),
            57
        );
        assert!(knative_name("9lives", "f", "00000000").is_err());
    }
}
