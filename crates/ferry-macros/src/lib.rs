//! Procedural macros for [ferry](https://docs.rs/ferry).
//!
//! Use them through the `ferry` crate (`#[ferry::function]`, `#[ferry::main]`): the expansions
//! call `::ferry::__private` by absolute path, and `ferry` pins this crate to its exact version.

mod function;
mod main_fn;
mod options;
mod test_fn;

use proc_macro::TokenStream;

/// Turns a plain function into a ferry function. See `ferry::function` for the documentation.
#[proc_macro_attribute]
pub fn function(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    function::expand(args.into(), item.clone())
        .unwrap_or_else(|error| keep_item(error, item))
        .into()
}

/// Makes `async fn main(ctx: Context)` the entry point of a ferry program. See `ferry::main`.
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    main_fn::expand(args.into(), item.clone())
        .unwrap_or_else(|error| main_fn::fallback(error, item))
        .into()
}

/// Runs an `async fn` test on a multi-thread runtime. See `ferry::test`.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    test_fn::expand(args.into(), item.clone())
        .unwrap_or_else(|error| keep_item(error, item))
        .into()
}

/// The error, followed by the item as written: code that calls the function keeps compiling,
/// so the user sees our error alone rather than a trail of "cannot find function" errors.
fn keep_item(error: syn::Error, item: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    let mut out = error.into_compile_error();
    out.extend(item);
    out
}
