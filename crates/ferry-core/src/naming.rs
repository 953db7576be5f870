//! Names of deployed functions: `<app>-<function>-<config hash>`, shared by `ferry deploy`
//! (which creates Lambda functions and OpenWhisk actions under these names) and the `lambda` and
//! `openwhisk` backends (which find them with `FERRY_APP`).
//!
//! The config hash is the first 8 hex digits of the SHA-256 of exactly these four lines (each
//! ending in `\n`), so a change of memory, timeout, concurrency or handler deploys a new function
//! instead of silently changing the one callers use:
//!
//! ```text
//! memory_mb=<memory in MiB>
//! timeout_ms=<timeout in milliseconds>
//! concurrency=<invocations per instance>
//! handler=<the handler: the function's name, or its id when the name is not unique>
//! ```
//!
//! ```
//! use std::time::Duration;
//! use ferry_core::FunctionConfig;
//!
//! let config = FunctionConfig {
//!     memory_mb: 512,
//!     timeout: Duration::from_secs(30),
//!     ..FunctionConfig::DEFAULT
//! };
//! let hash = ferry_core::naming::config_hash(&config, "count-queens");
//! assert_eq!(hash, "5e63fd26");
//! assert_eq!(
//!     ferry_core::naming::deployed_name("nqueens", "count-queens", &hash)?,
//!     "nqueens-count-queens-5e63fd26"
//! );
//! # Ok::<(), ferry_core::Error>(())
//! ```
//!
//! A program that serves a web app (`ferry::web::serve`) deploys it as one more function whose
//! handler is [`WEB_HANDLER`] (`web`) and whose settings are [`WEB_CONFIG`], named by the same
//! rule: [`web_name`], `<app>-web-5142fd6d`.

use sha2::{Digest as _, Sha256};

use crate::{Error, FunctionConfig, Result};

/// Longest deployed name: Lambda's limit, which OpenWhisk's (256) also admits.
pub const MAX_NAME: usize = 64;

/// The 8-hex-digit config hash (see the module docs).
pub fn config_hash(config: &FunctionConfig, handler: &str) -> String {
    let input = format!(
        "memory_mb={}\ntimeout_ms={}\nconcurrency={}\nhandler={handler}\n",
        config.memory_mb,
        config.timeout.as_millis(),
        config.concurrency
    );
    Sha256::digest(input.as_bytes())[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What selects a function in its program: its `name`, or its `id` when another of `names`
/// (every function's name, this one's included) is the same.
pub fn handler<'a, 'n>(
    name: &'a str,
    id: &'a str,
    names: impl IntoIterator<Item = &'n str>,
) -> &'a str {
    if names.into_iter().filter(|n| *n == name).count() > 1 {
        id
    } else {
        name
    }
}

/// The deployed name `<app>-<handler>-<hash>`: letters, digits, `-` and `_` (anything else
/// becomes `-`), at most [`MAX_NAME`] characters (the handler part is shortened to fit).
pub fn deployed_name(app: &str, handler: &str, hash: &str) -> Result<String> {
    let (app, function) = (clean(app), clean(handler));
    let fixed = app.len() + hash.len() + 2;
    if fixed + 1 > MAX_NAME {
        return Err(Error::config(format!(
            "the app name `{app}` is too long for a deployed name (at most {} characters)",
            MAX_NAME - hash.len() - 3
        )));
    }
    let room = MAX_NAME - fixed;
    let function = if function.len() > room {
        function[..room].trim_end_matches('-')
    } else {
        &function
    };
    Ok(format!("{app}-{function}-{hash}"))
}

/// The handler of a program's web app where a function's would be: its deployed name's middle
/// part, and what `_HANDLER` (Lambda) says to make the program serve its router rather than a
/// function. A program with a function whose handler is `web` cannot deploy a web app.
pub const WEB_HANDLER: &str = "web";

/// The settings a program's web app is deployed with: the defaults of functions (256 MiB, 60 s,
/// one request per instance).
pub const WEB_CONFIG: FunctionConfig = FunctionConfig::DEFAULT;

/// The deployed name of a program's web app under `app`: `<app>-web-<hash of WEB_CONFIG>`.
pub fn web_name(app: &str) -> Result<String> {
    deployed_name(app, WEB_HANDLER, &config_hash(&WEB_CONFIG, WEB_HANDLER))
}

/// `text` with every character a Lambda function name cannot hold (anything but ASCII letters,
/// digits, `-` and `_`) replaced by `-`: how app and function names enter deployed names.
pub fn clean(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_the_platforms() {
        assert_eq!(
            deployed_name("app", "crate::module::f", "00000000").unwrap(),
            "app-crate--module--f-00000000"
        );
        let long = deployed_name("app", &"x".repeat(100), "00000000").unwrap();
        assert_eq!(long.len(), MAX_NAME);
        assert!(deployed_name(&"a".repeat(60), "f", "00000000").is_err());
    }

    #[test]
    fn the_web_app_is_named_like_a_function_called_web() {
        // printf 'memory_mb=256\ntimeout_ms=60000\nconcurrency=1\nhandler=web\n' | sha256sum
        assert_eq!(web_name("shop").unwrap(), "shop-web-5142fd6d");
    }

    #[test]
    fn a_shared_name_falls_back_to_the_id() {
        assert_eq!(handler("f", "a::f", ["f", "g"]), "f");
        assert_eq!(handler("f", "a::f", ["f", "g", "f"]), "a::f");
    }
}
