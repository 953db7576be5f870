//! The worker pipeline every platform serves through. A platform adapter (`serve::*`) only
//! translates its protocol into [`Runtime::choose`] and [`Runtime::invoke`] and back:
//!
//! 1. choose the function, by one rule on every platform ([`Runtime::choose`]);
//! 2. admit the invocation ([`Runtime::admit`] refuses new work once the instance retires; what
//!    it already runs finishes, and what still waits for a slot is refused) under the function's
//!    `concurrency` (more wait their turn);
//! 3. run it under its timeout, or the caller's earlier deadline, with the platform's metadata
//!    in its [`crate::Invocation`] (never in the process environment);
//! 4. on an overrun (a sync body past its deadline, whose thread cannot be stopped) retire the
//!    instance: it takes no more work, finishes what it holds, reports not-ready, and exits so
//!    the platform replaces it ([`Runtime::retired`]);
//! 5. forward a chained flow's next stage, and hand back the encoded reply.

#[cfg(any(feature = "http", feature = "openwhisk", feature = "web"))]
pub(crate) mod guard;
pub(crate) mod serve;

use std::collections::HashMap;
use std::sync::OnceLock;

use bytes::Bytes;
use tokio::sync::{Semaphore, watch};

use crate::execute::{Overrun, Placement};
use crate::registry::Registration;
use crate::wire::Envelope;
use crate::{Context, Error, Registry, Result};

pub(crate) struct Runtime {
    registry: &'static Registry,
    ctx: Context,
    slots: HashMap<&'static str, Semaphore>,
    /// Why the instance retired, once it has.
    retired: OnceLock<String>,
    retiring: watch::Sender<bool>,
}

impl Runtime {
    /// The pipeline for `registry`'s functions; `ctx` is where they invoke functions and where
    /// chained flow stages are forwarded.
    pub(crate) fn new(registry: &'static Registry, ctx: Context) -> Self {
        Self {
            registry,
            ctx,
            slots: registry
                .iter()
                .map(|r| {
                    let descriptor = r.descriptor();
                    let concurrency = descriptor.config.concurrency.max(1) as usize;
                    (descriptor.id, Semaphore::new(concurrency))
                })
                .collect(),
            retired: OnceLock::new(),
            retiring: watch::channel(false).0,
        }
    }

    pub(crate) fn registry(&self) -> &'static Registry {
        self.registry
    }

    pub(crate) fn context(&self) -> &Context {
        &self.ctx
    }

    /// The function an instance serves when the platform runs one function per instance
    /// (OpenWhisk actions, Lambda functions), by one rule: `FERRY_FUNCTION` if set (it must name
    /// a function), else the first of the platform's `names` that names one (an action's last
    /// path segment counts), else the program's only function. Each name comes with where the
    /// platform put it (`_HANDLER`, the action's name…), for the error.
    pub(crate) fn choose(&self, names: &[(&str, &str)]) -> Result<&'static Registration> {
        choose(
            self.registry,
            crate::config::FUNCTION.text().as_deref(),
            names,
        )
    }

    /// Whether the instance takes new work: an adapter asks before it accepts an invocation
    /// from outside (an HTTP request, a `/run`); the work it already holds is not refused.
    pub(crate) fn admit(&self) -> Result<()> {
        match self.retired.get() {
            Some(reason) => Err(retiring_error(reason)),
            None => Ok(()),
        }
    }

    /// Runs one invocation through the pipeline (a slot under the function's concurrency, the
    /// deadline, the overrun policy, flow forwarding) and returns its encoded reply.
    pub(crate) async fn invoke(
        &self,
        registration: &'static Registration,
        envelope: &Envelope,
        payload: Bytes,
    ) -> Result<Vec<u8>> {
        self.invoke_releasing(registration, envelope, payload, || {})
            .await
    }

    /// [`invoke`](Self::invoke), calling `released` once the body has ended and given back its
    /// slot, before a chained flow's next stage is forwarded: a platform that counts capacity
    /// itself (the local platform) must stop counting the stage there, or stages waiting on
    /// later stages of the same function fill its capacity and the flow deadlocks.
    pub(crate) async fn invoke_releasing(
        &self,
        registration: &'static Registration,
        envelope: &Envelope,
        payload: Bytes,
        released: impl FnOnce(),
    ) -> Result<Vec<u8>> {
        let slot = match self.slots.get(registration.descriptor().id) {
            Some(slots) => slots.acquire().await.ok(),
            None => None,
        };
        let placement = Placement::Here;
        self.run_in_slot(registration, envelope, payload, slot, placement, released)
            .await
    }

    /// Runs an invocation made by a function of this instance here, if its function has a free
    /// slot now; `None` (nothing ran) when it has none, since waiting for one here could mean
    /// waiting on the caller itself, or when the instance retires or the call refers to shared
    /// values by id.
    pub(crate) async fn invoke_if_free(
        &self,
        envelope: &Envelope,
        payload: Bytes,
    ) -> Option<Result<Vec<u8>>> {
        let registration = self.registry.lookup(&envelope.function).ok()?;
        if self.retired.get().is_some() || !envelope.blobs.is_empty() {
            return None;
        }
        let slot = match self.slots.get(registration.descriptor().id) {
            Some(slots) => Some(slots.try_acquire().ok()?),
            None => None,
        };
        // A task of its own, as on the inline backend: the calls of a fan-out made from one
        // task run in parallel.
        let placement = Placement::Spawned;
        Some(
            self.run_in_slot(registration, envelope, payload, slot, placement, || {})
                .await,
        )
    }

    async fn run_in_slot(
        &self,
        registration: &'static Registration,
        envelope: &Envelope,
        payload: Bytes,
        slot: Option<tokio::sync::SemaphorePermit<'_>>,
        placement: Placement,
        released: impl FnOnce(),
    ) -> Result<Vec<u8>> {
        let descriptor = registration.descriptor();
        // Work that waited for a slot while the instance retired does not start: each such call
        // could leave one more thread stuck where the last one is.
        if let Some(reason) = self.retired.get() {
            return Err(retiring_error(reason)
                .in_function(descriptor.id)
                .in_invocation(envelope.invocation));
        }
        let (result, overrun) =
            crate::execute::execute(&self.ctx, registration, envelope, payload, placement).await;
        drop(slot);
        if overrun == Overrun::StuckThread {
            self.retire(format!(
                "`{}` overran its timeout on a thread that cannot be stopped",
                descriptor.id
            ));
        }
        if envelope.flow.is_some() {
            released();
        }
        crate::flow::forward(&self.ctx, envelope, result).await
    }

    /// Stops taking work: [`admit`](Self::admit) refuses from now on, and
    /// [`retired`](Self::retired) resolves so the adapter can report not-ready and exit.
    pub(crate) fn retire(&self, reason: String) {
        if self.retired.set(reason.clone()).is_ok() {
            tracing::warn!(%reason, "retiring this instance: it takes no more work and exits");
            self.retiring.send_replace(true);
        }
    }

    /// Why this instance retired, if it has.
    pub(crate) fn retired_because(&self) -> Option<&str> {
        self.retired.get().map(String::as_str)
    }

    /// Resolves once the instance retires.
    pub(crate) async fn retired(&self) {
        let mut retiring = self.retiring.subscribe();
        let _ = retiring.wait_for(|retiring| *retiring).await;
    }
}

/// The error an invocation gets from an instance that retired.
pub(crate) fn retiring_error(reason: &str) -> Error {
    Error::unavailable(format!(
        "this instance is retiring ({reason}); the platform replaces it"
    ))
}

fn choose(
    registry: &'static Registry,
    pinned: Option<&str>,
    names: &[(&str, &str)],
) -> Result<&'static Registration> {
    if let Some(pinned) = pinned.filter(|p| !p.is_empty()) {
        return registry
            .lookup(pinned)
            .map_err(|e| Error::config(format!("`FERRY_FUNCTION`: {e}")));
    }
    let given: Vec<_> = names.iter().filter(|(_, name)| !name.is_empty()).collect();
    if let Some(found) = given.iter().find_map(|(_, name)| {
        registry
            .lookup(name.rsplit('/').next().unwrap_or(name))
            .ok()
    }) {
        return Ok(found);
    }
    let mut all = registry.iter();
    match (all.next(), all.next()) {
        (Some(only), None) => Ok(only),
        (None, _) => Err(Error::config("this program has no ferry functions")),
        _ => Err(Error::config(format!(
            "cannot tell which function to serve{}: name the action or handler after one of {}, \
             or set `FERRY_FUNCTION`",
            if given.is_empty() {
                String::new()
            } else {
                format!(
                    " (the platform named {})",
                    given
                        .iter()
                        .map(|(source, name)| format!("`{name}` in {source}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            registry
                .iter()
                .map(|r| format!("`{}`", r.descriptor().name))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}
