use ferry::Context;

#[ferry::main]
fn main(ctx: Context) {
    let _ = ctx;
}
