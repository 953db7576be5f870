//! docs/getting-started.md, run as written: its commands in order, in a fresh directory outside
//! the workspace, with `ferry` on `PATH` (this build of it) and the Lambda steps against
//! loopback servers. A change to the guide that breaks a command, an output it shows, the
//! `Cargo.toml` it prints or the code it adds fails this test.
//!
//! How the guide is read:
//!
//! - ` ```sh ` blocks: one command a line (`\` continues a line, `#` lines are comments), run by
//!   `sh -c` in the current directory; `cd DIR` changes it and `export KEY=VALUE` sets a variable
//!   for the commands after it, as in the reader's shell. Every command must succeed.
//! - A ` ```text ` block right after a ` ```sh ` block is output: each of its lines must be a line
//!   of what the block's last command printed (runs of spaces count as one), unless its first
//!   line ends in `/`: then it lists a directory, and each path it names must be there.
//! - The ` ```toml ` block is the crate's `Cargo.toml`, but for the path of ferry.
//! - A ` ```rust ` block starts with `// from PATH` (an excerpt: it must be in that file),
//!   `// PATH, at the end` (appended) or `// PATH, a new file` (created).
//!
//! One line is not run: `cargo install --path crates/ferry-cli` would build and install the
//! command this test runs, into the reader's `~/.cargo/bin`; the test runs the binary cargo
//! built for it instead (`CARGO_BIN_EXE_ferry`).
//!
//! The AWS steps: `ferry deploy` and `ferry ls` talk to moto's server, a real implementation of
//! the Lambda and IAM APIs (with the role the guide names created in it). moto runs functions
//! only in Docker, so commands that invoke (`--backend lambda`) go to cargo lambda's emulator of
//! the Invoke and Runtime APIs instead, where every function moto holds runs as its `bootstrap`
//! (from the zip whose SHA-256 moto has), under its deployed name, handler, memory and
//! environment. Credentials are dummies and this machine's AWS files are hidden.

mod common;
#[path = "common/crates.rs"]
mod crates;

use std::collections::BTreeMap;
use std::io::Read as _;
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Scratch, only_zip_entry, workspace};
use crates::{build_lock, outside_workspace, shared_target};
use ferry_tests::moto::{self, Moto};
use sha2::Digest as _;

/// The one command the test does not run (see the module docs).
const INSTALL: &str = "cargo install --path crates/ferry-cli";

/// Commands the guide must keep: the path from a new crate to an invocation on Lambda.
const COVERED: &[&str] = &[
    "ferry new ",
    "cargo run",
    "cargo test",
    "ferry build --platform lambda",
    "ferry deploy --platform lambda",
    "ferry invoke ",
    "--backend lambda",
];

/// The longest any one command may take (a release build of every dependency, on two cores).
const COMMAND_LIMIT: Duration = Duration::from_secs(30 * 60);

#[test]
fn the_getting_started_guide_runs_as_written() {
    let _lock = build_lock();
    let guide = std::fs::read_to_string(workspace().join("docs/getting-started.md")).unwrap();
    let blocks = blocks(&guide);
    let mut reader = Reader::new(&blocks);
    let mut last_sh: Option<String> = None;
    for block in &blocks {
        match block.lang.as_str() {
            "sh" => last_sh = reader.run_block(&block.body),
            "text" if is_listing(&block.body) => reader.check_listing(&block.body),
            "text" if block.after_sh => {
                let output = last_sh.as_deref().expect("output follows a command");
                assert_printed(&block.body, output);
            }
            "text" => panic!(
                "a ```text block that is neither output nor a listing:\n{}",
                block.body
            ),
            "toml" => reader.check_manifest(&block.body),
            "rust" => reader.apply_code(&block.body),
            other => panic!("a ```{other} block: the guide uses sh, text, toml and rust"),
        }
        if block.lang != "sh" {
            last_sh = None;
        }
    }
    assert_eq!(reader.skipped, 1, "`{INSTALL}` is in the guide once");
    for command in COVERED {
        assert!(
            reader.ran.iter().any(|ran| ran.contains(command)),
            "the guide no longer runs `{command}…`"
        );
    }
}

/// A fenced block of the guide.
struct Block {
    lang: String,
    body: String,
    /// Only blank lines separate it from a ` ```sh ` block before it.
    after_sh: bool,
}

fn blocks(markdown: &str) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut lines = markdown.lines();
    let mut between_sh = false;
    while let Some(line) = lines.next() {
        let Some(lang) = line.trim_start().strip_prefix("```") else {
            if !line.trim().is_empty() {
                between_sh = false;
            }
            continue;
        };
        let indent = line.len() - line.trim_start().len();
        let mut body = String::new();
        for line in lines.by_ref() {
            if line.trim_start() == "```" {
                break;
            }
            body.push_str(line.get(indent..).unwrap_or(line.trim_start()));
            body.push('\n');
        }
        let lang = lang.trim().to_owned();
        blocks.push(Block {
            after_sh: between_sh,
            lang: lang.clone(),
            body,
        });
        between_sh = lang == "sh";
    }
    blocks
}

/// A listing of a directory: its first line names it, with a `/`.
fn is_listing(body: &str) -> bool {
    body.lines()
        .next()
        .is_some_and(|line| line.trim_end().ends_with('/'))
}

/// Each line of `expected` is a line of `output`, with runs of whitespace as one space.
fn assert_printed(expected: &str, output: &str) {
    let squeeze = |line: &str| line.split_whitespace().collect::<Vec<_>>().join(" ");
    let printed: Vec<String> = output.lines().map(squeeze).collect();
    for line in expected.lines().filter(|line| !line.trim().is_empty()) {
        assert!(
            printed.contains(&squeeze(line)),
            "the guide shows `{line}`, but the command printed:\n{output}"
        );
    }
}

/// The reader of the guide: where they are, what they exported, and the servers behind AWS.
struct Reader {
    scratch: Scratch,
    cwd: PathBuf,
    exports: BTreeMap<String, String>,
    /// The IAM roles the guide's commands name.
    roles: Vec<String>,
    moto: Option<Moto>,
    lambda: Option<LambdaRuntime>,
    ran: Vec<String>,
    skipped: usize,
}

impl Reader {
    fn new(blocks: &[Block]) -> Self {
        let scratch = outside_workspace("getting-started");
        let cwd = scratch.path().join("home");
        std::fs::create_dir(&cwd).unwrap();
        let roles = blocks
            .iter()
            .filter(|block| block.lang == "sh")
            .flat_map(|block| block.body.split_whitespace().map(str::to_owned))
            .filter_map(|word| {
                let prefix = format!("arn:aws:iam::{}:role/", moto::ACCOUNT);
                word.strip_prefix(&prefix).map(str::to_owned)
            })
            .collect();
        Self {
            scratch,
            cwd,
            exports: BTreeMap::new(),
            roles,
            moto: None,
            lambda: None,
            ran: Vec::new(),
            skipped: 0,
        }
    }

    /// Runs a ` ```sh ` block; returns what its last command printed.
    fn run_block(&mut self, body: &str) -> Option<String> {
        let mut last = None;
        for command in commands(body) {
            last = self.run(&command);
        }
        last
    }

    fn run(&mut self, command: &str) -> Option<String> {
        if command == INSTALL {
            self.skipped += 1;
            return None;
        }
        let words: Vec<&str> = command.split_whitespace().collect();
        match words.as_slice() {
            ["cd", dir] => {
                self.cwd = self.cwd.join(dir);
                assert!(self.cwd.is_dir(), "`{command}`: no such directory");
                return None;
            }
            ["export", assignment] => {
                let (key, value) = assignment.split_once('=').expect("export KEY=VALUE");
                self.exports.insert(key.to_owned(), value.to_owned());
                return None;
            }
            _ => {}
        }
        self.link_target();
        let endpoint = self.lambda_endpoint(command);
        let ferry_dir = Path::new(env!("CARGO_BIN_EXE_ferry")).parent().unwrap();
        let path = std::env::join_paths(std::iter::once(ferry_dir.to_path_buf()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .unwrap();
        let hidden = self.scratch.path().join("no-aws-files");
        let mut sh = crates::command("sh", &self.cwd, &["-c", command]);
        sh.env("PATH", path)
            .env_remove("CARGO_TARGET_DIR")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_SHARED_CREDENTIALS_FILE", &hidden)
            .env("AWS_CONFIG_FILE", &hidden)
            .envs(&self.exports);
        if let Some(endpoint) = endpoint {
            sh.env("AWS_ENDPOINT_URL_LAMBDA", endpoint);
        }
        let (status, stdout, stderr) = run_bounded(&mut sh, command);
        assert!(
            status,
            "`{command}` failed in {}:\nstdout:\n{stdout}\nstderr:\n{stderr}",
            self.cwd.display()
        );
        self.ran.push(command.to_owned());
        Some(stdout)
    }

    /// A crate's `target` is the shared target directory, so dependencies build once for every
    /// test and run, and the guide's `target/…` paths hold as they do for a reader.
    fn link_target(&self) {
        let target = self.cwd.join("target");
        if self.cwd.join("Cargo.toml").is_file() && target.symlink_metadata().is_err() {
            std::fs::create_dir_all(shared_target()).unwrap();
            std::os::unix::fs::symlink(shared_target(), target).unwrap();
        }
    }

    /// Where a command's Lambda requests go: moto for the control plane, the runtime emulator
    /// for invocations; nothing for commands that do not mention Lambda.
    fn lambda_endpoint(&mut self, command: &str) -> Option<String> {
        if !command.contains("lambda") {
            return None;
        }
        if self.moto.is_none() {
            let moto = Moto::start();
            for role in &self.roles {
                moto.create_role(role);
            }
            self.moto = Some(moto);
        }
        let moto = self.moto.as_ref().unwrap();
        if !(command.contains("--backend lambda") || command.contains("FERRY_BACKEND=lambda")) {
            return Some(moto.url.clone());
        }
        let region = self
            .exports
            .get("AWS_REGION")
            .map_or("us-east-1", String::as_str);
        let functions = moto.list_functions(region);
        let names: Vec<&str> = functions
            .iter()
            .map(|f| f["FunctionName"].as_str().unwrap())
            .collect();
        if self.lambda.as_ref().is_none_or(|l| l.functions != names) {
            // Drop the old emulator (and its bootstraps) first: the new one serves them all.
            self.lambda = None;
            let dir = self.scratch.path().join("lambda");
            self.lambda = Some(LambdaRuntime::start(&dir, &functions, &self.cwd));
        }
        Some(self.lambda.as_ref().unwrap().endpoint.clone())
    }

    /// A directory listing: every path it names is there.
    fn check_listing(&self, body: &str) {
        let mut lines = body.lines();
        let root = lines.next().unwrap().trim().trim_end_matches('/');
        let root = self.cwd.parent().unwrap().join(root);
        let root = if root.is_dir() {
            root
        } else {
            self.cwd.clone()
        };
        for line in lines.filter(|line| !line.trim().is_empty()) {
            let path = line.split_whitespace().next().unwrap();
            assert!(
                root.join(path).exists(),
                "the guide lists `{path}`, which `{}` lacks",
                root.display()
            );
        }
    }

    /// The guide's `Cargo.toml` is the crate's, but for ferry's path.
    fn check_manifest(&self, body: &str) {
        let actual = std::fs::read_to_string(self.cwd.join("Cargo.toml")).unwrap();
        let ferry = |text: &str| -> String {
            text.lines()
                .map(|line| match line.strip_prefix("ferry = { path = ") {
                    Some(_) => "ferry = { path = … }",
                    None => line,
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(ferry(body.trim()), ferry(actual.trim()), "Cargo.toml");
    }

    /// An excerpt is in its file; other code goes where its first line says.
    fn apply_code(&self, body: &str) {
        let (first, code) = body.split_once('\n').unwrap_or((body, ""));
        let Some(place) = first.strip_prefix("// ") else {
            panic!(
                "a ```rust block starts with `// from PATH`, `// PATH, at the end` or `// PATH, a new file`:\n{body}"
            );
        };
        if let Some(path) = place.strip_prefix("from ") {
            let text = std::fs::read_to_string(self.cwd.join(path)).unwrap();
            assert!(
                text.contains(code.trim_end()),
                "the guide quotes `{path}`, which does not hold:\n{code}"
            );
        } else if let Some(path) = place.strip_suffix(", at the end") {
            let path = self.cwd.join(path);
            let mut text = std::fs::read_to_string(&path).unwrap();
            text.push_str(code);
            std::fs::write(path, text).unwrap();
        } else if let Some(path) = place.strip_suffix(", a new file") {
            let path = self.cwd.join(path);
            assert!(!path.exists(), "`{}` exists already", path.display());
            std::fs::write(path, code).unwrap();
        } else {
            panic!("`{first}`: say `from PATH`, `PATH, at the end` or `PATH, a new file`");
        }
    }
}

/// The commands of a ` ```sh ` block.
fn commands(body: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut current = String::new();
    for line in body.lines() {
        let line = line.trim();
        if current.is_empty() && (line.is_empty() || line.starts_with('#')) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(start) => current.push_str(start),
            None => {
                current.push_str(line);
                commands.push(std::mem::take(&mut current));
            }
        }
    }
    assert!(current.is_empty(), "a command ends in `\\`");
    commands
}

/// Runs `command` to the end within [`COMMAND_LIMIT`]: success, stdout and stderr. It runs in
/// a process group of its own, so a command that overruns is stopped with everything it
/// started.
fn run_bounded(command: &mut Command, what: &str) -> (bool, String, String) {
    let started = Instant::now();
    let mut child = command
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run `{what}`: {e}"));
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > COMMAND_LIMIT {
            let group = libc::pid_t::try_from(child.id()).unwrap();
            // SAFETY: the group of our own child, which has not been waited for.
            unsafe { libc::kill(-group, libc::SIGKILL) };
            let _ = child.wait();
            panic!("`{what}` took more than {COMMAND_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    eprintln!("{what}: {:.1}s", started.elapsed().as_secs_f64());
    (
        status.success(),
        stdout.join().unwrap(),
        stderr.join().unwrap(),
    )
}

/// The functions moto holds, running behind `cargo lambda watch --only-lambda-apis`: its Invoke
/// API queues events by function name for a runtime polling that name's Runtime API.
struct LambdaRuntime {
    emulator: Child,
    bootstraps: Vec<Child>,
    functions: Vec<String>,
    endpoint: String,
}

impl LambdaRuntime {
    /// `functions` are moto's configurations; the code is the zip under `crate_dir`'s
    /// `target/ferry` whose SHA-256 moto has.
    fn start(dir: &Path, functions: &[serde_json::Value], crate_dir: &Path) -> Self {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).unwrap();
        let names: Vec<String> = functions
            .iter()
            .map(|f| f["FunctionName"].as_str().unwrap().to_owned())
            .collect();
        assert!(!names.is_empty(), "nothing is deployed to invoke");
        // The emulator serves the functions its cargo project has binaries for: a manifest that
        // names the deployed functions.
        let mut manifest = String::from(
            "[package]\nname = \"deployed-functions\"\nversion = \"0.0.0\"\nedition = \"2021\"\n",
        );
        for name in &names {
            manifest.push_str(&format!(
                "\n[[bin]]\nname = \"{name}\"\npath = \"main.rs\"\n"
            ));
        }
        std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
        std::fs::write(dir.join("main.rs"), "fn main() {}\n").unwrap();

        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let log = std::fs::File::create(dir.join("emulator.log")).unwrap();
        let emulator = Command::new("cargo")
            .args(["lambda", "watch", "--only-lambda-apis", "-A", "127.0.0.1"])
            .args(["-P", &port.to_string()])
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect(
                "cargo-lambda is installed (`pip install cargo-lambda`; scripts/test.sh does it)",
            );
        let mut runtime = Self {
            emulator,
            bootstraps: Vec::new(),
            functions: names,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the emulator never listened: see {}",
                dir.join("emulator.log").display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }

        let zips = deployed_zips(crate_dir);
        for function in functions {
            let name = function["FunctionName"].as_str().unwrap();
            let sha = function["CodeSha256"].as_str().unwrap();
            let zip = zips
                .get(sha)
                .unwrap_or_else(|| panic!("no zip under target/ferry holds the code of `{name}`"));
            let (entry, mode, bytes) = only_zip_entry(zip);
            assert_eq!((entry.as_str(), mode & 0o777), ("bootstrap", 0o755));
            let bootstrap = dir.join(format!("{name}.bootstrap"));
            std::fs::write(&bootstrap, bytes).unwrap();
            std::fs::set_permissions(
                &bootstrap,
                std::os::unix::fs::PermissionsExt::from_mode(0o755),
            )
            .unwrap();
            let variables = function["Environment"]["Variables"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
            let child = Command::new(&bootstrap)
                .env_clear()
                .envs(
                    variables
                        .iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned())),
                )
                .env(
                    "AWS_LAMBDA_RUNTIME_API",
                    format!("http://127.0.0.1:{port}/.rt/{name}"),
                )
                .env("AWS_LAMBDA_FUNCTION_NAME", name)
                .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
                .env(
                    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
                    function["MemorySize"].to_string(),
                )
                .env("_HANDLER", function["Handler"].as_str().unwrap())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("start a bootstrap");
            runtime.bootstraps.push(child);
        }
        runtime
    }
}

impl Drop for LambdaRuntime {
    fn drop(&mut self) {
        for child in self.bootstraps.iter_mut().chain([&mut self.emulator]) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The Lambda zips `ferry build` wrote under `crate_dir`, by the base64 SHA-256 Lambda reports
/// as `CodeSha256`.
fn deployed_zips(crate_dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut zips = BTreeMap::new();
    let Ok(programs) = std::fs::read_dir(crate_dir.join("target/ferry")) else {
        return zips;
    };
    for program in programs.map_while(Result::ok) {
        let Ok(files) = std::fs::read_dir(program.path().join("lambda")) else {
            continue;
        };
        for zip in files.map_while(Result::ok).map(|f| f.path()) {
            if zip.extension().is_some_and(|e| e == "zip") {
                let sha = sha2::Sha256::digest(std::fs::read(&zip).unwrap());
                zips.insert(base64_simd::STANDARD.encode_to_string(sha), zip);
            }
        }
    }
    zips
}
