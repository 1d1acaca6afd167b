//! Bridges between Chinese and English tool vocabulary ("天气" ~ "weather",
//! "查询" ~ "query"). A query term pulls its counterparts in at a lower weight
//! than itself, so an exact match still wins. The sentence model is English
//! only, so nothing else carries a Chinese query to an English tool.
//!
//! English synonym groups ("delete" ~ "remove", "repo" ~ "repository") were
//! here too and are gone: with hybrid ranking they added nothing on the
//! public benchmarks and cost the lexical ranking a little (`quiver bench
//! lexicon`, docs/benchmarks.md). Hand-written and general on purpose: no
//! entry names a particular server or tool.

use std::{collections::HashMap, sync::OnceLock};

use super::{analyzer::Analyzer, tokenizer::is_cjk};

/// Weight of a translation between Chinese and English.
const BRIDGE: f32 = 0.7;

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
            for group in BRIDGE_GROUPS {
                table.add_group(&mut analyzer, group, BRIDGE, true);
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
        assert_eq!(weight("查询", "query"), Some(BRIDGE));
        assert_eq!(weight("query", "查询"), Some(BRIDGE));
        assert_eq!(weight("weather", "天气"), Some(BRIDGE));
        // Inflected forms meet the table through the stemmer.
        assert_eq!(weight("queries", "查询"), Some(BRIDGE));
        // English words are not synonyms of each other any more.
        assert_eq!(weight("remove", "delete"), None);
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
        for group in BRIDGE_GROUPS {
            for word in *group {
                assert!(
                    single_term(&mut analyzer, word).is_some(),
                    "{word} analyses to nothing"
                );
            }
        }
    }
}
