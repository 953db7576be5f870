//! A deployment like Knative's or Cloud Run's, on loopback: the sensor service, and one HTTP
//! service per function — each a process of the example binary in ferry's HTTP service mode
//! (`FERRY_ROLE=http`). Every stage's service is given the URLs of the stages after it
//! (`FERRY_BACKEND=http`, `FERRY_HTTP_ROUTES`), so a chained flow goes from service to service
//! directly; the orchestrating function's service is given every stage's URL;
//! [`Deployment::http_config`] routes a caller to every function. [`Topology::Single`] serves
//! every function from one service instead.
//!
//! Services start last stage first, each on a port of its own choosing, so the URLs a service is
//! given are known when it starts. Processes are killed when the [`Deployment`] is dropped, and
//! when the process that started them dies.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use ferry::HttpConfig;

use crate::pipeline::{orchestrator_name, stage_names};
use crate::service::{LISTENING, SENSORS_URL_VAR};
use crate::timing::timed_stage_names;

/// How long a process may take to say where it listens.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// What ferry's HTTP service mode announces on stderr once it listens.
const FERRY_LISTENING: &str = "ferry: listening on ";

/// A process that failed to start or to announce where it listens.
#[derive(Debug)]
pub struct StartError {
    what: String,
    reason: String,
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot start the {}: {}", self.what, self.reason)
    }
}

impl std::error::Error for StartError {}

/// A serving child process and the URL it announced; killed when dropped.
#[derive(Debug)]
pub struct Process {
    child: Child,
    url: String,
}

impl Process {
    /// Starts `command` and waits until it writes `announcement` followed by its URL on stderr.
    /// Its later stderr lines are passed on to this process's stderr, prefixed by `what`.
    /// With `cpu`, the process runs on that CPU only.
    pub fn start(
        mut command: Command,
        what: &str,
        announcement: &str,
        cpu: Option<usize>,
    ) -> Result<Self, StartError> {
        let fail = |reason: String| StartError {
            what: what.to_owned(),
            reason,
        };
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // Built here: between fork and exec only async-signal-safe calls may run.
        let cpu_set = cpu
            .filter(|&cpu| cpu < libc::CPU_SETSIZE as usize)
            .map(|cpu| {
                // SAFETY: a cpu_set_t is a plain bit mask (all zeros is the empty set), and `cpu`
                // is below CPU_SETSIZE, its size in bits.
                unsafe {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(cpu, &mut set);
                    set
                }
            });
        // SAFETY: prctl and sched_setaffinity are async-signal-safe, and nothing else runs between
        // fork and exec.
        // (The signal follows the death of the thread that forks, so start processes from a
        // thread that lives as long as they should.)
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // Before exec, so the runtime the program builds sizes itself to one CPU.
                if let Some(set) = &cpu_set {
                    if libc::sched_setaffinity(0, std::mem::size_of_val(set), set) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let mut child = command.spawn().map_err(|e| fail(e.to_string()))?;
        let stderr = child.stderr.take().expect("stderr is piped");
        let (announced, url) = mpsc::channel();
        let prefix = what.to_owned();
        let announcement = announcement.to_owned();
        std::thread::spawn(move || {
            let mut announced = Some(announced);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                match line.strip_prefix(&announcement) {
                    Some(url) if announced.is_some() => {
                        let _ = announced.take().map(|a| a.send(url.trim().to_owned()));
                    }
                    _ => eprintln!("[{prefix}] {line}"),
                }
            }
        });
        match url.recv_timeout(START_TIMEOUT) {
            Ok(url) => Ok(Self { child, url }),
            Err(error) => {
                let _ = child.kill();
                let status = child.wait().ok();
                Err(fail(match error {
                    mpsc::RecvTimeoutError::Timeout => format!(
                        "it did not say where it listens within {} s",
                        START_TIMEOUT.as_secs()
                    ),
                    mpsc::RecvTimeoutError::Disconnected => match status {
                        Some(status) => format!("it exited ({status}) before it listened"),
                        None => "it exited before it listened".to_owned(),
                    },
                }))
            }
        }
    }

    /// `http://host:port`, as announced.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }
}

/// CPU time (user + system) process `pid` has used, from `/proc/{pid}/stat`.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces: fields are counted after its `)`.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    // utime and stime are fields 14 and 15, the 12th and 13th after the name.
    let total = ticks(11)? + ticks(12)?;
    // SAFETY: sysconf only reads a configuration value.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let per_second = u64::try_from(per_second).ok().filter(|&t| t > 0)?;
    Some(Duration::from_secs_f64(total as f64 / per_second as f64))
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sensor service as a process of `program` (`program serve`), over the generated dataset.
pub fn start_sensor_service(
    program: &Path,
    rows: usize,
    seed: u64,
    cpu: Option<usize>,
) -> Result<Process, StartError> {
    let mut command = Command::new(program);
    command.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--rows",
        &rows.to_string(),
        "--seed",
        &seed.to_string(),
    ]);
    Process::start(command, "sensor service", LISTENING, cpu)
}

/// The CPUs a deployment's processes run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cpus {
    /// Every process on every CPU this one may use.
    #[default]
    Shared,
    /// Each service on one CPU, the services taking the CPUs in turn: one service per
    /// 1-vCPU machine, as in Dyninka's evaluation.
    OneEach,
}

impl Cpus {
    /// The CPU of the `index`th process started, if it has one.
    fn of(self, index: usize) -> Option<usize> {
        if self == Self::Shared {
            return None;
        }
        let usable = usable_cpus();
        usable.get(index % usable.len().max(1)).copied()
    }
}

/// The CPUs this process may run on (none if that cannot be read: then no process is pinned).
fn usable_cpus() -> Vec<usize> {
    // SAFETY: the set is a plain bit mask that sched_getaffinity fills in.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the size is the set's own; 0 means this process.
    let read = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) } == 0;
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, the set's size in bits.
        .filter(|&cpu| read && unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// How the functions are deployed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Topology {
    /// One service per function, as on Knative or Cloud Run: each stage's service calls the
    /// next stage's service, and the orchestrating function has a service of its own that
    /// calls every stage's.
    #[default]
    PerFunction,
    /// One service for every function (what `FERRY_ROLE=http` serves by default): a chained
    /// stage runs the next one in the same process, and so does the orchestrating function.
    Single,
}

impl Topology {
    /// The name used on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::PerFunction => "per-function",
            Self::Single => "single",
        }
    }
}

/// The sensor service and the services of the functions.
#[derive(Debug)]
pub struct Deployment {
    // Dropped in this order: the services before the sensor service they read from.
    services: Vec<(&'static str, Process)>,
    /// Each function's route: the stages in flow order (each followed by its timed twin), then
    /// the orchestrator.
    routes: Vec<(&'static str, String)>,
    sensor: Process,
}

impl Deployment {
    /// Starts the sensor service over `rows` generated rows from `seed`, then one service per
    /// function, all processes of `program`.
    pub fn start(program: &Path, rows: usize, seed: u64) -> Result<Self, StartError> {
        Self::start_as(program, rows, seed, Topology::PerFunction, Cpus::Shared)
    }

    /// Starts the sensor service, then the functions' services as `topology` says, on the CPUs
    /// `cpus` says.
    pub fn start_as(
        program: &Path,
        rows: usize,
        seed: u64,
        topology: Topology,
        cpus: Cpus,
    ) -> Result<Self, StartError> {
        let sensor = start_sensor_service(program, rows, seed, cpus.of(0))?;
        let started = std::cell::Cell::new(1);
        let service = |name: &str, routes: &[(&'static str, String)]| {
            let cpu = cpus.of(started.replace(started.get() + 1));
            let mut command = Command::new(program);
            command
                .env("FERRY_ROLE", "http")
                .env("FERRY_LISTEN", "127.0.0.1:0")
                .env(SENSORS_URL_VAR, sensor.url())
                .env_remove("FERRY_HTTP_URL")
                .env_remove("FERRY_HTTP_URL_TEMPLATE");
            if routes.is_empty() {
                // Calls nothing elsewhere: whatever it invokes runs in the same process.
                command
                    .env_remove("FERRY_BACKEND")
                    .env_remove("FERRY_HTTP_ROUTES");
            } else {
                let routes: Vec<String> = routes
                    .iter()
                    .map(|(function, url)| format!("{function}={url}"))
                    .collect();
                command
                    .env("FERRY_BACKEND", "http")
                    .env("FERRY_HTTP_ROUTES", routes.join(","));
            }
            Process::start(command, &format!("{name} service"), FERRY_LISTENING, cpu)
        };
        let mut services: Vec<(&'static str, Process)> = Vec::new();
        let mut routes: Vec<(&'static str, String)> = Vec::new();
        match topology {
            Topology::PerFunction => {
                // Last stage first: a service is given the routes of the stages after it. Each
                // stage's service serves its timed twin too (`crate::timing`).
                for (name, timed) in stage_names().into_iter().zip(timed_stage_names()).rev() {
                    let started = service(name, &routes)?;
                    routes.insert(0, (timed, function_url(&started, timed)));
                    routes.insert(0, (name, function_url(&started, name)));
                    services.insert(0, (name, started));
                }
                let orchestrator = orchestrator_name();
                let started = service(orchestrator, &routes)?;
                routes.push((orchestrator, function_url(&started, orchestrator)));
                services.push((orchestrator, started));
            }
            Topology::Single => {
                let started = service("every function", &[])?;
                routes = stage_names()
                    .into_iter()
                    .chain(timed_stage_names())
                    .chain([orchestrator_name()])
                    .map(|name| (name, function_url(&started, name)))
                    .collect();
                services.push(("every function", started));
            }
        }
        Ok(Self {
            services,
            routes,
            sensor,
        })
    }

    /// The sensor service's base URL.
    pub fn sensor_url(&self) -> &str {
        self.sensor.url()
    }

    /// Each stage's function name and the URL of its route, in flow order.
    pub fn routes(&self) -> Vec<(&'static str, String)> {
        let stages = stage_names();
        self.routes
            .iter()
            .filter(|(name, _)| stages.contains(name))
            .cloned()
            .collect()
    }

    /// Every process with what it serves: the sensor service, then the functions' services.
    pub fn processes(&self) -> Vec<(&'static str, &Process)> {
        std::iter::once(("sensor service", &self.sensor))
            .chain(self.services.iter().map(|(name, service)| (*name, service)))
            .collect()
    }

    /// A caller's configuration: every function at its route.
    pub fn http_config(&self) -> HttpConfig {
        self.routes
            .iter()
            .fold(HttpConfig::new(""), |config, (name, url)| {
                config.route(*name, url.clone())
            })
    }
}

fn function_url(service: &Process, name: &str) -> String {
    format!("{}/functions/{name}", service.url())
}
