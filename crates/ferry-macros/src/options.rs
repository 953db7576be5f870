//! The options of `#[ferry::function(...)]`, validated at compile time.

use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Lit, Meta, MetaNameValue, Token};

const KNOWN: &str =
    "`name`, `memory_mb`, `timeout`, `concurrency`, `invocation`, `idempotent`, `inline`";

/// The options written alone.
const FLAGS: [&str; 2] = ["idempotent", "inline"];

/// What the user wrote; every field is optional and defaults live in `ferry`.
#[derive(Default)]
pub struct FunctionOptions {
    pub name: Option<String>,
    pub memory_mb: Option<u32>,
    pub timeout_ms: Option<u64>,
    pub concurrency: Option<u32>,
    /// The invocation type's name, when the default (UpperCamelCase of the fn) is taken.
    pub invocation: Option<syn::Ident>,
    /// The `idempotent` flag.
    pub idempotent: bool,
    /// The `inline` flag, and where it was written.
    pub inline: Option<proc_macro2::Span>,
}

impl FunctionOptions {
    pub fn parse(args: TokenStream) -> syn::Result<Self> {
        if args.is_empty() {
            return Ok(Self::default());
        }
        let metas = syn::parse2::<OptionList>(args)?.0;
        let mut options = Self::default();
        for meta in metas {
            let pair = match meta {
                Meta::Path(path) if path.is_ident("idempotent") => {
                    if std::mem::replace(&mut options.idempotent, true) {
                        return Err(syn::Error::new_spanned(path, "`idempotent` is given twice"));
                    }
                    continue;
                }
                Meta::Path(path) if path.is_ident("inline") => {
                    let span = syn::spanned::Spanned::span(&path);
                    if options.inline.replace(span).is_some() {
                        return Err(syn::Error::new_spanned(path, "`inline` is given twice"));
                    }
                    continue;
                }
                Meta::NameValue(pair) if FLAGS.iter().any(|flag| pair.path.is_ident(flag)) => {
                    let flag = pair.key();
                    return Err(syn::Error::new_spanned(
                        pair,
                        format!("`{flag}` is a flag: write `{flag}` alone, or leave it out"),
                    ));
                }
                Meta::NameValue(pair) => pair,
                other => {
                    return Err(syn::Error::new_spanned(
                        other,
                        format!("expected `key = value` options or a flag ({KNOWN})"),
                    ));
                }
            };
            let key = pair
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            let value = &pair.value;
            match key.as_str() {
                "name" => {
                    let name = pair.string()?;
                    validate_name(&name, value)?;
                    set_once(&mut options.name, name, &pair)?;
                }
                "memory_mb" => {
                    let mb = pair.positive_u32()?;
                    if !(16..=65_536).contains(&mb) {
                        return Err(syn::Error::new_spanned(
                            value,
                            "`memory_mb` must be between 16 and 65536",
                        ));
                    }
                    set_once(&mut options.memory_mb, mb, &pair)?;
                }
                "timeout" => {
                    let ms = match &pair.value {
                        Expr::Lit(ExprLit {
                            lit: Lit::Str(s), ..
                        }) => parse_duration_ms(&s.value()).map_err(|m| {
                            syn::Error::new_spanned(value, format!("invalid `timeout`: {m}"))
                        })?,
                        Expr::Lit(ExprLit {
                            lit: Lit::Int(i), ..
                        }) => i.base10_parse::<u64>()?.saturating_mul(1000),
                        _ => {
                            return Err(syn::Error::new_spanned(
                                value,
                                "`timeout` takes a duration such as `\"30s\"`, `\"500ms\"` or `\"2m\"`",
                            ));
                        }
                    };
                    if ms == 0 {
                        return Err(syn::Error::new_spanned(
                            value,
                            "`timeout` must be greater than zero",
                        ));
                    }
                    set_once(&mut options.timeout_ms, ms, &pair)?;
                }
                "concurrency" => {
                    let c = pair.positive_u32()?;
                    set_once(&mut options.concurrency, c, &pair)?;
                }
                "invocation" => {
                    let text = pair.string()?;
                    let ident = syn::parse_str::<syn::Ident>(&text)
                        .ok()
                        .filter(|ident| ident != "Self")
                        .ok_or_else(|| {
                            syn::Error::new_spanned(
                                value,
                                "`invocation` must be a type name such as `\"CountQueensTask\"`",
                            )
                        })?;
                    let span = syn::spanned::Spanned::span(value);
                    let ident = syn::Ident::new(&ident.to_string(), span);
                    set_once(&mut options.invocation, ident, &pair)?;
                }
                _ => {
                    return Err(syn::Error::new_spanned(
                        &pair.path,
                        format!("unknown `#[ferry::function]` option; expected one of {KNOWN}"),
                    ));
                }
            }
        }
        Ok(options)
    }
}

struct OptionList(Punctuated<Meta, Token![,]>);

impl Parse for OptionList {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        Punctuated::parse_terminated(input)
            .map(OptionList)
            .map_err(|e| {
                syn::Error::new(
                    e.span(),
                    format!("expected `key = value` options or a flag ({KNOWN})"),
                )
            })
    }
}

trait PairExt {
    fn key(&self) -> String;
    fn string(&self) -> syn::Result<String>;
    fn positive_u32(&self) -> syn::Result<u32>;
}

impl PairExt for MetaNameValue {
    fn key(&self) -> String {
        let path = &self.path;
        quote!(#path).to_string()
    }

    fn string(&self) -> syn::Result<String> {
        match &self.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => Ok(s.value()),
            other => Err(syn::Error::new_spanned(
                other,
                format!("`{}` takes a string literal", self.key()),
            )),
        }
    }

    fn positive_u32(&self) -> syn::Result<u32> {
        let value = match &self.value {
            Expr::Lit(ExprLit {
                lit: Lit::Int(i), ..
            }) => i.base10_parse::<u32>()?,
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    format!("`{}` takes a positive integer literal", self.key()),
                ));
            }
        };
        if value == 0 {
            return Err(syn::Error::new_spanned(
                &self.value,
                format!("`{}` must be greater than zero", self.key()),
            ));
        }
        Ok(value)
    }
}

fn set_once<T>(slot: &mut Option<T>, value: T, pair: &MetaNameValue) -> syn::Result<()> {
    if slot.replace(value).is_some() {
        return Err(syn::Error::new_spanned(
            &pair.path,
            format!("`{}` is given twice", pair.key()),
        ));
    }
    Ok(())
}

fn validate_name(name: &str, value: &Expr) -> syn::Result<()> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        Ok(())
    } else {
        Err(syn::Error::new_spanned(
            value,
            "`name` must start with a letter and hold at most 64 ASCII letters, digits, `_` or `-` (platforms reject other names)",
        ))
    }
}

/// Parses `"250ms"`, `"30s"`, `"2m"`, `"1h"` or a bare number of seconds.
pub fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let value: u64 = digits.parse().map_err(|_| {
        format!("expected a number and a unit such as `\"30s\"` or `\"500ms\"`, found `\"{text}\"`")
    })?;
    let scale = match unit.trim() {
        "ms" => 1,
        "" | "s" => 1000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        other => {
            return Err(format!("unknown unit `{other}`; use `ms`, `s`, `m` or `h`"));
        }
    };
    Ok(value.saturating_mul(scale))
}

#[cfg(test)]
mod tests {
    use super::parse_duration_ms;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("30s"), Ok(30_000));
        assert_eq!(parse_duration_ms("250ms"), Ok(250));
        assert_eq!(parse_duration_ms("2m"), Ok(120_000));
        assert_eq!(parse_duration_ms("7"), Ok(7_000));
        assert!(parse_duration_ms("3 weeks").is_err());
        assert!(parse_duration_ms("s").is_err());
    }
}
