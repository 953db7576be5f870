use ferry::Context;

#[ferry::main(backend = "inline")]
async fn main(ctx: Context) {
    let _ = ctx;
}
