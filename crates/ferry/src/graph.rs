//! Task graphs: invocations that depend on other invocations' outputs, run with as much
//! concurrency as the dependencies allow (Cppless's graph API).
//!
//! A node starts as soon as the nodes it depends on have finished: independent nodes run at
//! once, a chain runs in order. Every node's output is a future ([`Node::output`]); a failure
//! fails the nodes that depend on it with the same error, and [`Graph::run`] reports the first
//! failure in the order nodes were added. A node's error names its index
//! ([`Error::task`](crate::Error::task)), counted in the order nodes were added.
//!
//! ```no_run
//! # #[ferry::function] fn fib(n: u32) -> u64 { n as u64 }
//! # #[ferry::function] fn add(a: u64, b: u64) -> u64 { a + b }
//! # async fn demo(ctx: ferry::Context) -> ferry::Result<()> {
//! let mut graph = ctx.graph();
//! let left = graph.add(Fib { n: 30 });
//! let right = graph.add(Fib { n: 31 });
//! let sum = graph.join(&left, &right, |a, b| Add { a, b });
//! graph.run().await?;
//! assert_eq!(sum.output().await?, 2_178_309);
//! # Ok(())
//! # }
//! ```

use std::fmt;

use futures::FutureExt as _;
use futures::future::{BoxFuture, Shared};

use crate::{Context, Error, Function, Result};

/// A node's output as every dependent and caller sees it.
type SharedOutput<T> = Shared<BoxFuture<'static, Result<T>>>;

/// A graph under construction and running: nodes start as they are added, once their inputs
/// are ready. Made by [`Context::graph`].
pub struct Graph {
    ctx: Context,
    /// Every node, type-erased, to await in [`Graph::run`].
    nodes: Vec<BoxFuture<'static, Result<()>>>,
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("nodes", &self.nodes.len())
            .finish()
    }
}

/// One invocation of a graph, with its output to come. Cloning shares the same invocation.
pub struct Node<T> {
    index: usize,
    output: SharedOutput<T>,
}

impl<T> Clone for Node<T> {
    fn clone(&self) -> Self {
        Self {
            index: self.index,
            output: self.output.clone(),
        }
    }
}

impl<T> fmt::Debug for Node<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node").field("index", &self.index).finish()
    }
}

impl<T: Clone + Send + Sync + 'static> Node<T> {
    /// Its place in the graph (the order it was added, from 0).
    pub fn index(&self) -> usize {
        self.index
    }

    /// Waits for its output (or its failure, or the failure of a node it depends on).
    pub async fn output(&self) -> Result<T> {
        self.output.clone().await
    }
}

impl Context {
    /// An empty task graph whose nodes are invocations on this context's backend.
    pub fn graph(&self) -> Graph {
        Graph {
            ctx: self.clone(),
            nodes: Vec::new(),
        }
    }
}

impl Graph {
    /// Nodes added so far.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no node was added.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// A node without inputs: `task` is invoked now.
    pub fn add<F>(&mut self, task: F) -> Node<F::Output>
    where
        F: Function,
        F::Output: Clone + Sync,
    {
        let call = self.ctx.call_task(task, Some(self.nodes.len()));
        self.start(call)
    }

    /// A node that needs `input`'s output: `make` builds its task from it.
    pub fn then<T, F>(
        &mut self,
        input: &Node<T>,
        make: impl FnOnce(T) -> F + Send + 'static,
    ) -> Node<F::Output>
    where
        T: Clone + Send + Sync + 'static,
        F: Function,
        F::Output: Clone + Sync,
    {
        let (ctx, index) = (self.ctx.clone(), self.nodes.len());
        let input = input.output.clone();
        self.start(async move { ctx.call_task(make(input.await?), Some(index)).await })
    }

    /// A node that needs two outputs.
    pub fn join<A, B, F>(
        &mut self,
        a: &Node<A>,
        b: &Node<B>,
        make: impl FnOnce(A, B) -> F + Send + 'static,
    ) -> Node<F::Output>
    where
        A: Clone + Send + Sync + 'static,
        B: Clone + Send + Sync + 'static,
        F: Function,
        F::Output: Clone + Sync,
    {
        let (ctx, index) = (self.ctx.clone(), self.nodes.len());
        let (a, b) = (a.output.clone(), b.output.clone());
        self.start(async move {
            let (a, b) = futures::future::join(a, b).await;
            ctx.call_task(make(a?, b?), Some(index)).await
        })
    }

    /// A node that needs the outputs of `inputs`, in their order.
    pub fn join_all<T, F>(
        &mut self,
        inputs: &[Node<T>],
        make: impl FnOnce(Vec<T>) -> F + Send + 'static,
    ) -> Node<F::Output>
    where
        T: Clone + Send + Sync + 'static,
        F: Function,
        F::Output: Clone + Sync,
    {
        let (ctx, index) = (self.ctx.clone(), self.nodes.len());
        let inputs: Vec<SharedOutput<T>> = inputs.iter().map(|n| n.output.clone()).collect();
        self.start(async move {
            let outputs = futures::future::join_all(inputs)
                .await
                .into_iter()
                .collect::<Result<Vec<T>>>()?;
            ctx.call_task(make(outputs), Some(index)).await
        })
    }

    /// Waits for every node; the first failure (in the order nodes were added) is the result.
    /// Nodes run whether or not this is awaited: it only waits.
    pub async fn run(self) -> Result<()> {
        for outcome in futures::future::join_all(self.nodes).await {
            outcome?;
        }
        Ok(())
    }

    /// Starts a node as its own task, so it runs as soon as its inputs are ready whether or
    /// not anyone awaits it.
    fn start<T: Clone + Send + Sync + 'static>(
        &mut self,
        body: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Node<T> {
        let task = tokio::spawn(body);
        let output: SharedOutput<T> = async move {
            task.await.unwrap_or_else(|joined| {
                Err(Error::unavailable(format!(
                    "a graph node's task ended: {joined}"
                )))
            })
        }
        .boxed()
        .shared();
        let index = self.nodes.len();
        let waited = output.clone();
        self.nodes
            .push(async move { waited.await.map(drop) }.boxed());
        Node { index, output }
    }
}
