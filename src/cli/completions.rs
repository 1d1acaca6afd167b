//! `quiver completions <shell>`: prints a completion script for bash, zsh,
//! fish, elvish or PowerShell, generated from the same clap definition the
//! binary parses with, so it never falls behind the flags. Hidden subcommands
//! (the sandbox worker) are left out.

use std::io::Write as _;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

/// Arguments of `quiver completions`.
#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    shell: Shell,
}

/// Writes the completion script for `C` (the top-level parser) to stdout.
pub fn run<C: CommandFactory>(args: CompletionsArgs) -> anyhow::Result<()> {
    let full = C::command();
    // clap_complete offers hidden subcommands too: rebuild without them.
    let visible: Vec<clap::Command> = full
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    let mut command = clap::Command::new("quiver")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommands(visible);
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "quiver", &mut script);
    match std::io::stdout().write_all(&script) {
        // `quiver completions bash | head` closing the pipe early is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}
