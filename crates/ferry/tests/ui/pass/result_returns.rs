//! `Result<T, E>` with `E: Display`: the output is `T`, and `Err` becomes a user error.

use std::fmt;

use ferry::Function;

#[ferry::function]
fn parse(text: String) -> Result<u32, String> {
    text.trim()
        .parse()
        .map_err(|e| format!("not a number: {e}"))
}

/// A custom error type: `Display` is all it needs (not even `std::error::Error`).
#[derive(Debug)]
pub struct OutOfRange {
    pub value: i64,
}

impl fmt::Display for OutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is out of range", self.value)
    }
}

#[ferry::function]
async fn checked(value: i64) -> Result<u8, OutOfRange> {
    u8::try_from(value).map_err(|_| OutOfRange { value })
}

/// Paths to `Result` work too, and `ferry::Result` (`?` on nested invocations).
#[ferry::function]
fn halve(n: u64) -> std::result::Result<u64, std::num::TryFromIntError> {
    u8::try_from(n).map(|small| u64::from(small) / 2)
}

#[ferry::function]
fn nested(n: u64) -> ferry::Result<Vec<u64>> {
    Ok(vec![n])
}

fn main() {
    assert_eq!(parse(" 7 ".to_owned()), Ok(7));
    assert_eq!(halve(8).ok(), Some(4));
    assert_eq!(nested(1).ok(), Some(vec![1]));

    assert_eq!(Parse::DESCRIPTOR.output, "u32");
    assert_eq!(Checked::DESCRIPTOR.output, "u8");
    assert_eq!(Halve::DESCRIPTOR.output, "u64");
    assert_eq!(Nested::DESCRIPTOR.output, "Vec<u64>");

    fn output_of<F: Function>(_: &F) -> std::marker::PhantomData<F::Output> {
        std::marker::PhantomData
    }
    let _: std::marker::PhantomData<u32> = output_of(&Parse {
        text: String::new(),
    });
    let _: std::marker::PhantomData<u8> = output_of(&Checked { value: 0 });
    let _: std::marker::PhantomData<Vec<u64>> = output_of(&Nested { n: 0 });
}
