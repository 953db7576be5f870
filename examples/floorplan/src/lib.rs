//! The floorplan benchmark of BOTS (the Barcelona OpenMP Tasks Suite), as Cppless ports it:
//! lay cells, each with alternative shapes, on a board so that their bounding box has the
//! least area, by branch and bound ([`solve`]).
//!
//! The distributed search splits the tree below the first cells of the chain (the cutoff):
//! the host lays those cells down in every way that fits ([`prefixes`]), and each way is one
//! invocation of [`place_cells`], which searches its subtree. Tasks do not talk to each other:
//! each prunes with the best area known when it was sent and what it finds itself, where
//! BOTS's tasks share one best area as they go.

mod input;
mod search;

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;

use ferry::Context;

pub use input::{Cell, Field, Floorplan, ParseError, Shape, Side};
pub use search::{
    Explored, Placement, PrefixError, Prefixes, Solution, prefixes, search_below, solve,
};

/// Rows and columns of BOTS's board.
pub const BOARD: u32 = 64;

/// The best area BOTS starts from: the whole board.
pub const INITIAL_BOUND: u32 = BOARD * BOARD;

/// One task: the subtree below `prefix` (the first cells of the chain, laid down), searched
/// for floorplans whose area is below `bound`.
#[ferry::function(name = "place-cells", timeout = "600s")]
pub fn place_cells(
    floorplan: Floorplan,
    prefix: Vec<Placement>,
    bound: u32,
) -> Result<Explored, PrefixError> {
    search_below(&floorplan, &prefix, bound)
}

/// What a distributed search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distributed {
    /// The smallest floorplan any task found.
    pub best: Option<Solution>,
    /// Candidate positions the tasks computed (the host's for the prefixes not included).
    pub tried: u64,
    /// Invocations made: one per prefix.
    pub tasks: u64,
}

/// Searches below each of `prefixes` in its own invocation, at most `in_flight` at once, in
/// order. Each task is sent the best area found by the tasks that have ended, so the later
/// tasks prune with what the earlier ones found.
///
/// # Errors
///
/// The first invocation that fails.
pub async fn distributed(
    ctx: &Context,
    plan: &Floorplan,
    prefixes: Vec<Vec<Placement>>,
    in_flight: usize,
) -> ferry::Result<Distributed> {
    let mut run = Distributed {
        best: None,
        tried: 0,
        tasks: 0,
    };
    let mut pending = prefixes.into_iter();
    let mut running = FuturesUnordered::new();
    loop {
        while running.len() < in_flight.max(1) {
            let Some(prefix) = pending.next() else {
                break;
            };
            run.tasks += 1;
            running.push(ctx.call(PlaceCells {
                floorplan: plan.clone(),
                prefix,
                bound: run.best.as_ref().map_or(INITIAL_BOUND, |best| best.area),
            }));
        }
        let Some(explored) = running.next().await else {
            return Ok(run);
        };
        let explored = explored?;
        run.tried += explored.tried;
        if let Some(found) = explored.best {
            if run.best.as_ref().is_none_or(|best| found.area < best.area) {
                run.best = Some(found);
            }
        }
    }
}
