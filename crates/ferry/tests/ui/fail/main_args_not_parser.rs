use ferry::Context;

#[ferry::main]
async fn main(ctx: Context, verbose: bool) {
    let _ = (ctx, verbose);
}
