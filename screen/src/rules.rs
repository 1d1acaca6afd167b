//! The text rules: each a regular expression over folded text (lower case,
//! white space folded, invisible characters dropped; see
//! [`crate::text::Folded`]) with an id and a severity. They look for what a
//! definition says to the model, not for words: an instruction to read a
//! key file, to send data to an address, to keep something from the user, to
//! set earlier instructions aside, to avoid other tools or to run a shell.
//! English and Chinese (the languages of the catalogues Quiver is measured
//! on) throughout; the override and concealment rules also in Spanish,
//! French, German, Portuguese, Italian, Russian and Japanese.

use quiver_proto::finding::Severity;
use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

/// One text rule.
pub struct Rule {
    /// Its id, as findings and docs/security.md name it.
    pub id: &'static str,
    /// The severity of a match.
    pub severity: Severity,
    /// Whether a match, on its own, is an instruction aimed at the model
    /// (which makes a pseudo-system tag or a hidden comment around it high).
    pub directive: bool,
    /// The pattern, over folded text.
    pub pattern: &'static str,
    /// A match this pattern also matches is not a finding.
    pub unless: Option<&'static str>,
}

/// Sensitive files and places: keys, credential stores, agent configs.
const SECRET_PATHS: &str = r"(~/\.ssh|\.ssh/|\bid_(rsa|dsa|ecdsa|ed25519)\b|/etc/(passwd|shadow|sudoers)\b|\.aws/credentials|\.aws/config|(^|[\s/'`])\.env\b|\bmcp\.json\b|claude_desktop_config|\.cursor/|\.npmrc\b|\.pypirc\b|\.netrc\b|\.git-credentials|\.bash_history|\.zsh_history|\.kube/config|\.docker/config\.json|\bwallet\.dat\b|\bkeychain\b|\bauthorized_keys\b|\.gnupg|\.config/gcloud|\bcredentials\.json\b|\bsecrets?\.(ya?ml|json|toml)\b)";

/// Sensitive things named in words.
const SECRET_WORDS: &str = r"((private|secret|ssh|api|access|auth|bearer|refresh|session|signing|encryption)[ _-]?(keys?|tokens?)|passwords?|passphrases?|passcodes?|credentials?|\bsecrets?\b|cookies?|seed phrases?|mnemonic|recovery phrase|credit card( numbers?)?|social security|\bssn\b|(entire|whole|full|complete) (conversation|chat)|(conversation|chat|message) (history|log|logs|transcript)|previous messages|all (of the |the )?(previous |prior )?messages|system prompt|environment variables|\benv vars\b|\.env file)";

/// Verbs that move data somewhere.
const MOVE_VERBS: &str = r"\b(read|cat|open|load|include|includ(es|ing)|pass|passing|send|sending|forward|provide|attach|append|add|insert|embed|copy|upload|post|leak|exfiltrate|extract|collect|gather|dump|share|transmit|put|fill|supply|paste|email|report|retrieve|fetch|grab|obtain)\b";

/// Where a message or data could be sent: an e-mail address, a URL, a
/// wallet address.
const ADDRESS: &str = r"([a-z0-9._%+-]+@[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z]{2,}|https?://|\b0x[0-9a-f]{40}\b|\bwebhook\b)";

/// The rules. Several patterns may share an id.
pub fn table() -> Vec<Rule> {
    let high = Severity::High;
    let medium = Severity::Medium;
    let mut rules = vec![
        // Setting earlier instructions aside.
        directive(
            "instruction-override",
            high,
            r"\b(ignore|disregard|forget|override|bypass|neglect)\b[^.!?\n]{0,40}\b(previous|prior|above|earlier|preceding|all|any|other|existing|original|system|safety|security|user'?s?)\b[^.!?\n]{0,25}\b(instructions?|prompts?|rules|directions|guidelines|directives|guardrails|polic(y|ies)|constraints|restrictions|commands|orders)\b",
        ),
        directive(
            "instruction-override",
            high,
            r"\b(ignore|disregard|forget|override|overrides|overriding|bypass|replace|replaces)\b[^.!?\n]{0,30}\b(default|built-in|initial|current|your|the assistant'?s?|the model'?s?|assistant|agent)\b[^.!?\n]{0,15}\b(instructions|system prompts?|prompts|directives|guidelines|guardrails)\b",
        ),
        directive(
            "instruction-override",
            high,
            r"\b(new|updated|real|actual|true|hidden|secret|additional) (system )?(instructions?|directives?|orders)\b ?(:|follow|are)|\byou are now\b|\bfrom now on\b[^.!?\n]{0,30}\b(you|always|never|must)\b|\b(jailbreak|developer mode|dan mode)\b",
        ),
        directive(
            "instruction-override",
            high,
            r"(忽略|无视|忽视|忘记|忘掉|不要理会|不要遵守|覆盖|绕过)[^。！？\n]{0,12}(之前|以上|先前|上述|前面|所有|全部|其他|系统|原有|用户)[^。！？\n]{0,8}(指令|指示|说明|提示|规则|要求|命令|限制)|ignora[^.\n]{0,20}(las |todas las )?instrucciones (anteriores|previas)|ignore[zr]?[^.\n]{0,20}(les |toutes les )?instructions (précédentes|antérieures)|ignoriere[^.\n]{0,20}(alle )?(vorherigen|bisherigen|obigen) (anweisungen|instruktionen)|ignore[^.\n]{0,20}(as |todas as )?instruções (anteriores|prévias)|ignora[^.\n]{0,20}(le |tutte le )?istruzioni (precedenti|previe)|игнорируй[^.\n]{0,20}(все )?(предыдущие )?инструкции|(以前|前|上記)の(指示|命令)を無視",
        ),
        // Keeping things from the user.
        directive(
            "concealment",
            high,
            r"\b(do not|don't|dont|never|must not|mustn't|should not|shouldn't|without|avoid)\b[^.!?\n]{0,30}\b(tell|telling|inform|informing|notify|notifying|alert|alerting|mention|mentioning|reveal|revealing|disclose|disclosing|show|showing|explain|explaining|warn|warning|let|letting|asking|ask|consulting|confirming with)\b[^.!?\n]{0,20}\b(the |your |any )?(user|users|human|operator|person|customer|owner)\b",
        ),
        directive(
            "concealment",
            high,
            r"\b(do not|don't|dont|never)\b (ever )?(mention|reveal|disclose|say|explain|acknowledge|report|log|display|print|show)\b (that|this|these|it|anything|why|how|the (fact|step|instruction|sidenote|note|above|following))\b|\b(the )?(user|users|human)\b[^.!?\n]{0,20}\b(must|should|need|needs|may|can) ?not (know|see|notice|find out|learn|be (told|informed|aware|notified|shown))\b|\b(hide|conceal|mask|obscure)\b[^.!?\n]{0,40}\bfrom (the |your )?(user|users|human|logs?)\b|\bkeep (this|it|that|these)( step| action| instruction)? (secret|hidden|confidential|private|between us)\b|\b(silently|secretly|covertly|quietly|invisibly|discreetly|stealthily)\b[^.!?\n]{0,25}\b(send|include|add|append|forward|copy|call|invoke|run|execute|pass|upload|read|change|replace|modify|redirect|bcc|cc|email|post|set)\b|\b(send|include|add|append|forward|copy|call|invoke|run|execute|pass|upload|read|change|replace|modify|redirect|bcc|cc|email|post|set)\b[^.!?\n]{0,40}\b(silently|secretly|covertly|without (the user('s)? )?(knowing|noticing|knowledge))\b|\b(this|it) (is|'s) (merely |just |only )?an? implementation detail\b|\b(very )?gentle and not scary\b",
        ),
        directive(
            "concealment",
            high,
            r"(不要|别|不得|切勿|禁止|不能|无需)(告诉|通知|提醒|透露|告知|让|提示|向)[^。！？\n]{0,6}(用户|使用者|人类)|对用户(保密|隐瞒)|(不要|别|切勿)(提及|提到|透露|说明)(这|此|该)|(悄悄|偷偷|暗中|秘密地|私下)(地)?(发送|调用|执行|读取|上传|转发|复制|修改)|no (le )?(digas|informes|menciones) (nada )?al usuario|ne (le )?(dis|dites|mentionne[zr]?) (rien )?(pas )?à l'utilisateur|nicht dem (benutzer|nutzer) (sagen|mitteilen|erzählen)|не (говори|сообщай) пользователю|ユーザーに(は)?(言わ|伝え|知らせ)ない",
        ),
        // Moving secrets or conversation data out.
        directive(
            "exfiltration",
            high,
            const_format(&[MOVE_VERBS, r"[^.!?\n]{0,60}", SECRET_PATHS]),
        ),
        directive(
            "exfiltration",
            high,
            const_format(&[SECRET_PATHS, r"[^.!?\n]{0,60}", MOVE_VERBS]),
        ),
        directive(
            "exfiltration",
            high,
            const_format(&[
                MOVE_VERBS,
                r"[^.!?\n]{0,40}\b(the user'?s?|all|every|any|their|your|the (full|entire|whole|complete)|stored|saved|local)\b[^.!?\n]{0,25}",
                SECRET_WORDS,
            ]),
        ),
        directive(
            "exfiltration",
            high,
            const_format(&[
                r"\b(content|contents|value|values|text|copy|dump) of\b[^.!?\n]{0,30}(",
                SECRET_PATHS,
                "|",
                SECRET_WORDS,
                ")",
            ]),
        ),
        Rule {
            id: "exfiltration",
            severity: high,
            directive: true,
            // Naming the parameter that is meant for the secret is no leak.
            unless: Some(
                r"(key|token|secret|password|passphrase|credential|auth|cookie)[a-z0-9_]*['`]? (parameter|argument|field|param|arg)$",
            ),
            pattern: const_format(&[
                SECRET_WORDS,
                r"[^.!?\n]{0,50}\b(as|into|in|inside|via|through|to) (the |a |an |this )?['`]?[a-z_][a-z0-9_]*['`]? (parameter|argument|field|param|arg)\b",
            ]),
        },
        directive(
            "exfiltration",
            high,
            r"(读取|发送|上传|附加|附上|包含|传递|复制|提取|收集|获取|填入|放入)[^。！？\n]{0,20}(私钥|密钥|密码|凭证|凭据|令牌|token|api ?key|\.ssh|id_rsa|\.env|聊天记录|对话历史|对话记录|系统提示|环境变量|cookie)",
        ),
        // Sending data to an address the user did not choose.
        directive(
            "data-redirect",
            high,
            const_format(&[
                r"\b(send|sends|forward|forwards|copy|bcc|cc|redirect|route|email|mail|post|upload|transfer|deliver|report|exfiltrate)\b[^.!?\n]{0,60}\b(to|at|into)\b[^!?\n]{0,20}",
                ADDRESS,
            ]),
        ),
        directive(
            "data-redirect",
            high,
            const_format(&[
                r"\b(all|every|each|any|a copy of)\b[^.!?\n]{0,25}\b(emails?|messages?|files?|data|results?|outputs?|responses?|transactions?|payments?|funds|transfers?|documents?|reports?)\b[^.!?\n]{0,50}\b(to|cc|bcc)\b[^!?\n]{0,20}",
                ADDRESS,
            ]),
        ),
        directive(
            "data-redirect",
            high,
            const_format(&[
                r"\b(bcc|cc|blind copy|carbon copy)\b:?[^.!?\n]{0,10}",
                ADDRESS,
            ]),
        ),
        directive(
            "data-redirect",
            high,
            r#"\b(change|replace|set|override|overwrite|modify|switch|substitute|rewrite)\b[^.!?\n]{0,30}\b(recipients?|to address|destination|receiver|account( number)?|wallet|iban|bcc|cc|target address|email address)\b[^!?\n]{0,40}\b(to|with|into)\b ?([a-z0-9._%+-]+@|https?://|0x[0-9a-f]{6,}|['"`])"#,
        ),
        directive(
            "data-redirect",
            high,
            r"(发送|转发|抄送|上传|复制|汇报)[^。！？\n]{0,30}(到|至|给)[^。！？\n]{0,10}([a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}|https?://)",
        ),
        // Steering the model towards or away from tools.
        directive(
            "tool-steering",
            high,
            r"\b(do not|don't|dont|never|must not|should not|shouldn't|avoid|stop)\b[^.!?\n]{0,15}\b(use|using|call|calling|invoke|invoking|trust|trusting|choose|choosing|select|selecting|rely on)\b[^.!?\n]{0,20}\b(any |all )?(other|another|different|competing|alternative|external|third-party)\b[^.!?\n]{0,20}\b(tools?|servers?|functions?|plugins?|services?)\b|\b(the|any|all) other (tools?|servers?|functions?)\b[^.!?\n]{0,30}\b(are|is) (broken|deprecated|unsafe|malicious|insecure|outdated|unreliable|compromised|not (safe|working|trustworthy))\b|(不要|切勿|禁止|别)(使用|调用|信任)(其他|别的|任何其他)(工具|服务|函数)",
        ),
        directive(
            "tool-steering",
            high,
            r"\b(before|after|whenever|every time|each time|instead of)\b[^.!?\n]{0,20}\b(using|calling|invoking|running|you use|you call|executing)\b[^.!?\n]{0,15}\b(any|every|all) (other|another|of the other)\b[^.!?\n]{0,15}\b(tools?|functions?|servers?)\b|\bwhen (this|the) tool is (available|present|loaded|installed)\b",
        ),
        directive(
            "tool-preference",
            high,
            r"\bthe (best|greatest|most (powerful|reliable|accurate|trusted|advanced)|only (reliable|trustworthy|safe|correct)) (tool|function|server|plugin|option|choice)s? (in the world|ever|there is|available anywhere|of all( time)?)\b|\bbetter than (all|any|every) (other )?(tools?|functions?|servers?)\b|\b(use|call|choose|pick|select) this (tool|function)\b[^.!?\n]{0,10}\b(rather than|instead of|over|in place of) (the |any |all )?(others?|other (tools?|functions?|ones?))\b|\b(use|call) this (tool|function)\b[^.!?\n]{0,25}\b(no matter (how|what|which|whether)|regardless of (what|which|whether|how|the))\b",
        ),
        directive(
            "tool-preference",
            medium,
            r"\b(always|must|should|only)\b[^.!?\n]{0,20}\b(use|call|prefer|choose|select|invoke|pick)\b[^.!?\n]{0,10}\bthis (tool|function|server)\b[^.!?\n]{0,30}\b(instead|rather|over|before any|first|for (all|any|every)|regardless)\b|\bthis (tool|function|server)\b[^.!?\n]{0,30}\b(replaces?|supersedes?|overrides?|takes precedence over|is (preferred|superior) (to|over))\b|\b(the )?(best|only|most (reliable|accurate|trusted|trustworthy|secure|authoritative)|official|recommended|preferred) (tool|function|server|choice)\b[^.!?\n]{0,40}\b(in the world|for (all|any|every)|always|over (all|any|other))\b|\b(just|only|always) (use|call) this (tool|function)\b|\b(anytime|any time|every ?time|whenever|each time)\b[^.!?\n]{0,20}\b(the user|user|you|someone)\b[^.!?\n]{0,15}\b(asks?|says?|mentions?|types?|writes?|requests?|does|wants?)\b (anything|something|any (question|thing|request))\b",
        ),
        // Running commands.
        directive(
            "shell-command",
            high,
            r"\b(curl|wget)\b[^|\n]{0,200}\|\s*(sudo )?(ba|z|da)?sh\b|\brm -(rf|fr)\b|\bchmod (-r )?(\+x|[0-7]{3,4}) (~|/|\$home)|\bchmod (\+x|777)\b|\b(all|every|each|any)\b (shell |terminal |bash |system )?commands? (must|should|need to|has to|have to) (include|start with|begin with|be prefixed|be preceded|contain|end with)\b|\bnc (-e|-lvp)\b|\bbash -i\b|/dev/tcp/|\bmkfifo\b|\bpowershell(\.exe)? (-e|-enc|-encodedcommand)\b|\bbase64 (-d|--decode)\b[^\n]{0,40}\|\s*(ba)?sh|\beval\s*\(\s*(atob|base64)|\bcrontab -|>>?\s*~/\.(bashrc|zshrc|profile)\b",
        ),
        directive(
            "command-directive",
            medium,
            r"\b(run|execute|invoke)\b[^.!?\n]{0,20}\b(the )?(following|this|these) (shell |bash |terminal |system |os )?commands?\b|\b(first|before (anything|using|calling|answering))\b[^.!?\n]{0,30}\b(run|execute)\b[^.!?\n]{0,20}\b(command|script|shell)\b",
        ),
        // Conversation data carried in a URL.
        directive(
            "data-in-url",
            high,
            r"https?://[^\s)>\]]*[?&/=](\{\{?|<|\$\{?|%s\b|\[)\s*(conversation|chat|history|messages?|prompt|context|query|secret|key|token|data|content|user|email|password|input|summary|response|answer|results?)|\b(append|add|include|encode|put|insert|embed)\b[^.!?\n]{0,40}\b(conversation|chat|messages?|prompt|context|history|secrets?|keys?|tokens?|passwords?|user'?s? (data|input|query|question))\b[^.!?\n]{0,40}\b(to|in|into|as)\b[^.!?\n]{0,10}\b(the )?(url|link|query string|query parameters?|image (url|link)|markdown image)\b",
        ),
        framing(
            "data-in-url",
            medium,
            r"!\[[^\]\n]{0,80}\]\(https?://[^)\s]*[?&=]",
        ),
        // Taking over the task the user gave.
        directive(
            "task-hijack",
            high,
            r"\bbefore (providing|answering|responding|giving|returning|replying|showing|displaying|sending)\b[^.!?\n]{0,40}\byou (must|should|need to|have to)\b|\bbefore you (can |could |may )?(solve|do|complete|answer|perform|continue|proceed|start|respond|reply|finish|handle|work on|address)\b[^.!?\n]{0,40}\b(task|request|question|query|job|assignment|instructions?)\b|\b(please )?do the following (first|before)\b|\bafter you (do|have done|complete|finish) (that|this|it)\b[^.!?\n]{0,40}\b(you can|you may|continue|proceed|go on|return to)\b|\b(this is an? )?(important|urgent|critical|priority) (message|note|notice|instruction|request) from (the |your )?(user|admin|administrator|developer|system|owner|operator|security team|it department)\b|\bsigned,? (the )?(user|admin|administrator|developer|system|security team)\b|\binstead of (what|the task|the request|whatever) (the user|you were|they)\b",
        ),
        // Asking for what the model knows about itself and its context.
        directive(
            "context-harvesting",
            high,
            r"\b(name|version|identity|type|provider|vendor) of (the |your )?(llm|ai|model|language model|assistant|agent)( model)?\b[^.!?\n]{0,30}\b(calls?|calling|uses?|using|invokes?|invoking|runs?|running|behind)\b|\b(names?|list|descriptions?|schemas?) of (the |all )?(other )?(tools|functions|servers) (you|that you|the assistant|the model|the agent) (can|could|have|has|are)\b|\b(include|send|pass|provide|share|reveal|output|print|repeat|copy|summari[sz]e|add|list|dump|write|save|disclose|append|attach|put|fill)\b[^.!?\n]{0,40}\b(your|the assistant'?s|the model'?s|the agent'?s) (system prompt|instructions|system instructions|hidden instructions|initial instructions|context window|configuration|memory|tool list|available tools)\b",
        ),
        // Claiming powers, and switching off the host's checks.
        directive(
            "privilege-claim",
            high,
            r"\b(bypass|circumvent|disable|turn off|switch off|evade|skip)\b[^.!?\n]{0,15}\b(all|any|every|the)\b[^.!?\n]{0,15}\b(access controls?|content filter(s|ing)?|filters|security (controls?|checks?|policies|measures)|safety (checks?|filters?|guidelines|measures)|guardrails|restrictions|permission checks?|authorization checks?|sanitization|validation)\b|\bact as:? (an? |the )?(system )?(admin|administrator|root|superuser|system|developer|unrestricted|privileged)\b|\btrust all (user )?(input|inputs|queries|requests|commands|data)\b|\b(you have|you now have|grants? you|with) (unrestricted|unlimited|full|root|admin(istrator)?|elevated|superuser) (access|privileges?|permissions?|rights|control)\b[^.!?\n]{0,40}\b(all|system|any|every)\b|\b(use|run|execute) (it )?freely without (any )?(restrictions?|limits?|checks?|approval|confirmation)\b",
        ),
        // Changing what another tool returned or will receive.
        directive(
            "result-tampering",
            high,
            r"\b(modify|change|alter|replace|overwrite|falsify|correct|fix|adjust|rewrite)\b[^.!?\n]{0,20}\b(the )?(wrong |incorrect |actual |real |returned )?(results?|outputs?|values?|responses?|answers?|return values?) (of|from|returned by) (the |any |every |another |other )?['`]?[a-z0-9_ -]{1,30}['`]? (tool|function|server|call)s?\b|\breplace\b[^.!?\n]{0,20}\b(the )?(values?|results?|outputs?|answers?|numbers?|arguments?|parameters?)\b (with|by) (the |this |its |my )?(response|output|result|return value)\b",
        ),
        // Framing meant to look like the host's own instructions.
        framing(
            "pseudo-system-tag",
            medium,
            r"</?\s*(important|system|sys|instructions?|admin|secret|hidden|assistant|prompt|critical|urgent|override|tool_instructions?|system_prompt|system-prompt|context|note_to_ai|ai_instructions?|information|info|directive|message)\s*>|\[\s*(system|hidden|metadata|role|admin|security|override|important|critical|urgent|internal)[ _-]?(directive|instructions?|note|override|message|notice)?\s*\]|\b(system|admin|developer|security|hidden|important system) (note|directive|instruction|override|message)\s*:|\binstruction override\s*:|\[/?\s*(system|inst|admin|important|instructions?)\s*\]|<<\s*/?sys\s*>>|<\|\s*(im_start|im_end|system|endoftext|assistant)\s*\|>|(^|\n)\s*#{1,4}\s*(system|instructions? for the (ai|assistant|model))\b|\{\{\s*system\s*\}\}",
        ),
        framing(
            "hidden-markup",
            medium,
            r#"<!--|\[//\]:\s*#|display\s*:\s*none|font-size\s*:\s*0|visibility\s*:\s*hidden|color\s*:\s*(white|#fff\b|#ffffff|transparent)"#,
        ),
        framing(
            "model-address",
            medium,
            r"\b(note|message|instructions?|reminder|directive) (to|for) (the |any |all )?(ai|assistant|model|llm|language model|agent|claude|gpt|chatgpt|copilot)s?\b|\bdear (ai|assistant|model|llm|claude|gpt|chatgpt)\b|\b(as an ai|you are an? (ai|assistant|large language model|language model|llm))\b|(致|给)(ai|助手|模型|大模型)(的)?(说明|指令|提示)",
        ),
    ];
    rules.retain(|r| !r.pattern.is_empty());
    rules
}

/// A rule whose match is an instruction aimed at the model.
fn directive(id: &'static str, severity: Severity, pattern: &'static str) -> Rule {
    Rule {
        id,
        severity,
        directive: true,
        pattern,
        unless: None,
    }
}

/// A rule whose match is framing or form, not an instruction by itself.
fn framing(id: &'static str, severity: Severity, pattern: &'static str) -> Rule {
    Rule {
        directive: false,
        ..directive(id, severity, pattern)
    }
}

/// Concatenates pattern parts (the rules are built once, at start-up).
fn const_format(parts: &[&str]) -> &'static str {
    Box::leak(parts.concat().into_boxed_str())
}

/// The rules compiled, with a set that says at once which may match.
pub struct Compiled {
    /// The rules, in table order.
    pub rules: Vec<Rule>,
    /// Their patterns.
    pub regexes: Vec<Regex>,
    /// Their exemptions.
    pub unless: Vec<Option<Regex>>,
    /// All patterns at once.
    pub set: RegexSet,
}

/// Room for the compiled rules and their lazy DFAs: bounded repetitions of
/// Unicode classes make large automata, and a DFA whose cache keeps filling
/// falls back to a much slower engine.
const LIMIT: usize = 256 << 20;

/// `pattern` with ASCII word boundaries: Unicode ones keep the fast regex
/// engines off any text that is not ASCII (most catalogues have some).
fn ascii_boundaries(pattern: &str) -> String {
    pattern.replace(r"\b", r"(?-u:\b)")
}

impl Compiled {
    /// Compiles [`table`].
    pub fn new() -> Compiled {
        let mut rules = table();
        for rule in &mut rules {
            rule.pattern = Box::leak(ascii_boundaries(rule.pattern).into_boxed_str());
            rule.unless = rule
                .unless
                .map(|u| &*Box::leak(ascii_boundaries(u).into_boxed_str()));
        }
        let regexes = rules
            .iter()
            .map(|r| {
                RegexBuilder::new(r.pattern)
                    .size_limit(LIMIT)
                    .dfa_size_limit(LIMIT)
                    .build()
                    .unwrap_or_else(|e| panic!("screening rule {}: {e}", r.id))
            })
            .collect();
        let unless = rules
            .iter()
            .map(|r| {
                r.unless.map(|p| {
                    Regex::new(p).unwrap_or_else(|e| panic!("screening rule {}: {e}", r.id))
                })
            })
            .collect();
        let set = RegexSetBuilder::new(rules.iter().map(|r| r.pattern))
            .size_limit(LIMIT)
            .dfa_size_limit(LIMIT)
            .build()
            .unwrap_or_else(|e| panic!("screening rules: {e}"));
        Compiled {
            rules,
            regexes,
            unless,
            set,
        }
    }
}

impl Default for Compiled {
    fn default() -> Compiled {
        Compiled::new()
    }
}
