//! `ferry deploy --platform openwhisk` and `ferry ls --platform openwhisk` against a controller
//! on loopback written to OpenWhisk's REST API (`ferry_tests::controller`), which runs deployed
//! actions as OpenWhisk does: their zip's `exec` under an ActionLoop proxy (`ferry
//! actionloop-host`), and web actions behind its `/api/v1/web/…` routes.

mod common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Output;

use common::{
    Scratch, fails, ferry_in, fixture, manifest, ok, only_zip_entry, web_fixture, workspace,
};
use ferry::aws::{AwsConfig, Credentials};
use ferry::{Codec, Context, ErrorKind, OpenWhiskConfig, Shared};
use ferry_tests::controller::Controller;
use ferry_tests::moto::Moto;
use ferry_tests::registry::Registry;
use ferry_tests::{Add, ByteLen, RepeatText, RequireEven, SumShared, Wait50ms};

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

/// A controller whose containers run deployed code under `ferry actionloop-host`, and whose
/// operator enabled intra-container concurrency up to the most any function of the program in
/// `dir` asks for (OpenWhisk allows 1 by default).
async fn controller(program: &Path, dir: &Path) -> Controller {
    let most = manifest(dir)["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["concurrency"].as_u64())
        .max()
        .unwrap_or(1);
    Controller::builder(program)
        .actionloop_proxy(env!("CARGO_BIN_EXE_ferry"))
        .intra_concurrency(most)
        .start()
        .await
}

/// The action executable of the built zip, as a file of its own.
fn exec_of(dir: &Path, scratch: &Scratch) -> std::path::PathBuf {
    exec_of_program(dir, "ferry-fixture", scratch)
}

fn exec_of_program(dir: &Path, program: &str, scratch: &Scratch) -> std::path::PathBuf {
    let (name, mode, bytes) = only_zip_entry(&dir.join(format!("openwhisk/{program}.zip")));
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
        .filter(|line| {
            line.len() > 1 && !line.contains(" created, ") && !line.starts_with("web app")
        })
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
    let controller = controller(&exec_of(dir, &scratch), dir).await;
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
    let output = ferry_on(&controller, &deploy, &[]).await;
    let created = ok(&output, "first deploy");
    // The native ActionLoop runtime serves one activation at a time, whatever the function says.
    assert!(
        common::stderr(&output).contains("deployed with concurrency 1"),
        "{}",
        common::stderr(&output)
    );
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
    assert_eq!(action["limits"]["concurrency"], 1);
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
    // The function's output, as on every platform (not OpenWhisk's `{"result": 42}`).
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&invoked).unwrap(),
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
    let controller = controller(&exec_of(dir, &scratch), dir).await;
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

    // A stock OpenWhisk allows an intra-container concurrency of 1: the zips, which the native
    // runtime serves one activation at a time, deploy; ferry's image, which serves what each
    // function allows, is refused with the controller's message and the limit to raise.
    let stock =
        Controller::with_actionloop_proxy(scratch.path().join("exec"), env!("CARGO_BIN_EXE_ferry"))
            .await;
    ok(
        &ferry_on(&stock, &deploy, &[]).await,
        "zips on a controller that allows no concurrency",
    );
    let registry = Registry::start();
    let registry_host = registry.host();
    let with_image = [&deploy[..], &["--registry", &registry_host]].concat();
    let refused = fails(
        &ferry_on(&stock, &with_image, &[]).await,
        "the image on a controller that allows no concurrency",
    );
    assert!(
        refused.contains("exceeds allowed threshold of 1")
            && refused.contains("concurrency-limit.max"),
        "{refused}"
    );
}

/// With `--registry`, ferry's runtime image is pushed to a real registry and every function is
/// a `blackbox` action of it, serving concurrent activations in one container.
#[tokio::test]
async fn with_a_registry_the_runtime_image_serves_concurrent_activations() {
    let dir = fixture("openwhisk");
    let dir_arg = dir.to_str().unwrap();
    let scratch = Scratch::new("openwhisk-image");
    let controller = controller(&exec_of(dir, &scratch), dir).await;
    let registry = Registry::start();
    let host = registry.host();
    let deploy = [
        "deploy",
        "--platform",
        "openwhisk",
        "--dir",
        dir_arg,
        "--registry",
        &host,
    ];
    let created = ok(
        &ferry_on(&controller, &deploy, &[]).await,
        "deploy the image",
    );
    let reference = format!("{host}/ferry-fixture-openwhisk:");
    assert!(
        created.contains(&format!("pushed {reference}")),
        "{created}"
    );
    let action_of = |function: &str| {
        let name = rows(&created)
            .into_iter()
            .find(|row| row[0] == function)
            .unwrap_or_else(|| panic!("{function} is deployed: {created}"))[1]
            .clone();
        (name.clone(), controller.action(&name).expect("stored"))
    };
    let (_, add) = action_of("add");
    assert_eq!(add["exec"]["kind"], "blackbox");
    assert!(
        add["exec"]["image"]
            .as_str()
            .is_some_and(|image| image.starts_with(&reference)),
        "{add}"
    );
    assert!(add["exec"].get("code").is_none(), "{add}");
    assert_eq!(add["limits"]["concurrency"], 64);

    // Each concurrent caller gets its own answer, from one container serving them together.
    let host_ctx = Context::openwhisk(
        OpenWhiskConfig::new(&controller.api_host, &controller.auth).app("ferry-fixture"),
    )
    .unwrap();
    let sums = futures::future::join_all((0..32).map(|a| host_ctx.call(Add { a, b: 1000 }))).await;
    for (a, sum) in sums.into_iter().enumerate() {
        assert_eq!(sum.unwrap(), a as i64 + 1000);
    }
    let (waiting, _) = action_of("wait_50ms");
    futures::future::join_all((0..16).map(|_| host_ctx.call(Wait50ms {})))
        .await
        .into_iter()
        .for_each(|waited| waited.unwrap());
    let peak = controller.peak_runs(&waiting);
    assert!(
        peak > 1,
        "the image ran the activations one at a time ({peak})"
    );

    let again = ok(&ferry_on(&controller, &deploy, &[]).await, "deploy again");
    let functions = manifest(dir)["functions"].as_array().unwrap().len();
    assert!(
        again.contains(&format!("0 created, 0 updated, {functions} unchanged")),
        "{again}"
    );
}

/// The web app's line under ferry's table: `web app: <url>`.
fn web_line(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|line| line.strip_prefix("web app: "))
        .unwrap_or_else(|| panic!("no web app line:\n{stdout}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_app_deploys_as_a_web_action_that_serves_the_router() {
    let dir = web_fixture("openwhisk");
    let dir_arg = dir.to_str().unwrap();
    let scratch = Scratch::new("openwhisk-web");
    let controller = controller(&exec_of_program(dir, "web-fixture", &scratch), dir).await;
    let functions = manifest(dir)["functions"].as_array().unwrap().len();
    let deploy = ["deploy", "--platform", "openwhisk", "--dir", dir_arg];
    let ls = ["ls", "--platform", "openwhisk", "--dir", dir_arg];

    let listing = ok(
        &ferry_on(&controller, &ls, &[]).await,
        "ls before deploying",
    );
    assert!(
        rows(&listing).contains(&[
            "(web)".to_owned(),
            "web-fixture-web-5142fd6d".to_owned(),
            "missing".to_owned()
        ]),
        "{listing}"
    );

    // The functions' actions and one web action.
    let created = ok(&ferry_on(&controller, &deploy, &[]).await, "deploy");
    assert!(
        created.contains(&format!(
            "{} created, 0 updated, 0 unchanged",
            functions + 1
        )),
        "{created}"
    );
    let web = rows(&created)
        .into_iter()
        .find(|row| row[0] == "(web)")
        .expect("a web row")[1]
        .clone();
    assert_eq!(web, "web-fixture-web-5142fd6d");
    let url = web_line(&created);
    assert_eq!(
        url,
        format!("{}/api/v1/web/guest/default/{web}", controller.api_host)
    );
    let actions = controller.actions();
    assert_eq!(actions.len(), functions + 1);
    let annotation = |action: &serde_json::Value, key: &str| {
        action["annotations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["key"] == key)
            .map(|a| a["value"].clone())
    };
    let exported: Vec<&String> = actions
        .iter()
        .filter(|(_, action)| annotation(action, "web-export") == Some(true.into()))
        .map(|(name, _)| name)
        .collect();
    assert_eq!(exported, vec![&web], "exactly one web action");
    let action = &actions[&web];
    for key in ["raw-http", "final", "web-custom-options", "provide-api-key"] {
        assert_eq!(
            annotation(action, key),
            Some(true.into()),
            "{key}: {action}"
        );
    }
    assert_eq!(action["exec"]["kind"], "blackbox");
    assert_eq!(action["exec"]["main"], "web");
    let parameters: Vec<(String, String)> = action["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .inspect(|p| assert_eq!(p["init"], true, "{p}"))
        .map(|p| {
            let value = p["value"].as_str().unwrap().to_owned();
            (p["key"].as_str().unwrap().to_owned(), value)
        })
        .collect();
    assert_eq!(
        parameters,
        [
            ("FERRY_APP".to_owned(), "web-fixture".to_owned()),
            ("FERRY_BACKEND".to_owned(), "openwhisk".to_owned())
        ]
    );
    // The functions' actions are what they were: not web actions, no API key.
    let add = rows(&created)
        .into_iter()
        .find(|row| row[0] == "add")
        .expect("add is deployed")[1]
        .clone();
    assert_eq!(annotation(&actions[&add], "web-export"), None);
    assert_eq!(
        annotation(&actions[&add], "provide-api-key"),
        Some(false.into())
    );

    let listing = ok(&ferry_on(&controller, &ls, &[]).await, "ls after deploying");
    assert!(
        rows(&listing).iter().all(|row| row[2] == "deployed"),
        "{listing}"
    );
    assert_eq!(web_line(&listing), url);

    // The router answers at the URL, without credentials: status, headers and body.
    let http = reqwest::Client::new();
    let response = http
        .get(format!("{url}/hello/whisk?mark=!"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    assert!(response.headers().contains_key("x-openwhisk-activation-id"));
    assert!(
        !response
            .headers()
            .contains_key("access-control-allow-origin"),
        "the app owns its CORS headers"
    );
    assert_eq!(response.text().await.unwrap(), "hello whisk!");

    // A handler's context invokes the deployed `add` action through the controller.
    let before = controller.invocations();
    let response = http.get(format!("{url}/add/40/2")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "42");
    assert_eq!(
        controller.invocations() - before,
        2,
        "the web request and the add action's invocation"
    );

    let response = http.get(format!("{url}/bytes")).send().await.unwrap();
    assert_eq!(
        response.headers()["content-type"],
        "application/octet-stream"
    );
    assert_eq!(&response.bytes().await.unwrap()[..], [0u8, 159, 146, 150]);
    let response = http
        .post(format!("{url}/echo"))
        .header("content-type", "application/json")
        .body(r#"{"a": [1, 2]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(response.text().await.unwrap(), r#"{"a": [1, 2]}"#);
    let response = http
        .get(format!("{url}/cookies"))
        .header("cookie", "a=1")
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers().get_all("set-cookie").iter().count(),
        2,
        "{:?}",
        response.headers()
    );
    assert_eq!(response.text().await.unwrap(), "a=1");
    let response = http.get(format!("{url}/nowhere")).send().await.unwrap();
    assert_eq!(response.status(), 404, "the router's own 404");

    // Only the web action is on the web, and only under the namespace's own name.
    let function_url = format!("{}/api/v1/web/guest/default/{add}", controller.api_host);
    assert_eq!(http.get(&function_url).send().await.unwrap().status(), 404);
    let default_namespace = url.replace("/web/guest/", "/web/_/");
    assert_eq!(
        http.get(default_namespace).send().await.unwrap().status(),
        404
    );

    let again = ok(&ferry_on(&controller, &deploy, &[]).await, "second deploy");
    assert!(
        again.contains(&format!(
            "0 created, 0 updated, {} unchanged",
            functions + 1
        )),
        "{again}"
    );
    assert_eq!(web_line(&again), url);
}

/// `--store` gives every action `FERRY_STORE` as an init parameter (the store's credentials are
/// the action's own, given with `--env`). The deployed executables, under the ActionLoop proxy,
/// then take parameters and results over the 1 MiB limit, and shared values, through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_store_actions_take_what_the_limit_cannot_carry_through_it() {
    let dir = fixture("openwhisk");
    let scratch = Scratch::new("openwhisk-store");
    let controller = controller(&exec_of(dir, &scratch), dir).await;
    let (region, bucket) = ("eu-west-1", "ferry-openwhisk-deploy");
    let store = format!("s3://{bucket}/app");
    let moto = Moto::start();
    moto.create_versioned_bucket(region, bucket);
    let endpoint = format!("AWS_ENDPOINT_URL_S3={}", moto.url);
    let region_env = format!("AWS_REGION={region}");
    let mut deploy = vec![
        "deploy",
        "--platform",
        "openwhisk",
        "--dir",
        dir.to_str().unwrap(),
        "--store",
        &store,
    ];
    for env in [
        "AWS_ACCESS_KEY_ID=test",
        "AWS_SECRET_ACCESS_KEY=test",
        "AWS_EC2_METADATA_DISABLED=true",
        &region_env,
        &endpoint,
    ] {
        deploy.extend(["--env", env]);
    }
    let created = ok(
        &ferry_on(&controller, &deploy, &[]).await,
        "deploy with a store",
    );
    for row in rows(&created) {
        let action = controller.action(&row[1]).expect("stored");
        assert!(
            action["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["key"] == "FERRY_STORE" && p["value"] == store && p["init"] == true),
            "{action}"
        );
    }

    let aws = AwsConfig::new(region, Credentials::new("test", "test", None))
        .with_s3_endpoint(&moto.url)
        .unwrap();
    let ctx = Context::openwhisk(
        OpenWhiskConfig::new(&controller.api_host, &controller.auth)
            .app("ferry-fixture")
            .codec(Codec::BinaryInJson)
            .store(store.parse().unwrap())
            .aws(aws),
    )
    .unwrap();
    let data = vec![7u8; 3_000_000];
    assert_eq!(ctx.call(ByteLen { data }).await.unwrap(), 3_000_000);
    let text = ctx.call(RepeatText { len: 3_000_000 }).await.unwrap();
    assert!(text.len() == 3_000_000 && text.bytes().all(|b| b == b'x'));
    let numbers = Shared::new((0..1_000_000).collect::<Vec<u64>>());
    let tasks = (0..16).map(|i| SumShared {
        numbers: numbers.clone(),
        from: i * 1000,
        to: (i + 1) * 1000,
    });
    let sums: u64 = ctx.map(tasks).await.unwrap().iter().map(|r| r.sum).sum();
    assert_eq!(sums, (0..16_000).sum::<u64>());
    let shared = moto.object_versions(region, bucket, "app/shared/");
    assert_eq!(shared.len(), 1, "{shared:?}");
    let payloads = moto.object_versions(region, bucket, "app/payloads/");
    assert_eq!(
        payloads.len(),
        2,
        "one argument and one result: {payloads:?}"
    );
}
