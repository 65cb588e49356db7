//! The elements the reader tells apart, and what the HTML parsing rules say about each.

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) enum Tag {
    Root,
    Html,
    Head,
    Body,
    Title,
    Meta,
    Link,
    Base,
    Script,
    Style,
    Noscript,
    Template,
    Svg,
    Math,
    Canvas,
    Iframe,
    Object,
    Embed,
    Video,
    Audio,
    Nav,
    Header,
    Footer,
    Aside,
    Form,
    Button,
    Select,
    OptionEl,
    Optgroup,
    Datalist,
    Textarea,
    Input,
    Dialog,
    Main,
    Article,
    Section,
    Div,
    P,
    H(u8),
    Ul,
    Ol,
    Li,
    Menu,
    Dir,
    Dl,
    Dt,
    Dd,
    Table,
    Caption,
    Thead,
    Tbody,
    Tfoot,
    Tr,
    Td,
    Th,
    Colgroup,
    Col,
    Pre,
    Xmp,
    Listing,
    Plaintext,
    Blockquote,
    Br,
    Hr,
    Img,
    Area,
    Map,
    Param,
    Source,
    Track,
    Wbr,
    Keygen,
    Figure,
    Figcaption,
    Address,
    Details,
    Summary,
    Center,
    Fieldset,
    Legend,
    Hgroup,
    Noembed,
    Noframes,
    Frameset,
    Frame,
    A,
    B,
    I,
    Em,
    Strong,
    Span,
    Code,
    Small,
    Big,
    U,
    S,
    Strike,
    Tt,
    Font,
    Nobr,
    Label,
    /// Any other element, identified by a hash of its lower-cased name so that
    /// end tags still find their start tag without an allocation per tag.
    Other(u32),
}

fn fnv(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(b.to_ascii_lowercase());
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

impl Tag {
    pub(super) fn from_name(raw: &[u8]) -> Tag {
        let mut buf = [0u8; 12];
        if raw.is_empty() || raw.len() > buf.len() {
            return Tag::Other(fnv(raw));
        }
        let name = &mut buf[..raw.len()];
        for (d, s) in name.iter_mut().zip(raw) {
            *d = s.to_ascii_lowercase();
        }
        match &*name {
            b"html" => Tag::Html,
            b"head" => Tag::Head,
            b"body" => Tag::Body,
            b"title" => Tag::Title,
            b"meta" => Tag::Meta,
            b"link" => Tag::Link,
            b"base" => Tag::Base,
            b"script" => Tag::Script,
            b"style" => Tag::Style,
            b"noscript" => Tag::Noscript,
            b"template" => Tag::Template,
            b"svg" => Tag::Svg,
            b"math" => Tag::Math,
            b"canvas" => Tag::Canvas,
            b"iframe" => Tag::Iframe,
            b"object" => Tag::Object,
            b"embed" => Tag::Embed,
            b"video" => Tag::Video,
            b"audio" => Tag::Audio,
            b"nav" => Tag::Nav,
            b"header" => Tag::Header,
            b"footer" => Tag::Footer,
            b"aside" => Tag::Aside,
            b"form" => Tag::Form,
            b"button" => Tag::Button,
            b"select" => Tag::Select,
            b"option" => Tag::OptionEl,
            b"optgroup" => Tag::Optgroup,
            b"datalist" => Tag::Datalist,
            b"textarea" => Tag::Textarea,
            b"input" => Tag::Input,
            b"dialog" => Tag::Dialog,
            b"main" => Tag::Main,
            b"article" => Tag::Article,
            b"section" => Tag::Section,
            b"div" => Tag::Div,
            b"p" => Tag::P,
            b"h1" => Tag::H(1),
            b"h2" => Tag::H(2),
            b"h3" => Tag::H(3),
            b"h4" => Tag::H(4),
            b"h5" => Tag::H(5),
            b"h6" => Tag::H(6),
            b"ul" => Tag::Ul,
            b"ol" => Tag::Ol,
            b"li" => Tag::Li,
            b"menu" => Tag::Menu,
            b"dir" => Tag::Dir,
            b"dl" => Tag::Dl,
            b"dt" => Tag::Dt,
            b"dd" => Tag::Dd,
            b"table" => Tag::Table,
            b"caption" => Tag::Caption,
            b"thead" => Tag::Thead,
            b"tbody" => Tag::Tbody,
            b"tfoot" => Tag::Tfoot,
            b"tr" => Tag::Tr,
            b"td" => Tag::Td,
            b"th" => Tag::Th,
            b"colgroup" => Tag::Colgroup,
            b"col" => Tag::Col,
            b"pre" => Tag::Pre,
            b"xmp" => Tag::Xmp,
            b"listing" => Tag::Listing,
            b"plaintext" => Tag::Plaintext,
            b"blockquote" => Tag::Blockquote,
            b"br" => Tag::Br,
            b"hr" => Tag::Hr,
            b"img" | b"image" => Tag::Img,
            b"area" => Tag::Area,
            b"map" => Tag::Map,
            b"param" => Tag::Param,
            b"source" => Tag::Source,
            b"track" => Tag::Track,
            b"wbr" => Tag::Wbr,
            b"keygen" => Tag::Keygen,
            b"figure" => Tag::Figure,
            b"figcaption" => Tag::Figcaption,
            b"address" => Tag::Address,
            b"details" => Tag::Details,
            b"summary" => Tag::Summary,
            b"center" => Tag::Center,
            b"fieldset" => Tag::Fieldset,
            b"legend" => Tag::Legend,
            b"hgroup" => Tag::Hgroup,
            b"noembed" => Tag::Noembed,
            b"noframes" => Tag::Noframes,
            b"frameset" => Tag::Frameset,
            b"frame" => Tag::Frame,
            b"a" => Tag::A,
            b"b" => Tag::B,
            b"i" => Tag::I,
            b"em" => Tag::Em,
            b"strong" => Tag::Strong,
            b"span" => Tag::Span,
            b"code" => Tag::Code,
            b"small" => Tag::Small,
            b"big" => Tag::Big,
            b"u" => Tag::U,
            b"s" => Tag::S,
            b"strike" => Tag::Strike,
            b"tt" => Tag::Tt,
            b"font" => Tag::Font,
            b"nobr" => Tag::Nobr,
            b"label" => Tag::Label,
            _ => Tag::Other(fnv(name)),
        }
    }

    /// Elements whose content the tokenizer must not read as markup, with the
    /// name that ends them.
    pub(super) fn raw_text_name(self) -> Option<&'static [u8]> {
        Some(match self {
            Tag::Script => b"script",
            Tag::Style => b"style",
            Tag::Noscript => b"noscript",
            Tag::Iframe => b"iframe",
            Tag::Noembed => b"noembed",
            Tag::Noframes => b"noframes",
            Tag::Textarea => b"textarea",
            Tag::Title => b"title",
            Tag::Xmp => b"xmp",
            _ => return None,
        })
    }

    pub(super) fn is_void(self) -> bool {
        matches!(
            self,
            Tag::Area
                | Tag::Base
                | Tag::Br
                | Tag::Col
                | Tag::Embed
                | Tag::Hr
                | Tag::Img
                | Tag::Input
                | Tag::Link
                | Tag::Meta
                | Tag::Param
                | Tag::Source
                | Tag::Track
                | Tag::Wbr
                | Tag::Keygen
                | Tag::Frame
        )
    }

    /// Every start tag that ends an open `<p>` is a block, and so are these.
    pub(super) fn is_block(self) -> bool {
        self.closes_p()
            || matches!(
                self,
                Tag::Root
                    | Tag::Html
                    | Tag::Body
                    | Tag::Caption
                    | Tag::Thead
                    | Tag::Tbody
                    | Tag::Tfoot
                    | Tag::Tr
                    | Tag::Td
                    | Tag::Th
                    | Tag::Legend
                    | Tag::OptionEl
                    | Tag::Optgroup
                    | Tag::Frameset
                    | Tag::Colgroup
            )
    }

    /// Start tags that end an open `<p>`, as browsers do.
    pub(super) fn closes_p(self) -> bool {
        matches!(
            self,
            Tag::Address
                | Tag::Article
                | Tag::Aside
                | Tag::Blockquote
                | Tag::Center
                | Tag::Details
                | Tag::Dialog
                | Tag::Dir
                | Tag::Div
                | Tag::Dl
                | Tag::Dt
                | Tag::Dd
                | Tag::Fieldset
                | Tag::Figcaption
                | Tag::Figure
                | Tag::Footer
                | Tag::Form
                | Tag::H(_)
                | Tag::Header
                | Tag::Hgroup
                | Tag::Hr
                | Tag::Li
                | Tag::Main
                | Tag::Menu
                | Tag::Nav
                | Tag::Ol
                | Tag::P
                | Tag::Pre
                | Tag::Section
                | Tag::Summary
                | Tag::Table
                | Tag::Ul
                | Tag::Xmp
                | Tag::Listing
                | Tag::Plaintext
        )
    }

    /// Elements an unrelated end tag must not close across, so that a stray
    /// `</div>` inside a table cell cannot end the table.
    pub(super) fn is_scope_boundary(self) -> bool {
        matches!(
            self,
            Tag::Root
                | Tag::Html
                | Tag::Table
                | Tag::Td
                | Tag::Th
                | Tag::Caption
                | Tag::Template
                | Tag::Object
                | Tag::Svg
                | Tag::Math
        )
    }

    pub(super) fn is_table_part(self) -> bool {
        matches!(
            self,
            Tag::Tr
                | Tag::Td
                | Tag::Th
                | Tag::Thead
                | Tag::Tbody
                | Tag::Tfoot
                | Tag::Caption
                | Tag::Colgroup
        )
    }

    /// May appear in `<head>`; anything else there means the body has begun.
    pub(super) fn is_head_content(self) -> bool {
        matches!(
            self,
            Tag::Title
                | Tag::Meta
                | Tag::Link
                | Tag::Base
                | Tag::Style
                | Tag::Script
                | Tag::Noscript
                | Tag::Template
        )
    }
}
