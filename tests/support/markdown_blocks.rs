//! The fenced code blocks of a Markdown file, and the commands of a shell
//! block, as the documentation tests (`tests/doc_blocks.rs`) run them.

/// One fenced code block.
#[derive(Debug, Clone)]
pub struct CodeBlock {
    /// The first word of its info string (`sh`, `python`, `json`, `js`), or
    /// empty.
    pub lang: String,
    /// What lies between its fences, ending with a newline.
    pub text: String,
    /// The line of its opening fence, from 1.
    pub line: usize,
}

/// Every fenced block of `markdown`, in order.
pub fn code_blocks(markdown: &str) -> Vec<CodeBlock> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, usize, Vec<&str>)> = None;
    for (i, line) in markdown.lines().enumerate() {
        match (line.trim_start().strip_prefix("```"), open.take()) {
            (Some(info), None) => {
                let lang = info.split_whitespace().next().unwrap_or("").to_string();
                open = Some((lang, i + 1, Vec::new()));
            }
            (Some(_), Some((lang, line, body))) => blocks.push(CodeBlock {
                lang,
                text: body.join("\n") + "\n",
                line,
            }),
            (None, Some((lang, at, mut body))) => {
                body.push(line);
                open = Some((lang, at, body));
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "a code fence is never closed");
    blocks
}

/// The commands of a shell block: lines continued with `\` joined, blank
/// lines and whole-line comments left out.
pub fn shell_commands(block: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut current = String::new();
    for line in block.lines() {
        let trimmed = line.trim();
        if current.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        match line.trim_end().strip_suffix('\\') {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(line);
                commands.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        commands.push(current);
    }
    commands
}

/// `command` without a trailing `# comment` (a `#` after whitespace, outside
/// quotes), trimmed.
pub fn without_comment(command: &str) -> &str {
    let (mut single, mut double) = (false, false);
    let mut previous = ' ';
    for (i, c) in command.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && previous.is_whitespace() => {
                return command[..i].trim();
            }
            _ => {}
        }
        previous = c;
    }
    command.trim()
}

/// Whether a command starts a process that keeps running: one sent to the
/// background with `&`, or a `quiver` role (`dev`, `edge`, `executor`,
/// `control-plane`), which a reader runs in a terminal of its own.
pub fn starts_a_server(command: &str) -> bool {
    let command = without_comment(command);
    if command.ends_with('&') && !command.ends_with("&&") {
        return true;
    }
    quiver_role(command).is_some()
}

/// The role a command runs, when it runs `quiver <role>` (after any
/// `NAME=value` assignments).
pub fn quiver_role(command: &str) -> Option<&str> {
    let mut words = without_comment(command)
        .split_whitespace()
        .skip_while(|w| w.contains('=') && !w.starts_with('-'));
    let program = words.next()?;
    let role = words.next()?;
    (program == "quiver" || program.ends_with("/quiver"))
        .then_some(role)
        .filter(|r| ["dev", "edge", "executor", "control-plane"].contains(r))
}

/// The words of a line with what varies between runs blurred: runs of
/// digits become `#` and absolute paths `/`. A sample in the documentation
/// matches a real line when their shapes agree.
pub fn shape(line: &str) -> Vec<String> {
    line.split_whitespace()
        .map(|word| {
            if word.starts_with('/') {
                return "/".to_string();
            }
            let mut out = String::new();
            let mut in_digits = false;
            for c in word.chars() {
                if c.is_ascii_digit() {
                    if !in_digits {
                        out.push('#');
                    }
                    in_digits = true;
                } else {
                    out.push(c);
                    in_digits = false;
                }
            }
            out
        })
        .collect()
}

/// Whether the real `line` has the shape of `sample`; a sample ending in `…`
/// matches any line that begins like it.
pub fn matches_sample(sample: &str, line: &str) -> bool {
    let (sample, open_ended) = match sample.trim_end().strip_suffix('…') {
        Some(head) => (head, true),
        None => (sample, false),
    };
    let (want, got) = (shape(sample), shape(line));
    if open_ended {
        got.len() >= want.len() && got[..want.len()] == want[..]
    } else {
        got == want
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_keep_their_language_text_and_line() {
        let md = "# T\n\n```sh\necho a \\\n  b   # say\n# only a comment\n\nls &\n```\n\ntext\n```\nout 1\n```\n";
        let blocks = code_blocks(md);
        assert_eq!(blocks.len(), 2);
        assert_eq!((blocks[0].lang.as_str(), blocks[0].line), ("sh", 3));
        assert_eq!((blocks[1].lang.as_str(), blocks[1].line), ("", 12));
        let commands = shell_commands(&blocks[0].text);
        assert_eq!(commands, vec!["echo a    b   # say", "ls &"]);
        assert!(!starts_a_server(&commands[0]));
        assert!(starts_a_server(&commands[1]));
    }

    #[test]
    fn quiver_roles_are_servers_and_ctl_is_not() {
        assert!(starts_a_server(
            "OTEL_X=1 target/release/quiver dev --executor child"
        ));
        assert!(starts_a_server("quiver control-plane --node-id 1 &"));
        assert!(!starts_a_server("target/release/quiver ctl cluster status"));
        assert!(!starts_a_server("a && b"));
        assert_eq!(
            without_comment("curl -d '{\"a\":\"#x\"}' | head   # note"),
            "curl -d '{\"a\":\"#x\"}' | head"
        );
    }

    #[test]
    fn samples_match_lines_that_differ_only_in_numbers_and_paths() {
        assert!(matches_sample(
            "leader 1  term 1  last log 7  snapshot -  manifest v0 …",
            "leader 2 term 3 last log 19 snapshot - manifest v4 upstreams 0"
        ));
        assert!(matches_sample(
            "model /root/.cache/m",
            "model /home/u/.cache/m"
        ));
        assert!(!matches_sample(
            "2   127.0.0.1:7402   follower  up",
            "2 127.0.0.1:7402 learner up"
        ));
        assert!(!matches_sample("a b", "a b c"));
    }
}
