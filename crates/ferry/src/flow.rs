//! Flows: typed pipelines of ferry functions, Dyninka's service chaining.
//!
//! A [`Flow`] lists functions of one parameter ([`Stage`]s): each stage's output is the next
//! stage's input, checked when the program compiles. A stage returning `Option<T>` feeds a stage
//! taking `T`, and its `None` ends the flow early (a filter).
//!
//! ```
//! use ferry::prelude::*;
//! use ferry::{Flow, FlowMode};
//!
//! #[ferry::function]
//! fn parse(line: String) -> Option<i64> {
//!     line.trim().parse().ok()
//! }
//!
//! #[ferry::function]
//! fn double(n: i64) -> i64 {
//!     2 * n
//! }
//!
//! #[ferry::main]
//! async fn main(ctx: Context) -> ferry::Result<()> {
//!     let flow = Flow::start::<Parse>().then::<Double>();
//!     assert_eq!(flow.run(&ctx, "21".into()).await?, Some(42));
//!     // `parse` returned `None`: the flow ended there.
//!     assert_eq!(flow.run(&ctx, "twenty".into()).await?, None);
//!     let orchestrated = flow.mode(FlowMode::Orchestrated);
//!     assert_eq!(orchestrated.run(&ctx, "4".into()).await?, Some(8));
//!     Ok(())
//! }
//! ```
//!
//! Two ways to run one, chosen per flow with [`Flow::mode`]:
//!
//! - [`FlowMode::Chained`] (the default): the invocation of the first stage carries the route of
//!   the rest (the envelope's `flow`, see docs/wire.md); the worker that ran a stage invokes the
//!   next one itself, and only the final output (or the first failure) comes back. Nothing central sits on the data
//!   path: on HTTP services, each service calls the next one's URL.
//! - [`FlowMode::Orchestrated`]: the caller invokes each stage in turn and hands each output to
//!   the next stage (an orchestrator function's way).
//!
//! Both give the same output for the same input. A failure names its stage: the error's
//! [`function`](crate::Error::function) is the failing stage's function and
//! [`flow_stage`](crate::Error::flow_stage) its position.

use std::future::Future;
use std::marker::PhantomData;

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::wire::{Envelope, FlowRoute, InvocationId, RouteStep};
use crate::{Codec, Context, Error, Function, FunctionDescriptor, Registry, Result};

/// A function of one parameter (besides a `Context`), which can be a stage of a [`Flow`].
/// `#[ferry::function]` implements it for such functions.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a flow stage",
    label = "not the invocation type of a function of one parameter",
    note = "a flow passes one value along: a stage is a `#[ferry::function]` with exactly one parameter besides a `Context`"
)]
pub trait Stage: Function {
    /// The parameter's type.
    type Input;

    /// The invocation with `input` as its argument.
    fn from_input(input: Self::Input) -> Self;
}

/// A stage output that can feed a stage taking `T`: `T` itself, or `Option<T>`, whose `None` ends
/// the flow.
#[diagnostic::on_unimplemented(
    message = "a stage returning `{Self}` cannot feed a stage taking `{T}`",
    label = "this stage's input does not match the previous stage's output",
    note = "a stage's output feeds the next stage's one parameter; an `Option<T>` output feeds a `T` parameter and its `None` ends the flow"
)]
pub trait Feeds<T> {
    /// Whether a `None` output ends the flow here.
    const ENDS_ON_NONE: bool;
}

impl<T> Feeds<T> for T {
    const ENDS_ON_NONE: bool = false;
}

impl<T> Feeds<T> for Option<T> {
    const ENDS_ON_NONE: bool = true;
}

/// How a [`Flow`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowMode {
    /// Point to point: each stage's worker invokes the next stage.
    #[default]
    Chained,
    /// The caller invokes each stage in turn.
    Orchestrated,
}

/// A typed pipeline from `I` (the first stage's input) to `O` (the last stage's output). Build
/// it with [`Flow::start`] and [`Flow::then`]; run it with [`Flow::run`]. Cheap to clone.
pub struct Flow<I, O> {
    stages: Vec<StageRef>,
    encode_first: fn(Codec, I) -> Result<Vec<u8>>,
    mode: FlowMode,
    types: PhantomData<fn(I) -> O>,
}

#[derive(Clone, Copy)]
struct StageRef {
    descriptor: &'static FunctionDescriptor,
    /// The stage before returns an `Option` whose `None` ends the flow.
    unwrap: bool,
}

impl<I, O> Clone for Flow<I, O> {
    fn clone(&self) -> Self {
        Self {
            stages: self.stages.clone(),
            encode_first: self.encode_first,
            mode: self.mode,
            types: PhantomData,
        }
    }
}

impl<I, O> std::fmt::Debug for Flow<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Flow")
            .field("stages", &self.stages().collect::<Vec<_>>())
            .field("mode", &self.mode)
            .finish()
    }
}

impl<I, O> Flow<I, O> {
    /// Runs chained (the default) or orchestrated.
    #[must_use]
    pub fn mode(mut self, mode: FlowMode) -> Self {
        self.mode = mode;
        self
    }

    /// How [`run`](Self::run) runs this flow.
    pub fn current_mode(&self) -> FlowMode {
        self.mode
    }

    /// The stages' function ids, in order.
    pub fn stages(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.stages.iter().map(|s| s.descriptor.id)
    }
}

impl Flow<(), ()> {
    /// A flow whose first stage is `S`.
    pub fn start<S: Stage>() -> Flow<S::Input, S::Output> {
        Flow {
            stages: vec![StageRef {
                descriptor: S::DESCRIPTOR,
                unwrap: false,
            }],
            encode_first: encode_first::<S>,
            mode: FlowMode::default(),
            types: PhantomData,
        }
    }
}

impl<I, O> Flow<I, O>
where
    I: Send + 'static,
    O: DeserializeOwned + Send + 'static,
{
    /// Appends stage `S`, which takes this flow's output (or, for an `Option` output, what is
    /// inside it).
    pub fn then<S: Stage>(self) -> Flow<I, S::Output>
    where
        O: Feeds<S::Input>,
    {
        let mut stages = self.stages;
        stages.push(StageRef {
            descriptor: S::DESCRIPTOR,
            unwrap: <O as Feeds<S::Input>>::ENDS_ON_NONE,
        });
        Flow {
            stages,
            encode_first: self.encode_first,
            mode: self.mode,
            types: PhantomData,
        }
    }

    /// Runs the flow on `input`: the last stage's output, or `None` when a stage's `None` ended
    /// the flow early.
    pub fn run(
        &self,
        ctx: &Context,
        input: I,
    ) -> impl Future<Output = Result<Option<O>>> + Send + 'static {
        let flow = self.clone();
        let ctx = ctx.clone();
        async move {
            match flow.mode {
                FlowMode::Chained => flow.run_chained(&ctx, input).await,
                FlowMode::Orchestrated => flow.run_orchestrated(&ctx, input).await,
            }
        }
    }

    async fn run_chained(&self, ctx: &Context, input: I) -> Result<Option<O>> {
        if self.stages.len() > MAX_STAGES {
            return Err(Error::config(format!(
                "a chained flow has at most {MAX_STAGES} stages, this one {}: split it, or run it \
                 with `FlowMode::Orchestrated`",
                self.stages.len()
            )));
        }
        let backend = ctx.backend();
        let codec = backend.wire_codec();
        let first = self.stages[0].descriptor;
        let id = InvocationId::next();
        let fail = |e: Error| e.in_function(first.id).in_invocation(id).at_stage(0);
        let arguments = (self.encode_first)(codec, input).map_err(fail)?;
        let mut envelope = ctx.envelope(first.id, id, codec);
        envelope.flow = Some(FlowRoute {
            stage: 0,
            next: self.stages[1..]
                .iter()
                .map(|s| RouteStep {
                    function: s.descriptor.id.to_owned(),
                    unwrap: s.unwrap,
                })
                .collect(),
        });
        let reply = backend
            .invoke(ctx, envelope, Bytes::from(arguments), Some(first))
            .await
            .map_err(fail)?;
        match backend
            .decode_output::<FlowReply<O>>(&reply)
            .map_err(fail)?
        {
            FlowReply::Output(output) => Ok(Some(output)),
            FlowReply::Ended { .. } => Ok(None),
        }
    }

    async fn run_orchestrated(&self, ctx: &Context, input: I) -> Result<Option<O>> {
        let backend = ctx.backend();
        let codec = backend.wire_codec();
        let mut input = Some(input);
        let mut output = Bytes::new();
        for (index, stage) in self.stages.iter().enumerate() {
            let id = InvocationId::next();
            let position = u32::try_from(index).unwrap_or(u32::MAX);
            let fail = |e: Error| {
                e.in_function(stage.descriptor.id)
                    .in_invocation(id)
                    .at_stage(position)
            };
            let arguments = if let Some(input) = input.take() {
                (self.encode_first)(codec, input)
            } else {
                let accepted = accept(stage.descriptor, codec, &output, stage.unwrap);
                match accepted.map_err(fail)? {
                    Some(arguments) => Ok(arguments),
                    None => return Ok(None),
                }
            }
            .map_err(fail)?;
            let envelope = ctx.envelope(stage.descriptor.id, id, codec);
            output = backend
                .invoke(
                    ctx,
                    envelope,
                    Bytes::from(arguments),
                    Some(stage.descriptor),
                )
                .await
                .map_err(fail)?;
        }
        backend.decode_output(&output).map(Some)
    }
}

fn encode_first<S: Stage>(codec: Codec, input: S::Input) -> Result<Vec<u8>> {
    codec.encode(&S::from_input(input))
}

/// What a chained flow answers its caller: the last stage's output, or where it ended.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum FlowReply<T> {
    /// Variant 0: written by [`forward`] around output bytes it does not decode.
    Output(T),
    Ended {
        stage: u32,
        function: String,
    },
}

/// Most stages a chained flow may have. Each stage holds its caller's request open until the rest
/// of the flow answers, and where stages run in one instance their calls nest: a longer route
/// arriving from outside (an `x-ferry-flow` header, a `__ferry_flow` parameter) is refused as bad
/// input, and [`Flow::run`] refuses to start one.
pub const MAX_STAGES: usize = 64;

/// The variant [`FlowReply::Output`] as `wrap_variant` writes it.
const OUTPUT_VARIANT: (u32, &str) = (0, "output");

/// Feeds the previous stage's encoded output to `stage` as its encoded arguments, or `None` when
/// the output was `None` and `unwrap` says that ends the flow. The output is not decoded: the
/// stage's one parameter is encoded exactly as the output (or as what is inside the `Some`).
pub(crate) fn accept(
    stage: &FunctionDescriptor,
    codec: Codec,
    previous: &[u8],
    unwrap: bool,
) -> Result<Option<Vec<u8>>> {
    let [param] = stage.params else {
        return Err(Error::config(format!(
            "`{}` cannot be a flow stage: it does not take exactly one parameter",
            stage.id
        )));
    };
    match codec {
        // A one-field struct encodes exactly as its field, and `Some(x)` as a 1 byte before `x`.
        Codec::Binary if !unwrap => Ok(Some(previous.to_vec())),
        Codec::Binary => match previous.split_first() {
            Some((0, [])) => Ok(None),
            Some((1, inner)) => Ok(Some(inner.to_vec())),
            _ => Err(Error::bad_input(
                ".",
                "the previous stage's output is not an encoded `Option`",
            )),
        },
        // JSON writes `Some(x)` as `x` and `None` as `null`. (So an `Option<Option<T>>` output's
        // `Some(None)` ends the flow too: use the binary codec for those.)
        Codec::Json => {
            let value = previous.trim_ascii();
            if unwrap && value == b"null" {
                return Ok(None);
            }
            let mut arguments = Vec::with_capacity(value.len() + param.name.len() + 5);
            arguments.extend_from_slice(b"{\"");
            arguments.extend_from_slice(param.name.as_bytes());
            arguments.extend_from_slice(b"\":");
            arguments.extend_from_slice(value);
            arguments.push(b'}');
            Ok(Some(arguments))
        }
        Codec::BinaryInJson => {
            let binary = crate::codec::base64_unwrap(previous)?;
            Ok(accept(stage, Codec::Binary, &binary, unwrap)?
                .map(|arguments| crate::codec::base64_wrap(&arguments)))
        }
    }
}

/// After a worker ran a stage of a chained flow: invokes the next stage with the output and
/// returns what it answers, or wraps the last stage's output for the caller. Workers call this
/// outside the stage's own timeout and concurrency slot, which the stage no longer needs.
pub(crate) async fn forward(
    ctx: &Context,
    envelope: &Envelope,
    result: Result<Vec<u8>>,
) -> Result<Vec<u8>> {
    let Some(route) = &envelope.flow else {
        return result;
    };
    let output = result.map_err(|e| e.at_stage(route.stage))?;
    let codec = envelope.reply_codec.unwrap_or(envelope.codec);
    let Some((step, rest)) = route.next.split_first() else {
        let (index, name) = OUTPUT_VARIANT;
        return codec.wrap_variant(index, name, &output);
    };
    let stage = route.stage + 1;
    let id = InvocationId::next();
    let fail = |e: Error| {
        e.in_function(&step.function)
            .in_invocation(id)
            .at_stage(stage)
    };
    let descriptor = Registry::global()
        .and_then(|r| r.lookup(&step.function))
        .map_err(fail)?
        .descriptor();
    let Some(arguments) = accept(descriptor, codec, &output, step.unwrap).map_err(fail)? else {
        return codec.encode(&FlowReply::<()>::Ended {
            stage: route.stage,
            function: envelope.function.clone(),
        });
    };
    let mut next = Envelope::new(descriptor.id, codec);
    next.invocation = id;
    next.deadline_ms = envelope.deadline_ms;
    next.trace.clone_from(&envelope.trace);
    next.parent = Some(envelope.invocation);
    next.flow = Some(FlowRoute {
        stage,
        next: rest.to_vec(),
    });
    let reply = ctx
        .backend()
        .invoke(ctx, next, Bytes::from(arguments), Some(descriptor))
        .await
        .map_err(fail)?;
    Ok(reply.into())
}

/// The longest the stages after this invocation's may run: the sum of their timeouts. A worker
/// answers a chained stage only once they are done.
pub(crate) fn time_after(envelope: &Envelope) -> std::time::Duration {
    let Some(route) = &envelope.flow else {
        return std::time::Duration::ZERO;
    };
    let registry = Registry::global().ok();
    route
        .next
        .iter()
        .map(|step| {
            registry
                .and_then(|r| r.lookup(&step.function).ok())
                .map_or(crate::FunctionConfig::DEFAULT.timeout, |r| {
                    r.descriptor().config.timeout
                })
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Wrapped {
        value: Option<(u32, String)>,
    }

    /// The invocation type of a stage taking `value: (u32, String)`.
    #[derive(Serialize, Deserialize)]
    struct Arguments {
        value: (u32, String),
    }

    #[test]
    fn a_one_field_struct_encodes_as_its_field() {
        let value = Some((7u32, "seven".to_owned()));
        let plain = Codec::Binary.encode(&value).unwrap();
        let wrapped = Codec::Binary
            .encode(&Wrapped {
                value: value.clone(),
            })
            .unwrap();
        assert_eq!(plain, wrapped);
        assert_eq!(plain[0], 1);
        assert_eq!(Codec::Binary.encode(&None::<u32>).unwrap(), [0]);
    }

    #[test]
    fn outputs_become_arguments_without_being_decoded() {
        static STAGE: FunctionDescriptor = FunctionDescriptor {
            id: "app::stage",
            name: "stage",
            params: &[crate::ParamDescriptor {
                name: "value",
                ty: "(u32, String)",
            }],
            output: "()",
            config: crate::FunctionConfig::DEFAULT,
            is_async: false,
            file: "src/lib.rs",
            line: 1,
        };
        let inner = (7u32, "seven".to_owned());
        for codec in [Codec::Json, Codec::Binary, Codec::BinaryInJson] {
            for unwrap in [false, true] {
                let previous = if unwrap {
                    codec.encode(&Some(inner.clone())).unwrap()
                } else {
                    codec.encode(&inner).unwrap()
                };
                let arguments = accept(&STAGE, codec, &previous, unwrap).unwrap().unwrap();
                let decoded: Arguments = codec.decode(&arguments).unwrap();
                assert_eq!(decoded.value, inner, "{codec} {unwrap}");
            }
            let none = codec.encode(&None::<(u32, String)>).unwrap();
            assert_eq!(accept(&STAGE, codec, &none, true).unwrap(), None, "{codec}");
        }
        let two = FunctionDescriptor {
            params: &[],
            ..STAGE
        };
        assert!(
            accept(&two, Codec::Json, b"1", false)
                .unwrap_err()
                .to_string()
                .contains("exactly one parameter")
        );
    }

    #[test]
    fn spliced_outputs_decode_as_replies() {
        for codec in [Codec::Json, Codec::Binary, Codec::BinaryInJson] {
            let output = codec.encode(&vec![1.5f64, 2.5]).unwrap();
            let (index, name) = OUTPUT_VARIANT;
            let reply = codec.wrap_variant(index, name, &output).unwrap();
            match codec.decode::<FlowReply<Vec<f64>>>(&reply).unwrap() {
                FlowReply::Output(v) => assert_eq!(v, [1.5, 2.5], "{codec}"),
                FlowReply::Ended { .. } => panic!("{codec}: decoded as ended"),
            }
            let ended = codec
                .encode(&FlowReply::<()>::Ended {
                    stage: 1,
                    function: "app::keep".into(),
                })
                .unwrap();
            match codec.decode::<FlowReply<Vec<f64>>>(&ended).unwrap() {
                FlowReply::Ended { stage, function } => {
                    assert_eq!((stage, function.as_str()), (1, "app::keep"), "{codec}");
                }
                FlowReply::Output(_) => panic!("{codec}: decoded as output"),
            }
        }
    }
}
