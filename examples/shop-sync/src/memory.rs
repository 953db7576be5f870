//! Peak resident memory of a runner's processes over one run, read from Linux's `/proc`.
//!
//! Before a run, writing `5` to `/proc/PID/clear_refs` resets each process's high-water mark
//! (`VmHWM`) to its current RSS; after the run, `VmHWM` in `/proc/PID/status` is its peak RSS
//! over the run. A runner's figure is the sum over its processes: an upper bound of their
//! combined peak, since each process may peak at another moment.
//!
//! Which processes a runner has:
//! - `mono`: none of its own; the monolith's route is served by the benchmarker's process, with
//!   the mock PS and SH servers and the benchmarker itself;
//! - `local`: the local platform's workers, children of this process with `FERRY_ROLE=local-worker`;
//! - `http` and `openwhisk`: the one service process, a child with `FERRY_ROLE=http` or
//!   `FERRY_ROLE=openwhisk`.
//!
//! Elsewhere than on Linux, and where `/proc` cannot be read, the figures are unknown (`None`).

use std::path::Path;

/// The processes of this benchmarker's children that serve in `role` (`FERRY_ROLE`).
pub fn children_in_role(role: &str) -> Vec<u32> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let wanted = format!("{}={role}", ferry::ROLE_VAR);
    let mut pids: Vec<u32> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| parent(*pid) == Some(me))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                environ
                    .split(|byte| *byte == 0)
                    .any(|variable| variable == wanted.as_bytes())
            })
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// The parent of `pid`, from `/proc/PID/stat` (its fourth field, after the command's `)`).
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, after_command) = stat.rsplit_once(')')?;
    after_command.split_whitespace().nth(1)?.parse().ok()
}

/// Resets the peak RSS of each process to its current RSS; whether every reset took.
pub fn reset_peaks(pids: &[u32]) -> bool {
    pids.iter()
        .all(|pid| std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok())
}

/// The sum of the peak RSS of `pids`, in MiB; `None` when one cannot be read.
pub fn peak_mib(pids: &[u32]) -> Option<f64> {
    if pids.is_empty() {
        return None;
    }
    let mut kib = 0;
    for pid in pids {
        kib += vm_hwm_kib(Path::new(&format!("/proc/{pid}/status")))?;
    }
    Some(kib as f64 / 1024.0)
}

/// `VmHWM` of a `/proc/PID/status` file, in KiB.
fn vm_hwm_kib(status: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(status).ok()?;
    parse_vm_hwm(&text)
}

fn parse_vm_hwm(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_hwm_is_read_in_kib() {
        let status =
            "Name:\tshop-sync\nVmPeak:\t  123456 kB\nVmHWM:\t    1792 kB\nVmRSS:\t 1700 kB\n";
        assert_eq!(parse_vm_hwm(status), Some(1792));
        assert_eq!(parse_vm_hwm("Name:\tx\n"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_a_peak_after_a_reset() {
        let me = [std::process::id()];
        assert!(reset_peaks(&me));
        let peak = peak_mib(&me).expect("VmHWM of this process");
        assert!(peak > 0.0, "{peak}");
        assert_eq!(peak_mib(&[]), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_is_found_by_its_role() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .env(ferry::ROLE_VAR, "shop-sync-test-role")
            .spawn()
            .expect("start sleep");
        // Until `sleep` has exec'd, its environment is still this process's.
        let mut found = Vec::new();
        for _ in 0..200 {
            found = children_in_role("shop-sync-test-role");
            if !found.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        child.kill().ok();
        child.wait().ok();
        assert_eq!(found, vec![child.id()]);
    }
}
