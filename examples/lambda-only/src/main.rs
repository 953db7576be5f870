//! A program whose functions run on AWS Lambda (or inline, in this process) and nowhere else.
//! Built with `ferry = { default-features = false, features = ["lambda"] }`, the binary links
//! the Lambda runtime and client only: no Redis, no axum, no local platform.
//!
//! ```sh
//! cargo run -p lambda-only -- --backend inline        # pi ≈ 3.14…
//! ferry deploy --platform lambda -p lambda-only       # then `--backend lambda`
//! ```

use ferry::prelude::*;

/// Counts how many of `samples` pseudo-random points of the unit square fall inside the
/// quarter circle (xorshift64 from `seed`).
#[ferry::function(memory_mb = 128, timeout = "10s")]
pub fn count_inside(seed: u64, samples: u64) -> u64 {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..samples)
        .filter(|_| {
            let (x, y) = (next(), next());
            x * x + y * y <= 1.0
        })
        .count() as u64
}

#[ferry::main]
async fn main(ctx: Context) -> ferry::Result<()> {
    const TASKS: u64 = 16;
    const SAMPLES: u64 = 100_000;
    let counts = ctx
        .map((0..TASKS).map(|seed| CountInside {
            seed,
            samples: SAMPLES,
        }))
        .await?;
    let inside: u64 = counts.iter().sum();
    println!(
        "pi ≈ {:.4} from {} samples on the {} backend",
        4.0 * inside as f64 / (TASKS * SAMPLES) as f64,
        TASKS * SAMPLES,
        ctx.backend_kind()
    );
    Ok(())
}
