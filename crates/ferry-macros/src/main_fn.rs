//! `#[ferry::main]`: sugar over `ferry::run`, which decides at start-up whether this process is
//! the host, a worker or a manifest request.

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::ItemFn;

pub fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if !args.is_empty() {
        return Err(syn::Error::new(
            args.span(),
            "`#[ferry::main]` takes no options: configure the program through `ferry::run` instead",
        ));
    }
    let function: ItemFn = syn::parse2(item)?;
    let sig = &function.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span(),
            "`#[ferry::main]` needs an `async fn main`",
        ));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "`#[ferry::main]` cannot be generic",
        ));
    }
    if sig.inputs.len() > 1 {
        return Err(syn::Error::new(
            sig.inputs.span(),
            "`#[ferry::main]` takes at most one parameter, the `ferry::Context`",
        ));
    }

    let attrs = &function.attrs;
    let vis = &function.vis;
    let ident = &sig.ident;
    let inputs = &sig.inputs;
    let output = &sig.output;
    let body = &function.block;
    let entry = if sig.inputs.is_empty() {
        quote!(|_: ::ferry::Context| __ferry_main())
    } else {
        quote!(__ferry_main)
    };
    Ok(quote! {
        #(#attrs)*
        #vis fn #ident() -> ::std::process::ExitCode {
            async fn __ferry_main(#inputs) #output #body
            ::ferry::run(#entry)
        }
    })
}
