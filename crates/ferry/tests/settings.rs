//! The README's table of settings is the declarations in `ferry::config`, row for row.

use ferry::config::{ALL, SetBy};

fn expected_rows() -> Vec<String> {
    ALL.iter()
        .filter(|s| s.set_by == SetBy::User)
        .map(|s| format!("| `{}` | {} | {} |", s.name, s.meaning, s.default))
        .collect()
}

#[test]
fn the_readme_table_lists_every_setting_as_declared() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("the README");
    let rows: Vec<String> = readme
        .lines()
        .skip_while(|line| *line != "| variable | meaning | default |")
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(str::to_owned)
        .collect();
    let expected = expected_rows();
    assert!(expected.len() > 25, "{expected:?}");
    assert!(
        rows == expected,
        "README.md's settings table differs from ferry::config; it should read:\n\n\
         | variable | meaning | default |\n| --- | --- | --- |\n{}\n",
        expected.join("\n")
    );
}

#[test]
fn a_bad_setting_stops_a_program_before_it_runs() {
    let error = ferry::config::check_in(&[("FERRY_LOCAL_PREFETCH", "lots")][..]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid configuration: `FERRY_LOCAL_PREFETCH` must be a whole number, not `lots`"
    );
}
