//! BOTS's branch and bound: cells are laid down one at a time in the order of the chain, each
//! in every shape at every north-west corner its neighbours allow, on a 64×64 board. A branch
//! ends when the cell overlaps one already down, or when the bounding box of what is down
//! already covers at least the best area known (the box only grows, so nothing below can do
//! better).
//!
//! The board is a bitmask per row, and one board is laid and lifted in place as the search
//! goes down and up; BOTS copies a byte per square into every task instead. The order of the
//! search and what it prunes are BOTS's.

use std::fmt;
use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use crate::{BOARD, Cell, Floorplan, INITIAL_BOUND, Shape};

/// A cell laid down: its shape (0-based index into [`Cell::shapes`]) and the row and column of
/// its north-west corner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Placement {
    pub cell: u32,
    pub shape: u32,
    pub top: u32,
    pub lhs: u32,
}

/// A complete floorplan: every cell laid down, in the order of the chain, and its bounding box.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Solution {
    /// `rows * cols`.
    pub area: u32,
    pub rows: u32,
    pub cols: u32,
    pub placements: Vec<Placement>,
}

/// What a search found, and how much it tried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Explored {
    /// The smallest floorplan found whose area is below the bound the search started with.
    pub best: Option<Solution>,
    /// Candidate positions computed: every north-west corner of every shape of every cell the
    /// search tried to lay down, as BOTS counts them (its "number of tasks").
    pub tried: u64,
}

/// The subtrees of a search: every way to lay down the first cells of the chain, in the order
/// the sequential search reaches them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefixes {
    /// Each one lays down the same number of cells; those that overlap are left out.
    pub prefixes: Vec<Vec<Placement>>,
    /// Candidate positions computed to find them.
    pub tried: u64,
}

/// The whole search, from BOTS's initial bound (the area of the board): the sequential
/// baseline.
pub fn solve(plan: &Floorplan) -> Explored {
    search_below(plan, &[], INITIAL_BOUND).expect("the empty prefix is valid")
}

/// Searches the subtree below `prefix` (cells laid down in chain order) for floorplans whose
/// area is below `bound`.
///
/// # Errors
///
/// If `prefix` is not a way the search lays down the first cells of the chain.
pub fn search_below(
    plan: &Floorplan,
    prefix: &[Placement],
    bound: u32,
) -> Result<Explored, PrefixError> {
    let mut search = Search::new(plan, bound, None);
    let footprint = search.replay(prefix)?;
    let area = footprint.0 * footprint.1;
    if prefix.is_empty() {
        search.add_cell(plan.chain()[0], footprint);
    } else if area < search.bound {
        // BOTS goes on below a cell only while the box is smaller than the best known.
        search.descend(footprint, area);
    }
    Ok(Explored {
        best: search.best,
        tried: search.tried,
    })
}

/// The subtrees below the first `cutoff` cells of the chain (all of them, if the chain is
/// shorter): the tasks of a distributed search. `cutoff` 0 is the whole search in one.
pub fn prefixes(plan: &Floorplan, cutoff: usize) -> Prefixes {
    let cutoff = cutoff.min(plan.chain().len());
    if cutoff == 0 {
        return Prefixes {
            prefixes: vec![Vec::new()],
            tried: 0,
        };
    }
    let mut search = Search::new(plan, INITIAL_BOUND, Some(cutoff));
    search.add_cell(plan.chain()[0], (0, 0));
    Prefixes {
        prefixes: search.prefixes,
        tried: search.tried,
    }
}

impl Solution {
    /// Checks that this is a floorplan the search could have found: every cell of the chain
    /// laid down in order, where its neighbours allow, without overlap, within the box.
    ///
    /// # Errors
    ///
    /// What is wrong with it.
    pub fn check(&self, plan: &Floorplan) -> Result<(), String> {
        let mut search = Search::new(plan, u32::MAX, None);
        let (rows, cols) = search.replay(&self.placements).map_err(|e| e.to_string())?;
        if self.placements.len() != plan.chain().len() {
            return Err(format!(
                "{} of {} cells are laid down",
                self.placements.len(),
                plan.chain().len()
            ));
        }
        if (rows, cols, rows * cols) != (self.rows, self.cols, self.area) {
            return Err(format!(
                "the cells span {rows}×{cols} = {}, not {}×{} = {}",
                rows * cols,
                self.rows,
                self.cols,
                self.area
            ));
        }
        Ok(())
    }

    /// The floorplan drawn as BOTS draws it: a letter per cell (`A` for cell 1), a space where
    /// there is none, one line per row of the bounding box.
    pub fn render(&self, plan: &Floorplan) -> String {
        const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let mut grid = vec![vec![b' '; self.cols as usize]; self.rows as usize];
        for p in &self.placements {
            let shape = plan.cell(p.cell).shapes[p.shape as usize];
            let letter = LETTERS.get(p.cell as usize - 1).copied().unwrap_or(b'#');
            for row in &mut grid[p.top as usize..][..shape.rows as usize] {
                row[p.lhs as usize..][..shape.cols as usize].fill(letter);
            }
        }
        grid.into_iter()
            .map(|row| String::from_utf8(row).expect("ASCII") + "\n")
            .collect()
    }
}

/// The rows and columns a cell covers, both ends included, as BOTS keeps them.
#[derive(Debug, Clone, Copy)]
struct Extent {
    top: i32,
    bot: i32,
    lhs: i32,
    rhs: i32,
}

/// Cell 0, the corner the first cell is placed against (its `left`): a cell right of it
/// starts at row 0, column 0.
const CORNER: Extent = Extent {
    top: 0,
    bot: 0,
    lhs: -1,
    rhs: -1,
};

struct Search<'a> {
    plan: &'a Floorplan,
    /// Bit `c` of `board[r]`: square (r, c) is covered.
    board: [u64; BOARD as usize],
    /// Where each cell lies (by id; 0 is the corner). Valid for the cells laid down.
    extents: Vec<Extent>,
    /// The cells laid down, in chain order.
    placed: Vec<Placement>,
    /// Only floorplans smaller than this count: the best area known.
    bound: u32,
    best: Option<Solution>,
    tried: u64,
    /// When enumerating prefixes: their length, and those found.
    cutoff: Option<usize>,
    prefixes: Vec<Vec<Placement>>,
}

impl<'a> Search<'a> {
    fn new(plan: &'a Floorplan, bound: u32, cutoff: Option<usize>) -> Self {
        Self {
            plan,
            board: [0; BOARD as usize],
            extents: vec![CORNER; plan.len() + 1],
            placed: Vec::with_capacity(plan.len()),
            bound,
            best: None,
            tried: 0,
            cutoff,
            prefixes: Vec::new(),
        }
    }

    /// The north-west corners where `shape` of `cell` may go, as BOTS's `starts` computes
    /// them: rows × columns, one of them a single value (or empty).
    fn candidates(&self, cell: &Cell, shape: Shape) -> (RangeInclusive<i32>, RangeInclusive<i32>) {
        let (rows, cols) = (shape.rows as i32, shape.cols as i32);
        let edge = BOARD as i32;
        match (cell.left, cell.above) {
            (Some(left), Some(above)) => {
                // In the corner right of `left` and below `above`, if the cell touches both.
                // BOTS tests the far edges one past the cell, so a cell that only meets a
                // neighbour corner to corner counts as touching it.
                let (left, above) = (self.extents[left as usize], self.extents[above as usize]);
                let (top, lhs) = (above.bot + 1, left.rhs + 1);
                let touches = top <= left.bot
                    && top + rows >= left.top
                    && lhs <= above.rhs
                    && lhs + cols >= above.lhs;
                if touches {
                    (top..=top, lhs..=lhs)
                } else {
                    // No row and no column: a range that ends before it starts.
                    (RangeInclusive::new(1, 0), RangeInclusive::new(1, 0))
                }
            }
            // Right of `left`, from as high as still touches it down to its bottom row.
            (Some(left), None) => {
                let left = self.extents[left as usize];
                let tops = (left.top - rows + 1).max(0)..=left.bot.min(edge);
                (tops, left.rhs + 1..=left.rhs + 1)
            }
            // Below `above`, from as far left as still touches it to its rightmost column.
            (None, Some(above)) => {
                let above = self.extents[above as usize];
                let lhss = (above.lhs - cols + 1).max(0)..=above.rhs.min(edge);
                (above.bot + 1..=above.bot + 1, lhss)
            }
            (None, None) => unreachable!("the parser refuses a cell without neighbours"),
        }
    }

    /// The row mask of `shape` at (`top`, `lhs`) if it lies on the board over free squares.
    fn fits(&self, top: i32, lhs: i32, shape: Shape) -> Option<u64> {
        let (top, lhs) = (u32::try_from(top).ok()?, u32::try_from(lhs).ok()?);
        if top + shape.rows > BOARD || lhs + shape.cols > BOARD {
            return None;
        }
        let mask = (u64::MAX >> (64 - shape.cols)) << lhs;
        let rows = &self.board[top as usize..][..shape.rows as usize];
        rows.iter().all(|row| row & mask == 0).then_some(mask)
    }

    /// Flips the squares of `mask` on the rows from `top`: lays a cell down or lifts it.
    fn flip(&mut self, top: u32, rows: u32, mask: u64) {
        for row in &mut self.board[top as usize..][..rows as usize] {
            *row ^= mask;
        }
    }

    /// Every candidate position of every shape of cell `id`, below a box of `footprint`.
    fn add_cell(&mut self, id: u32, footprint: (u32, u32)) {
        let plan = self.plan;
        let cell = plan.cell(id);
        for (index, &shape) in cell.shapes.iter().enumerate() {
            let (tops, lhss) = self.candidates(cell, shape);
            let count = |r: &RangeInclusive<i32>| (r.end() - r.start() + 1).max(0) as u64;
            self.tried += count(&tops) * count(&lhss);
            for top in tops {
                for lhs in lhss.clone() {
                    let Some(mask) = self.fits(top, lhs, shape) else {
                        continue;
                    };
                    let placement = Placement {
                        cell: id,
                        shape: index as u32,
                        top: top as u32,
                        lhs: lhs as u32,
                    };
                    let footprint = self.lay(placement, shape, mask, footprint);
                    let area = footprint.0 * footprint.1;
                    if area < self.bound {
                        if Some(self.placed.len()) == self.cutoff {
                            self.prefixes.push(self.placed.clone());
                        } else {
                            self.descend(footprint, area);
                        }
                    }
                    self.lift(shape, mask);
                }
            }
        }
    }

    /// Below the cells laid down, whose box is `footprint` of `area` (below the bound): the
    /// next cell, or, after the last one, a new best.
    fn descend(&mut self, footprint: (u32, u32), area: u32) {
        let last = self.placed.last().expect("a cell is down").cell;
        match self.plan.cell(last).next {
            0 => {
                self.bound = area;
                self.best = Some(Solution {
                    area,
                    rows: footprint.0,
                    cols: footprint.1,
                    placements: self.placed.clone(),
                });
            }
            next => self.add_cell(next, footprint),
        }
    }

    /// Lays a cell down; the box with it.
    fn lay(&mut self, p: Placement, shape: Shape, mask: u64, footprint: (u32, u32)) -> (u32, u32) {
        self.flip(p.top, shape.rows, mask);
        let (bot, rhs) = (p.top + shape.rows - 1, p.lhs + shape.cols - 1);
        self.extents[p.cell as usize] = Extent {
            top: p.top as i32,
            bot: bot as i32,
            lhs: p.lhs as i32,
            rhs: rhs as i32,
        };
        self.placed.push(p);
        (footprint.0.max(bot + 1), footprint.1.max(rhs + 1))
    }

    /// Lifts the last cell laid down.
    fn lift(&mut self, shape: Shape, mask: u64) {
        let p = self.placed.pop().expect("a cell is down");
        self.flip(p.top, shape.rows, mask);
    }

    /// Lays `prefix` down, checking each placement is one the search makes; the box.
    fn replay(&mut self, prefix: &[Placement]) -> Result<(u32, u32), PrefixError> {
        let chain = self.plan.chain();
        if prefix.len() > chain.len() {
            return Err(PrefixError::TooLong {
                len: prefix.len(),
                cells: chain.len(),
            });
        }
        let mut footprint = (0, 0);
        for (index, (&p, &expected)) in prefix.iter().zip(chain).enumerate() {
            let refuse = |reason| Err(PrefixError::Refused { index, p, reason });
            if p.cell != expected {
                return refuse(format!("the chain places cell {expected} there"));
            }
            let cell = self.plan.cell(p.cell);
            let Some(&shape) = cell.shapes.get(p.shape as usize) else {
                return refuse(format!("cell {} has {} shapes", p.cell, cell.shapes.len()));
            };
            let (tops, lhss) = self.candidates(cell, shape);
            let (top, lhs) = (p.top as i32, p.lhs as i32);
            if !tops.contains(&top) || !lhss.contains(&lhs) {
                return refuse("its neighbours do not allow it there".to_owned());
            }
            let Some(mask) = self.fits(top, lhs, shape) else {
                return refuse("it overlaps a cell or leaves the board".to_owned());
            };
            footprint = self.lay(p, shape, mask, footprint);
        }
        Ok(footprint)
    }
}

/// Why a task's prefix is not one the search makes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PrefixError {
    /// More placements than cells.
    TooLong { len: usize, cells: usize },
    /// Placement `index` cannot be made.
    Refused {
        index: usize,
        p: Placement,
        reason: String,
    },
}

impl fmt::Display for PrefixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLong { len, cells } => {
                write!(
                    f,
                    "the prefix places {len} cells, the floorplan has {cells}"
                )
            }
            Self::Refused { index, p, reason } => write!(
                f,
                "placement {index} of the prefix (cell {}, shape index {}, at row {}, column {}) \
                 is refused: {reason}",
                p.cell, p.shape, p.top, p.lhs
            ),
        }
    }
}

impl std::error::Error for PrefixError {}
