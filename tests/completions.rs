//! `quiver completions <shell>` prints a completion script that knows the
//! subcommands and their flags; an unknown shell is refused with the choices.

use crate::support;

use std::process::Command;

fn completions(shell: &str) -> (bool, String, String) {
    let output = Command::new(support::quiver_bin())
        .args(["completions", shell])
        .output()
        .expect("run quiver completions");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn bash_zsh_and_fish_scripts_know_the_subcommands_and_flags() {
    for (shell, marker) in [
        ("bash", "complete -F _quiver"),
        ("zsh", "#compdef quiver"),
        ("fish", "complete -c quiver"),
    ] {
        let (ok, script, stderr) = completions(shell);
        assert!(ok, "{shell}: {stderr}");
        assert!(script.contains(marker), "{shell} script lacks `{marker}`");
        for word in ["control-plane", "completions", "reset-upstreams", "catalog"] {
            assert!(script.contains(word), "{shell} script lacks `{word}`");
        }
        assert!(
            !script.contains("__worker"),
            "the hidden worker command leaked"
        );
    }
}

#[test]
fn an_unknown_shell_is_refused_with_the_choices() {
    let (ok, _, stderr) = completions("tcsh");
    assert!(!ok);
    assert!(
        stderr.contains("bash") && stderr.contains("fish"),
        "{stderr}"
    );
}
