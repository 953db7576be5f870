//! A progress bar for long fan-outs: on stderr when it is a terminal, nothing otherwise (and
//! nothing at all without the `progress` feature).

#[cfg(feature = "progress")]
use std::io::IsTerminal;
#[cfg(feature = "progress")]
use std::time::Duration;

#[cfg(feature = "progress")]
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Without the `progress` feature there is no bar to draw.
#[cfg(not(feature = "progress"))]
pub(crate) fn wanted() -> bool {
    false
}

/// Without the `progress` feature: nothing.
#[cfg(not(feature = "progress"))]
pub(crate) struct Progress;

#[cfg(not(feature = "progress"))]
impl Progress {
    pub(crate) fn new(_total: u64, _enabled: bool) -> Self {
        Self
    }

    pub(crate) fn inc(&self) {}

    pub(crate) fn grow(&self, _by: u64) {}
}

/// `FERRY_PROGRESS=never` hides bars, `always` shows them even off a terminal. (A bad value
/// stopped the program at its entry.)
#[cfg(feature = "progress")]
pub(crate) fn wanted() -> bool {
    match crate::config::PROGRESS.word() {
        Ok(Some("never")) => false,
        Ok(Some("always")) => true,
        _ => std::io::stderr().is_terminal(),
    }
}

#[cfg(feature = "progress")]
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
}

#[cfg(feature = "progress")]
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

#[cfg(feature = "progress")]
impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
