//! Which crate names `ferry new` accepts: cargo's rules for a package whose library and binary
//! share its name, plus the names that would clash with ferry itself.

use anyhow::bail;

/// Rust's keywords: the library's name must be an identifier.
const KEYWORDS: &[&str] = &[
    "_", "abstract", "as", "async", "await", "become", "box", "break", "const", "continue",
    "crate", "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if",
    "impl", "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub",
    "ref", "return", "self", "static", "struct", "super", "trait", "true", "try", "type", "typeof",
    "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// Names taken by the standard library's crates, cargo's own directories in `target/`, and
/// ferry (a crate cannot depend on a crate of its own name).
const RESERVED: &[&str] = &[
    "alloc",
    "core",
    "proc_macro",
    "std",
    "test",
    "build",
    "deps",
    "examples",
    "incremental",
    "ferry",
    "ferry_macros",
];

/// Checks `name` as the name of a new package with a library and a binary of that name.
pub fn check(name: &str) -> anyhow::Result<()> {
    let Some(first) = name.chars().next() else {
        bail!("the crate name is empty");
    };
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        bail!(
            "`{name}` is not a valid crate name: `{bad}` is not allowed; use letters, digits, `-` and `_`"
        );
    }
    if !(first.is_ascii_alphabetic() || first == '_') {
        bail!("`{name}` is not a valid crate name: it must start with a letter or `_`");
    }
    let ident = ident(name);
    if KEYWORDS.contains(&ident.as_str()) {
        bail!("`{name}` is not a valid crate name: it is a Rust keyword");
    }
    if RESERVED.contains(&ident.to_ascii_lowercase().as_str()) {
        bail!("`{name}` is not a valid crate name: it is taken (by Rust, cargo or ferry)");
    }
    Ok(())
}

/// The library's name in Rust code: `-` becomes `_`, as cargo does.
pub fn ident(name: &str) -> String {
    name.replace('-', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_names() {
        for name in ["wordcount", "word-count", "word_count", "_x", "a1"] {
            check(name).unwrap();
        }
    }

    #[test]
    fn refuses_names_cargo_or_rust_would_refuse() {
        for (name, reason) in [
            ("", "empty"),
            ("1up", "must start with a letter"),
            ("-x", "must start with a letter"),
            ("my app", "` ` is not allowed"),
            ("café", "`é` is not allowed"),
            ("fn", "keyword"),
            ("std", "taken"),
            ("ferry", "taken"),
            ("ferry-macros", "taken"),
        ] {
            let error = check(name).unwrap_err().to_string();
            assert!(error.contains(reason), "{name:?}: {error}");
        }
    }
}
