//! Procedural macros for [ferry](https://docs.rs/ferry).
//!
//! Use them through the `ferry` crate (`#[ferry::function]`, `#[ferry::main]`): the expansions
//! call `::ferry::__private` by absolute path, and `ferry` pins this crate to its exact version.

mod function;
mod main_fn;
mod options;

use proc_macro::TokenStream;

/// Turns a plain function into a ferry function. See `ferry::function` for the documentation.
#[proc_macro_attribute]
pub fn function(args: TokenStream, item: TokenStream) -> TokenStream {
    function::expand(args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Makes `async fn main(ctx: Context)` the entry point of a ferry program. See `ferry::main`.
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    main_fn::expand(args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
