use ferry::Context;

#[derive(clap::Parser)]
struct Args {}

#[ferry::main]
async fn main(ctx: Context, args: Args, verbose: bool) {
    let _ = (ctx, args, verbose);
}
