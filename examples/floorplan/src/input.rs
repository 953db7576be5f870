//! The cell description files of BOTS's floorplan benchmark (`inputs/floorplan/input.*`).
//!
//! The file is whitespace-separated integers:
//!
//! ```text
//! N                       number of cells
//! for each cell 1..=N:
//!   S                     number of alternative shapes
//!   rows cols             S times: one shape
//!   left above            the cells it is placed against (-1: none, 0: the board's edge)
//!   next                  the cell placed after it (0: it is the last)
//! [area]                  optional: the known minimum area, which a run is checked against
//! ```
//!
//! Cells are placed in the order of `next` from cell 1. A cell lies to the right of its `left`
//! cell, below its `above` cell, or in the corner both make.

use std::fmt;

use crate::{BOARD, INITIAL_BOUND};

/// One way a cell can be laid out: `rows` high and `cols` wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    pub rows: u32,
    pub cols: u32,
}

/// A cell: its alternative shapes and what it is placed against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// At least one shape, each at most [`BOARD`] in either dimension.
    pub shapes: Vec<Shape>,
    /// The cell it lies to the right of (0: the board's left edge).
    pub left: Option<u32>,
    /// The cell it lies below (0 is allowed, as BOTS allows it).
    pub above: Option<u32>,
    /// The cell placed after it, or 0 if it is the last.
    pub next: u32,
}

/// A floorplan problem, checked: every cell is on the chain of `next` from cell 1 exactly once,
/// and every cell is placed against cells placed before it.
///
/// It travels to functions as its text in BOTS's format and is parsed again there, so a task
/// never holds a floorplan that breaks these rules.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Floorplan {
    /// Cell `id` is `cells[id - 1]`.
    cells: Vec<Cell>,
    /// Cell ids in the order the search places them.
    chain: Vec<u32>,
    known_area: Option<u32>,
}

impl Floorplan {
    /// Parses a cell description file.
    ///
    /// ```
    /// let plan = floorplan::Floorplan::parse("2\n1\n2 3\n0 -1\n2\n1\n4 1\n-1 1\n0\n12\n").unwrap();
    /// assert_eq!(plan.len(), 2);
    /// assert_eq!(plan.known_area(), Some(12));
    /// ```
    ///
    /// # Errors
    ///
    /// A [`ParseError`] naming the line and the field that is wrong.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut tokens = Tokens::new(text);
        let count = tokens
            .integer(Field::CellCount, 1, i64::from(INITIAL_BOUND))?
            .0 as u32;
        let mut cells = Vec::new();
        for id in 1..=count {
            let shape_count = tokens
                .integer(Field::ShapeCount { cell: id }, 1, i64::from(INITIAL_BOUND))?
                .0 as u32;
            let mut shapes = Vec::new();
            for shape in 1..=shape_count {
                let max = i64::from(BOARD);
                let rows = tokens.integer(Field::Rows { cell: id, shape }, 1, max)?.0 as u32;
                let cols = tokens.integer(Field::Cols { cell: id, shape }, 1, max)?.0 as u32;
                shapes.push(Shape { rows, cols });
            }
            let max = i64::from(count);
            let (left, line) = tokens.integer(Field::Left { cell: id }, -1, max)?;
            let above = tokens.integer(Field::Above { cell: id }, -1, max)?.0;
            if left < 0 && above < 0 {
                return Err(ParseError::NoNeighbour { line, cell: id });
            }
            let next = tokens.integer(Field::Next { cell: id }, 0, max)?.0 as u32;
            let neighbour = |value: i64| u32::try_from(value).ok();
            cells.push(Cell {
                shapes,
                left: neighbour(left),
                above: neighbour(above),
                next,
            });
        }
        let known_area = match tokens.next() {
            None => None,
            Some(_) => {
                tokens.back();
                Some(
                    tokens
                        .integer(Field::KnownArea, 1, i64::from(INITIAL_BOUND))?
                        .0 as u32,
                )
            }
        };
        if let Some((line, found)) = tokens.next() {
            return Err(ParseError::TrailingInput {
                line,
                found: found.to_owned(),
            });
        }
        let chain = chain(&cells)?;
        Ok(Self {
            cells,
            chain,
            known_area,
        })
    }

    /// Cell `id` (1-based, as in the file).
    ///
    /// # Panics
    ///
    /// If there is no such cell.
    pub fn cell(&self, id: u32) -> &Cell {
        &self.cells[id as usize - 1]
    }

    /// The cells, cell 1 first.
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// Cell ids in the order they are placed: cell 1, then each one's `next`.
    pub fn chain(&self) -> &[u32] {
        &self.chain
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Never: a floorplan has at least one cell.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The minimum area the file states, which BOTS checks its result against.
    pub fn known_area(&self) -> Option<u32> {
        self.known_area
    }
}

/// Follows `next` from cell 1: every cell once, each placed after the cells it lies against.
fn chain(cells: &[Cell]) -> Result<Vec<u32>, ParseError> {
    let mut placed = vec![false; cells.len() + 1];
    // Cell 0 is the board's corner: always there.
    placed[0] = true;
    let mut chain = Vec::with_capacity(cells.len());
    let mut id = 1;
    while id != 0 {
        if placed[id as usize] {
            return Err(ParseError::ChainLoops { cell: id });
        }
        let cell = &cells[id as usize - 1];
        for (side, neighbour) in [(Side::Left, cell.left), (Side::Above, cell.above)] {
            if let Some(neighbour) = neighbour.filter(|&n| !placed[n as usize]) {
                return Err(ParseError::NeighbourNotPlaced {
                    cell: id,
                    side,
                    neighbour,
                });
            }
        }
        placed[id as usize] = true;
        chain.push(id);
        id = cell.next;
    }
    match placed.iter().position(|&p| !p) {
        Some(missing) => Err(ParseError::NotOnChain {
            cell: missing as u32,
        }),
        None => Ok(chain),
    }
}

/// The floorplan in BOTS's format, one field per line and a blank line before each cell;
/// [`Floorplan::parse`] reads it back.
impl fmt::Display for Floorplan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.cells.len())?;
        let side = |n: Option<u32>| n.map_or(-1, i64::from);
        for cell in &self.cells {
            writeln!(f)?;
            writeln!(f, "{}", cell.shapes.len())?;
            for shape in &cell.shapes {
                writeln!(f, "{} {}", shape.rows, shape.cols)?;
            }
            writeln!(f, "{} {}", side(cell.left), side(cell.above))?;
            writeln!(f, "{}", cell.next)?;
        }
        if let Some(area) = self.known_area {
            writeln!(f)?;
            writeln!(f, "{area}")?;
        }
        Ok(())
    }
}

impl TryFrom<String> for Floorplan {
    type Error = ParseError;

    fn try_from(text: String) -> Result<Self, ParseError> {
        Self::parse(&text)
    }
}

impl From<Floorplan> for String {
    fn from(plan: Floorplan) -> Self {
        plan.to_string()
    }
}

/// The whitespace-separated tokens of a text, with their 1-based line numbers.
struct Tokens<'a> {
    tokens: Vec<(usize, &'a str)>,
    at: usize,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str) -> Self {
        let tokens = text
            .lines()
            .enumerate()
            .flat_map(|(i, line)| line.split_whitespace().map(move |token| (i + 1, token)))
            .collect();
        Self { tokens, at: 0 }
    }

    fn next(&mut self) -> Option<(usize, &'a str)> {
        let token = self.tokens.get(self.at).copied();
        self.at += usize::from(token.is_some());
        token
    }

    fn back(&mut self) {
        self.at -= 1;
    }

    /// The next token as an integer in `min..=max`, and its line.
    fn integer(&mut self, field: Field, min: i64, max: i64) -> Result<(i64, usize), ParseError> {
        let (line, token) = self.next().ok_or(ParseError::Missing { field })?;
        let value: i64 = token.parse().map_err(|_| ParseError::NotAnInteger {
            line,
            field,
            found: token.to_owned(),
        })?;
        if !(min..=max).contains(&value) {
            return Err(ParseError::OutOfRange {
                line,
                field,
                value,
                min,
                max,
            });
        }
        Ok((value, line))
    }
}

/// What a number in the file means, to name it in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Field {
    CellCount,
    ShapeCount {
        cell: u32,
    },
    /// `shape` is 1-based.
    Rows {
        cell: u32,
        shape: u32,
    },
    Cols {
        cell: u32,
        shape: u32,
    },
    Left {
        cell: u32,
    },
    Above {
        cell: u32,
    },
    Next {
        cell: u32,
    },
    KnownArea,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CellCount => write!(f, "the number of cells"),
            Self::ShapeCount { cell } => write!(f, "the number of shapes of cell {cell}"),
            Self::Rows { cell, shape } => write!(f, "the rows of shape {shape} of cell {cell}"),
            Self::Cols { cell, shape } => write!(f, "the columns of shape {shape} of cell {cell}"),
            Self::Left { cell } => write!(f, "the cell left of cell {cell}"),
            Self::Above { cell } => write!(f, "the cell above cell {cell}"),
            Self::Next { cell } => write!(f, "the cell after cell {cell}"),
            Self::KnownArea => write!(f, "the known minimum area"),
        }
    }
}

/// Which neighbour of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Left,
    Above,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Read as "cell 3 lies right of cell 2".
        f.write_str(match self {
            Self::Left => "right of",
            Self::Above => "below",
        })
    }
}

/// Why a cell description file was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseError {
    /// The file ends where `field` should be.
    Missing { field: Field },
    /// A token that is not an integer.
    NotAnInteger {
        line: usize,
        field: Field,
        found: String,
    },
    /// An integer outside what its field takes.
    OutOfRange {
        line: usize,
        field: Field,
        value: i64,
        min: i64,
        max: i64,
    },
    /// A cell with neither a left nor an above neighbour has no place to go.
    NoNeighbour { line: usize, cell: u32 },
    /// The chain of `next` from cell 1 comes back to a cell.
    ChainLoops { cell: u32 },
    /// A cell the chain of `next` from cell 1 never reaches.
    NotOnChain { cell: u32 },
    /// A cell placed against a cell that is placed after it.
    NeighbourNotPlaced {
        cell: u32,
        side: Side,
        neighbour: u32,
    },
    /// Something after the last field.
    TrailingInput { line: usize, found: String },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing { field } => write!(f, "the input ends where {field} should be"),
            Self::NotAnInteger { line, field, found } => {
                write!(f, "line {line}: {field} must be an integer, not `{found}`")
            }
            Self::OutOfRange {
                line,
                field,
                value,
                min,
                max,
            } => write!(f, "line {line}: {field} is {value}, outside {min}..={max}"),
            Self::NoNeighbour { line, cell } => write!(
                f,
                "line {line}: cell {cell} has no cell to its left and none above (both -1), \
                 so it has no place to go"
            ),
            Self::ChainLoops { cell } => write!(
                f,
                "the chain of `next` from cell 1 reaches cell {cell} twice"
            ),
            Self::NotOnChain { cell } => write!(
                f,
                "cell {cell} is never placed: the chain of `next` from cell 1 does not reach it"
            ),
            Self::NeighbourNotPlaced {
                cell,
                side,
                neighbour,
            } => write!(
                f,
                "cell {cell} lies {side} cell {neighbour}, which the chain of `next` from \
                 cell 1 places after it"
            ),
            Self::TrailingInput { line, found } => write!(
                f,
                "line {line}: unexpected `{found}` after the known minimum area"
            ),
        }
    }
}

impl std::error::Error for ParseError {}
