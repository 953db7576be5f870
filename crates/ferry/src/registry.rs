//! Every `#[ferry::function]` of the program, collected at start-up without a list to maintain.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::OnceLock;

use bytes::Bytes;
use futures::FutureExt as _;
use futures::future::BoxFuture;

use crate::{
    Codec, Context, Error, ErrorKind, Function, FunctionDescriptor, Manifest, Result, naming,
};

/// Runs a function from encoded arguments to encoded output.
type ErasedRun = fn(Context, Codec, Codec, Bytes) -> BoxFuture<'static, Result<Vec<u8>>>;

/// One registered function; `#[ferry::function]` submits one per function.
#[derive(Debug)]
pub struct Registration {
    descriptor: &'static FunctionDescriptor,
    run: ErasedRun,
}

inventory::collect!(Registration);

impl Registration {
    /// The registration of `F`.
    pub const fn of<F: Function>() -> Self {
        Self {
            descriptor: F::DESCRIPTOR,
            run: run_erased::<F>,
        }
    }

    /// Identity and configuration.
    pub fn descriptor(&self) -> &'static FunctionDescriptor {
        self.descriptor
    }

    /// Decodes the arguments, runs the body in this process and encodes the output (possibly in
    /// another codec than the arguments'). The caller applies the timeout.
    pub(crate) fn run(
        &self,
        ctx: Context,
        input_codec: Codec,
        output_codec: Codec,
        input: Bytes,
    ) -> BoxFuture<'static, Result<Vec<u8>>> {
        (self.run)(ctx, input_codec, output_codec, input)
    }
}

fn run_erased<F: Function>(
    ctx: Context,
    input_codec: Codec,
    output_codec: Codec,
    input: Bytes,
) -> BoxFuture<'static, Result<Vec<u8>>> {
    let run = async move {
        let invocation: F = input_codec.decode_args(&input)?;
        let output = invocation.run(ctx).await?;
        output_codec.encode(&output)
    };
    // The body's own panics are caught by the macro's wrapper; a `Deserialize` or `Serialize`
    // impl may panic too, and on every platform that must end this invocation, not the instance.
    Box::pin(async move {
        AssertUnwindSafe(run)
            .catch_unwind()
            .await
            .unwrap_or_else(|payload| Err(Error::panic(crate::error::panic_message(&*payload))))
    })
}

/// The functions of this program, by id and by name.
#[derive(Debug)]
pub struct Registry {
    by_id: HashMap<&'static str, &'static Registration>,
    by_name: HashMap<&'static str, Vec<&'static Registration>>,
    ordered: Vec<&'static Registration>,
}

impl Registry {
    /// The registry of this process, checked once. Duplicate ids are an error naming both
    /// definitions.
    pub fn global() -> Result<&'static Registry> {
        static GLOBAL: OnceLock<Result<Registry>> = OnceLock::new();
        GLOBAL
            .get_or_init(|| Self::build(inventory::iter::<Registration>.into_iter()))
            .as_ref()
            .map_err(Clone::clone)
    }

    pub(crate) fn build(entries: impl Iterator<Item = &'static Registration>) -> Result<Self> {
        let mut ordered: Vec<&'static Registration> = entries.collect();
        ordered.sort_by_key(|r| r.descriptor.id);
        let mut by_id = HashMap::with_capacity(ordered.len());
        let mut by_name: HashMap<&str, Vec<_>> = HashMap::new();
        for registration in &ordered {
            let d = registration.descriptor;
            if let Some(previous) = by_id.insert(d.id, *registration) {
                let p = previous.descriptor;
                return Err(Error::config(format!(
                    "duplicate function id `{}`: defined at {}:{} and at {}:{}; give one a different `name`",
                    d.id, p.file, p.line, d.file, d.line
                )));
            }
            by_name.entry(d.name).or_default().push(*registration);
        }
        Ok(Self {
            by_id,
            by_name,
            ordered,
        })
    }

    /// Finds a function by id, or by name when the name is unique in the program.
    pub fn lookup(&self, id_or_name: &str) -> Result<&'static Registration> {
        if let Some(registration) = self.by_id.get(id_or_name) {
            return Ok(registration);
        }
        match self.by_name.get(id_or_name).map(Vec::as_slice) {
            Some([only]) => Ok(only),
            Some(many) => Err(Error::config(format!(
                "function name `{id_or_name}` is ambiguous; use one of the ids {}",
                many.iter()
                    .map(|r| format!("`{}`", r.descriptor.id))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
            None => Err(Error::new(ErrorKind::UnknownFunction {
                id: id_or_name.to_owned(),
            })),
        }
    }

    /// All registrations, ordered by id.
    pub fn iter(&self) -> impl Iterator<Item = &'static Registration> + '_ {
        self.ordered.iter().copied()
    }

    /// The manifest of these functions: what `FERRY_ROLE=manifest` prints.
    pub fn manifest(&self) -> Manifest {
        Manifest::new(self.iter().map(Registration::descriptor))
    }

    /// The deployed name of the function `name` (`id`) under `app`, as `ferry deploy` named it
    /// ([`naming`](crate::naming)).
    pub(crate) fn deployed_name(&self, app: &str, id: &str, name: &str) -> Result<String> {
        let registration = self.lookup(id).map_err(|_| {
            Error::config(format!(
                "`{name}` is not a function of this program, so it has no deployed name under app `{app}`"
            ))
        })?;
        let descriptor = registration.descriptor();
        let handler = naming::handler(
            descriptor.name,
            descriptor.id,
            self.iter().map(|r| r.descriptor().name),
        );
        naming::deployed_name(
            app,
            handler,
            &naming::config_hash(&descriptor.config, handler),
        )
    }

    /// The largest `memory_mb` of any function (the size of a worker that can host them all).
    pub fn max_memory_mb(&self) -> Option<u32> {
        self.iter().map(|r| r.descriptor.config.memory_mb).max()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::FunctionConfig;

    fn descriptor(id: &'static str, name: &'static str, line: u32) -> &'static FunctionDescriptor {
        Box::leak(Box::new(FunctionDescriptor {
            id,
            name,
            params: &[],
            output: "()",
            config: FunctionConfig {
                timeout: Duration::from_secs(1),
                ..FunctionConfig::DEFAULT
            },
            is_async: false,
            file: "src/lib.rs",
            line,
        }))
    }

    fn registration(id: &'static str, name: &'static str, line: u32) -> &'static Registration {
        fn never(_: Context, _: Codec, _: Codec, _: Bytes) -> BoxFuture<'static, Result<Vec<u8>>> {
            Box::pin(async { Ok(Vec::new()) })
        }
        Box::leak(Box::new(Registration {
            descriptor: descriptor(id, name, line),
            run: never,
        }))
    }

    #[test]
    fn duplicate_ids_name_both_definitions() {
        let error = Registry::build(
            [
                registration("app::f", "f", 3),
                registration("app::f", "f", 9),
            ]
            .into_iter(),
        )
        .unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("duplicate function id `app::f`"),
            "{message}"
        );
        assert!(
            message.contains("src/lib.rs:3") && message.contains("src/lib.rs:9"),
            "{message}"
        );
    }

    #[test]
    fn lookup_by_id_or_unique_name() {
        let registry = Registry::build(
            [
                registration("app::a::f", "f", 1),
                registration("app::b::f", "f", 2),
                registration("app::g", "g", 3),
            ]
            .into_iter(),
        )
        .unwrap();
        assert_eq!(registry.lookup("app::a::f").unwrap().descriptor().line, 1);
        assert_eq!(registry.lookup("g").unwrap().descriptor().id, "app::g");
        assert!(
            registry
                .lookup("f")
                .unwrap_err()
                .to_string()
                .contains("ambiguous")
        );
        assert!(matches!(
            registry.lookup("nope").unwrap_err().kind(),
            ErrorKind::UnknownFunction { .. }
        ));
    }
}
