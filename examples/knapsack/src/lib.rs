//! 0/1 knapsack by branch and bound, split into tasks: each task starts from subtrees of the
//! search ([`Node`]s; at first, the `2^depth` subtrees that fix the first `depth` decisions)
//! and searches them depth-first, pruning a branch when its fractional upper bound cannot beat
//! the best value known. A task that runs past its budget stops and hands back the subtrees it
//! has not searched, which the caller splits into new tasks: the proof of optimality, which a
//! fixed split leaves to one subtree, spreads over every worker.
//!
//! What the "best value known" is makes the difference this example measures:
//!
//! - alone, a task knows only what it found itself;
//! - with a shared bound, every task offers what it finds to a Redis `MaxRegister`
//!   ([`ferry::state`]) and reads the others' finds at most every [`SYNC_INTERVAL`] (looking at
//!   the clock every [`CLOCK_EVERY`] nodes), so a good solution found anywhere prunes
//!   everywhere.
//!
//! The instance is generated from a [`Family`] and a seed in every process, so a task's
//! arguments are a few numbers.

use std::time::{Duration, Instant};

use ferry::Context;
use ferry::state::Store;
use serde::{Deserialize, Serialize};

/// Nodes a task explores between two looks at the clock.
pub const CLOCK_EVERY: u64 = 2_048;

/// The least time between two looks at the shared bound. An offer and a read cost two Redis
/// round trips (tens of microseconds), about what 2,048 nodes cost, so syncing on a node count
/// alone doubled the time of a long search; every 2 ms keeps that cost to a few percent.
pub const SYNC_INTERVAL: Duration = Duration::from_millis(2);

/// An item, as sorted for the search: densest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    pub weight: u64,
    pub value: u64,
}

/// A knapsack instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// Items by decreasing value density.
    pub items: Vec<Item>,
    pub capacity: u64,
}

/// The kinds of instance [`Instance::generate`] makes. Both are hard for a branch and bound with
/// the fractional bound, in different ways.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// Weights in 100..=1100, each value its weight plus 100, capacity half the total weight.
    /// Every item is nearly as dense as every other, so the bound prunes little until the
    /// search finds a packing that nearly fills the knapsack; how long proving it optimal then
    /// takes varies a lot from seed to seed (milliseconds up to 63 items, often seconds from
    /// about 100).
    #[default]
    StronglyCorrelated,
    /// Subset sum: even weights in 2..=10,000, each value its weight, an odd capacity (about
    /// half the total weight). No packing fills the knapsack, so the bound (the capacity) stays
    /// above the best value (the capacity minus one, from about 20 items) and the search is
    /// nearly exhaustive: the cost roughly doubles with each item and varies little with the
    /// seed (seconds at about 30 items), while the optimum turns up within a few thousand nodes.
    EvenOdd,
}

impl Instance {
    /// `n` items of `family` from `seed`.
    pub fn generate(family: Family, n: usize, seed: u64) -> Self {
        let mut state = seed;
        let mut next = || {
            // splitmix64
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let mut items: Vec<Item> = (0..n)
            .map(|_| match family {
                Family::StronglyCorrelated => {
                    let weight = 100 + next() % 1_001;
                    Item {
                        weight,
                        value: weight + 100,
                    }
                }
                Family::EvenOdd => {
                    let weight = 2 * (1 + next() % 5_000);
                    Item {
                        weight,
                        value: weight,
                    }
                }
            })
            .collect();
        // Densest first: value/weight, compared without floats.
        items.sort_by(|a, b| (b.value * a.weight).cmp(&(a.value * b.weight)));
        let half = items.iter().map(|i| i.weight).sum::<u64>() / 2;
        let capacity = match family {
            Family::StronglyCorrelated => half,
            Family::EvenOdd => half | 1,
        };
        Self { items, capacity }
    }

    /// The optimum by dynamic programming over capacities, to check the search against.
    pub fn optimum(&self) -> u64 {
        let mut best = vec![0u64; self.capacity as usize + 1];
        for item in &self.items {
            for room in (item.weight as usize..=self.capacity as usize).rev() {
                best[room] = best[room].max(best[room - item.weight as usize] + item.value);
            }
        }
        best[self.capacity as usize]
    }

    /// The fractional (LP) bound of taking items `from..` into `room` on top of `value`.
    fn upper_bound(&self, from: usize, room: u64, value: u64) -> u64 {
        let (mut room, mut bound) = (room, value);
        for item in &self.items[from..] {
            if item.weight <= room {
                room -= item.weight;
                bound += item.value;
            } else {
                return bound + item.value * room / item.weight;
            }
        }
        bound
    }
}

/// A subtree of the search: the items from `next` on are still to decide, on top of the
/// `weight` and `value` of those taken before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub next: u32,
    pub weight: u64,
    pub value: u64,
}

impl Instance {
    /// The subtree whose first `depth` decisions are the bits of `prefix` (bit `i` set: item
    /// `i` taken), or `None` when those items alone overflow the knapsack.
    pub fn subtree(&self, prefix: u64, depth: u32) -> Option<Node> {
        let (mut weight, mut value) = (0u64, 0u64);
        for (i, item) in self.items.iter().take(depth as usize).enumerate() {
            if prefix >> i & 1 == 1 {
                weight += item.weight;
                value += item.value;
            }
        }
        (weight <= self.capacity).then_some(Node {
            next: depth,
            weight,
            value,
        })
    }

    /// The whole search.
    pub fn root(&self) -> Node {
        Node {
            next: 0,
            weight: 0,
            value: 0,
        }
    }
}

/// What one task found, how much it searched, and what it left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Explored {
    /// The best value in its subtrees (0 if none beat what it knew).
    pub best: u64,
    /// Search nodes it expanded.
    pub nodes: u64,
    /// The subtrees it had not searched when its budget ran out, in search order.
    pub left: Vec<Node>,
}

/// Where a search learns of better solutions found elsewhere.
pub trait Incumbent {
    /// The best value known anywhere, at least `local`.
    fn refresh(
        &mut self,
        local: u64,
    ) -> impl std::future::Future<Output = ferry::Result<u64>> + Send;
}

/// A task that knows only its own finds.
#[derive(Debug)]
pub struct Alone;

impl Incumbent for Alone {
    async fn refresh(&mut self, local: u64) -> ferry::Result<u64> {
        Ok(local)
    }
}

/// A task that shares its finds through a Redis `MaxRegister`.
#[derive(Debug)]
pub struct SharedBound(pub ferry::state::MaxRegister<i64>);

impl Incumbent for SharedBound {
    async fn refresh(&mut self, local: u64) -> ferry::Result<u64> {
        let local_i64 = i64::try_from(local).unwrap_or(i64::MAX);
        self.0.offer(local_i64).await?;
        let shared = self.0.get().await?.unwrap_or(0);
        Ok(local.max(u64::try_from(shared).unwrap_or(0)))
    }
}

/// The prefix of the `rank`-th of the `2^depth` subtrees in the order a sequential depth-first
/// search (take before leave) reaches them: all `depth` items taken first, none taken last.
/// Handing tasks out in this order lets the first ones find what the sequential search finds
/// first, so a shared bound prunes the later ones as the sequential search would.
pub fn prefix_in_search_order(rank: u64, depth: u32) -> u64 {
    (0..depth)
        .filter(|&i| rank >> (depth - 1 - i) & 1 == 0)
        .fold(0, |prefix, i| prefix | 1 << i)
}

/// Searches `roots` in order, knowing a solution worth `known`. With a `budget`, stops once it
/// has run that long with subtrees still to search, and returns them in [`Explored::left`].
pub async fn search(
    instance: &Instance,
    roots: &[Node],
    known: u64,
    budget: Option<Duration>,
    incumbent: &mut impl Incumbent,
) -> ferry::Result<Explored> {
    let started = Instant::now();
    let mut explored = Explored {
        best: 0,
        nodes: 0,
        left: Vec::new(),
    };
    let mut known = incumbent.refresh(known).await?;
    let mut synced = Instant::now();
    // Depth-first; the next subtree to search is on top, and "take" is pushed last so it is
    // tried first.
    let mut stack: Vec<Node> = roots
        .iter()
        .rev()
        .filter(|node| node.weight <= instance.capacity)
        .copied()
        .collect();
    while let Some(node) = stack.pop() {
        explored.nodes += 1;
        if explored.nodes % CLOCK_EVERY == 0 {
            if budget.is_some_and(|budget| started.elapsed() >= budget) && !stack.is_empty() {
                stack.push(node);
                explored.nodes -= 1;
                explored.left = stack.into_iter().rev().collect();
                break;
            }
            if synced.elapsed() >= SYNC_INTERVAL {
                known = incumbent.refresh(explored.best.max(known)).await?;
                synced = Instant::now();
            }
        }
        let Node {
            next,
            weight,
            value,
        } = node;
        if value > explored.best {
            explored.best = value;
            known = known.max(value);
        }
        let next = next as usize;
        if next == instance.items.len()
            || instance.upper_bound(next, instance.capacity - weight, value) <= known
        {
            continue;
        }
        let item = instance.items[next];
        let decided = next as u32 + 1;
        stack.push(Node {
            next: decided,
            weight,
            value,
        });
        if weight + item.weight <= instance.capacity {
            stack.push(Node {
                next: decided,
                weight: weight + item.weight,
                value: value + item.value,
            });
        }
    }
    incumbent.refresh(explored.best.max(known)).await?;
    Ok(explored)
}

/// Splits the subtrees a task left into at most `parts` tasks, each taking every `parts`-th
/// one in search order, so that the large subtrees near the root spread over them.
pub fn split(left: Vec<Node>, parts: usize) -> Vec<Vec<Node>> {
    let parts = parts.clamp(1, left.len().max(1));
    let mut tasks = vec![Vec::new(); parts];
    for (i, node) in left.into_iter().enumerate() {
        tasks[i % parts].push(node);
    }
    tasks.retain(|task| !task.is_empty());
    tasks
}

/// One task of the split search: `roots` searched knowing a solution worth `known`, handing
/// back what is left after `budget_ms` (0: never). `shared`: the Redis namespace of a run's
/// shared bound (`FERRY_REDIS_URL` locates Redis), or `None` to search alone.
#[ferry::function(timeout = "600s", concurrency = 1)]
#[allow(clippy::too_many_arguments)]
pub async fn explore(
    ctx: Context,
    family: Family,
    items: u32,
    seed: u64,
    roots: Vec<Node>,
    known: u64,
    budget_ms: u64,
    shared: Option<String>,
) -> ferry::Result<Explored> {
    let instance = Instance::generate(family, items as usize, seed);
    let budget = (budget_ms > 0).then(|| Duration::from_millis(budget_ms));
    match shared {
        None => search(&instance, &roots, known, budget, &mut Alone).await,
        Some(namespace) => {
            let register = Store::for_process(&ctx)?
                .namespace(&namespace)
                .max_register::<i64>("best");
            let mut incumbent = SharedBound(register);
            search(&instance, &roots, known, budget, &mut incumbent).await
        }
    }
}
