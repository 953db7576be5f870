//! `#[ferry::test]`: an `async fn` test on tokio's multi-thread runtime, through ferry's own
//! tokio, so a crate that depends only on ferry can write async tests.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

pub fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if !args.is_empty() {
        return Err(syn::Error::new_spanned(
            args,
            "`#[ferry::test]` takes no options: write `#[tokio::test(..)]` for other runtimes",
        ));
    }
    let function: ItemFn = syn::parse2(item)
        .map_err(|e| syn::Error::new(e.span(), "`#[ferry::test]` goes on an `async fn`"))?;
    if function.sig.asyncness.is_none() {
        let (fn_token, ident) = (&function.sig.fn_token, &function.sig.ident);
        return Err(syn::Error::new_spanned(
            quote!(#fn_token #ident),
            "`#[ferry::test]` needs an `async fn`; a plain `fn` test takes `#[test]`",
        ));
    }
    Ok(quote! {
        #[::ferry::__private::tokio::test(
            crate = "::ferry::__private::tokio",
            flavor = "multi_thread"
        )]
        #function
    })
}
