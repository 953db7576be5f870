//! The cell description files: BOTS's own parse as BOTS reads them, and a malformed file is
//! refused with the line and the field that is wrong.

use floorplan::{Field, Floorplan, ParseError, Shape};

fn bots_input(name: &str) -> Floorplan {
    let path = format!("{}/inputs/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Floorplan::parse(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The file's message for `text`, which must be refused.
fn refused(text: &str) -> String {
    match Floorplan::parse(text) {
        Ok(plan) => panic!("accepted {text:?} as {plan:?}"),
        Err(e) => e.to_string(),
    }
}

/// Two cells side by side: `A` (2×3 or 3×2) in the corner, `B` (4×1) below it.
const TWO_CELLS: &str = "2\n\n2\n2 3\n3 2\n0 -1\n2\n\n1\n4 1\n-1 1\n0\n\n12\n";

#[test]
fn the_bots_inputs_parse_with_their_known_areas() {
    for (name, cells, known) in [
        ("input.5", 5, 216),
        ("input.15", 15, 713),
        ("input.20", 20, 896),
    ] {
        let plan = bots_input(name);
        assert_eq!(plan.len(), cells, "{name}");
        assert_eq!(plan.known_area(), Some(known), "{name}");
        assert_eq!(
            plan.chain(),
            (1..=cells as u32).collect::<Vec<_>>(),
            "{name}"
        );
    }
    // Cell 5 of input.5: four shapes, below cell 2, the last one.
    let plan = bots_input("input.5");
    let cell = &plan.cells()[4];
    assert_eq!(cell.shapes[3], Shape { rows: 10, cols: 4 });
    assert_eq!((cell.left, cell.above, cell.next), (None, Some(2), 0));
}

#[test]
fn a_floorplan_written_out_reads_back_the_same() {
    for name in ["input.5", "input.15", "input.20"] {
        let plan = bots_input(name);
        assert_eq!(Floorplan::parse(&plan.to_string()).unwrap(), plan, "{name}");
        // Tasks receive it as that text, and parse it again.
        let json = serde_json::to_string(&plan).unwrap();
        assert!(json.starts_with('"'), "{json}");
        assert_eq!(serde_json::from_str::<Floorplan>(&json).unwrap(), plan);
    }
    let plan = Floorplan::parse(TWO_CELLS).unwrap();
    assert_eq!(plan.to_string(), TWO_CELLS);
}

#[test]
fn the_known_area_is_optional() {
    let plan = Floorplan::parse(TWO_CELLS.trim_end().trim_end_matches("12")).unwrap();
    assert_eq!(plan.known_area(), None);
    assert_eq!(plan.len(), 2);
}

#[test]
fn a_text_that_stops_short_names_what_is_missing() {
    assert_eq!(
        refused(""),
        "the input ends where the number of cells should be"
    );
    assert_eq!(
        refused("2\n1\n2 3\n0 -1\n2\n1\n4"),
        "the input ends where the columns of shape 1 of cell 2 should be"
    );
    assert_eq!(
        refused("1\n1\n2 3\n0 -1"),
        "the input ends where the cell after cell 1 should be"
    );
}

#[test]
fn a_word_where_a_number_belongs_is_named_with_its_line() {
    assert_eq!(
        refused("2\n\n1\n2 x3\n0 -1\n2\n"),
        "line 4: the columns of shape 1 of cell 1 must be an integer, not `x3`"
    );
    assert_eq!(
        refused("two\n"),
        "line 1: the number of cells must be an integer, not `two`"
    );
}

#[test]
fn numbers_out_of_range_are_refused_with_the_range() {
    assert_eq!(
        refused("0\n"),
        "line 1: the number of cells is 0, outside 1..=4096"
    );
    assert_eq!(
        refused("1\n0\n0 -1\n0\n"),
        "line 2: the number of shapes of cell 1 is 0, outside 1..=4096"
    );
    assert_eq!(
        refused("1\n1\n65 1\n0 -1\n0\n"),
        "line 3: the rows of shape 1 of cell 1 is 65, outside 1..=64"
    );
    assert_eq!(
        refused("1\n1\n2 2\n2 -1\n0\n"),
        "line 4: the cell left of cell 1 is 2, outside -1..=1"
    );
    assert_eq!(
        refused("1\n1\n2 2\n0 -1\n3\n"),
        "line 5: the cell after cell 1 is 3, outside 0..=1"
    );
    assert_eq!(
        refused("1\n1\n2 2\n0 -1\n0\n-4\n"),
        "line 6: the known minimum area is -4, outside 1..=4096"
    );
}

#[test]
fn the_chain_of_cells_is_checked() {
    assert_eq!(
        refused("2\n1\n2 3\n0 -1\n2\n1\n4 1\n-1 -1\n0\n"),
        "line 8: cell 2 has no cell to its left and none above (both -1), so it has no place to go"
    );
    assert_eq!(
        refused("2\n1\n2 3\n0 -1\n2\n1\n4 1\n-1 1\n1\n"),
        "the chain of `next` from cell 1 reaches cell 1 twice"
    );
    assert_eq!(
        refused("2\n1\n2 3\n0 -1\n0\n1\n4 1\n-1 1\n0\n"),
        "cell 2 is never placed: the chain of `next` from cell 1 does not reach it"
    );
    assert_eq!(
        refused("2\n1\n2 3\n0 2\n2\n1\n4 1\n-1 1\n0\n"),
        "cell 1 lies below cell 2, which the chain of `next` from cell 1 places after it"
    );
}

#[test]
fn nothing_may_follow_the_known_area() {
    assert_eq!(
        refused(&format!("{TWO_CELLS}7\n")),
        "line 15: unexpected `7` after the known minimum area"
    );
}

#[test]
fn errors_carry_the_field_for_programs() {
    assert_eq!(
        Floorplan::parse("1\n1\n2 2\n0 -1\n"),
        Err(ParseError::Missing {
            field: Field::Next { cell: 1 }
        })
    );
    // Serialized floorplans are checked when read, as files are.
    let error = serde_json::from_str::<Floorplan>(r#""1\n1\n2 2\n0 -1\n""#).unwrap_err();
    assert!(
        error.to_string().contains("the cell after cell 1"),
        "{error}"
    );
}
