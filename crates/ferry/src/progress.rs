//! A progress bar for long fan-outs: on stderr when it is a terminal, nothing otherwise.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// `FERRY_PROGRESS=never` hides bars, `always` shows them even off a terminal. (A bad value
/// stopped the program at its entry.)
pub(crate) fn wanted() -> bool {
    match crate::config::PROGRESS.word() {
        Ok(Some("never")) => false,
        Ok(Some("always")) => true,
        _ => std::io::stderr().is_terminal(),
    }
}

pub(crate) struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub(crate) fn new(total: u64, enabled: bool) -> Self {
        let bar = enabled.then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} {pos}/{len} invocations [{bar:40}] {elapsed} elapsed, eta {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        Self { bar }
    }

    pub(crate) fn inc(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    pub(crate) fn grow(&self, by: u64) {
        if let Some(bar) = &self.bar {
            bar.inc_length(by);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
