//! `#[ferry::main]`: sugar over `ferry::run` (or `ferry::run_with_args`, given the program's options), which decides at start-up whether this process is
//! the host, a worker or a manifest request.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::ItemFn;

pub fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if !args.is_empty() {
        return Err(syn::Error::new_spanned(
            args,
            "`#[ferry::main]` takes no options: configure the program through `ferry::run` instead",
        ));
    }
    let function: ItemFn = syn::parse2(item)
        .map_err(|e| syn::Error::new(e.span(), "`#[ferry::main]` goes on an `async fn main`"))?;
    let sig = &function.sig;
    if sig.asyncness.is_none() {
        let (fn_token, ident) = (&sig.fn_token, &sig.ident);
        return Err(syn::Error::new_spanned(
            quote!(#fn_token #ident),
            "`#[ferry::main]` needs an `async fn main`",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        let (generics, where_clause) = (&sig.generics, &sig.generics.where_clause);
        return Err(syn::Error::new_spanned(
            quote!(#generics #where_clause),
            "`#[ferry::main]` cannot be generic",
        ));
    }
    if sig.inputs.len() > 2 {
        let extra = sig.inputs.iter().skip(2);
        return Err(syn::Error::new_spanned(
            quote!(#(#extra),*),
            "`#[ferry::main]` takes at most two parameters: the `ferry::Context` and the program's \
             options (a `clap::Parser`)",
        ));
    }

    let attrs = &function.attrs;
    let vis = &function.vis;
    let ident = &sig.ident;
    let inputs = &sig.inputs;
    let output = &sig.output;
    let body = &function.block;
    // The options' type is checked where it is written, so a non-parser is reported there.
    let options_check = sig.inputs.iter().nth(1).and_then(|input| match input {
        syn::FnArg::Typed(typed) => {
            let ty = &typed.ty;
            Some(quote::quote_spanned!(syn::spanned::Spanned::span(ty)=>
                ::ferry::__private::assert_program_args::<#ty>();
            ))
        }
        syn::FnArg::Receiver(_) => None,
    });
    let entry = match sig.inputs.len() {
        0 => quote!(::ferry::__private::run(|_: ::ferry::Context| __ferry_main())),
        1 => quote!(::ferry::__private::run(__ferry_main)),
        _ => quote!(::ferry::__private::run_with_args(__ferry_main)),
    };
    Ok(quote! {
        #(#attrs)*
        #vis fn #ident() -> ::std::process::ExitCode {
            async fn __ferry_main(#inputs) #output #body
            #options_check
            #entry
        }
    })
}

/// The error, plus a `main` that compiles: the user's function, renamed and nested in it, still
/// gets type-checked, and rustc does not add "`main` function not found" to our error.
pub fn fallback(error: syn::Error, item: TokenStream) -> TokenStream {
    let error = error.into_compile_error();
    let Ok(mut function) = syn::parse2::<ItemFn>(item.clone()) else {
        return quote!(#error #item);
    };
    let attrs = std::mem::take(&mut function.attrs);
    let vis = std::mem::replace(&mut function.vis, syn::Visibility::Inherited);
    let ident = std::mem::replace(&mut function.sig.ident, format_ident!("__ferry_main"));
    quote! {
        #error
        #(#attrs)*
        #vis fn #ident() -> ::std::process::ExitCode {
            #function
            ::std::process::ExitCode::FAILURE
        }
    }
}
