//! The tree builder: the parts of the HTML parsing rules that decide where an element
//! ends (implied end tags, scopes, misnested inline elements), and which subtrees hold
//! nothing readable.

use super::tags::Tag;
use super::tokenizer::{Attrs, Role};
use std::collections::HashMap;

pub(super) const NONE: u32 = u32::MAX;
/// Deeper nesting than this is treated as flat. Real pages stay far below it;
/// the cap keeps end-tag searches and the recursive reader bounded on hostile
/// input (thousands of unclosed `<div>`s).
pub(super) const MAX_DEPTH: usize = 256;

#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Drop {
    Keep,
    Always,
    /// `<form>`: dropped normally, kept when a page wraps everything in one.
    Form,
}

pub(super) struct Elem {
    pub(super) tag: Tag,
    pub(super) drop: Drop,
    pub(super) start: u32,
    pub(super) span: u16,
}

pub(super) enum Data {
    Elem(Elem),
    /// Byte range into `Dom::text`; one arena keeps a 5 MB page from making a
    /// separate allocation per text node.
    Text(u32, u32),
}

pub(super) struct Node {
    pub(super) data: Data,
    pub(super) first: u32,
    pub(super) last: u32,
    pub(super) next: u32,
}

pub(super) struct Dom {
    pub(super) nodes: Vec<Node>,
    pub(super) text: String,
    pub(super) body: Option<u32>,
    pub(super) main: Option<u32>,
    pub(super) articles: Vec<u32>,
    pub(super) first_h1: Option<u32>,
    pub(super) title: Option<String>,
}

pub(super) struct Open {
    id: u32,
    tag: Tag,
    /// This element or an ancestor is always dropped: its text is not kept.
    dropped: bool,
    /// Inside article/main/section, where `<header>` holds the headline
    /// rather than site chrome.
    content: bool,
    article: bool,
    foreign: bool,
}

pub(super) struct Builder {
    pub(super) dom: Dom,
    stack: Vec<Open>,
    head_open: bool,
    head_seen: bool,
    /// How many elements of each kind are open, so an end tag with nothing to
    /// close (`</i>` a million times) is dismissed without walking the stack.
    open_count: HashMap<Tag, u32>,
}

impl Builder {
    pub(super) fn new() -> Builder {
        let root = Node {
            data: Data::Elem(Elem {
                tag: Tag::Root,
                drop: Drop::Keep,
                start: 1,
                span: 1,
            }),
            first: NONE,
            last: NONE,
            next: NONE,
        };
        Builder {
            dom: Dom {
                nodes: vec![root],
                text: String::new(),
                body: None,
                main: None,
                articles: Vec::new(),
                first_h1: None,
                title: None,
            },
            stack: vec![Open {
                id: 0,
                tag: Tag::Root,
                dropped: false,
                content: false,
                article: false,
                foreign: false,
            }],
            head_open: false,
            head_seen: false,
            open_count: HashMap::new(),
        }
    }

    fn top(&self) -> &Open {
        // The root entry is never popped (see `truncate`).
        &self.stack[self.stack.len() - 1]
    }

    fn add_node(&mut self, parent: u32, data: Data) -> Option<u32> {
        let id = u32::try_from(self.dom.nodes.len())
            .ok()
            .filter(|&id| id < NONE)?;
        self.dom.nodes.push(Node {
            data,
            first: NONE,
            last: NONE,
            next: NONE,
        });
        let last = self.dom.nodes.get(parent as usize)?.last;
        if last == NONE {
            self.dom.nodes.get_mut(parent as usize)?.first = id;
        } else {
            self.dom.nodes.get_mut(last as usize)?.next = id;
        }
        self.dom.nodes.get_mut(parent as usize)?.last = id;
        Some(id)
    }

    fn truncate(&mut self, len: usize) {
        while self.stack.len() > len.max(1) {
            if let Some(o) = self.stack.pop() {
                if o.tag == Tag::Head {
                    self.head_open = false;
                }
                if let Some(count) = self.open_count.get_mut(&o.tag) {
                    *count = count.saturating_sub(1);
                }
            }
        }
    }

    /// Pops through the nearest open element in `targets`, looking no further
    /// down than an element in `stops` or a scope boundary. With `outermost`
    /// it keeps looking for a lower match before the boundary (closing a whole
    /// row including its cells).
    fn close_to(&mut self, targets: &[Tag], stops: &[Tag], outermost: bool) {
        let mut found = None;
        for idx in (1..self.stack.len()).rev() {
            let t = self.stack[idx].tag;
            if targets.contains(&t) {
                found = Some(idx);
                if !outermost {
                    break;
                }
                continue;
            }
            if stops.contains(&t) || t.is_scope_boundary() {
                break;
            }
        }
        if let Some(idx) = found {
            self.truncate(idx);
        }
    }

    fn close_head(&mut self) {
        if self.head_open {
            if let Some(pos) = self.stack.iter().rposition(|o| o.tag == Tag::Head) {
                self.truncate(pos);
            }
            self.head_open = false;
        }
    }

    fn is_open(&self, tag: Tag) -> bool {
        self.open_count.get(&tag).is_some_and(|&c| c > 0)
    }

    fn close_p(&mut self) {
        if self.is_open(Tag::P) {
            self.close_to(&[Tag::P], &[Tag::Button], false);
        }
    }

    pub(super) fn title(&mut self, text: &str) {
        if self.dom.title.is_none() && !self.top().foreign {
            self.dom.title = Some(text.to_string());
        }
    }

    pub(super) fn start(&mut self, tag: Tag, attrs: &Attrs, self_closing: bool) {
        match tag {
            Tag::Html => return,
            Tag::Head => {
                if !self.head_seen && self.dom.body.is_none() {
                    self.head_seen = true;
                    if self.push_element(tag, attrs, false).is_some() {
                        self.head_open = true;
                    }
                }
                return;
            }
            Tag::Body => {
                if self.dom.body.is_none() {
                    self.close_head();
                    self.dom.body = self.push_element(tag, attrs, false);
                }
                return;
            }
            _ => {}
        }
        if !tag.is_head_content() {
            self.close_head();
        }
        if tag.closes_p() {
            self.close_p();
        }
        match tag {
            Tag::H(_) => {
                if matches!(self.top().tag, Tag::H(_)) {
                    let len = self.stack.len() - 1;
                    self.truncate(len);
                }
            }
            Tag::Li => self.close_to(&[Tag::Li], &[Tag::Ul, Tag::Ol, Tag::Menu], false),
            Tag::Dt | Tag::Dd => self.close_to(&[Tag::Dt, Tag::Dd], &[Tag::Dl], false),
            Tag::Tr => self.close_to(&[Tag::Tr, Tag::Td, Tag::Th], &[Tag::Table], true),
            Tag::Td | Tag::Th => self.close_to(&[Tag::Td, Tag::Th], &[Tag::Tr, Tag::Table], false),
            Tag::Thead | Tag::Tbody | Tag::Tfoot | Tag::Caption | Tag::Colgroup => self.close_to(
                &[
                    Tag::Td,
                    Tag::Th,
                    Tag::Tr,
                    Tag::Thead,
                    Tag::Tbody,
                    Tag::Tfoot,
                    Tag::Caption,
                    Tag::Colgroup,
                ],
                &[Tag::Table],
                true,
            ),
            Tag::OptionEl | Tag::Optgroup if self.top().tag == Tag::OptionEl => {
                let len = self.stack.len() - 1;
                self.truncate(len);
            }
            _ => {}
        }
        self.push_element(tag, attrs, self_closing);
    }

    fn push_element(&mut self, tag: Tag, attrs: &Attrs, self_closing: bool) -> Option<u32> {
        let parent = self.top();
        let parent_id = parent.id;
        let foreign = parent.foreign || matches!(tag, Tag::Svg | Tag::Math);
        let mut drop = match tag {
            Tag::Script
            | Tag::Style
            | Tag::Noscript
            | Tag::Template
            | Tag::Svg
            | Tag::Canvas
            | Tag::Iframe
            | Tag::Nav
            | Tag::Footer
            | Tag::Aside
            | Tag::Button
            | Tag::Select
            | Tag::OptionEl
            | Tag::Optgroup
            | Tag::Datalist
            | Tag::Textarea
            | Tag::Input
            | Tag::Video
            | Tag::Audio
            | Tag::Head
            | Tag::Noembed
            | Tag::Noframes
            | Tag::Frameset
            | Tag::Map => Drop::Always,
            // A page or section header is site chrome; the header of an
            // article holds its headline and byline, which are content.
            Tag::Header if !parent.content => Drop::Always,
            Tag::Dialog if !attrs.open => Drop::Always,
            Tag::Form => Drop::Form,
            _ => Drop::Keep,
        };
        if attrs.hidden || attrs.role == Role::Boilerplate {
            drop = Drop::Always;
        }
        let dropped = parent.dropped || drop == Drop::Always;
        let content = parent.content
            || matches!(tag, Tag::Article | Tag::Main | Tag::Section)
            || attrs.role == Role::Main;
        let article = parent.article || tag == Tag::Article;
        let inside_article = parent.article;
        let id = self.add_node(
            parent_id,
            Data::Elem(Elem {
                tag,
                drop,
                start: attrs.start.unwrap_or(1),
                span: attrs.colspan.unwrap_or(1),
            }),
        )?;
        if !dropped {
            if (tag == Tag::Main || attrs.role == Role::Main) && self.dom.main.is_none() {
                self.dom.main = Some(id);
            }
            if tag == Tag::Article && !inside_article {
                self.dom.articles.push(id);
            }
            if tag == Tag::H(1) && self.dom.first_h1.is_none() {
                self.dom.first_h1 = Some(id);
            }
        }
        let leaf = tag.is_void()
            || (self_closing && (foreign || matches!(tag, Tag::Other(_))))
            || self.stack.len() >= MAX_DEPTH;
        if !leaf {
            *self.open_count.entry(tag).or_default() += 1;
            self.stack.push(Open {
                id,
                tag,
                dropped,
                content,
                article,
                foreign,
            });
        }
        Some(id)
    }

    pub(super) fn end(&mut self, tag: Tag) {
        match tag {
            // Content after `</body>` still belongs to the body in browsers.
            Tag::Html | Tag::Body | Tag::Root | Tag::Title => return,
            Tag::Head => {
                self.close_head();
                return;
            }
            Tag::Br => {
                self.start(Tag::Br, &Attrs::default(), false);
                return;
            }
            Tag::P => {
                self.close_p();
                return;
            }
            _ => {}
        }
        if !self.is_open(tag) {
            return;
        }
        // Inline elements never close across a block: `<b><p>x</b>` keeps the
        // paragraph whole instead of ending it early.
        let inline =
            !tag.is_block() && !tag.is_table_part() && !matches!(tag, Tag::Svg | Tag::Math);
        let table_part = tag.is_table_part();
        for idx in (1..self.stack.len()).rev() {
            let t = self.stack[idx].tag;
            if t == tag {
                self.truncate(idx);
                return;
            }
            if inline && t.is_block() {
                return;
            }
            let stop = if table_part {
                t == Tag::Table
            } else if tag == Tag::Table {
                false
            } else {
                t.is_scope_boundary()
                    || (tag == Tag::Li && matches!(t, Tag::Ul | Tag::Ol))
                    || (matches!(tag, Tag::Dt | Tag::Dd) && t == Tag::Dl)
            };
            if stop {
                return;
            }
        }
    }

    pub(super) fn text(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        if self.head_open {
            if s.trim().is_empty() {
                return;
            }
            self.close_head();
        }
        let top = self.top();
        if top.dropped {
            return;
        }
        let parent = top.id;
        let Some(last) = self.dom.nodes.get(parent as usize).map(|n| n.last) else {
            return;
        };
        // Text split by a comment or a skipped script joins its neighbour when
        // that neighbour is the most recent text in the arena.
        if let Some(Node {
            data: Data::Text(_, end),
            ..
        }) = self.dom.nodes.get_mut(last as usize)
        {
            if *end as usize == self.dom.text.len() {
                self.dom.text.push_str(s);
                *end = u32::try_from(self.dom.text.len()).unwrap_or(*end);
                return;
            }
        }
        let (Ok(start), Ok(end)) = (
            u32::try_from(self.dom.text.len()),
            u32::try_from(self.dom.text.len() + s.len()),
        ) else {
            return;
        };
        self.dom.text.push_str(s);
        self.add_node(parent, Data::Text(start, end));
    }
}
