//! Runs the flow over a few texts, chained: one invocation per text from here, and each stage's
//! worker invokes the next stage.
//!
//! ```text
//! cargo run                          # on the local platform: worker processes of this binary
//! cargo run -- --backend inline      # in this process, as a monolith
//! ```

use ferry::prelude::*;

use {{crate}}::pipeline;

#[ferry::main]
async fn main(ctx: Context) -> ferry::Result<()> {
    let flow = pipeline();
    for text in ["ferries cross rivers", "", "a pipeline of three functions"] {
        match flow.run(&ctx, text.to_owned()).await? {
            Some(shouted) => println!("{text:?} -> {shouted}"),
            None => println!("{text:?} -> no words: the flow ended at `longest`"),
        }
    }
    println!("on the {} backend", ctx.backend_kind());
    Ok(())
}
