//! UI tests of `#[ferry::function]` and `#[ferry::main]`.
//!
//! `tests/ui/pass` pins the uses that must compile (sync and async bodies, `Result` returns,
//! `Context` parameters, every option, user serde types, visibility of the invocation type, the
//! generated `DESCRIPTOR`); `tests/ui/fail` pins each misuse's compile error: its message and the
//! span it points at, next to the case in a `.stderr` file.
//!
//! The expected output depends on the rustc version. After a deliberate change, regenerate with
//! `TRYBUILD=overwrite cargo test -p ferry --test ui` and read every changed `.stderr`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
