//! The value of `quiver ctl secret set`, read from standard input so it never
//! appears in a command line, a shell history or a process listing. A
//! terminal is refused (what is typed would be echoed), as is an empty value.

use std::io::{IsTerminal as _, Read};

use anyhow::Context as _;
use quiver_control_plane::cluster_key::MAX_SECRET_BYTES;
use quiver_upstream::SecretValue;

/// Reads the secret `name` of `tenant` from this process's standard input.
pub(crate) fn read_from_stdin(tenant: &str, name: &str) -> anyhow::Result<SecretValue> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        anyhow::bail!(
            "`secret set` reads the value from standard input, and a terminal would echo it; pipe it in, e.g. `read -rs V && printf %s \"$V\" | quiver ctl secret set --tenant {tenant} {name}`"
        );
    }
    read_value(stdin.lock(), tenant, name)
}

/// The value in `input`: one trailing newline (`\n` or `\r\n`) is dropped;
/// empty, over-long and non-UTF-8 values are refused without being shown.
fn read_value(input: impl Read, tenant: &str, name: &str) -> anyhow::Result<SecretValue> {
    let mut bytes = Vec::new();
    // One byte past the limit is enough to tell "too long".
    input
        .take(MAX_SECRET_BYTES as u64 + 3)
        .read_to_end(&mut bytes)
        .context("reading the secret from standard input")?;
    for ending in [&b"\r\n"[..], b"\n"] {
        if bytes.ends_with(ending) {
            bytes.truncate(bytes.len() - ending.len());
            break;
        }
    }
    if bytes.is_empty() {
        anyhow::bail!(
            "no value on standard input for secret `{name}`; pipe it in, e.g. `printf %s \"$V\" | quiver ctl secret set --tenant {tenant} {name}`"
        );
    }
    if bytes.len() > MAX_SECRET_BYTES {
        anyhow::bail!("secret `{name}` is longer than {MAX_SECRET_BYTES} bytes");
    }
    let text = String::from_utf8(bytes).map_err(|not_text| {
        let mut bytes = not_text.into_bytes();
        bytes.fill(0);
        anyhow::anyhow!("secret `{name}` is not UTF-8 text")
    })?;
    Ok(SecretValue::new(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_trailing_newline_is_dropped_and_nothing_else() {
        let read =
            |input: &str| read_value(input.as_bytes(), "t", "N").map(|v| v.expose().to_string());
        assert_eq!(read("tok\n").unwrap(), "tok");
        assert_eq!(read("tok\r\n").unwrap(), "tok");
        assert_eq!(read(" tok \n\n").unwrap(), " tok \n");
        assert_eq!(read("tok").unwrap(), "tok");
    }

    #[test]
    fn empty_long_and_binary_values_are_refused_without_being_shown() {
        for input in [&b""[..], b"\n"] {
            let error = read_value(input, "acme", "API_TOKEN")
                .unwrap_err()
                .to_string();
            assert!(error.contains("--tenant acme API_TOKEN"), "{error}");
        }
        let long = vec![b'x'; MAX_SECRET_BYTES + 1];
        assert!(read_value(&long[..], "t", "N").is_err());
        let error = read_value(&b"\xff\xfesecretish"[..], "t", "N")
            .unwrap_err()
            .to_string();
        assert!(!error.contains("secretish"), "{error}");
    }
}
