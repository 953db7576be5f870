//! Two functions with the same id: start-up must fail with a clear error.

mod twice {
    #[ferry::function(name = "same")]
    pub fn first() -> u32 {
        1
    }

    #[ferry::function(name = "same")]
    pub fn second() -> u32 {
        2
    }
}

#[ferry::main]
async fn main() -> ferry::Result<()> {
    let _ = (twice::first(), twice::second());
    Ok(())
}
