//! `ferry deploy --platform openwhisk` and `ferry ls --platform openwhisk` against a controller
//! on loopback written to OpenWhisk's REST API (`ferry_tests::controller`), which runs deployed
//! actions in real ferry runtime containers.

mod common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Output;

use common::{Scratch, fails, ferry_in, fixture, manifest, ok, only_zip_entry, workspace};
use ferry::{Context, ErrorKind, OpenWhiskConfig};
use ferry_tests::controller::Controller;
use ferry_tests::{Add, RequireEven};

/// `ferry <args>` against `controller`, off the async runtime that serves it.
async fn ferry_on(controller: &Controller, args: &[&str], extra: &[(&str, &str)]) -> Output {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let mut env: Vec<(String, String)> = vec![
        ("__OW_API_HOST".into(), controller.api_host.clone()),
        ("__OW_API_KEY".into(), controller.auth.clone()),
        ("WSK_CONFIG_FILE".into(), "/nonexistent/wskprops".into()),
    ];
    env.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        ferry_in(&workspace(), &args, &env)
    })
    .await
    .unwrap()
}

/// The action executable of the built zip, as a file the controller's containers run.
fn exec_of(dir: &Path, scratch: &Scratch) -> std::path::PathBuf {
    let (name, mode, bytes) = only_zip_entry(&dir.join("openwhisk/ferry-fixture.zip"));
    assert_eq!((name.as_str(), mode & 0o777), ("exec", 0o755));
    let path = scratch.path().join("exec");
    std::fs::write(&path, bytes).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A table's rows as `[function, action, state]`; the state may hold spaces.
fn rows(text: &str) -> Vec<[String; 3]> {
    text.lines()
        .skip(1)
        .filter(|line| line.len() > 1 && !line.contains(" created, "))
        .map(|line| {
            let mut words = line.split_whitespace().map(str::to_owned);
            let function = words.next().unwrap_or_default();
            let action = words.next().unwrap_or_default();
            [function, action, words.collect::<Vec<_>>().join(" ")]
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_creates_then_updates_then_skips_and_actions_run() {
    let dir = fixture("openwhisk");
    let dir_arg = dir.to_str().unwrap();
    let scratch = Scratch::new("openwhisk-deploy");
    let controller = Controller::start(exec_of(dir, &scratch)).await;
    let functions = manifest(dir)["functions"].as_array().unwrap().len();

    let listing = ok(
        &ferry_on(
            &controller,
            &["ls", "--platform", "openwhisk", "--dir", dir_arg],
            &[],
        )
        .await,
        "ls before deploying",
    );
    let listed = rows(&listing);
    assert_eq!(listed.len(), functions, "{listing}");
    assert!(listed.iter().all(|row| row[2] == "missing"), "{listing}");

    let deploy = ["deploy", "--platform", "openwhisk", "--dir", dir_arg];
    let created = ok(&ferry_on(&controller, &deploy, &[]).await, "first deploy");
    assert!(
        created.contains(&format!("{functions} created, 0 updated, 0 unchanged")),
        "{created}"
    );
    let add_action = rows(&created)
        .into_iter()
        .find(|row| row[0] == "add")
        .expect("add is deployed")[1]
        .clone();
    assert!(add_action.starts_with("ferry-fixture-add-"), "{add_action}");
    let action = controller.action(&add_action).expect("stored");
    assert_eq!(action["exec"]["main"], "add");
    assert_eq!(action["exec"]["kind"], "blackbox");
    assert_eq!(action["limits"]["concurrency"], 64);
    assert_eq!(action["limits"]["timeout"], 60_000);
    assert_eq!(action["limits"]["memory"], 256);
    assert!(
        action["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["key"] == "FERRY_FUNCTION" && p["value"] == "add" && p["init"] == true),
        "{action}"
    );

    let again = ok(&ferry_on(&controller, &deploy, &[]).await, "second deploy");
    assert!(
        again.contains(&format!("0 created, 0 updated, {functions} unchanged")),
        "{again}"
    );

    let with_env = [&deploy[..], &["--env", "SHOP_REGION=eu"]].concat();
    let updated = ok(
        &ferry_on(&controller, &with_env, &[]).await,
        "deploy with --env",
    );
    assert!(
        updated.contains(&format!("0 created, {functions} updated, 0 unchanged")),
        "{updated}"
    );
    assert!(updated.contains("updated config (parameters)"), "{updated}");
    let listing = ok(
        &ferry_on(
            &controller,
            &[
                "ls",
                "--platform",
                "openwhisk",
                "--dir",
                dir_arg,
                "--env",
                "SHOP_REGION=eu",
            ],
            &[],
        )
        .await,
        "ls after deploying",
    );
    assert!(
        rows(&listing).iter().all(|row| row[2] == "deployed"),
        "{listing}"
    );
    let listing = ok(
        &ferry_on(
            &controller,
            &["ls", "--platform", "openwhisk", "--dir", dir_arg],
            &[],
        )
        .await,
        "ls without the env",
    );
    assert!(
        rows(&listing)
            .iter()
            .all(|row| row[2] == "outdated config (parameters)"),
        "{listing}"
    );

    // The deployed actions run, found by the names deploy gave them: from `ferry invoke --app`
    // (names from the program's manifest) and from a host program (`FERRY_APP`, names from its
    // own registry: this test links the fixture's functions).
    let exec = scratch.path().join("exec");
    let invoked = ok(
        &ferry_on(
            &controller,
            &[
                "invoke",
                "add",
                "--backend",
                "openwhisk",
                "--app",
                "ferry-fixture",
                "--program",
                exec.to_str().unwrap(),
                "--data",
                r#"{"a": 20, "b": 22}"#,
            ],
            &[],
        )
        .await,
        "invoke the deployed action",
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&invoked).unwrap()["result"],
        42,
        "{invoked}"
    );
    let host = Context::openwhisk(
        OpenWhiskConfig::new(&controller.api_host, &controller.auth).app("ferry-fixture"),
    )
    .unwrap();
    assert_eq!(host.call(Add { a: 40, b: 2 }).await.unwrap(), 42);
    let odd = host.call(RequireEven { n: 3 }).await.unwrap_err();
    assert!(
        matches!(odd.kind(), ErrorKind::User { message, .. } if message == "3 is odd"),
        "{odd}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_settings_are_clear_errors() {
    let dir = fixture("openwhisk");
    let dir_arg = dir.to_str().unwrap();
    let scratch = Scratch::new("openwhisk-errors");
    let controller = Controller::start(exec_of(dir, &scratch)).await;
    let deploy = ["deploy", "--platform", "openwhisk", "--dir", dir_arg];

    let refused = fails(
        &ferry_on(&controller, &deploy, &[("__OW_API_KEY", "guest:wrong")]).await,
        "deploy with wrong credentials",
    );
    assert!(refused.contains("401"), "{refused}");

    let unreachable = fails(
        &ferry_on(
            &controller,
            &deploy,
            &[("__OW_API_HOST", "http://127.0.0.1:1")],
        )
        .await,
        "deploy to a closed port",
    );
    assert!(
        unreachable.contains("cannot reach the openwhisk controller"),
        "{unreachable}"
    );

    let output = tokio::task::spawn_blocking(|| {
        ferry_in(
            &workspace(),
            &[
                "deploy",
                "--platform",
                "openwhisk",
                "--dir",
                "/nonexistent/ferry",
            ],
            &[],
        )
    })
    .await
    .unwrap();
    let missing = fails(&output, "deploy without a build");
    assert!(missing.contains("run `ferry build"), "{missing}");
}
