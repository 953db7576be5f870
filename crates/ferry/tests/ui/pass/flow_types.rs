// Stages line up by type: an `Option` output feeds its inner type and may end the flow, a
// `Result` output feeds its `Ok` type, and a `Context` parameter is not part of the input.

use ferry::{Context, Flow};

#[ferry::function]
fn parse(text: String) -> Option<i64> {
    text.parse().ok()
}

#[ferry::function]
fn checked(n: i64) -> Result<i64, String> {
    if n < 0 { Err("negative".into()) } else { Ok(n) }
}

#[ferry::function]
async fn remaining(ctx: Context, n: i64) -> Option<Option<i64>> {
    let _ = ctx.remaining();
    Some(Some(n))
}

#[ferry::function]
fn keep(value: Option<i64>) -> Option<i64> {
    value
}

fn main() {
    let flow: Flow<String, Option<i64>> = Flow::start::<Parse>()
        .then::<Checked>()
        .then::<Remaining>()
        .then::<Keep>();
    assert_eq!(flow.stages().count(), 4);
}
