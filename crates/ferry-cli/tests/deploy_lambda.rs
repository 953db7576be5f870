//! `ferry deploy --platform lambda` and `ferry ls --platform lambda` against a real
//! implementation of the Lambda and IAM APIs: moto's server (PyPI `moto[server]`) on loopback,
//! started and stopped by each test.
//!
//! Every function of the fixture is created, left alone when nothing changed, updated after a
//! settings change (`--env`) and after a code change (a different zip), and a function whose
//! config (so name) changed leaves its old deployment behind as `extra`. A web program's web app
//! is one more function with a Function URL, public or IAM-authenticated.

mod common;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{Scratch, fails, fixture, manifest, ok, only_zip_entry, web_fixture};
use ferry_tests::moto::{self, Moto};
use sha2::Digest as _;

const ROLE: &str = "arn:aws:iam::123456789012:role/ferry-test";
const PROGRAM: &str = "ferry-fixture";

/// A copy of the built fixture that a test may change.
fn fixture_copy() -> Scratch {
    let copy = Scratch::new("deploy");
    copy_dir(fixture("lambda"), copy.path());
    copy
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Runs `ferry` with a clean environment: moto's settings and nothing inherited.
fn ferry_env(args: &[&str], env: &[(String, String)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ferry"));
    command.env_clear().args(args);
    if let Ok(path) = std::env::var("PATH") {
        command.env("PATH", path);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("run ferry")
}

/// The rows of ferry's table: the first column (function) → (second, third).
fn table(stdout: &str) -> BTreeMap<String, (String, String)> {
    let mut lines = stdout.lines();
    let header = lines.next().expect("a table");
    assert!(header.starts_with("FUNCTION"), "{stdout}");
    lines
        .take_while(|line| {
            !line.starts_with("lambda ")
                && !line.starts_with("note:")
                && !line.starts_with("web app")
        })
        .map(|line| {
            let mut cells = line.split_whitespace();
            let function = cells.next().unwrap().to_owned();
            let name = cells.next().unwrap().to_owned();
            let rest = cells.collect::<Vec<_>>().join(" ");
            (function, (name, rest))
        })
        .collect()
}

fn states(rows: &BTreeMap<String, (String, String)>) -> BTreeMap<String, usize> {
    let mut count = BTreeMap::new();
    for (_, state) in rows.values() {
        *count.entry(state.clone()).or_default() += 1;
    }
    count
}

fn zip_path(dir: &Path) -> PathBuf {
    dir.join(format!("lambda/{PROGRAM}.zip"))
}

fn code_sha256(zip: &Path) -> String {
    base64_simd::STANDARD.encode_to_string(sha2::Sha256::digest(std::fs::read(zip).unwrap()))
}

#[test]
fn deploy_creates_then_skips_then_updates() {
    let moto = Moto::start();
    moto.create_role("ferry-test");
    let dir = fixture_copy();
    let home = Scratch::new("home");
    let env = moto.env(home.path());
    let dir_arg = dir.path().to_str().unwrap();
    let deploy = |extra: &[&str]| {
        let mut args = vec![
            "deploy",
            "--platform",
            "lambda",
            "--dir",
            dir_arg,
            "--role",
            ROLE,
        ];
        args.extend_from_slice(extra);
        table(&ok(&ferry_env(&args, &env), "ferry deploy"))
    };
    let ls = |extra: &[&str]| {
        let mut args = vec!["ls", "--platform", "lambda", "--dir", dir_arg];
        args.extend_from_slice(extra);
        table(&ok(&ferry_env(&args, &env), "ferry ls"))
    };
    let manifest = manifest(dir.path());
    let functions = manifest["functions"].as_array().unwrap();
    let n = functions.len();

    // Nothing deployed yet.
    assert_eq!(
        states(&ls(&[])),
        BTreeMap::from([("missing".to_owned(), n)])
    );

    // 1. Every function is created.
    let created = deploy(&[]);
    assert_eq!(
        states(&created),
        BTreeMap::from([("created".to_owned(), n)])
    );
    let (add_name, _) = &created["add"];
    assert!(
        add_name.starts_with("ferry-fixture-add-")
            && add_name.len() == "ferry-fixture-add-".len() + 8
    );

    // What Lambda holds is what the manifest asks for.
    let zip_sha = code_sha256(&zip_path(dir.path()));
    for function in functions {
        let name = function["name"].as_str().unwrap();
        let deployed = moto.get_function(&created[name].0);
        let config = &deployed["Configuration"];
        assert_eq!(config["Runtime"], "provided.al2023");
        assert_eq!(config["Handler"], name);
        assert_eq!(config["Role"], ROLE);
        assert_eq!(config["MemorySize"], function["memory_mb"], "{name}");
        let timeout_ms = function["timeout_ms"].as_u64().unwrap();
        assert_eq!(
            config["Timeout"],
            timeout_ms.div_ceil(1000).max(1),
            "{name}"
        );
        assert_eq!(config["CodeSha256"], zip_sha.as_str());
        assert_eq!(config["Architectures"], serde_json::json!(["x86_64"]));
        // Concurrency is recorded, not configured: Lambda Managed Instances set
        // AWS_LAMBDA_MAX_CONCURRENCY themselves.
        let concurrency = function["concurrency"].as_u64().unwrap();
        assert_eq!(
            deployed["Tags"]["ferry:concurrency"],
            concurrency.to_string(),
            "{name}"
        );
        assert!(
            config["Environment"]["Variables"]
                .get("AWS_LAMBDA_MAX_CONCURRENCY")
                .is_none(),
            "{name}: {config}"
        );
        assert_eq!(deployed["Tags"]["ferry:app"], PROGRAM);
        assert_eq!(deployed["Tags"]["ferry:function"], function["id"]);
    }

    // 2. Nothing changed: nothing is sent.
    assert_eq!(
        states(&deploy(&[])),
        BTreeMap::from([("unchanged".to_owned(), n)])
    );
    assert_eq!(
        states(&ls(&[])),
        BTreeMap::from([("deployed".to_owned(), n)])
    );

    // 3. A settings change updates the configuration in place.
    let updated = deploy(&["--env", "FERRY_LOG=debug"]);
    assert_eq!(
        states(&updated),
        BTreeMap::from([("updated config (Environment)".to_owned(), n)])
    );
    let add = moto.get_function(add_name);
    assert_eq!(
        add["Configuration"]["Environment"]["Variables"]["FERRY_LOG"],
        "debug"
    );
    assert_eq!(
        add["Configuration"]["Environment"]["Variables"]
            .as_object()
            .map(|v| v.len()),
        Some(1),
        "only the --env variable"
    );
    // `ls` answers for the flags it is given.
    assert_eq!(
        states(&ls(&[])),
        BTreeMap::from([("outdated config (Environment)".to_owned(), n)])
    );
    assert_eq!(
        states(&ls(&["--env", "FERRY_LOG=debug", "--role", ROLE])),
        BTreeMap::from([("deployed".to_owned(), n)])
    );
    assert_eq!(
        states(&ls(&[
            "--env",
            "FERRY_LOG=debug",
            "--role",
            "arn:aws:iam::123456789012:role/other"
        ])),
        BTreeMap::from([("outdated config (Role)".to_owned(), n)])
    );

    // 4. A code change: a different binary in the zip.
    let zip = zip_path(dir.path());
    let (name, _, mut binary) = only_zip_entry(&zip);
    binary.extend_from_slice(b"\0ferry test padding");
    write_zip(&zip, &name, &binary);
    let new_sha = code_sha256(&zip);
    assert_ne!(new_sha, zip_sha);
    assert_eq!(
        states(&ls(&["--env", "FERRY_LOG=debug", "--role", ROLE])),
        BTreeMap::from([("outdated code".to_owned(), n)])
    );
    let updated = deploy(&["--env", "FERRY_LOG=debug"]);
    assert_eq!(
        states(&updated),
        BTreeMap::from([("updated code".to_owned(), n)])
    );
    assert_eq!(
        moto.get_function(add_name)["Configuration"]["CodeSha256"],
        new_sha.as_str()
    );
    assert_eq!(
        states(&deploy(&["--env", "FERRY_LOG=debug"])),
        BTreeMap::from([("unchanged".to_owned(), n)])
    );

    // 5. A function's config changes (so does its name): the new one is created, the old one
    //    is left behind and shown as extra.
    let path = dir.path().join("manifest.json");
    let mut changed = manifest.clone();
    for function in changed["functions"].as_array_mut().unwrap() {
        if function["name"] == "add" {
            function["memory_mb"] = serde_json::json!(512);
        }
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&changed).unwrap()).unwrap();
    let output = ferry_env(
        &[
            "deploy",
            "--platform",
            "lambda",
            "--dir",
            dir_arg,
            "--role",
            ROLE,
            "--env",
            "FERRY_LOG=debug",
        ],
        &env,
    );
    let text = ok(&output, "deploy after a config change");
    let rows = table(&text);
    assert_eq!(rows["add"].1, "created");
    assert_ne!(&rows["add"].0, add_name);
    assert_eq!(
        states(&rows),
        BTreeMap::from([("created".to_owned(), 1), ("unchanged".to_owned(), n - 1)])
    );
    assert!(
        text.contains(&format!(
            "are no longer in the program (`ferry ls --platform lambda` lists them): {add_name}"
        )),
        "{text}"
    );
    assert_eq!(
        moto.get_function(&rows["add"].0)["Configuration"]["MemorySize"],
        512
    );
    let listed = ls(&["--env", "FERRY_LOG=debug", "--role", ROLE]);
    assert_eq!(
        listed["ferry_tests::add"],
        (add_name.clone(), "extra".to_owned())
    );
    assert_eq!(
        states(&listed),
        BTreeMap::from([("deployed".to_owned(), n), ("extra".to_owned(), 1)])
    );
}

/// The web app's line under ferry's table: `web app: <url> (auth <type>)`.
fn web_line(stdout: &str) -> (String, String) {
    let line = stdout
        .lines()
        .find_map(|line| line.strip_prefix("web app: "))
        .unwrap_or_else(|| panic!("no web app line:\n{stdout}"));
    let (url, auth) = line
        .split_once(" (auth ")
        .unwrap_or_else(|| panic!("no url in `{line}`"));
    (url.to_owned(), auth.trim_end_matches(')').to_owned())
}

/// The statements of a function's policy (none without a policy), straight from the API.
fn policy(moto: &Moto, name: &str) -> Vec<serde_json::Value> {
    let (status, text) = moto.signed_in(
        "us-east-1",
        "lambda",
        "GET",
        &format!("/2015-03-31/functions/{name}/policy"),
        b"",
        "application/json",
    );
    if status == 404 {
        return Vec::new();
    }
    assert_eq!(status, 200, "GetPolicy {name}: {text}");
    let answer: serde_json::Value = serde_json::from_str(&text).unwrap();
    let policy: serde_json::Value =
        serde_json::from_str(answer["Policy"].as_str().expect("a policy document")).unwrap();
    policy["Statement"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_web_app_deploys_as_one_function_with_a_function_url() {
    let moto = Moto::start();
    moto.create_role("ferry-test");
    let dir = web_fixture("lambda");
    let home = Scratch::new("home");
    let env = moto.env(home.path());
    let dir_arg = dir.to_str().unwrap();
    let run = |command: &str, extra: &[&str]| {
        let mut args = vec![
            command,
            "--platform",
            "lambda",
            "--dir",
            dir_arg,
            "--role",
            ROLE,
        ];
        args.extend_from_slice(extra);
        ok(&ferry_env(&args, &env), &format!("ferry {command}"))
    };
    let manifest = manifest(dir);
    assert_eq!(
        manifest["web"], true,
        "the web fixture's manifest marks its web app"
    );
    let n = manifest["functions"].as_array().unwrap().len();

    let listed = run("ls", &[]);
    assert_eq!(table(&listed)["(web)"].1, "missing", "{listed}");
    assert!(listed.contains("web app: not deployed"), "{listed}");

    // 1. The functions and the web app are created, and the web app gets its public URL.
    let output = run("deploy", &[]);
    let rows = table(&output);
    assert_eq!(
        states(&rows),
        BTreeMap::from([("created".to_owned(), n + 1)]),
        "{output}"
    );
    let (web, _) = rows["(web)"].clone();
    assert!(
        web.starts_with("web-fixture-web-") && web.len() == "web-fixture-web-".len() + 8,
        "{web}"
    );
    let (url, auth) = web_line(&output);
    assert!(
        url.starts_with("https://") && url.contains(".lambda-url."),
        "{url}"
    );
    assert_eq!(auth, "NONE");

    // Exactly one function besides the library's, running the same zip as the web app.
    let (status, text) = moto.signed_in(
        "us-east-1",
        "lambda",
        "GET",
        "/2015-03-31/functions/",
        b"",
        "application/json",
    );
    assert_eq!(status, 200, "{text}");
    let names: Vec<String> = serde_json::from_str::<serde_json::Value>(&text).unwrap()["Functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["FunctionName"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names.len(), n + 1, "{names:?}");
    let library: Vec<&String> = rows
        .iter()
        .filter(|(function, _)| *function != "(web)")
        .map(|(_, (name, _))| name)
        .collect();
    assert_eq!(library.len(), n);
    assert_eq!(
        names
            .iter()
            .filter(|name| !library.contains(name))
            .collect::<Vec<_>>(),
        vec![&web]
    );
    let deployed = moto.get_function(&web);
    let config = &deployed["Configuration"];
    assert_eq!(config["Handler"], "web");
    assert_eq!(config["Runtime"], "provided.al2023");
    assert_eq!(
        config["CodeSha256"],
        code_sha256(&dir.join("lambda/web-fixture.zip")).as_str()
    );
    assert_eq!(
        config["Environment"]["Variables"],
        serde_json::json!({"FERRY_BACKEND": "lambda", "FERRY_APP": "web-fixture"})
    );
    assert_eq!(deployed["Tags"]["ferry:web"], "true");
    assert_eq!(deployed["Tags"]["ferry:app"], "web-fixture");

    // Its Function URL, and the public access AWS requires for `AuthType` NONE.
    let (status, text) = moto.signed_in(
        "us-east-1",
        "lambda",
        "GET",
        &format!("/2021-10-31/functions/{web}/url"),
        b"",
        "application/json",
    );
    assert!(status / 100 == 2, "GetFunctionUrlConfig: {status} {text}");
    let function_url: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(function_url["FunctionUrl"], url.as_str());
    assert_eq!(function_url["AuthType"], "NONE");
    let statements = policy(&moto, &web);
    assert_eq!(statements.len(), 2, "{statements:?}");
    let public = |action: &str| {
        statements
            .iter()
            .find(|s| s["Action"] == action)
            .unwrap_or_else(|| panic!("no {action} statement: {statements:?}"))
            .clone()
    };
    let url_statement = public("lambda:InvokeFunctionUrl");
    assert_eq!(url_statement["Principal"], "*");
    assert_eq!(url_statement["FunctionUrlAuthType"], "NONE");
    let invoke_statement = public("lambda:InvokeFunction");
    assert_eq!(invoke_statement["Principal"], "*");
    assert_eq!(invoke_statement["InvokedViaFunctionUrl"], true);
    // The functions themselves stay private.
    assert!(policy(&moto, library[0]).is_empty());

    // `ls` shows the web app and its URL.
    let listed = run("ls", &[]);
    let rows = table(&listed);
    assert_eq!(
        rows["(web)"],
        (web.clone(), "deployed".to_owned()),
        "{listed}"
    );
    assert_eq!(
        states(&rows),
        BTreeMap::from([("deployed".to_owned(), n + 1)])
    );
    assert_eq!(web_line(&listed), (url.clone(), "NONE".to_owned()));

    // 2. Nothing changed: nothing is sent, the same URL, no second grant.
    let output = run("deploy", &[]);
    assert_eq!(
        states(&table(&output)),
        BTreeMap::from([("unchanged".to_owned(), n + 1)]),
        "{output}"
    );
    assert_eq!(web_line(&output), (url.clone(), "NONE".to_owned()));
    assert_eq!(policy(&moto, &web).len(), 2);

    // 3. IAM authentication: the URL's AuthType changes in place and public access goes.
    let output = run("deploy", &["--function-url-auth", "aws-iam"]);
    let rows = table(&output);
    assert_eq!(
        rows["(web)"].1, "updated config (AuthType, Permission)",
        "{output}"
    );
    assert_eq!(
        states(&rows)["unchanged"],
        n,
        "the functions are left alone: {output}"
    );
    assert_eq!(web_line(&output), (url.clone(), "AWS_IAM".to_owned()));
    assert!(policy(&moto, &web).is_empty());
    let listed = run("ls", &[]);
    assert_eq!(
        table(&listed)["(web)"].1,
        "outdated config (AuthType, Permission)",
        "{listed}"
    );
    let listed = run("ls", &["--function-url-auth", "aws-iam"]);
    assert_eq!(table(&listed)["(web)"].1, "deployed", "{listed}");
    assert_eq!(
        states(&table(&run("deploy", &["--function-url-auth", "aws-iam"])))["unchanged"],
        n + 1
    );
}

fn write_zip(path: &Path, name: &str, bytes: &[u8]) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let options = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
    zip.start_file(name, options).unwrap();
    zip.write_all(bytes).unwrap();
    zip.finish().unwrap();
}

#[test]
fn errors_name_what_is_missing_or_wrong() {
    let moto = Moto::start();
    let dir = fixture_copy();
    let home = Scratch::new("home");
    let env = moto.env(home.path());
    let dir_arg = dir.path().to_str().unwrap();

    // No role.
    let stderr = fails(
        &ferry_env(&["deploy", "--platform", "lambda", "--dir", dir_arg], &env),
        "deploy without a role",
    );
    assert!(
        stderr.contains("no IAM role for the functions: pass `--role")
            && stderr.contains("FERRY_LAMBDA_ROLE"),
        "{stderr}"
    );
    let stderr = fails(
        &ferry_env(
            &[
                "deploy",
                "--platform",
                "lambda",
                "--dir",
                dir_arg,
                "--role",
                "lambda-basic",
            ],
            &env,
        ),
        "deploy with a bad role",
    );
    assert!(
        stderr.contains("`lambda-basic` is not an IAM role ARN"),
        "{stderr}"
    );

    // No credentials: the message says where ferry looked.
    let no_credentials: Vec<(String, String)> = env
        .iter()
        .filter(|(k, _)| !k.starts_with("AWS_ACCESS") && !k.starts_with("AWS_SECRET"))
        .cloned()
        .collect();
    let stderr = fails(
        &ferry_env(
            &["ls", "--platform", "lambda", "--dir", dir_arg],
            &no_credentials,
        ),
        "ls without credentials",
    );
    assert!(stderr.contains("no aws credentials"), "{stderr}");
    assert!(stderr.contains(".aws/credentials` (not found)"), "{stderr}");

    // Credentials from the shared file work as well as from the environment.
    std::fs::create_dir_all(home.path().join(".aws")).unwrap();
    std::fs::write(
        home.path().join(".aws/credentials"),
        "[default]\naws_access_key_id = test\naws_secret_access_key = test\n",
    )
    .unwrap();
    ok(
        &ferry_env(
            &["ls", "--platform", "lambda", "--dir", dir_arg],
            &no_credentials,
        ),
        "ls with the credentials file",
    );

    // A role Lambda cannot assume: AWS's code and message, once for all functions.
    let stderr = fails(
        &ferry_env(
            &[
                "deploy",
                "--platform",
                "lambda",
                "--dir",
                dir_arg,
                "--role",
                ROLE,
            ],
            &env,
        ),
        "deploy with an unknown role",
    );
    assert!(
        stderr.contains("InvalidParameterValueException: The role defined for the function cannot be assumed by Lambda. (http 400)"),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("InvalidParameterValueException").count(),
        1,
        "{stderr}"
    );

    // An endpoint nobody listens on.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let stderr = fails(
        &ferry_env(
            &[
                "deploy",
                "--platform",
                "lambda",
                "--dir",
                dir_arg,
                "--role",
                ROLE,
                "--endpoint-url",
                &format!("http://127.0.0.1:{closed}"),
            ],
            &env,
        ),
        "deploy to a closed port",
    );
    assert!(
        stderr.contains(&format!(
            "cannot reach the lambda api at http://127.0.0.1:{closed}"
        )),
        "{stderr}"
    );

    // Nothing built there.
    let empty = Scratch::new("empty");
    let stderr = fails(
        &ferry_env(
            &[
                "deploy",
                "--platform",
                "lambda",
                "--dir",
                empty.path().to_str().unwrap(),
                "--role",
                ROLE,
            ],
            &env,
        ),
        "deploy without a build",
    );
    assert!(
        stderr.contains("run `ferry build` for this program first"),
        "{stderr}"
    );

    // Knative deploys push the image: without a registry, the message names the flag.
    let stderr = fails(
        &ferry_env(&["deploy", "--platform", "http", "--dir", dir_arg], &env),
        "deploy to http",
    );
    assert!(stderr.contains("--registry"), "{stderr}");
}

/// `ferry invoke` on deployed functions tells whose failure it was (issue #10): a function the
/// platform does not know gets a hint naming `--app`, and moto's own failure (it runs functions
/// in Docker, which is not here) is the platform's, not the function's.
#[test]
fn invoke_tells_the_platforms_failures_from_the_functions() {
    let moto = Moto::start();
    moto.create_role("ferry-test");
    let dir = fixture_copy();
    let home = Scratch::new("home");
    let env = moto.env(home.path());
    let dir_arg = dir.path().to_str().unwrap();
    ok(
        &ferry_env(
            &[
                "deploy",
                "--platform",
                "lambda",
                "--dir",
                dir_arg,
                "--role",
                ROLE,
            ],
            &env,
        ),
        "ferry deploy",
    );
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("build.json")).unwrap())
            .unwrap();
    let program = info["binary"]
        .as_str()
        .expect("build.json names the binary");
    let invoke = |extra: &[&str]| {
        let mut args = vec![
            "invoke",
            "add",
            "--backend",
            "lambda",
            "--program",
            program,
            "--data",
            r#"{"a": 1, "b": 2}"#,
        ];
        args.extend_from_slice(extra);
        ferry_env(&args, &env)
    };

    let unnamed = fails(&invoke(&[]), "ferry invoke without --app");
    assert!(unnamed.contains("unknown function"), "{unnamed}");
    assert!(
        unnamed.contains("hint: `ferry deploy` names functions `<app>-<function>-<config hash>`")
            && unnamed.contains("--app"),
        "{unnamed}"
    );

    let unrun = fails(&invoke(&["--app", PROGRAM]), "ferry invoke on moto");
    assert!(
        unrun.contains("the platform could not run it: error running docker"),
        "{unrun}"
    );
    assert!(
        unrun.contains("hint: this is the platform's failure"),
        "{unrun}"
    );
    assert!(!unrun.contains("returned an error"), "{unrun}");

    let wrong_app = fails(
        &invoke(&["--app", "elsewhere"]),
        "ferry invoke of another app",
    );
    assert!(
        wrong_app.contains("no function of app `elsewhere`"),
        "{wrong_app}"
    );
}

/// The text of the first `<tag>…</tag>` of moto's XML answer.
fn xml(text: &str, tag: &str) -> String {
    let open = format!("<{tag}>");
    let start = text
        .find(&open)
        .unwrap_or_else(|| panic!("no <{tag}> in {text}"))
        + open.len();
    let end = start + text[start..].find(&format!("</{tag}>")).unwrap();
    text[start..end].to_owned()
}

/// Percent-encodes a form value.
fn form(value: &str) -> String {
    value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// An IAM or STS query call, signed with `credentials` (moto's `test` keys when `None`).
fn query(
    moto: &Moto,
    credentials: Option<&ferry::aws::Credentials>,
    service: &str,
    body: &str,
) -> String {
    let test = ferry::aws::Credentials::new("test", "test", None);
    let (status, text) = moto.signed_as(
        credentials.unwrap_or(&test),
        "us-east-1",
        service,
        "POST",
        "/",
        body.as_bytes(),
        "application/x-www-form-urlencoded",
    );
    assert_eq!(status, 200, "{body}: {text}");
    text
}

/// A policy document allowing `action` on everything.
fn allow(action: &str) -> String {
    format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Action":"{action}","Resource":"*"}}]}}"#
    )
}

/// Credentials from the AWS SDK's chain: a profile that assumes a role (`role_arn` +
/// `source_profile`, through moto's STS); and `credential_process` profiles, whose temporary credentials
/// are fetched again before they expire.
#[test]
fn deploy_with_an_assumed_role_or_a_credential_process() {
    let moto = Moto::start();
    moto.create_role("ferry-test");
    let iam = |body: &str| query(&moto, None, "iam", &format!("Version=2010-05-08&{body}"));
    iam("Action=CreateUser&UserName=deployer");
    let key = iam("Action=CreateAccessKey&UserName=deployer");
    let source =
        ferry::aws::Credentials::new(xml(&key, "AccessKeyId"), xml(&key, "SecretAccessKey"), None);
    iam(&format!(
        "Action=PutUserPolicy&UserName=deployer&PolicyName=assume&PolicyDocument={}",
        form(&allow("sts:AssumeRole"))
    ));
    let trust = format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":{{"AWS":"arn:aws:iam::{}:user/deployer"}},"Action":"sts:AssumeRole"}}]}}"#,
        moto::ACCOUNT
    );
    iam(&format!(
        "Action=CreateRole&RoleName=deployer-role&AssumeRolePolicyDocument={}",
        form(&trust)
    ));
    iam(&format!(
        "Action=PutRolePolicy&RoleName=deployer-role&PolicyName=all&PolicyDocument={}",
        form(&allow("*"))
    ));

    // Temporary credentials of the role, for the `credential_process` scripts to print.
    let assumed = query(
        &moto,
        Some(&source),
        "sts",
        &format!(
            "Action=AssumeRole&Version=2011-06-15&RoleSessionName=process&RoleArn={}",
            form(&format!(
                "arn:aws:iam::{}:role/deployer-role",
                moto::ACCOUNT
            ))
        ),
    );
    let home = Scratch::new("home");
    let script = |name: &str, lifetime_s: u32| {
        let path = home.path().join(format!("{name}.sh"));
        let calls = home.path().join(format!("{name}.calls"));
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\necho called >> '{}'\nexpiration=$(date -u -d '+{lifetime_s} seconds' +%Y-%m-%dT%H:%M:%SZ)\nprintf '{{\"Version\": 1, \"AccessKeyId\": \"%s\", \"SecretAccessKey\": \"%s\", \"SessionToken\": \"%s\", \"Expiration\": \"%s\"}}\\n' '{}' '{}' '{}' \"$expiration\"\n",
                calls.display(),
                xml(&assumed, "AccessKeyId"),
                xml(&assumed, "SecretAccessKey"),
                xml(&assumed, "SessionToken"),
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        (path, calls)
    };
    // Expires in two minutes: within the five minutes ahead that signers refresh.
    let (soon, soon_calls) = script("soon", 120);
    let (later, later_calls) = script("later", 3600);
    std::fs::create_dir_all(home.path().join(".aws")).unwrap();
    std::fs::write(
        home.path().join(".aws/config"),
        format!(
            "[profile base]\naws_access_key_id = {}\naws_secret_access_key = {}\nregion = us-east-1\n\n\
             [profile deployer]\nrole_arn = arn:aws:iam::{}:role/deployer-role\nsource_profile = base\nregion = us-east-1\n\n\
             [profile soon]\ncredential_process = {}\nregion = us-east-1\n\n\
             [profile later]\ncredential_process = {}\nregion = us-east-1\n",
            source.access_key_id(),
            source.secret_access_key(),
            moto::ACCOUNT,
            soon.display(),
            later.display(),
        ),
    )
    .unwrap();
    let env_for = |profile: &str| -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = moto
            .env(home.path())
            .into_iter()
            .filter(|(k, _)| !k.starts_with("AWS_ACCESS") && !k.starts_with("AWS_SECRET"))
            .collect();
        env.push(("AWS_PROFILE".into(), profile.into()));
        env
    };

    let dir = fixture_copy();
    let dir_arg = dir.path().to_str().unwrap();
    let ls = |profile: &str| {
        ferry_env(
            &["ls", "--platform", "lambda", "--dir", dir_arg],
            &env_for(profile),
        )
    };
    let n = manifest(dir.path())["functions"].as_array().unwrap().len();

    // moto cannot check Lambda's signatures (with `INITIAL_NO_AUTH_ACTION_COUNT`, moto 5.2
    // refuses even botocore's Lambda requests with `SignatureDoesNotMatch`), so Lambda calls
    // are not checked against the role here; STS is: the role is assumed with the source
    // profile's keys, which IAM allows only that.
    // The role's temporary credentials deploy.
    let deployed = table(&ok(
        &ferry_env(
            &[
                "deploy",
                "--platform",
                "lambda",
                "--dir",
                dir_arg,
                "--role",
                ROLE,
            ],
            &env_for("deployer"),
        ),
        "deploy with the assumed role",
    ));
    assert_eq!(
        states(&deployed),
        BTreeMap::from([("created".to_owned(), n)])
    );
    let listed = table(&ok(&ls("deployer"), "ls with the assumed role"));
    assert_eq!(
        states(&listed),
        BTreeMap::from([("deployed".to_owned(), n)]),
        "{listed:?}"
    );

    // credential_process: credentials an hour from expiry are fetched once; credentials two
    // minutes from expiry again before later requests.
    ok(&ls("later"), "ls with a credential_process");
    let count = |calls: &Path| std::fs::read_to_string(calls).unwrap().lines().count();
    assert_eq!(count(&later_calls), 1);
    ok(&ls("soon"), "ls with credentials about to expire");
    assert!(
        count(&soon_calls) >= 3,
        "called {} times: at load, then before each request",
        count(&soon_calls)
    );

    // The `lambda` backend signs with the role's credentials too: moto accepts the Invoke
    // (and, without Docker, cannot run the function).
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("build.json")).unwrap())
            .unwrap();
    let program = info["binary"].as_str().unwrap();
    let unrun = fails(
        &ferry_env(
            &[
                "invoke",
                "add",
                "--backend",
                "lambda",
                "--program",
                program,
                "--app",
                PROGRAM,
                "--data",
                r#"{"a": 1, "b": 2}"#,
            ],
            &env_for("deployer"),
        ),
        "ferry invoke with the assumed role",
    );
    assert!(
        unrun.contains("the platform could not run it: error running docker"),
        "{unrun}"
    );
}

/// The fixture's zip with 60 MiB of incompressible data beside `bootstrap`: past Lambda's 50 MiB
/// direct-upload limit.
fn write_large_zip(path: &Path) {
    let (name, _, bootstrap) = only_zip_entry(path);
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let executable = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
    zip.start_file(name, executable).unwrap();
    zip.write_all(&bootstrap).unwrap();
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("assets/noise.bin", stored).unwrap();
    // xorshift64: deterministic, and no compressor shrinks it.
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut noise = Vec::with_capacity(60 << 20);
    while noise.len() < 60 << 20 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        noise.extend_from_slice(&state.to_le_bytes());
    }
    zip.write_all(&noise).unwrap();
    zip.finish().unwrap();
}

/// Code over Lambda's 50 MiB direct-upload limit goes up through S3: to the bucket
/// `ferry-<account>-<region>` that ferry creates, or to `--store`, which the functions also get
/// as `FERRY_STORE`. The deployed code is the zip, byte for byte (its SHA-256 and size).
#[test]
fn code_over_the_direct_upload_limit_goes_through_s3() {
    let moto = Moto::start();
    moto.create_role("ferry-test");
    let dir = fixture_copy();
    // Two of the fixture's functions: each function created from a large zip costs moto seconds.
    let mut trimmed = manifest(dir.path());
    trimmed["functions"]
        .as_array_mut()
        .unwrap()
        .retain(|f| ["add", "byte_len"].contains(&f["name"].as_str().unwrap()));
    assert_eq!(trimmed["functions"].as_array().unwrap().len(), 2);
    std::fs::write(dir.path().join("manifest.json"), trimmed.to_string()).unwrap();
    let zip = zip_path(dir.path());
    write_large_zip(&zip);
    let size = std::fs::metadata(&zip).unwrap().len();
    assert!(size > 50 << 20, "{size}");
    let home = Scratch::new("home");
    let env = moto.env(home.path());
    let dir_arg = dir.path().to_str().unwrap();
    let deploy = |extra: &[&str]| {
        let mut args = vec![
            "deploy",
            "--platform",
            "lambda",
            "--dir",
            dir_arg,
            "--role",
            ROLE,
        ];
        args.extend_from_slice(extra);
        let output = ferry_env(&args, &env);
        let stdout = ok(&output, "ferry deploy");
        (stdout, String::from_utf8_lossy(&output.stderr).into_owned())
    };

    let (stdout, stderr) = deploy(&[]);
    let bucket = format!("ferry-{}-us-east-1", moto::ACCOUNT);
    assert!(
        stderr.contains(&format!("s3://{bucket}/{PROGRAM}/code/")),
        "{stderr}"
    );
    let created = table(&stdout);
    assert!(
        created.values().all(|(_, state)| state == "created"),
        "{stdout}"
    );
    let keys = moto.object_keys("us-east-1", &bucket, &format!("{PROGRAM}/code/"));
    assert_eq!(keys.len(), 1, "{keys:?}");
    let (add, _) = &created["add"];
    let function = moto.get_function(add);
    assert_eq!(
        function["Configuration"]["CodeSha256"].as_str(),
        Some(code_sha256(&zip).as_str()),
        "{function}"
    );
    assert_eq!(function["Configuration"]["CodeSize"].as_u64(), Some(size));

    // Again: nothing changed, nothing to do.
    let again = table(&deploy(&[]).0);
    assert!(
        again.values().all(|(_, state)| state == "unchanged"),
        "{again:?}"
    );

    // A store of the user's: the code goes there, and the functions get it as `FERRY_STORE`.
    moto.create_versioned_bucket("us-east-1", "team-data");
    let (stdout, stderr) = deploy(&["--store", "s3://team-data/ferry"]);
    assert!(stderr.contains("s3://team-data/ferry/code/"), "{stderr}");
    let moved = table(&stdout);
    assert!(
        moved
            .values()
            .all(|(_, state)| state == "updated config (Environment)"),
        "{stdout}"
    );
    let function = moto.get_function(add);
    assert_eq!(
        function["Configuration"]["Environment"]["Variables"]["FERRY_STORE"].as_str(),
        Some("s3://team-data/ferry"),
        "{function}"
    );
    assert_eq!(
        moto.object_versions("us-east-1", "team-data", "ferry/code/")
            .len(),
        1
    );

    // A store that is not an S3 URL is refused before anything is sent.
    let stderr = fails(
        &ferry_env(
            &[
                "deploy",
                "--platform",
                "lambda",
                "--dir",
                dir_arg,
                "--role",
                ROLE,
                "--store",
                "team-data",
            ],
            &env,
        ),
        "deploy with a bad store",
    );
    assert!(
        stderr.contains("a store is written `s3://bucket/prefix`"),
        "{stderr}"
    );
}
