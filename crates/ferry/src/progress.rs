//! A progress bar for long fan-outs: on stderr when it is a terminal, nothing otherwise (and
//! nothing at all without the `progress` feature).
//!
//! A fan-out pulls its tasks from an iterator as it goes, so its total is what the iterator says
//! of its length (`size_hint`): exact for vectors, ranges and the like. An iterator that cannot
//! tell gets a counter without a bar until it ends; one that only gave an upper bound has its
//! total corrected when it ends.

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
    pub(crate) fn new(_total: Option<u64>, _enabled: bool) -> Self {
        Self
    }

    pub(crate) fn inc(&self) {}

    pub(crate) fn grow(&self, _by: u64) {}

    pub(crate) fn set_total(&self, _total: u64) {}
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
    /// A bar of `total` invocations, or a plain counter while the total is unknown.
    pub(crate) fn new(total: Option<u64>, enabled: bool) -> Self {
        let bar = enabled.then(|| {
            let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
            bar.set_style(style(total.is_some()));
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

    /// More invocations than announced (tasks pushed while it runs); nothing while the total is
    /// unknown.
    pub(crate) fn grow(&self, by: u64) {
        if let Some(bar) = &self.bar {
            bar.inc_length(by);
        }
    }

    /// The total, now known: the iterator ended.
    pub(crate) fn set_total(&self, total: u64) {
        if let Some(bar) = &self.bar {
            if bar.length().is_none() {
                bar.set_style(style(true));
            }
            bar.set_length(total);
        }
    }
}

/// A bar with an estimate when the total is known, else a count and a rate.
#[cfg(feature = "progress")]
fn style(known_total: bool) -> ProgressStyle {
    let template = if known_total {
        "{spinner} {pos}/{len} invocations [{bar:40}] {elapsed} elapsed, eta {eta}"
    } else {
        "{spinner} {pos} invocations, {per_sec}, {elapsed} elapsed"
    };
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

#[cfg(feature = "progress")]
impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(all(test, feature = "progress"))]
mod tests {
    use super::Progress;

    #[test]
    fn an_unknown_total_is_set_when_the_iterator_ends() {
        let progress = Progress::new(None, true);
        let bar = progress.bar.clone().expect("an enabled bar");
        progress.inc();
        progress.grow(1);
        assert_eq!(
            bar.length(),
            None,
            "no total while the iterator has not ended"
        );
        progress.set_total(3);
        assert_eq!(bar.length(), Some(3));
        progress.grow(1);
        assert_eq!(bar.length(), Some(4), "a push adds to a known total");
        assert_eq!(bar.position(), 1);
    }

    #[test]
    fn an_upper_bound_is_corrected_when_the_iterator_ends() {
        let progress = Progress::new(Some(10), true);
        let bar = progress.bar.clone().expect("an enabled bar");
        assert_eq!(bar.length(), Some(10));
        progress.set_total(4);
        assert_eq!(bar.length(), Some(4));
    }
}
