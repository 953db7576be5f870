//! The images of blackbox actions: their names read as OpenWhisk reads them (`ImageName` in
//! `ExecManifest.scala`).

/// An image name: `[registry/][prefix/]name[:tag][@digest]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ImageName {
    registry: Option<String>,
    /// `prefix/name`.
    repository: String,
    tag: Option<String>,
}

impl ImageName {
    /// Parses as `ImageName.fromString` does (Docker's reference grammar, with a registry being
    /// a dotted host, with or without a port, or any host with a port); `None` where the
    /// controller answers "could not parse image name".
    pub(super) fn parse(text: &str) -> Option<Self> {
        let (name, digest) = match text.split_once('@') {
            Some((name, digest)) => (name, Some(digest)),
            None => (text, None),
        };
        if digest.is_some_and(|digest| !is_digest(digest)) {
            return None;
        }
        let (registry, rest) = match name.split_once('/') {
            Some((first, rest)) if is_domain(first) => (Some(first.to_owned()), rest),
            _ => (None, name),
        };
        let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match rest[last_slash..].rfind(':') {
            Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
            None => (rest, None),
        };
        if !repository.split('/').all(is_path_component) || tag.is_some_and(|t| !is_tag(t)) {
            return None;
        }
        Some(Self {
            registry,
            repository: repository.to_owned(),
            tag: tag.map(str::to_owned),
        })
    }

    /// `resolveImageName()`: the name as the controller stores it and the invoker pulls it (a
    /// digest is not kept).
    pub(super) fn resolved(&self) -> String {
        let mut text = String::new();
        if let Some(registry) = &self.registry {
            text.push_str(registry);
            text.push('/');
        }
        text.push_str(&self.repository);
        if let Some(tag) = self.tag.as_deref().filter(|t| !t.is_empty()) {
            text.push(':');
            text.push_str(tag);
        }
        text
    }
}

/// `domain-component ('.' domain-component)+ (':' port)?` or `domain-component (':' port)`.
fn is_domain(text: &str) -> bool {
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (text, None),
    };
    if port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return false;
    }
    let components: Vec<&str> = host.split('.').collect();
    let valid = components
        .iter()
        .all(|c| c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    valid && (components.len() >= 2 || port.is_some())
}

/// `[a-z0-9]+ (([_.]|__|-+) [a-z0-9]+)*`.
fn is_path_component(text: &str) -> bool {
    let bytes = text.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if bytes.is_empty() || !alnum(&bytes[0]) || !alnum(&bytes[bytes.len() - 1]) {
        return false;
    }
    let mut separator = String::new();
    for &b in bytes {
        if alnum(&b) {
            let allowed = separator.is_empty()
                || matches!(separator.as_str(), "_" | "." | "__")
                || separator.bytes().all(|s| s == b'-');
            if !allowed {
                return false;
            }
            separator.clear();
        } else if matches!(b, b'_' | b'.' | b'-') {
            separator.push(b as char);
        } else {
            return false;
        }
    }
    true
}

/// `[\w][\w.-]{0,127}`.
fn is_tag(text: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && word(bytes[0])
        && bytes.iter().all(|&b| word(b) || b == b'.' || b == b'-')
}

/// `algorithm:hex` with at least 32 hex digits.
fn is_digest(text: &str) -> bool {
    text.split_once(':').is_some_and(|(algorithm, hex)| {
        algorithm
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic())
            && algorithm
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-' | b'_'))
            && hex.len() >= 32
            && hex.bytes().all(|b| b.is_ascii_hexdigit())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_as_openwhisk_parses_them() {
        let name = ImageName::parse("127.0.0.1:5000/ferry/app-fixture:v1.2").unwrap();
        assert_eq!(
            name,
            ImageName {
                registry: Some("127.0.0.1:5000".into()),
                repository: "ferry/app-fixture".into(),
                tag: Some("v1.2".into()),
            }
        );
        assert_eq!(name.resolved(), "127.0.0.1:5000/ferry/app-fixture:v1.2");
        // A first part without a dot or a port is a prefix, not a registry.
        let hub = ImageName::parse("openwhisk/dockerskeleton").unwrap();
        assert_eq!(hub.registry, None);
        assert_eq!(hub.resolved(), "openwhisk/dockerskeleton");
        for registry in ["localhost:5000", "registry.example.com"] {
            let name = ImageName::parse(&format!("{registry}/x")).unwrap();
            assert_eq!(name.registry.as_deref(), Some(registry));
        }
        // A digest is read and not kept.
        let digest = format!("reg.io/x:1@sha256:{}", "a".repeat(64));
        assert_eq!(ImageName::parse(&digest).unwrap().resolved(), "reg.io/x:1");
        for bad in [
            "Upper/case",
            "x:",
            "x::1",
            "",
            "a//b",
            "x@sha256:12",
            "-x",
            "x y",
        ] {
            assert_eq!(ImageName::parse(bad), None, "{bad}");
        }
    }
}
