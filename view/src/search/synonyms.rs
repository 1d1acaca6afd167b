//! Related terms of everyday tool vocabulary ("delete" ~ "remove", "repo" ~
//! "repository", "天气" ~ "weather"). A query term pulls its relatives in at a
//! lower weight than itself, so an exact match still wins. Hand-written and
//! general on purpose: no entry names a particular server or tool.

use std::{collections::HashMap, sync::OnceLock};

use super::{analyzer::Analyzer, tokenizer::is_cjk};

/// Weight of a relative that means the same thing (abbreviations, spellings).
const SAME: f32 = 0.8;
/// Weight of a translation between Chinese and English.
const BRIDGE: f32 = 0.7;
/// Weight of a related word (near-synonyms, the usual neighbours of a task).
const RELATED: f32 = 0.45;

/// Abbreviations, spelling variants and exact equivalents.
const SAME_GROUPS: &[&[&str]] = &[
    &["repo", "repository"],
    &["msg", "message"],
    &["doc", "document"],
    &["docs", "documentation"],
    &["img", "image"],
    &["pic", "picture"],
    &["dir", "directory", "folder"],
    &["db", "database"],
    &["config", "configuration", "conf"],
    &["info", "information"],
    &["env", "environment"],
    &["auth", "authentication", "login", "signin"],
    &["app", "application"],
    &["calc", "calculator", "calculate", "compute"],
    &["k8s", "kubernetes", "kube"],
    &["js", "javascript"],
    &["ts", "typescript"],
    &["py", "python"],
    &["md", "markdown"],
    &["ppt", "pptx", "powerpoint"],
    &["xls", "xlsx", "excel", "spreadsheet"],
    &["docx", "word"],
    &["url", "uri", "link", "hyperlink"],
    &["stats", "statistics"],
    &["id", "identifier"],
    &["num", "number"],
    &["max", "maximum"],
    &["min", "minimum"],
    &["avg", "average", "mean"],
    &["temp", "temperature"],
    &["addr", "address"],
    &["lat", "latitude"],
    &["lon", "lng", "longitude"],
    &["geo", "geographic", "geographical"],
    &["tz", "timezone"],
    &["btc", "bitcoin"],
    &["eth", "ethereum"],
    &["crypto", "cryptocurrency"],
    &["llm", "gpt", "chatgpt", "openai"],
    &["yt", "youtube"],
    &["wiki", "wikipedia"],
    &["colour", "color"],
    &["favourite", "favorite"],
    &["neighbourhood", "neighborhood"],
    &["licence", "license"],
    &["centre", "center"],
    &["catalogue", "catalog"],
    &["email", "mail", "e-mail"],
    &["todo", "task"],
    &["pwd", "password", "passcode"],
    &["org", "organization", "organisation"],
    &["pkg", "package"],
    &["lib", "library"],
    &["dep", "deps", "dependency"],
    &["ver", "version"],
    &["desc", "description"],
    &["dl", "download"],
    &["ocr", "recognize"],
    &["bpm", "tempo"],
    &["fx", "forex"],
    &["ev", "electric"],
    &["cli", "terminal", "shell", "console"],
    &["auto", "automatic", "automatically", "automate"],
];

/// Chinese words and their English counterparts. Only links across the two
/// languages (and between Chinese words); English words in one bridge are not
/// made synonyms of each other.
const BRIDGE_GROUPS: &[&[&str]] = &[
    &["天气", "weather"],
    &["预报", "forecast"],
    &["温度", "temperature"],
    &["搜索", "查找", "搜", "search", "find"],
    &["查询", "query", "lookup", "search"],
    &["新闻", "资讯", "news"],
    &["股票", "stock"],
    &["历史", "history", "historical"],
    &["中转", "换乘", "transfer"],
    &["股价", "stock", "price"],
    &["价格", "多少钱", "price"],
    &["汇率", "exchange", "rate"],
    &["货币", "currency"],
    &["翻译", "translate"],
    &["文件", "file"],
    &["目录", "directory", "folder"],
    &["图片", "图像", "照片", "image", "picture", "photo"],
    &["地图", "map"],
    &["路线", "导航", "route", "directions"],
    &["地址", "address"],
    &["位置", "location"],
    &["附近", "nearby"],
    &["火车", "列车", "高铁", "动车", "train"],
    &["车站", "station"],
    &["车票", "余票", "票", "ticket"],
    &["航班", "flight"],
    &["酒店", "hotel"],
    &["时间", "time"],
    &["日期", "几号", "date"],
    &["时区", "timezone"],
    &["菜谱", "食谱", "做法", "recipe"],
    &["视频", "video"],
    &["音乐", "歌曲", "music", "song"],
    &["论文", "paper"],
    &["文章", "article"],
    &["代码", "code"],
    &["网页", "网站", "webpage", "website"],
    &["链接", "link"],
    &["下载", "download"],
    &["上传", "upload"],
    &["删除", "delete", "remove"],
    &["创建", "新建", "create", "new"],
    &["添加", "add"],
    &["插入", "insert"],
    &["列出", "列表", "list"],
    &["更新", "update"],
    &["修改", "编辑", "edit", "modify"],
    &["发送", "send"],
    &["邮件", "email"],
    &["日历", "黄历", "calendar"],
    &["任务", "待办", "task", "todo"],
    &["笔记", "note"],
    &["数据", "data"],
    &["计算", "calculate"],
    &["图表", "chart"],
    &["比特", "bitcoin"],
    &["加密", "crypto"],
    &["热搜", "热榜", "热门", "trending", "hot", "popular"],
    &["排行", "排名", "ranking", "rank"],
    &["游戏", "game"],
    &["推特", "twitter", "tweet"],
    &["电影", "movie", "film"],
    &["书籍", "图书", "book"],
    &["幻灯", "slide"],
    &["演示", "presentation"],
    &["日志", "log"],
    &["容器", "container"],
    &["镜像", "image"],
    &["进程", "process"],
    &["命令", "command"],
    &["终端", "terminal"],
    &["截图", "screenshot"],
    &["浏览", "browser", "browse"],
    &["点击", "click"],
    &["输入", "input", "type"],
    &["表格", "table", "spreadsheet"],
    &["文档", "document"],
    &["总结", "摘要", "summary", "summarize"],
    &["转换", "convert"],
    &["格式", "format"],
    &["合并", "merge"],
    &["拆分", "分割", "split"],
    &["压缩", "compress"],
    &["随机", "random"],
    &["记忆", "记住", "memory", "remember"],
    &["知识", "knowledge"],
    &["仓库", "repository"],
    &["分支", "branch"],
    &["提交", "commit"],
    &["状态", "status"],
    &["用户", "user"],
    &["账号", "账户", "account"],
    &["评论", "comment"],
    &["问题", "question", "problem"],
    &["公司", "company"],
    &["财报", "earnings"],
    &["股息", "分红", "dividend"],
    &["期权", "option"],
    &["基金", "fund"],
    &["市场", "market"],
    &["分析", "analyze"],
    &["统计", "statistics"],
    &["推荐", "recommend"],
    &["卡牌", "card"],
    &["角色", "character"],
    &["组件", "component"],
    &["示例", "例子", "example"],
];

/// Near-synonyms and the usual neighbours of a task.
const RELATED_GROUPS: &[&[&str]] = &[
    // Verbs of tool names.
    &[
        "create", "add", "new", "make", "generate", "build", "insert", "register",
    ],
    &[
        "delete", "remove", "erase", "drop", "destroy", "discard", "purge", "trash",
    ],
    &["clear", "reset", "empty", "wipe"],
    &[
        "find", "search", "lookup", "look", "query", "seek", "locate", "discover",
    ],
    &[
        "get", "fetch", "retrieve", "obtain", "grab", "load", "read", "access",
    ],
    &[
        "show", "view", "display", "see", "open", "read", "print", "render", "preview", "inspect",
    ],
    &["list", "enumerate", "browse", "catalog", "inventory"],
    &[
        "update", "edit", "modify", "change", "alter", "set", "patch", "adjust", "revise", "amend",
    ],
    &[
        "send",
        "post",
        "publish",
        "submit",
        "share",
        "broadcast",
        "deliver",
        "notify",
    ],
    &[
        "run", "execute", "exec", "launch", "start", "invoke", "trigger", "perform", "call",
    ],
    &[
        "stop",
        "kill",
        "terminate",
        "halt",
        "abort",
        "cancel",
        "shutdown",
        "end",
    ],
    &[
        "save", "store", "persist", "keep", "retain", "remember", "memorize", "write",
    ],
    &["copy", "duplicate", "clone", "replicate"],
    &["restart", "reboot", "recreate", "reload", "relaunch"],
    &["insert", "put", "upsert", "append"],
    &["control", "operate", "manage", "adjust", "regulate", "set"],
    &["pick", "choose", "select", "sample"],
    &["multiple", "several", "many", "batch", "bulk"],
    &["move", "rename", "relocate"],
    &["replace", "substitute", "swap"],
    &["merge", "combine", "join", "concatenate"],
    &["split", "divide", "separate", "chunk"],
    &["upload", "put", "push", "attach"],
    &["download", "pull", "save"],
    &["convert", "conversion", "transform", "export", "transcode"],
    &["format", "beautify", "prettify", "pretty", "indent", "tidy"],
    &["clean", "sanitize", "strip", "cleanup"],
    &["validate", "verify", "check", "lint", "assert", "valid"],
    &[
        "compare",
        "comparison",
        "diff",
        "difference",
        "versus",
        "vs",
    ],
    &[
        "summary",
        "summarize",
        "overview",
        "digest",
        "abstract",
        "synopsis",
        "tldr",
        "brief",
    ],
    &["extract", "parse", "scrape", "pull"],
    &[
        "describe",
        "detail",
        "details",
        "info",
        "information",
        "metadata",
    ],
    &[
        "analyze", "analysis", "examine", "evaluate", "assess", "inspect",
    ],
    &[
        "complete",
        "finish",
        "done",
        "accomplish",
        "resolve",
        "mark",
    ],
    &["approve", "accept", "confirm", "approval"],
    &["plan", "planning", "roadmap", "breakdown"],
    &[
        "recommend",
        "recommendation",
        "suggest",
        "suggestion",
        "advice",
    ],
    &["predict", "prediction", "forecast", "estimate"],
    &["draw", "paint", "sketch", "drawing", "canvas"],
    &["click", "press", "tap"],
    &["type", "fill", "input", "enter", "form"],
    &["hover", "mouseover", "mouse"],
    &["navigate", "visit", "goto", "open"],
    &[
        "translate",
        "translation",
        "translator",
        "interpret",
        "localize",
    ],
    &["protect", "encrypt", "lock", "password", "secure"],
    &["deploy", "release", "ship", "rollout"],
    &["install", "setup"],
    // Things tools act on.
    &["message", "chat", "text", "conversation", "dm"],
    &["email", "inbox", "gmail"],
    &["file", "document", "attachment"],
    &[
        "image",
        "picture",
        "photo",
        "photograph",
        "graphic",
        "illustration",
    ],
    &["screenshot", "capture", "snapshot", "screengrab"],
    &[
        "chart",
        "graph",
        "plot",
        "diagram",
        "visualization",
        "visualize",
        "figure",
        "infographic",
    ],
    &["table", "grid", "tabular"],
    &["record", "row", "entry", "item"],
    &["column", "field", "attribute", "property"],
    &["database", "sql", "datastore"],
    &["bucket", "storage", "blob"],
    &["log", "logging", "trace"],
    &[
        "history",
        "historical",
        "past",
        "previous",
        "archive",
        "timeline",
    ],
    &["note", "memo", "notebook", "jot"],
    &["task", "chore", "assignment", "reminder", "checklist"],
    &[
        "calendar",
        "event",
        "schedule",
        "meeting",
        "appointment",
        "agenda",
    ],
    &["video", "clip", "footage"],
    &["music", "audio", "song", "sound", "track", "tune", "mp3"],
    &[
        "paper",
        "article",
        "publication",
        "preprint",
        "journal",
        "study",
    ],
    &["code", "script", "program", "snippet"],
    &["container", "docker"],
    &["shell", "terminal", "command", "bash", "cmd"],
    &["process", "pid"],
    &["repository", "project", "codebase"],
    &["issue", "bug", "defect", "ticket"],
    &["branch", "fork"],
    &["commit", "checkin"],
    &["status", "state", "condition", "health"],
    &["package", "library", "module", "dependency", "crate", "gem"],
    &["version", "release", "changelog"],
    &[
        "vulnerability",
        "security",
        "cve",
        "exploit",
        "vulnerable",
        "audit",
    ],
    &[
        "deprecated",
        "obsolete",
        "outdated",
        "abandoned",
        "unmaintained",
        "legacy",
    ],
    &[
        "alternative",
        "replacement",
        "substitute",
        "similar",
        "equivalent",
    ],
    &["author", "maintainer", "owner", "creator", "contributor"],
    &["statistics", "stats", "metric", "analytics", "numbers"],
    &["size", "bytes", "footprint", "weight"],
    &["popularity", "popular", "downloads"],
    &["profile", "account", "user", "member"],
    &["customer", "client", "user"],
    &["dataset", "data", "datasets"],
    &["schema", "structure", "definition", "outline"],
    &["icon", "glyph", "emoji"],
    &["ui", "interface", "frontend", "gui", "component", "widget"],
    &["design", "style", "theme", "styling", "look"],
    &["animation", "animate", "animated", "motion", "transition"],
    &["background", "backdrop", "wallpaper"],
    &["font", "typeface"],
    &["heading", "title", "header", "headline"],
    &["paragraph", "text", "passage"],
    &[
        "transcript",
        "caption",
        "captions",
        "subtitle",
        "subtitles",
        "transcription",
    ],
    &["website", "webpage", "page", "site", "url", "web", "html"],
    &["internet", "web", "online"],
    &["browser", "chrome", "headless"],
    &["question", "ask", "answer"],
    &["random", "randomize", "rng", "shuffle"],
    &[
        "calculate",
        "compute",
        "evaluate",
        "math",
        "arithmetic",
        "expression",
        "formula",
    ],
    &["memory", "knowledge", "remember", "recall"],
    &["relation", "relationship", "connection", "link", "edge"],
    &["entity", "node", "concept"],
    // Domains.
    &[
        "weather",
        "forecast",
        "temperature",
        "rain",
        "precipitation",
        "wind",
        "humidity",
        "snow",
    ],
    &[
        "directions",
        "route",
        "routing",
        "itinerary",
        "commute",
        "journey",
        "trip",
        "travel",
    ],
    &[
        "map",
        "location",
        "place",
        "address",
        "spot",
        "venue",
        "geographic",
    ],
    &["coordinates", "latitude", "longitude", "gps", "geocode"],
    &["nearby", "near", "close", "proximity", "vicinity"],
    &["restaurant", "cafe", "food", "dining", "eatery"],
    &["school", "education", "college", "university", "academy"],
    &["parking", "park", "garage"],
    &["charging", "charger", "ev", "electric"],
    &[
        "neighborhood",
        "area",
        "district",
        "community",
        "livability",
    ],
    &["meet", "meeting", "rendezvous", "midpoint"],
    &["price", "quote", "cost", "valuation", "pricing", "worth"],
    &["stock", "share", "equity", "ticker", "symbol", "stocks"],
    &["market", "trading", "exchange", "finance", "financial"],
    &["money", "currency", "forex", "exchange"],
    &[
        "crypto",
        "bitcoin",
        "ethereum",
        "coin",
        "token",
        "blockchain",
        "web3",
        "defi",
    ],
    &["company", "corporation", "business", "firm", "enterprise"],
    &["earnings", "income", "revenue", "profit"],
    &["trade", "trades", "buy", "sell", "purchase", "transaction"],
    &[
        "gold",
        "silver",
        "platinum",
        "metal",
        "precious",
        "commodity",
    ],
    &["dividend", "payout", "yield"],
    &[
        "holder",
        "shareholder",
        "institutional",
        "investor",
        "ownership",
    ],
    &["fear", "greed", "sentiment"],
    &[
        "news",
        "headline",
        "headlines",
        "article",
        "stories",
        "press",
    ],
    &[
        "trending", "trend", "popular", "hot", "viral", "top", "hottest",
    ],
    &[
        "rank",
        "ranking",
        "leaderboard",
        "standings",
        "ladder",
        "tier",
    ],
    &["time", "clock", "hour"],
    &["date", "day", "today", "tomorrow", "yesterday"],
    &[
        "date",
        "month",
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ],
    &["movie", "film", "cinema"],
    &["game", "match", "esports", "gaming"],
    &["player", "summoner", "gamer"],
    &["champion", "character", "hero"],
    &[
        "recipe", "cook", "cooking", "meal", "dish", "cuisine", "menu", "eat", "dinner", "lunch",
    ],
    &["train", "railway", "rail", "railroad"],
    &["ticket", "booking", "reservation", "seat", "fare"],
    &[
        "flight", "plane", "airline", "aircraft", "airport", "aviation",
    ],
    &[
        "hotel",
        "lodging",
        "accommodation",
        "rental",
        "apartment",
        "bnb",
        "stay",
    ],
    &["book", "novel", "ebook", "reading"],
    &["light", "lamp", "bulb", "lighting"],
    &["thermostat", "heating", "hvac", "climate", "cooling"],
    &["alarm", "siren"],
    &["blind", "blinds", "cover", "shade", "curtain", "shutter"],
    &["switch", "toggle", "turn", "plug", "outlet"],
    &["sensor", "device", "gadget"],
    &["room", "area", "zone"],
    &["museum", "art", "artwork", "painting", "gallery", "exhibit"],
    &["slide", "presentation", "deck", "powerpoint", "keynote"],
    &["spreadsheet", "sheet", "workbook", "worksheet", "csv"],
    &["pdf", "acrobat"],
    &["tweet", "twitter"],
    &["encoding", "charset", "utf8", "encode"],
    &["gene", "genetic", "genomic", "dna", "mutation", "variant"],
    &["clinical", "trial", "patient", "medical"],
    &["disease", "condition", "illness", "cancer"],
];

/// Maps a term (stemmed, as the analyzer emits it) to its relatives and their weights.
#[derive(Debug)]
pub struct SynonymTable {
    related: HashMap<String, Vec<(String, f32)>>,
}

impl SynonymTable {
    /// The built-in table (built once, on first use); empty when
    /// `QUIVER_SEARCH_SYNONYMS=off` (how `quiver bench lexicon` measures
    /// what the table adds).
    pub fn builtin() -> &'static SynonymTable {
        static TABLE: OnceLock<SynonymTable> = OnceLock::new();
        TABLE.get_or_init(|| {
            let mut table = SynonymTable {
                related: HashMap::new(),
            };
            if std::env::var("QUIVER_SEARCH_SYNONYMS").as_deref() == Ok("off") {
                return table;
            }
            let mut analyzer = Analyzer::new();
            for group in SAME_GROUPS {
                table.add_group(&mut analyzer, group, SAME, false);
            }
            for group in BRIDGE_GROUPS {
                table.add_group(&mut analyzer, group, BRIDGE, true);
            }
            for group in RELATED_GROUPS {
                table.add_group(&mut analyzer, group, RELATED, false);
            }
            table
        })
    }

    /// The relatives of `term` with their weights (empty when it has none).
    pub fn related(&self, term: &str) -> &[(String, f32)] {
        self.related.get(term).map_or(&[], Vec::as_slice)
    }

    fn add_group(&mut self, analyzer: &mut Analyzer, group: &[&str], weight: f32, bridge: bool) {
        let terms: Vec<(String, bool)> = group
            .iter()
            .filter_map(|word| {
                let term = single_term(analyzer, word)?;
                let cjk = term.chars().any(is_cjk);
                Some((term, cjk))
            })
            .collect();
        for (a, a_cjk) in &terms {
            for (b, b_cjk) in &terms {
                // Bridges link Chinese to English and Chinese to Chinese only.
                if a == b || (bridge && !a_cjk && !b_cjk) {
                    continue;
                }
                let list = self.related.entry(a.clone()).or_default();
                match list.iter_mut().find(|(t, _)| t == b) {
                    Some((_, w)) => *w = w.max(weight),
                    None => list.push((b.clone(), weight)),
                }
            }
        }
    }
}

/// The one term a table word stands for: its stem, or for a Chinese word its
/// bigram (one character: its unigram; three: the first bigram).
fn single_term(analyzer: &mut Analyzer, word: &str) -> Option<String> {
    let mut first = None;
    let mut bigram = None;
    analyzer.analyze(word, |term, kind| {
        use super::tokenizer::TokenKind::*;
        match kind {
            CjkBigram if bigram.is_none() => bigram = Some(term.to_owned()),
            Word | Compound | CjkUnigram if first.is_none() => first = Some(term.to_owned()),
            Compound => first = Some(term.to_owned()),
            _ => {}
        }
    });
    bigram.or(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn related(word: &str) -> Vec<(String, f32)> {
        let mut analyzer = Analyzer::new();
        let term = single_term(&mut analyzer, word).unwrap();
        SynonymTable::builtin().related(&term).to_vec()
    }

    fn weight(from: &str, to: &str) -> Option<f32> {
        let mut analyzer = Analyzer::new();
        let to = single_term(&mut analyzer, to).unwrap();
        related(from)
            .into_iter()
            .find(|(t, _)| *t == to)
            .map(|(_, w)| w)
    }

    #[test]
    fn groups_link_both_ways_with_their_weight() {
        assert_eq!(weight("remove", "delete"), Some(RELATED));
        assert_eq!(weight("delete", "remove"), Some(RELATED));
        assert_eq!(weight("repo", "repository"), Some(SAME));
        assert_eq!(weight("查询", "query"), Some(BRIDGE));
        assert_eq!(weight("weather", "天气"), Some(BRIDGE));
        // Inflected forms meet the table through the stemmer.
        assert_eq!(weight("removing", "deleted"), Some(RELATED));
    }

    #[test]
    fn bridges_do_not_link_english_to_english() {
        // "exchange" and "rate" share a bridge to 汇率 but are not synonyms there.
        assert_eq!(weight("rate", "exchange"), None);
    }

    #[test]
    fn unknown_terms_have_no_relatives() {
        assert!(SynonymTable::builtin().related("zzzz").is_empty());
    }

    #[test]
    fn every_entry_is_one_term() {
        let mut analyzer = Analyzer::new();
        for group in SAME_GROUPS
            .iter()
            .chain(BRIDGE_GROUPS)
            .chain(RELATED_GROUPS)
        {
            for word in *group {
                assert!(
                    single_term(&mut analyzer, word).is_some(),
                    "{word} analyses to nothing"
                );
            }
        }
    }
}
