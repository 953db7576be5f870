//! The action limits the controller enforces, read as Apache OpenWhisk reads them: the system
//! ranges of `whisk.memory`, `whisk.time-limit`, `whisk.log-limit` and `whisk.concurrency-limit`
//! (`common/scala/src/main/resources/application.conf`), which are also every namespace's limits
//! when no namespace has limits of its own. `PUT …/actions/{name}` decodes the `limits` object as
//! `ActionLimitsOption` does (`WhiskAction.scala`, `MemoryLimit.scala`, `TimeLimit.scala`,
//! `LogLimit.scala`, `IntraConcurrencyLimit.scala`), then checks it as `Actions.scala`'s
//! `checkActionLimits` does: memory, duration, logs, concurrency, each against its maximum first,
//! an `ActionLimitsException` becoming a 400 whose `error` is the exception's message.

use serde_json::{Map, Value, json};

/// One action limit: the range an action may ask for and what it gets when it does not ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitRange {
    pub min: u64,
    pub max: u64,
    /// The value of an action created without this limit (`std` in OpenWhisk's configuration).
    pub std: u64,
}

/// The action limits of a [`super::Controller`]. [`Default`] is what OpenWhisk ships:
/// memory 128–512 MB (256), duration 100 ms–5 min (1 min), logs 0–10 MB (10) and
/// intra-container concurrency 1–1 (1), so an action that asks for a concurrency above 1 is
/// refused until an operator raises `whisk.concurrency-limit.max`
/// ([`ControllerLimits::with_max_concurrency`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerLimits {
    /// `limits.memory`, in MB (`whisk.memory`).
    pub memory_mb: LimitRange,
    /// `limits.timeout`, in milliseconds (`whisk.time-limit`).
    pub timeout_ms: LimitRange,
    /// `limits.logs`, in MB (`whisk.log-limit`).
    pub logs_mb: LimitRange,
    /// `limits.concurrency`, the activations one container runs at once
    /// (`whisk.concurrency-limit`).
    pub concurrency: LimitRange,
}

impl Default for ControllerLimits {
    fn default() -> Self {
        Self {
            memory_mb: LimitRange {
                min: 128,
                max: 512,
                std: 256,
            },
            timeout_ms: LimitRange {
                min: 100,
                max: 300_000,
                std: 60_000,
            },
            logs_mb: LimitRange {
                min: 0,
                max: 10,
                std: 10,
            },
            concurrency: LimitRange {
                min: 1,
                max: 1,
                std: 1,
            },
        }
    }
}

impl ControllerLimits {
    /// These limits with intra-container concurrency allowed up to `max`, as an operator sets
    /// `whisk.concurrency-limit.max` (OpenWhisk's `docs/intra-concurrency.md`).
    pub fn with_max_concurrency(mut self, max: u64) -> Self {
        self.concurrency.max = max;
        self
    }

    pub(super) fn check_ranges(&self) {
        for (name, range) in [
            ("memory_mb", self.memory_mb),
            ("timeout_ms", self.timeout_ms),
            ("logs_mb", self.logs_mb),
            ("concurrency", self.concurrency),
        ] {
            assert!(
                range.min <= range.max,
                "ControllerLimits::{name}: min {} above max {}",
                range.min,
                range.max
            );
        }
    }

    /// The limits a new action gets when it sets none.
    pub(super) fn standard(&self) -> Value {
        json!({
            "timeout": self.timeout_ms.std,
            "memory": self.memory_mb.std,
            "logs": self.logs_mb.std,
            "concurrency": self.concurrency.std,
        })
    }

    /// The stored `limits` of an action put with `given` (the request's `limits`, if any) over
    /// `existing` (the stored action's, on an update): each limit the request sets, else the
    /// existing one, else the standard one. Refused as the controller refuses it.
    pub(super) fn admit(
        &self,
        given: Option<&Value>,
        existing: Option<&Value>,
    ) -> Result<Value, Refusal> {
        let requested = Requested::decode(given).map_err(Refusal::Malformed)?;
        if let Some(requested) = &requested {
            self.check(requested).map_err(Refusal::Limit)?;
        }
        let base = existing.cloned().unwrap_or_else(|| self.standard());
        let Some(requested) = requested else {
            return Ok(base);
        };
        let mut limits = Map::new();
        for (key, value) in [
            ("timeout", requested.timeout),
            ("memory", requested.memory),
            ("logs", requested.logs),
            ("concurrency", requested.concurrency),
        ] {
            let value = value.map_or_else(|| base[key].clone(), |v| json!(v));
            limits.insert(key.to_owned(), value);
        }
        match requested.instances {
            Some(instances) => {
                limits.insert("instances".to_owned(), json!(instances));
            }
            None => {
                if let Some(instances) = base.get("instances") {
                    limits.insert("instances".to_owned(), instances.clone());
                }
            }
        }
        Ok(Value::Object(limits))
    }

    /// `checkActionLimits`: memory, duration, logs, concurrency, each against its maximum first.
    fn check(&self, requested: &Requested) -> Result<(), String> {
        if let Some(mb) = requested.memory {
            check_size("memory", mb, self.memory_mb)?;
        }
        if let Some(ms) = requested.timeout {
            let range = self.timeout_ms;
            if ms > range.max as i64 {
                return Err(format!(
                    "duration {ms} milliseconds exceeds allowed threshold of {} milliseconds",
                    range.max
                ));
            }
            if ms < range.min as i64 {
                return Err(format!(
                    "duration {ms} milliseconds below allowed threshold of {} milliseconds",
                    range.min
                ));
            }
        }
        if let Some(mb) = requested.logs {
            check_size("log", mb, self.logs_mb)?;
        }
        if let Some(n) = requested.concurrency {
            let range = self.concurrency;
            if n > range.max as i64 {
                return Err(format!(
                    "concurrency {n} exceeds allowed threshold of {}",
                    range.max
                ));
            }
            if n < range.min as i64 {
                return Err(format!(
                    "concurrency {n} below allowed threshold of {}",
                    range.min
                ));
            }
        }
        // `checkInstanceConcurrencyLessThanNamespaceConcurrency`, after the other limits.
        if requested
            .instances
            .is_some_and(|instances| instances > CONCURRENT_ACTIONS as i64)
        {
            return Err(format!(
                "Max action instance concurrency must not exceed your namespace concurrency of {CONCURRENT_ACTIONS}."
            ));
        }
        Ok(())
    }

    /// The controller's info document (`GET /`), as `Controller.scala`'s `info` builds it: the
    /// durations in milliseconds, memory and logs in bytes, the namespace defaults being the
    /// system limits (no namespace has limits of its own here). The intra-container concurrency
    /// is not in it; `concurrent_actions` is the namespace's concurrent invocations.
    pub(super) fn info(&self) -> Value {
        const MB: u64 = 1024 * 1024;
        json!({
            "description": "OpenWhisk",
            "support": {
                "github": "https://github.com/apache/openwhisk/issues",
                "slack": "http://slack.openwhisk.org",
            },
            "api_paths": ["/api/v1"],
            "limits": {
                "actions_per_minute": ACTIONS_PER_MINUTE,
                "triggers_per_minute": TRIGGERS_PER_MINUTE,
                "concurrent_actions": CONCURRENT_ACTIONS,
                "sequence_length": SEQUENCE_LENGTH,
                "default_min_action_duration": self.timeout_ms.min,
                "default_max_action_duration": self.timeout_ms.max,
                "default_min_action_memory": self.memory_mb.min * MB,
                "default_max_action_memory": self.memory_mb.max * MB,
                "default_min_action_logs": self.logs_mb.min * MB,
                "default_max_action_logs": self.logs_mb.max * MB,
                "min_action_duration": self.timeout_ms.min,
                "max_action_duration": self.timeout_ms.max,
                "min_action_memory": self.memory_mb.min * MB,
                "max_action_memory": self.memory_mb.max * MB,
                "min_action_logs": self.logs_mb.min * MB,
                "max_action_logs": self.logs_mb.max * MB,
            },
            // No managed runtime (nodejs, python…) runs here: actions are blackbox ones.
            "runtimes": {},
        })
    }
}

/// `limits.actions.invokes.perMinute` as OpenWhisk's deployments set it (60).
pub(super) const ACTIONS_PER_MINUTE: u64 = 60;
/// `limits.triggers.fires.perMinute` (60).
const TRIGGERS_PER_MINUTE: u64 = 60;
/// `limits.actions.invokes.concurrent` (30).
const CONCURRENT_ACTIONS: u64 = 30;
/// `limits.actions.sequence.maxLength` (50).
const SEQUENCE_LENGTH: u64 = 50;

/// A size limit in MB against its range: `MemoryLimit` and `LogLimit`'s messages.
fn check_size(field: &str, mb: i64, range: LimitRange) -> Result<(), String> {
    if mb > range.max as i64 {
        return Err(format!(
            "{field} size {mb} MB exceeds allowed threshold of {} MB",
            range.max
        ));
    }
    if mb < range.min as i64 {
        return Err(format!(
            "{field} size {mb} MB below allowed threshold of {} MB",
            range.min
        ));
    }
    Ok(())
}

/// Why a PUT's limits are refused (400 either way).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The body does not decode: the answer is `The request content was malformed:\n…`.
    Malformed(String),
    /// A limit outside its range: the answer is the message itself.
    Limit(String),
}

/// The limits a PUT asks for (`ActionLimitsOption`): each absent or `null` one is `None`.
#[derive(Debug, Default)]
struct Requested {
    timeout: Option<i64>,
    memory: Option<i64>,
    logs: Option<i64>,
    concurrency: Option<i64>,
    instances: Option<i64>,
}

impl Requested {
    /// Decodes as spray-json decodes `ActionLimitsOption`, field by field in its order.
    fn decode(given: Option<&Value>) -> Result<Option<Self>, String> {
        let fields = match given {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(fields)) => fields,
            // A product format reading anything but an object fails on its first field.
            Some(_) => return Err("Object expected in field 'timeout'".to_owned()),
        };
        // `size`: a `ByteSize`, never negative; `instances` is at least 0 as well.
        let field = |key: &str, name: &str, size: bool| -> Result<Option<i64>, String> {
            match fields.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) => {
                    let whole = n.as_i64().or_else(|| {
                        n.as_f64()
                            .filter(|f| f.fract() == 0.0)
                            .map(|f| f.clamp(i64::MIN as f64, i64::MAX as f64) as i64)
                    });
                    let Some(whole) = whole else {
                        return Err(format!(
                            "requirement failed: {name} limit must be whole number"
                        ));
                    };
                    // `intValue`: a 32-bit int.
                    let value = i64::from(whole as i32);
                    if size && value < 0 {
                        return Err(
                            "requirement failed: a negative size of an object is not allowed."
                                .to_owned(),
                        );
                    }
                    if key == "instances" && value < 0 {
                        return Err("requirement failed: Action container concurrency must be greater than or equal to 0.".to_owned());
                    }
                    Ok(Some(value))
                }
                Some(_) => Err(format!("{} limit malformed", malformed_name(name))),
            }
        };
        Ok(Some(Self {
            timeout: field("timeout", "time", false)?,
            memory: field("memory", "memory", true)?,
            logs: field("logs", "log", true)?,
            concurrency: field("concurrency", "intra concurrency", false)?,
            instances: field("instances", "instance concurrency", false)?,
        }))
    }
}

/// The name in a "… limit malformed" message: `IntraConcurrencyLimit` says less there than in
/// its whole-number message.
fn malformed_name(name: &str) -> &str {
    match name {
        "intra concurrency" => "concurrency",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admit(limits: &ControllerLimits, given: Value) -> Result<Value, Refusal> {
        limits.admit(Some(&given), None)
    }

    #[test]
    fn limits_outside_the_ranges_are_refused_with_openwhisks_messages() {
        let limits = ControllerLimits::default();
        for (given, message) in [
            (
                json!({"concurrency": 8}),
                "concurrency 8 exceeds allowed threshold of 1",
            ),
            (
                json!({"concurrency": 0}),
                "concurrency 0 below allowed threshold of 1",
            ),
            (
                json!({"memory": 1024}),
                "memory size 1024 MB exceeds allowed threshold of 512 MB",
            ),
            (
                json!({"memory": 64}),
                "memory size 64 MB below allowed threshold of 128 MB",
            ),
            (
                json!({"timeout": 300_001}),
                "duration 300001 milliseconds exceeds allowed threshold of 300000 milliseconds",
            ),
            (
                json!({"timeout": 99}),
                "duration 99 milliseconds below allowed threshold of 100 milliseconds",
            ),
            (
                json!({"logs": 11}),
                "log size 11 MB exceeds allowed threshold of 10 MB",
            ),
            // Memory is checked first, then the duration, the logs and the concurrency.
            (
                json!({"concurrency": 8, "timeout": 1, "memory": 1}),
                "memory size 1 MB below allowed threshold of 128 MB",
            ),
            (
                json!({"concurrency": 8, "logs": 20, "timeout": 1}),
                "duration 1 milliseconds below allowed threshold of 100 milliseconds",
            ),
        ] {
            assert_eq!(
                admit(&limits, given.clone()),
                Err(Refusal::Limit(message.to_owned())),
                "{given}"
            );
        }
        for (given, message) in [
            (json!(5), "Object expected in field 'timeout'"),
            (json!({"memory": "256"}), "memory limit malformed"),
            (json!({"timeout": true}), "time limit malformed"),
            (json!({"concurrency": [2]}), "concurrency limit malformed"),
            (
                json!({"memory": 256.5}),
                "requirement failed: memory limit must be whole number",
            ),
            (
                json!({"concurrency": 1.5}),
                "requirement failed: intra concurrency limit must be whole number",
            ),
            (
                json!({"memory": -1}),
                "requirement failed: a negative size of an object is not allowed.",
            ),
        ] {
            assert_eq!(
                admit(&limits, given.clone()),
                Err(Refusal::Malformed(message.to_owned())),
                "{given}"
            );
        }
    }

    #[test]
    fn missing_limits_are_the_standard_ones_or_the_stored_ones() {
        let limits = ControllerLimits::default().with_max_concurrency(500);
        let standard = json!({"timeout": 60_000, "memory": 256, "logs": 10, "concurrency": 1});
        assert_eq!(limits.admit(None, None), Ok(standard.clone()));
        assert_eq!(
            admit(&limits, json!({"concurrency": 500, "memory": null})),
            Ok(json!({"timeout": 60_000, "memory": 256, "logs": 10, "concurrency": 500}))
        );
        // An update keeps what it does not set.
        let stored = json!({"timeout": 1_000, "memory": 512, "logs": 0, "concurrency": 8});
        assert_eq!(limits.admit(None, Some(&stored)), Ok(stored.clone()));
        assert_eq!(
            limits.admit(Some(&json!({"memory": 128})), Some(&stored)),
            Ok(json!({"timeout": 1_000, "memory": 128, "logs": 0, "concurrency": 8}))
        );
    }
}
