//! `#[ferry::function]`: the function stays as written; next to it come an invocation type (one
//! field per parameter), its `ferry::Function` impl and a registry entry.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, GenericArgument, ItemFn, Pat, PathArguments, ReturnType, Type};

use crate::options::FunctionOptions;

pub fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let options = FunctionOptions::parse(args)?;
    let function: ItemFn = syn::parse2(item)
        .map_err(|e| syn::Error::new(e.span(), "`#[ferry::function]` goes on a free `fn` item"))?;
    check_signature(&function)?;
    if let (Some(span), Some(_)) = (options.inline, function.sig.asyncness) {
        return Err(syn::Error::new(
            span,
            "`inline` is for sync functions: an `async` body already runs on the runtime's threads",
        ));
    }
    let spec = Spec {
        invocation: invocation_ident(&function, &options)?,
        params: collect_params(&function)?,
        output: OutputKind::of(&function.sig.output),
        function: &function,
        options,
    };
    let checks = spec.checks();
    let struct_item = spec.struct_item();
    let debug_impl = spec.debug_impl();
    let function_impl = spec.function_impl();
    let stage_impl = spec.stage_impl();
    let invocation = &spec.invocation;
    Ok(quote! {
        #function

        // Before the struct, so that a parameter that is not a serde type fails here first, with
        // ferry's message, ahead of the errors of the serde derives below.
        const _: () = {
            #checks
        };

        #struct_item

        const _: () = {
            #debug_impl

            #function_impl

            #stage_impl

            ::ferry::__private::inventory::submit! {
                ::ferry::__private::Registration::of::<#invocation>()
            }
        };
    })
}

/// The invocation type's name: `invocation = "..."`, else the function's name in upper camel
/// case.
fn invocation_ident(function: &ItemFn, options: &FunctionOptions) -> syn::Result<syn::Ident> {
    if let Some(ident) = &options.invocation {
        return Ok(ident.clone());
    }
    let fn_ident = &function.sig.ident;
    let derived = upper_camel(&fn_ident.to_string());
    if derived == "Self" {
        return Err(syn::Error::new(
            fn_ident.span(),
            "the invocation type of this function would be named `Self`; choose a name with `invocation = \"...\"`",
        ));
    }
    Ok(format_ident!("{}", derived, span = fn_ident.span()))
}

/// What the generated items are built from.
struct Spec<'a> {
    function: &'a ItemFn,
    options: FunctionOptions,
    invocation: syn::Ident,
    params: Vec<Param>,
    output: OutputKind<'a>,
}

impl Spec<'_> {
    fn value_params(&self) -> impl Iterator<Item = &Param> {
        self.params.iter().filter(|p| !p.is_context)
    }

    /// The output type, its name in the descriptor, and how a body's return value becomes an
    /// outcome.
    fn output(&self) -> (TokenStream, String, TokenStream) {
        match &self.output {
            OutputKind::Unit => (
                quote!(()),
                "()".to_owned(),
                quote!(::core::result::Result::Ok),
            ),
            OutputKind::Plain(ty) => (
                quote!(#ty),
                type_name(ty),
                quote!(::core::result::Result::Ok),
            ),
            OutputKind::Result { ty, ok } => (
                quote!(<#ty as ::ferry::__private::FnResult>::Ok),
                ok.map_or_else(|| type_name(ty), type_name),
                quote!(::ferry::__private::FnResult::into_outcome),
            ),
        }
    }

    /// Compile-time checks that parameters and output are serde types, with ferry's messages.
    fn checks(&self) -> TokenStream {
        let param_checks = self.value_params().map(|p| {
            let ty = &p.ty;
            quote_spanned! {ty.span()=> ::ferry::__private::assert_param::<#ty>(); }
        });
        let output_check = match &self.output {
            OutputKind::Unit => quote!(),
            OutputKind::Plain(ty) | OutputKind::Result { ty, .. } => {
                let (output_ty, _, _) = self.output();
                quote_spanned! {ty.span()=> ::ferry::__private::assert_output::<#output_ty>(); }
            }
        };
        quote! {
            #(#param_checks)*
            #output_check
        }
    }

    /// The invocation type: one field per parameter.
    fn struct_item(&self) -> TokenStream {
        let vis = &self.function.vis;
        let invocation = &self.invocation;
        let fields = self.value_params().map(|p| {
            let ident = &p.ident;
            let ty = &p.ty;
            let doc = format!("The `{ident}` argument.");
            quote! {
                #[doc = #doc]
                #vis #ident: #ty
            }
        });
        let doc = format!(
            "Invocation of [`{}`] as a ferry function: one field per parameter. Send it with \
             `Context::call`, `spawn`, `map` or `as_completed`.",
            self.function.sig.ident
        );
        quote! {
            #[doc = #doc]
            #[derive(::ferry::__private::serde::Serialize, ::ferry::__private::serde::Deserialize)]
            #[serde(crate = "::ferry::__private::serde")]
            #vis struct #invocation {
                #(#fields,)*
            }
        }
    }

    /// `Debug` without the arguments' values (they need not be `Debug`).
    fn debug_impl(&self) -> TokenStream {
        let invocation = &self.invocation;
        quote! {
            impl ::core::fmt::Debug for #invocation {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.debug_struct(::core::stringify!(#invocation)).finish_non_exhaustive()
                }
            }
        }
    }

    /// `impl ferry::Function`: the descriptor and the body that runs the function.
    fn function_impl(&self) -> TokenStream {
        let invocation = &self.invocation;
        let fn_ident = &self.function.sig.ident;
        let name = self
            .options
            .name
            .clone()
            .unwrap_or_else(|| fn_ident.to_string());
        let (output_ty, output_name, into_outcome) = self.output();
        let param_descriptors = self.value_params().map(|p| {
            let name = p.ident.to_string();
            let ty = type_name(&p.ty);
            quote! { ::ferry::ParamDescriptor { name: #name, ty: #ty } }
        });
        // Bindings get their own names, so a parameter may share its function's name.
        let field_bindings = self.value_params().map(|p| {
            let ident = &p.ident;
            let binding = argument_binding(ident);
            quote!(#ident: #binding)
        });
        let call_args = self.params.iter().map(|p| match (p.is_context, p.by_ref) {
            (true, true) => quote!(&__ferry_ctx),
            (true, false) => quote!(::core::clone::Clone::clone(&__ferry_ctx)),
            (false, _) => {
                let binding = argument_binding(&p.ident);
                quote!(#binding)
            }
        });
        let is_async = self.function.sig.asyncness.is_some();
        let body = if is_async {
            quote! {
                ::ferry::__private::run_async(async move {
                    #into_outcome(#fn_ident(#(#call_args),*).await)
                })
            }
        } else if self.options.inline.is_some() {
            quote! {
                ::ferry::__private::run_inline(move || #into_outcome(#fn_ident(#(#call_args),*)))
            }
        } else {
            quote! {
                ::ferry::__private::run_blocking(move || #into_outcome(#fn_ident(#(#call_args),*)))
            }
        };
        let memory_mb = match self.options.memory_mb {
            Some(mb) => quote!(#mb),
            None => quote!(::ferry::FunctionConfig::DEFAULT.memory_mb),
        };
        let timeout = match self.options.timeout_ms {
            Some(ms) => quote!(::core::time::Duration::from_millis(#ms)),
            None => quote!(::ferry::FunctionConfig::DEFAULT.timeout),
        };
        let concurrency = match self.options.concurrency {
            Some(c) => quote!(#c),
            None => quote!(::ferry::FunctionConfig::DEFAULT.concurrency),
        };
        let idempotent = self.options.idempotent;
        quote! {
            impl ::ferry::Function for #invocation {
                type Output = #output_ty;

                const DESCRIPTOR: &'static ::ferry::FunctionDescriptor = &::ferry::FunctionDescriptor {
                    id: ::core::concat!(::core::module_path!(), "::", #name),
                    name: #name,
                    params: &[#(#param_descriptors),*],
                    output: #output_name,
                    config: ::ferry::FunctionConfig {
                        memory_mb: #memory_mb,
                        timeout: #timeout,
                        concurrency: #concurrency,
                        idempotent: #idempotent,
                    },
                    is_async: #is_async,
                    file: ::core::file!(),
                    line: ::core::line!(),
                };

                #[allow(unused_variables, clippy::used_underscore_binding)]
                fn run(
                    self,
                    __ferry_ctx: ::ferry::Context,
                ) -> ::ferry::__private::BoxFuture<'static, ::ferry::Result<Self::Output>> {
                    let Self { #(#field_bindings),* } = self;
                    #body
                }
            }
        }
    }

    /// A function of one parameter can be a flow stage: its output may feed it.
    fn stage_impl(&self) -> TokenStream {
        let mut values = self.value_params();
        let (Some(only), None) = (values.next(), values.next()) else {
            return quote!();
        };
        let invocation = &self.invocation;
        let ident = &only.ident;
        let ty = &only.ty;
        quote! {
            impl ::ferry::Stage for #invocation {
                type Input = #ty;

                fn from_input(input: #ty) -> Self {
                    Self { #ident: input }
                }
            }
        }
    }
}

fn check_signature(function: &ItemFn) -> syn::Result<()> {
    let sig = &function.sig;
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        let (generics, where_clause) = (&sig.generics, &sig.generics.where_clause);
        let only_lifetimes = sig
            .generics
            .params
            .iter()
            .all(|p| matches!(p, syn::GenericParam::Lifetime(_)));
        let message = if only_lifetimes && where_clause.is_none() {
            "`#[ferry::function]` cannot have lifetime parameters: arguments arrive over the wire and are deserialized into owned values"
        } else {
            "`#[ferry::function]` cannot be generic: a function invoked remotely needs one concrete signature"
        };
        return Err(syn::Error::new_spanned(
            quote!(#generics #where_clause),
            message,
        ));
    }
    if let Some(constness) = &sig.constness {
        return Err(syn::Error::new(
            constness.span(),
            "`#[ferry::function]` cannot be a `const fn`",
        ));
    }
    if let Some(unsafety) = &sig.unsafety {
        return Err(syn::Error::new(
            unsafety.span(),
            "`#[ferry::function]` cannot be an `unsafe fn`: a remote caller cannot uphold its contract",
        ));
    }
    if let Some(abi) = &sig.abi {
        return Err(syn::Error::new_spanned(
            abi,
            "`#[ferry::function]` cannot have an `extern` ABI",
        ));
    }
    if let Some(variadic) = &sig.variadic {
        return Err(syn::Error::new_spanned(
            variadic,
            "`#[ferry::function]` cannot be variadic",
        ));
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        if let Type::ImplTrait(_) = **ty {
            return Err(syn::Error::new_spanned(
                ty,
                "`#[ferry::function]` must name its return type: `impl Trait` cannot be sent over the wire",
            ));
        }
    }
    Ok(())
}

struct Param {
    ident: syn::Ident,
    ty: Type,
    is_context: bool,
    by_ref: bool,
}

fn collect_params(function: &ItemFn) -> syn::Result<Vec<Param>> {
    let mut params = Vec::new();
    let mut seen_context = false;
    for input in &function.sig.inputs {
        let typed = match input {
            FnArg::Receiver(receiver) => {
                return Err(syn::Error::new_spanned(
                    receiver,
                    "`#[ferry::function]` cannot take `self`: write a free function and pass the value as a parameter",
                ));
            }
            FnArg::Typed(typed) => typed,
        };
        let ident = match &*typed.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => pat.ident.clone(),
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    "`#[ferry::function]` parameters must be plain names such as `n: u32`: the name becomes the JSON field",
                ));
            }
        };
        if ident.to_string().starts_with("__ferry") {
            return Err(syn::Error::new(
                ident.span(),
                "parameter names starting with `__ferry` are reserved",
            ));
        }
        let (is_context, by_ref) = context_param(&typed.ty);
        if is_context {
            if seen_context {
                return Err(syn::Error::new_spanned(
                    &typed.ty,
                    "`#[ferry::function]` takes at most one `Context` parameter",
                ));
            }
            seen_context = true;
        } else {
            check_param_type(&typed.ty)?;
        }
        params.push(Param {
            ident,
            ty: (*typed.ty).clone(),
            is_context,
            by_ref,
        });
    }
    Ok(params)
}

fn check_param_type(ty: &Type) -> syn::Result<()> {
    match ty {
        Type::Reference(_) => Err(syn::Error::new_spanned(
            ty,
            "`#[ferry::function]` parameters must be owned values (e.g. `String`, `Vec<T>`): arguments are deserialized into them",
        )),
        Type::ImplTrait(_) => Err(syn::Error::new_spanned(
            ty,
            "`#[ferry::function]` parameters cannot be `impl Trait`: name a concrete serde type",
        )),
        Type::BareFn(_) | Type::TraitObject(_) => Err(syn::Error::new_spanned(
            ty,
            "`#[ferry::function]` parameters must be data: functions and trait objects cannot be sent over the wire",
        )),
        _ => Ok(()),
    }
}

/// `Context`, `ferry::Context` or `&Context` is the invocation context, not an argument.
fn context_param(ty: &Type) -> (bool, bool) {
    match ty {
        Type::Reference(reference) if reference.mutability.is_none() => {
            (is_context_path(&reference.elem), true)
        }
        other => (is_context_path(other), false),
    }
}

fn is_context_path(ty: &Type) -> bool {
    let Type::Path(path) = ty else { return false };
    if path.qself.is_some() {
        return false;
    }
    let segments: Vec<String> = path
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    matches!(
        segments
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice(),
        ["Context"] | ["ferry", "Context"]
    ) && path.path.segments.iter().all(|s| s.arguments.is_none())
}

enum OutputKind<'a> {
    Unit,
    Plain(&'a Type),
    /// A type named `Result`: the error travels as a user error; `ok` is its first argument.
    Result {
        ty: &'a Type,
        ok: Option<&'a Type>,
    },
}

impl<'a> OutputKind<'a> {
    fn of(output: &'a ReturnType) -> Self {
        let ReturnType::Type(_, ty) = output else {
            return Self::Unit;
        };
        if let Type::Tuple(tuple) = &**ty {
            if tuple.elems.is_empty() {
                return Self::Unit;
            }
        }
        if let Type::Path(path) = &**ty {
            if let Some(last) = path.path.segments.last() {
                if last.ident == "Result" {
                    let ok = match &last.arguments {
                        PathArguments::AngleBracketed(args) => {
                            args.args.iter().find_map(|arg| match arg {
                                GenericArgument::Type(t) => Some(t),
                                _ => None,
                            })
                        }
                        _ => None,
                    };
                    return Self::Result { ty, ok };
                }
            }
        }
        Self::Plain(ty)
    }
}

/// The local that holds argument `ident` inside the generated `run`.
fn argument_binding(ident: &syn::Ident) -> syn::Ident {
    let name = ident.to_string();
    format_ident!(
        "__ferry_arg_{}",
        name.trim_start_matches("r#"),
        span = ident.span()
    )
}

/// `count_queens` → `CountQueens`.
fn upper_camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = true;
    for c in snake.trim_start_matches("r#").chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    if out.is_empty() {
        out.push_str("Invocation");
    }
    out
}

/// The type as a human writes it: `Vec<u64>` rather than `Vec < u64 >`.
fn type_name(ty: &Type) -> String {
    let raw = quote!(#ty).to_string();
    let chars: Vec<char> = raw.chars().collect();
    let mut out = String::with_capacity(raw.len());
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let prev = i.checked_sub(1).map(|j| chars[j]);
            let next = chars.get(i + 1).copied();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            let keep = (word(prev) && word(next)) || prev == Some(',') || prev == Some(';');
            if keep {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{type_name, upper_camel};

    #[test]
    fn invocation_names() {
        assert_eq!(upper_camel("count_queens"), "CountQueens");
        assert_eq!(upper_camel("pi"), "Pi");
        assert_eq!(upper_camel("fib2_x"), "Fib2X");
    }

    #[test]
    fn type_names() {
        let ty: syn::Type = syn::parse_quote!(Vec<(u32, String)>);
        assert_eq!(type_name(&ty), "Vec<(u32, String)>");
        let ty: syn::Type = syn::parse_quote!(std::collections::HashMap<String, [u8; 4]>);
        assert_eq!(type_name(&ty), "std::collections::HashMap<String, [u8; 4]>");
    }
}
