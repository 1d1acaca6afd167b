//! `quiver completions <shell>`: prints a completion script for bash, zsh,
//! fish, elvish or PowerShell, generated from the same clap definition the
//! binary parses with, so it never falls behind the flags.

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
    let mut command = C::command();
    let name = command.get_name().to_string();
    clap_complete::generate(args.shell, &mut command, name, &mut std::io::stdout());
    Ok(())
}
