//! How a failed HTTP request is told, wherever one is: its causes that say what failed.

/// What an HTTP error's causes say actually failed (refused, DNS, TLS…), without the wrappers
/// that only repeat that a request failed.
pub fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(cause) = next {
        let text = cause.to_string();
        let wrapper =
            text.starts_with("error sending request") || text.starts_with("client error (");
        if !wrapper && !parts.iter().any(|part| part.contains(&text)) {
            parts.push(text);
        }
        next = cause.source();
    }
    match parts.is_empty() {
        true => error.to_string(),
        false => parts.join(": "),
    }
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|cause| cause as _)
        }
    }

    #[test]
    fn the_wrappers_go_and_each_cause_is_said_once() {
        let tls = Layer("invalid peer certificate: UnknownIssuer", None);
        let connect = Layer("client error (Connect)", Some(Box::new(tls)));
        let request = Layer(
            "error sending request for url (https://example.test/mcp)",
            Some(Box::new(connect)),
        );
        assert_eq!(
            describe(&request),
            "invalid peer certificate: UnknownIssuer"
        );
        let alone = Layer(
            "error sending request for url (https://example.test/mcp)",
            None,
        );
        assert_eq!(
            describe(&alone),
            "error sending request for url (https://example.test/mcp)"
        );
    }
}
