//! The templates: files under `templates/`, built into the binary, with `{{name}}` (the package),
//! `{{crate}}` (the library in Rust code) and `{{ferry}}` (the dependency line) filled in.

/// What a new crate starts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Template {
    /// A word count fanned out over functions with `ctx.map`.
    Fanout,
    /// An axum web app whose handlers call functions.
    Web,
    /// A three-stage flow, each stage invoking the next.
    Flow,
}

/// One file of a template.
#[derive(Debug)]
pub struct File {
    /// Where it goes in the crate.
    pub path: &'static str,
    pub text: &'static str,
}

macro_rules! files {
    ($template:literal: $($path:literal),* $(,)?) => {
        vec![
            File { path: "Cargo.toml", text: include_str!("templates/Cargo.toml.in") },
            File { path: ".gitignore", text: include_str!("templates/gitignore") },
            $(File {
                path: $path,
                text: include_str!(concat!("templates/", $template, "/", $path)),
            },)*
        ]
    };
}

impl Template {
    pub fn name(self) -> &'static str {
        match self {
            Self::Fanout => "fanout",
            Self::Web => "web",
            Self::Flow => "flow",
        }
    }

    pub fn files(self) -> Vec<File> {
        match self {
            Self::Fanout => {
                files!("fanout": "README.md", "src/lib.rs", "src/main.rs", "tests/inline.rs", "tests/local.rs")
            }
            Self::Web => {
                files!("web": "README.md", "src/lib.rs", "src/main.rs", "tests/inline.rs", "tests/local.rs")
            }
            Self::Flow => {
                files!("flow": "README.md", "src/lib.rs", "src/main.rs", "tests/inline.rs", "tests/local.rs")
            }
        }
    }

    /// The commands to try first, and what they do.
    pub fn next_steps(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Fanout => &[
                ("cargo run", "the fan-out, on local worker processes"),
                (
                    "cargo run -- --backend inline",
                    "the same program in one process",
                ),
                ("cargo test", "unit, inline and local-platform tests"),
            ],
            Self::Web => &[
                ("cargo run", "the app on http://127.0.0.1:8080"),
                (
                    "curl localhost:8080/hello/ferry",
                    "a handler calling a function",
                ),
                ("cargo test", "unit, inline and local-platform tests"),
            ],
            Self::Flow => &[
                ("cargo run", "the flow, chained over local worker processes"),
                (
                    "cargo run -- --backend inline",
                    "the same program in one process",
                ),
                ("cargo test", "unit, inline and local-platform tests"),
            ],
        }
    }
}

/// What the placeholders become.
#[derive(Debug)]
pub struct Values {
    /// The package (and binary) name.
    pub name: String,
    /// The library's name in Rust code.
    pub ident: String,
    /// The `ferry = …` dependency line.
    pub ferry: String,
}

impl Values {
    pub fn render(&self, text: &str) -> String {
        text.replace("{{name}}", &self.name)
            .replace("{{crate}}", &self.ident)
            .replace("{{ferry}}", &self.ferry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum as _;

    /// Every placeholder of every file is one `render` knows.
    #[test]
    fn renders_every_placeholder() {
        let values = Values {
            name: "my-app".into(),
            ident: "my_app".into(),
            ferry: "ferry = \"0.1.0\"".into(),
        };
        for template in Template::value_variants() {
            for file in template.files() {
                let text = values.render(file.text);
                let left = text.match_indices("{{").find(|(at, _)| {
                    let rest = &text[at + 2..];
                    rest.find("}}").is_some_and(|end| {
                        end > 0 && rest[..end].chars().all(|c| c.is_ascii_lowercase())
                    })
                });
                assert!(
                    left.is_none(),
                    "{} of {}: a placeholder is left",
                    file.path,
                    template.name()
                );
            }
        }
    }
}
