//! The branch and bound against BOTS's known areas, and the split search in process: every
//! way of splitting it finds what the sequential search finds.

use floorplan::{
    Floorplan, INITIAL_BOUND, Placement, PrefixError, Solution, prefixes, search_below, solve,
};

fn bots_input(name: &str) -> Floorplan {
    let path = format!("{}/inputs/{name}", env!("CARGO_MANIFEST_DIR"));
    Floorplan::parse(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn area(solution: &Option<Solution>) -> Option<u32> {
    solution.as_ref().map(|s| s.area)
}

/// The tasks of a cutoff searched one after the other, each sent the best area found before
/// it (`share`) or the initial bound (the tasks know nothing of each other): the best area,
/// and the positions the tasks tried.
fn split_search(plan: &Floorplan, cutoff: usize, share: bool) -> (Option<u32>, u64) {
    let (mut best, mut tried) = (None::<u32>, 0);
    for prefix in prefixes(plan, cutoff).prefixes {
        let bound = best.filter(|_| share).unwrap_or(INITIAL_BOUND);
        let explored = search_below(plan, &prefix, bound).unwrap();
        if let Some(found) = &explored.best {
            found.check(plan).unwrap();
            assert_eq!(found.placements[..prefix.len()], prefix[..]);
        }
        tried += explored.tried;
        best = best.into_iter().chain(area(&explored.best)).min();
    }
    (best, tried)
}

#[test]
fn the_search_finds_the_known_areas_of_input_5_and_input_15() {
    for (name, known) in [("input.5", 216), ("input.15", 713)] {
        let plan = bots_input(name);
        let explored = solve(&plan);
        let best = explored.best.as_ref().expect("a floorplan");
        assert_eq!(best.area, known, "{name}");
        assert_eq!(plan.known_area(), Some(known));
        best.check(&plan).unwrap();
        assert!(explored.tried > 0);
    }
}

#[test]
fn the_search_finds_the_known_area_of_input_20() {
    let plan = bots_input("input.20");
    assert_eq!(area(&solve(&plan).best), Some(896));
}

#[test]
fn every_split_of_input_5_finds_the_sequential_area() {
    let plan = bots_input("input.5");
    let sequential = solve(&plan);
    for cutoff in 0..=6 {
        for share in [false, true] {
            let (best, tried) = split_search(&plan, cutoff, share);
            assert_eq!(best, Some(216), "cutoff {cutoff}, share {share}");
            if cutoff == 0 {
                // One task from the empty prefix is the sequential search itself.
                assert_eq!(tried, sequential.tried);
            }
        }
    }
}

#[test]
fn splits_of_input_15_find_the_sequential_area() {
    let plan = bots_input("input.15");
    for cutoff in [1, 3] {
        assert_eq!(
            split_search(&plan, cutoff, true).0,
            Some(713),
            "cutoff {cutoff}"
        );
    }
}

/// As the Cppless thesis notes, the number of tasks is not monotonic in the cutoff: the host
/// leaves out the prefixes whose cells overlap, and a cell placed against two others has one
/// position at most. These are the counts of BOTS's placement rule on its inputs.
#[test]
fn the_task_count_is_not_monotonic_in_the_cutoff() {
    let counts = |name| {
        let plan = bots_input(name);
        (0..=5)
            .map(|cutoff| prefixes(&plan, cutoff).prefixes.len())
            .collect::<Vec<_>>()
    };
    assert_eq!(counts("input.5"), [1, 2, 45, 12, 562, 4356]);
    // The first five cells of input.15 are those of input.5.
    assert_eq!(counts("input.15"), counts("input.5"));
    // A cutoff past the last cell splits into complete floorplans.
    let plan = bots_input("input.5");
    assert_eq!(prefixes(&plan, 9), prefixes(&plan, 5));
}

#[test]
fn prefixes_come_in_the_order_the_sequential_search_reaches_them() {
    let plan = bots_input("input.5");
    let split = prefixes(&plan, 2);
    // Cell 1 in the corner in its first shape (3×10) comes first, then its second (6×5).
    let first = Placement {
        cell: 1,
        shape: 0,
        top: 0,
        lhs: 0,
    };
    assert_eq!(split.prefixes[0][0], first);
    let firsts: Vec<u32> = split.prefixes.iter().map(|p| p[0].shape).collect();
    assert!(firsts.is_sorted(), "{firsts:?}");
    assert!(split.prefixes.iter().all(|p| p.len() == 2));
}

#[test]
fn the_best_floorplan_of_input_5_draws_every_cell_once() {
    let plan = bots_input("input.5");
    let best = solve(&plan).best.unwrap();
    let drawing = best.render(&plan);
    let lines: Vec<&str> = drawing.lines().collect();
    assert_eq!(lines.len(), best.rows as usize);
    assert!(lines.iter().all(|l| l.len() == best.cols as usize));
    for p in &best.placements {
        let letter = char::from(b'A' + p.cell as u8 - 1);
        let shape = plan.cell(p.cell).shapes[p.shape as usize];
        let squares = drawing.chars().filter(|&c| c == letter).count();
        assert_eq!(squares as u32, shape.rows * shape.cols, "cell {letter}");
    }
}

#[test]
fn a_tampered_floorplan_fails_its_check() {
    let plan = bots_input("input.5");
    let best = solve(&plan).best.unwrap();
    let smaller = Solution {
        area: best.area - 1,
        ..best.clone()
    };
    assert!(smaller.check(&plan).unwrap_err().contains("not"));
    let mut moved = best.clone();
    // Cell 2 lies below cell 1: its row is fixed.
    moved.placements[1].top += 1;
    let error = moved.check(&plan).unwrap_err();
    assert!(
        error.starts_with("placement 1 of the prefix (cell 2,")
            && error.ends_with("its neighbours do not allow it there"),
        "{error}"
    );
    let mut short = best;
    short.placements.pop();
    assert_eq!(
        short.check(&plan).unwrap_err(),
        "4 of 5 cells are laid down"
    );
}

#[test]
fn a_task_refuses_a_prefix_the_search_does_not_make() {
    let plan = bots_input("input.5");
    let corner = Placement {
        cell: 1,
        shape: 0,
        top: 0,
        lhs: 0,
    };
    let refuse = |prefix: &[Placement]| search_below(&plan, prefix, INITIAL_BOUND).unwrap_err();
    assert!(matches!(
        refuse(&[Placement { cell: 2, ..corner }]),
        PrefixError::Refused { index: 0, .. }
    ));
    assert_eq!(
        refuse(&[Placement { shape: 2, ..corner }]).to_string(),
        "placement 0 of the prefix (cell 1, shape index 2, at row 0, column 0) is refused: cell 1 has 2 shapes"
    );
    assert!(
        refuse(&[Placement { top: 1, ..corner }])
            .to_string()
            .ends_with("its neighbours do not allow it there")
    );
    assert!(matches!(
        refuse(&[corner; 6]),
        PrefixError::TooLong { len: 6, cells: 5 }
    ));
}

#[test]
fn a_task_below_a_bound_it_cannot_beat_finds_nothing() {
    let plan = bots_input("input.5");
    let explored = search_below(&plan, &[], 216).unwrap();
    assert_eq!(explored.best, None);
    let explored = search_below(&plan, &[], 217).unwrap();
    assert_eq!(area(&explored.best), Some(216));
}

/// Where a cell may go, on two small floorplans written for this test (not BOTS's: its inputs
/// place every cell but the first below another one, so they never exercise these rules).
#[test]
fn cells_go_where_bots_placement_rule_puts_them() {
    let at = |cell, top, lhs| Placement {
        cell,
        shape: 0,
        top,
        lhs,
    };
    // Cell 1 (1×1) in the corner, cell 2 (2×1) below it, cell 3 (2×1) right of cell 2: from
    // as high as still touches cell 2 (row 0) down to cell 2's bottom row (2).
    let right_of =
        Floorplan::parse("3\n1\n1 1\n0 -1\n2\n1\n2 1\n-1 1\n3\n1\n2 1\n2 -1\n0\n").unwrap();
    let all = prefixes(&right_of, 3);
    let thirds: Vec<Placement> = all.prefixes.iter().map(|p| p[2]).collect();
    assert_eq!(thirds, [at(3, 0, 1), at(3, 1, 1), at(3, 2, 1)]);
    assert_eq!(all.tried, 1 + 1 + 3);
    assert_eq!(area(&solve(&right_of).best), Some(6));

    // Cell 1 (2×1) in the corner, cells 2 and 3 (1×1) in a row right of it, cell 4 (1×1)
    // right of cell 1 and below cell 3. Cell 4 then meets cell 3 only corner to corner, which
    // BOTS counts as touching: the one floorplan there is.
    let corner =
        Floorplan::parse("4\n1\n2 1\n0 -1\n2\n1\n1 1\n1 -1\n3\n1\n1 1\n2 -1\n4\n1\n1 1\n1 3\n0\n")
            .unwrap();
    let all = prefixes(&corner, 4);
    assert_eq!(
        all.prefixes,
        [vec![at(1, 0, 0), at(2, 0, 1), at(3, 0, 2), at(4, 1, 1)]]
    );
    // Cell 2 in row 0 or 1; in row 1, cell 4 would start below cell 1 and has no place.
    assert_eq!(all.tried, 1 + 2 + 1 + 1 + 1);
    let best = solve(&corner).best.unwrap();
    assert_eq!((best.area, best.rows, best.cols), (6, 2, 3));
    assert_eq!(best.render(&corner), "ABC\nAD \n");
}
