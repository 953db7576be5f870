//! The generated `DESCRIPTOR`: id, name, params, output and config.

use std::time::Duration;

use ferry::{Function, FunctionConfig, ParamDescriptor};

#[ferry::function(timeout = "45s")]
fn count_queens(n: u32, cols: u64, ctx: ferry::Context, diagonals: Vec<(u64, u64)>) -> u64 {
    let _ = (n, cols, ctx, diagonals);
    0
}

mod nested {
    #[ferry::function(name = "renamed")]
    pub fn original(x: std::collections::HashMap<String, [u8; 4]>) {
        let _ = x;
    }
}

fn main() {
    let d = CountQueens::DESCRIPTOR;
    // The id is the module path (starting with the crate name) plus the name.
    assert_eq!(d.id, format!("{}::count_queens", module_path!()));
    assert_eq!(d.name, "count_queens");
    assert_eq!(
        d.params,
        &[
            ParamDescriptor {
                name: "n",
                ty: "u32"
            },
            ParamDescriptor {
                name: "cols",
                ty: "u64"
            },
            ParamDescriptor {
                name: "diagonals",
                ty: "Vec<(u64, u64)>"
            },
        ]
    );
    assert_eq!(d.output, "u64");
    assert_eq!(
        d.config,
        FunctionConfig {
            timeout: Duration::from_secs(45),
            ..FunctionConfig::DEFAULT
        }
    );
    assert!(!d.is_async);
    assert!(d.file.ends_with("descriptor.rs"), "{}", d.file);
    assert_eq!(d.line, 7);

    let r = nested::Original::DESCRIPTOR;
    assert_eq!(r.id, format!("{}::nested::renamed", module_path!()));
    assert_eq!(r.name, "renamed");
    assert_eq!(r.params[0].name, "x");
    assert_eq!(r.params[0].ty, "std::collections::HashMap<String, [u8; 4]>");
    assert_eq!(r.output, "()");
}
