use ferry::Context;

/// The program's own options, parsed together with ferry's `--backend`.
#[derive(clap::Parser)]
struct Args {
    #[arg(long, default_value_t = 3)]
    tasks: u32,
}

#[ferry::main]
async fn main(ctx: Context, args: Args) -> ferry::Result<()> {
    let _ = (ctx.backend_kind(), args.tasks);
    Ok(())
}
