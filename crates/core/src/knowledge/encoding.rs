//! Which encoding a text file is in, and its text: UTF-8, UTF-16 with or without a byte order
//! mark, or Windows-1252; anything else fails with the reason rather than being indexed as
//! noise.

use super::extract::ExtractError;
use super::ingest::{PDF_MAGIC, ZIP_MAGIC};

/// `decode_text` for UTF-8 and Windows-1252, on borrowed bytes, written the plain way: what
/// the tests hold it to.
#[cfg(test)]
pub(super) fn decode_plainly(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.iter().map(|&b| windows_1252(b)).collect(),
    }
}

fn windows_1252(b: u8) -> char {
    const HIGH: [char; 32] = [
        '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8d}', 'Ž',
        '\u{8f}', '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9d}',
        'ž', 'Ÿ',
    ];
    match b {
        0x80..=0x9f => HIGH[usize::from(b - 0x80)],
        _ => char::from(b),
    }
}

/// Text files in the wild are UTF-8 (perhaps with a BOM), UTF-16 (what Notepad and
/// spreadsheets call "Unicode", with a BOM or without), or, failing those, Windows-1252.
/// Bytes of another format sent under a text name (a PDF, a ZIP, anything holding NUL bytes
/// that is not UTF-16) are refused: indexed, they would fill search with noise. The bytes'
/// memory is reused when they are UTF-8 already: at the largest upload a second copy is a
/// good part of a Worker's memory.
fn not_read(charset: &str) -> ExtractError {
    ExtractError(format!(
        "The text is encoded as {charset}, which is not read: save it as UTF-8 (or UTF-16) and \
         send it again."
    ))
}

/// The failure of a page whose server names an encoding this reader lacks (`Content-Type:
/// text/html; charset=windows-1251`) and whose bytes are not UTF-8 or UTF-16 after all: read
/// as Windows-1252 it would fill the index with noise.
pub fn unread_charset(content_type: Option<&str>, bytes: &[u8]) -> Option<ExtractError> {
    let lower = content_type?.to_ascii_lowercase();
    let name = declared_charset(lower.as_bytes())?;
    let readable = reads_as_1252(&name)
        || utf16_order(bytes).is_some()
        || std::str::from_utf8(bytes).is_ok()
        || mostly_utf8(bytes);
    (!readable).then(|| not_read(&name))
}

/// The encoding a document names in its first kilobyte: an HTML `<meta charset="...">` (or
/// `content="text/html; charset=..."`) or an XML declaration's `encoding="..."`.
fn declared_charset(bytes: &[u8]) -> Option<String> {
    let head: String = bytes[..bytes.len().min(1024)]
        .iter()
        .map(|&b| char::from(b.to_ascii_lowercase()))
        .collect();
    let at = ["charset=", "encoding="]
        .iter()
        .filter_map(|key| head.find(key).map(|i| i + key.len()))
        .min()?;
    let name: String = head[at..]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Whether an encoding's name is one this reader reads text in when it is not UTF-8:
/// Windows-1252 and the Latin-1 and ASCII it extends (UTF-8 and UTF-16 are read first).
fn reads_as_1252(name: &str) -> bool {
    matches!(
        name,
        "windows-1252"
            | "cp1252"
            | "iso-8859-1"
            | "iso8859-1"
            | "latin1"
            | "latin-1"
            | "l1"
            | "us-ascii"
            | "ascii"
            | "utf-8"
            | "utf8"
            | "utf-16"
            | "utf-16le"
            | "utf-16be"
    )
}

/// Whether bytes that are not UTF-8 look like Windows-1252 text: a language written in Latin
/// letters has few letters outside ASCII (French, German: under a tenth), where Windows-1251
/// Cyrillic or EUC-KR Hangul read that way is mostly accented noise; and Shift_JIS or GBK
/// double bytes keep landing on the five bytes Windows-1252 leaves undefined.
fn reads_as_western(bytes: &[u8]) -> bool {
    let (mut ascii_letters, mut high, mut undefined) = (0usize, 0usize, 0usize);
    for &b in bytes {
        match b {
            b if b.is_ascii_alphabetic() => ascii_letters += 1,
            0x81 | 0x8d | 0x8f | 0x90 | 0x9d => {
                high += 1;
                undefined += 1;
            }
            0x80.. => high += 1,
            _ => {}
        }
    }
    let letters = high + ascii_letters;
    undefined * 1000 <= bytes.len() && (letters < 20 || high * 2 <= letters)
}

pub(super) fn decode_text(bytes: Vec<u8>) -> Result<String, ExtractError> {
    if let Some((big_endian, mark)) = utf16_order(&bytes) {
        let units = bytes[mark..].chunks_exact(2).map(|pair| {
            let pair = [pair[0], pair[1]];
            if big_endian {
                u16::from_be_bytes(pair)
            } else {
                u16::from_le_bytes(pair)
            }
        });
        return Ok(char::decode_utf16(units)
            .map(|c| c.unwrap_or('\u{fffd}'))
            .collect());
    }
    if bytes.starts_with(PDF_MAGIC) {
        return Err(ExtractError(
            "The content is a PDF, not text: send it as a .pdf file.".into(),
        ));
    }
    if bytes.starts_with(ZIP_MAGIC) {
        return Err(ExtractError(
            "The content is a ZIP archive (an Office document or an EPUB?), not text: send it \
             under its own extension."
                .into(),
        ));
    }
    if bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0) {
        return Err(ExtractError(
            "The content holds binary data, not text.".into(),
        ));
    }
    let mut text = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => {
            let mut bytes = e.into_bytes();
            if !mostly_utf8(&bytes) {
                // A document that says it is in an encoding this reader lacks (windows-1251,
                // Shift_JIS...) would be indexed as Windows-1252 noise: it fails with why.
                if let Some(name) = declared_charset(&bytes).filter(|name| !reads_as_1252(name)) {
                    return Err(not_read(&name));
                }
                if !reads_as_western(&bytes) {
                    return Err(ExtractError(
                        "The text is not UTF-8 or UTF-16, and it does not read as Windows-1252 \
                         either (Shift_JIS, GBK, EUC-KR or Windows-1251?): save it as UTF-8 and \
                         send it again."
                            .into(),
                    ));
                }
                return Ok(bytes.iter().map(|&b| windows_1252(b)).collect());
            }
            // A file cut short mid-character (a truncated download, a size limit) ends in
            // the first bytes of a character: dropped rather than shown as a stray mark.
            let cut = bytes
                .utf8_chunks()
                .last()
                .map(|chunk| chunk.invalid())
                .filter(
                    |tail| matches!(std::str::from_utf8(tail), Err(e) if e.error_len().is_none()),
                )
                .map_or(0, <[u8]>::len);
            bytes.truncate(bytes.len() - cut);
            match String::from_utf8(bytes) {
                Ok(s) => s,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            }
        }
    };
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

/// Whether bytes that are not valid UTF-8 are UTF-8 with a few damaged bytes (a stray
/// Windows-1252 letter pasted in, a cut-off last character) rather than Windows-1252. In
/// Windows-1252 text a valid multibyte sequence is a rare accident (a capital accented
/// letter right before a sign in 0x80-0xBF), while nearly every accented letter breaks one;
/// so a file holding at least ten valid multibyte sequences for each broken one is UTF-8.
fn mostly_utf8(bytes: &[u8]) -> bool {
    let (mut multibyte, mut broken) = (0usize, 0usize);
    let mut chunks = bytes.utf8_chunks().peekable();
    while let Some(chunk) = chunks.next() {
        multibyte += chunk.valid().chars().filter(|c| !c.is_ascii()).count();
        // The start of a character at the very end is a file cut short, not a broken one:
        // a short file of five accented letters and a cut sixth is still UTF-8.
        let cut_at_end = chunks.peek().is_none()
            && matches!(std::str::from_utf8(chunk.invalid()), Err(e) if e.error_len().is_none());
        broken += usize::from(!chunk.invalid().is_empty() && !cut_at_end);
    }
    multibyte > 0 && broken * 10 <= multibyte
}

/// How much of a text file is looked at to tell its encoding.
const SNIFF_BYTES: usize = 8 * 1024;

/// `Some((big_endian, mark))` when the bytes are UTF-16, `mark` being the length of its byte
/// order mark: a byte order mark, text with no BOM in which one byte of most pairs is zero
/// (Latin-script text, as such files mostly are), or text of another script
/// (`unmarked_utf16_order`).
fn utf16_order(bytes: &[u8]) -> Option<(bool, usize)> {
    match bytes.get(..2) {
        Some([0xFF, 0xFE]) => return Some((false, 2)),
        Some([0xFE, 0xFF]) => return Some((true, 2)),
        _ => {}
    }
    let head = &bytes[..bytes.len().min(SNIFF_BYTES) & !1];
    let pairs = head.len() / 2;
    if pairs < 2 {
        return None;
    }
    let zeros_at = |offset: usize| {
        head.iter()
            .skip(offset)
            .step_by(2)
            .filter(|&&b| b == 0)
            .count()
    };
    let (even, odd) = (zeros_at(0), zeros_at(1));
    // Mostly zero on one side, almost never on the other.
    if odd * 10 >= pairs * 7 && even * 20 <= pairs {
        Some((false, 0))
    } else if even * 10 >= pairs * 7 && odd * 20 <= pairs {
        Some((true, 0))
    } else if bytes.len().is_multiple_of(2) {
        unmarked_utf16_order(head, head.len() < bytes.len()).map(|big_endian| (big_endian, 0))
    } else {
        None
    }
}

/// Fewest characters that UTF-16 with few zero bytes is told by: in a shorter run of
/// Windows-1252 letters, chance too often makes one byte order read as ideographs and the
/// other not.
const UTF16_MIN_CHARS: usize = 16;

/// Whether `head` (the start of a file, cut there when `cut`) is UTF-16 of a script other
/// than Latin, with no byte order mark, and in which order. Read in the right order such
/// text is characters of one script with spaces and punctuation; read in the wrong one it
/// scatters over unrelated blocks or breaks on unpaired surrogates. Single-byte text read as
/// UTF-16 looks alike in both orders (its even and odd bytes are alike), so one order has to
/// read clearly better than the other; binary data reads as neither.
fn unmarked_utf16_order(head: &[u8], cut: bool) -> Option<bool> {
    if reads_as_utf8_text(head) || reads_as_shift_jis(head) {
        return None;
    }
    // A pair of two ASCII letters or spaces is a CJK ideograph read as UTF-16, and in
    // single-byte text nearly every pair is one; in CJK text well under half are.
    let wordy = |b: u8| b == b' ' || b.is_ascii_alphabetic();
    let pairs = head.len() / 2;
    let wordy_pairs = head
        .chunks_exact(2)
        .filter(|pair| wordy(pair[0]) && wordy(pair[1]))
        .count();
    if wordy_pairs * 2 > pairs {
        return None;
    }
    let little = Utf16Reading::of(head, false, cut);
    let big = Utf16Reading::of(head, true, cut);
    if little.chars < UTF16_MIN_CHARS {
        return None;
    }
    if little.is_text() && little.clearly_beats(&big) {
        Some(false)
    } else if big.is_text() && big.clearly_beats(&little) {
        Some(true)
    } else {
        None
    }
}

/// Whether bytes are Japanese text in Shift_JIS: two-byte characters (a lead byte and a valid
/// trail) for at least half of them, the rest ASCII text or half-width katakana, no control
/// characters but tabs and line breaks. Pure kana and kanji in Shift_JIS read as UTF-16
/// ideographs (its lead bytes 0x82-0x9F are the high bytes of CJK ideographs), so without
/// this such a file was indexed as nonsense; UTF-16 itself almost never reads this way, its
/// low bytes falling on control characters and invalid trails.
fn reads_as_shift_jis(bytes: &[u8]) -> bool {
    let (mut at, mut double) = (0, 0);
    while at < bytes.len() {
        let b = bytes[at];
        match b {
            b'\t' | b'\n' | b'\r' | 0x20..=0x7E | 0xA1..=0xDF => at += 1,
            0x81..=0x9F | 0xE0..=0xFC => match bytes.get(at + 1) {
                Some(0x40..=0x7E | 0x80..=0xFC) => {
                    double += 1;
                    at += 2;
                }
                // The sniffed start may end between a character's two bytes.
                None => at += 1,
                Some(_) => return false,
            },
            _ => return false,
        }
    }
    double >= UTF16_MIN_CHARS && double * 4 >= bytes.len()
}

/// Whether bytes are UTF-8 text (perhaps cut mid-character at their end): valid, and with no
/// control characters but tabs, line and page breaks, which UTF-16 of many scripts reads as.
fn reads_as_utf8_text(bytes: &[u8]) -> bool {
    let valid = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) if e.error_len().is_none() => {
            // The sniffed start may end mid-character.
            std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return false,
    };
    !valid
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\u{c}'))
}

/// Characters that text of any script holds: ASCII, Latin-1 signs, common punctuation and
/// currency signs, CJK and fullwidth punctuation.
const COMMON_CHARS: &[(u16, u16)] = &[
    (0x09, 0x0A),
    (0x0C, 0x0D),
    (0x20, 0x7E),
    (0xA0, 0xBF),
    (0xD7, 0xD7),
    (0xF7, 0xF7),
    (0x2010, 0x2027),
    (0x2030, 0x203A),
    (0x20A0, 0x20C0),
    (0x2116, 0x2116),
    (0x2122, 0x2122),
    (0x3000, 0x303F),
    (0xFF01, 0xFF65),
];

/// The letters of the scripts text files are written in, by the number of the script:
/// Latin, Greek, Cyrillic, Armenian, Hebrew, Arabic, ten of India and Sri Lanka, Thai, Lao,
/// Georgian, Chinese and Japanese (ideographs and kana), Korean.
const SCRIPT_LETTERS: &[(u16, u16, usize)] = &[
    (0x00C0, 0x024F, 0),
    (0x0300, 0x036F, 0),
    (0x1E00, 0x1EFF, 0),
    (0x0370, 0x03FF, 1),
    (0x0400, 0x052F, 2),
    (0x0530, 0x058F, 3),
    (0x0590, 0x05FF, 4),
    (0x0600, 0x06FF, 5),
    (0x0900, 0x097F, 6),
    (0x0980, 0x09FF, 7),
    (0x0A00, 0x0A7F, 8),
    (0x0A80, 0x0AFF, 9),
    (0x0B00, 0x0B7F, 10),
    (0x0B80, 0x0BFF, 11),
    (0x0C00, 0x0C7F, 12),
    (0x0C80, 0x0CFF, 13),
    (0x0D00, 0x0D7F, 14),
    (0x0D80, 0x0DFF, 15),
    (0x0E00, 0x0E7F, 16),
    (0x0E80, 0x0EFF, 17),
    (0x10A0, 0x10FF, 18),
    (0x3040, 0x30FF, 19),
    (0x4E00, 0x9FFF, 19),
    (0xF900, 0xFAFF, 19),
    (0xFF66, 0xFF9F, 19),
    (0xAC00, 0xD7A3, 20),
];
const SCRIPTS: usize = 21;

/// The start of a file read as UTF-16 in one byte order.
struct Utf16Reading {
    chars: usize,
    /// Unpaired surrogates, control characters, private-use characters and noncharacters,
    /// none of which text holds.
    broken: usize,
    /// Common characters and the letters of the script most of them are in.
    fitting: usize,
    /// How many blocks of 256 code points its characters beyond ASCII come from.
    blocks: usize,
}

impl Utf16Reading {
    fn of(head: &[u8], big_endian: bool, cut: bool) -> Utf16Reading {
        let mut units: Vec<u16> = head
            .chunks_exact(2)
            .map(|pair| {
                let pair = [pair[0], pair[1]];
                if big_endian {
                    u16::from_be_bytes(pair)
                } else {
                    u16::from_le_bytes(pair)
                }
            })
            .collect();
        // A pair cut in two where the sniffed start ends is not a broken one.
        if cut && units.last().is_some_and(|u| (0xD800..0xDC00).contains(u)) {
            units.pop();
        }
        let (mut chars, mut broken, mut common) = (0, 0, 0);
        let mut letters = [0usize; SCRIPTS];
        let mut blocks = [false; 256];
        for c in char::decode_utf16(units) {
            chars += 1;
            let Ok(c) = c else {
                broken += 1;
                continue;
            };
            let Ok(unit) = u16::try_from(u32::from(c)) else {
                // Beyond the Basic Multilingual Plane: emoji, rare ideographs.
                common += 1;
                continue;
            };
            let nonchar = (0xFDD0..=0xFDEF).contains(&unit) || unit >= 0xFFFE;
            let private = (0xE000..=0xF8FF).contains(&unit);
            if (c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\u{c}')) || nonchar || private
            {
                broken += 1;
                continue;
            }
            if unit >= 0x80 {
                blocks[usize::from(unit >> 8)] = true;
            }
            if COMMON_CHARS.iter().any(|&(a, b)| (a..=b).contains(&unit)) {
                common += 1;
            } else if let Some(&(_, _, script)) = SCRIPT_LETTERS
                .iter()
                .find(|&&(a, b, _)| (a..=b).contains(&unit))
            {
                letters[script] += 1;
            }
        }
        Utf16Reading {
            chars,
            broken,
            fitting: common + letters.iter().max().copied().unwrap_or(0),
            blocks: blocks.iter().filter(|&&b| b).count(),
        }
    }

    /// Whether this reads as text: nothing broken, and all of it fitting (nine in ten
    /// characters, from 32 on: a rarer sign or a word in another script).
    fn is_text(&self) -> bool {
        let needed = if self.chars < 32 {
            self.chars
        } else {
            (self.chars * 9).div_ceil(10)
        };
        self.broken == 0 && self.fitting >= needed
    }

    /// Whether this reading is clearly better than the other byte order's: a quarter more of
    /// it fits, or (an alphabet read the wrong way round, which can land on the letters of
    /// one other script) its letters come from one or two blocks and the other's from many.
    fn clearly_beats(&self, other: &Utf16Reading) -> bool {
        other.fitting * 4 <= self.fitting * 3 || (self.blocks <= 2 && other.blocks >= 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_decoding_falls_back_to_windows_1252() {
        assert_eq!(decode_plainly(b"\xEF\xBB\xBFcaf\xC3\xA9"), "café");
        assert_eq!(decode_plainly(b"caf\xE9 \x93quoted\x94"), "café “quoted”");
    }

    #[test]
    fn text_in_an_undeclared_legacy_encoding_fails_rather_than_read_as_noise() {
        let refused: [&[u8]; 4] = [
            // Shift_JIS, GBK, Windows-1251 and EUC-KR, none saying so (each an odd number of
            // bytes: even, double-byte text may read as UTF-16 without a mark, tried first).
            b"\n\x94z\x91\x97\x82\xc9\x82\xc2\x82\xa2\x82\xc4\x81B\x82\xb2\x92\x8d\x95\xb6\x82\xcd\x8eO\x93\xfa\x88\xc8\x93\xe0\x82\xc9\x94\xad\x91\x97\x82\xb5\x82\xdc\x82\xb7\x81B",
            b"\n\xcd\xcb\xbb\xf5\xd5\xfe\xb2\xdf\xa3\xba\xb9\xcb\xbf\xcd\xbf\xc9\xd2\xd4\xd4\xda\xca\xd5\xb5\xbd\xc9\xcc\xc6\xb7\xba\xf3\xc6\xdf\xcc\xec\xc4\xda\xc9\xea\xc7\xeb\xcd\xcb\xbb\xf5\xa1\xa3",
            b"\xc4\xee\xf1\xf2\xe0\xe2\xea\xe0 \xef\xee \xcc\xee\xf1\xea\xe2\xe5 \xe1\xe5\xf1\xef\xeb\xe0\xf2\xed\xee \xef\xf0\xe8 \xe7\xe0\xea\xe0\xe7\xe5 \xee\xf2 \xf2\xf0\xb8\xf5 \xf2\xfb\xf1\xff\xf7 \xf0\xf3\xe1\xeb\xe5\xe9.",
            b"\n\xb9\xe8\xbc\xdb\xc0\xba \xc1\xd6\xb9\xae \xc8\xc4 \xbb\xef\xc0\xcf \xc0\xcc\xb3\xbb\xbf\xa1 \xbd\xc3\xc0\xdb\xb5\xcb\xb4\xcf\xb4\xd9.",
        ];
        for bytes in refused {
            let err = decode_text(bytes.to_vec()).expect_err(&String::from_utf8_lossy(bytes));
            assert!(err.0.contains("save it as UTF-8"), "{}", err.0);
        }
        let german = b"\xdcber die R\xfccksendung: Sie k\xf6nnen Waren innerhalb von 14 Tagen zur\xfcckgeben, \xe7a va.";
        assert!(decode_text(german.to_vec())
            .expect("read")
            .starts_with("Über die Rücksendung"));
    }

    #[test]
    fn shift_jis_of_an_even_length_is_not_read_as_utf16() {
        // Pure kana and kanji: as UTF-16 its bytes read as CJK ideographs.
        let sjis = b"\x94z\x91\x97\x82\xc9\x82\xc2\x82\xa2\x82\xc4\x81B\x82\xb2\x92\x8d\x95\xb6\x82\xcd\x8eO\x93\xfa\x88\xc8\x93\xe0\x82\xc9\x94\xad\x91\x97\x82\xb5\x82\xdc\x82\xb7\x81B";
        assert!(sjis.len().is_multiple_of(2));
        let err = decode_text(sjis.to_vec()).expect_err("refused");
        assert!(err.0.contains("save it as UTF-8"), "{}", err.0);
        // Japanese in UTF-16 without a byte order mark is still read.
        let text = "保証期間は購入日から二年間です。返品は三十日以内に受け付けます。";
        for bytes in [
            text.encode_utf16()
                .flat_map(u16::to_le_bytes)
                .collect::<Vec<u8>>(),
            text.encode_utf16().flat_map(u16::to_be_bytes).collect(),
        ] {
            assert_eq!(decode_text(bytes).as_deref(), Ok(text));
        }
    }

    #[test]
    fn a_short_utf8_text_cut_mid_character_stays_utf8() {
        let mut bytes = "Le café, la crème brûlée et le thé glacé"
            .as_bytes()
            .to_vec();
        bytes.push(0xC3);
        assert_eq!(
            decode_text(bytes).as_deref(),
            Ok("Le café, la crème brûlée et le thé glacé")
        );
    }

    #[test]
    fn utf16_text_is_read_with_or_without_its_byte_order_mark() {
        let text = "Produkt\tPreis\nKaffeebohnen\t5 €\n";
        let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        for bytes in [
            [&[0xFF, 0xFE][..], &le].concat(),
            [&[0xFE, 0xFF][..], &be].concat(),
            le.clone(),
            be.clone(),
        ] {
            assert_eq!(decode_text(bytes).as_deref(), Ok(text));
        }
    }

    #[test]
    fn utf8_with_a_few_broken_bytes_stays_utf8() {
        let good = "Die Übergrößen für Mäntel sind verfügbar. ".repeat(20);
        let cut = [good.as_bytes(), &"ü".as_bytes()[..1]].concat();
        assert_eq!(decode_text(cut), Ok(good.clone()));
        let stray = [good.as_bytes(), b"Stray \xE9t\xE9."].concat();
        assert_eq!(
            decode_text(stray),
            Ok(format!("{good}Stray \u{fffd}t\u{fffd}."))
        );
        let marked = [b"\xEF\xBB\xBF", good.as_bytes(), b"\xFF"].concat();
        assert_eq!(decode_text(marked), Ok(format!("{good}\u{fffd}")));
    }

    #[test]
    fn windows_1252_is_not_taken_for_broken_utf8() {
        let text = "Die Übergrößen für Mäntel sind verfügbar. ".repeat(20);
        let bytes = b"Die \xDCbergr\xF6\xDFen f\xFCr M\xE4ntel sind verf\xFCgbar. ".repeat(20);
        assert_eq!(decode_text(bytes.clone()), Ok(text.clone()));
        // Two bytes that happen to be a valid sequence ("Ã©" is UTF-8's "é") among many that
        // are not.
        let accident = [&bytes[..], b"\xC3\xA9"].concat();
        assert_eq!(decode_text(accident), Ok(format!("{text}Ã©")));
        assert_eq!(
            decode_text(b"Stray \xE9t\xE9".to_vec()).as_deref(),
            Ok("Stray été")
        );
    }

    fn utf16_of(text: &str, big_endian: bool) -> Vec<u8> {
        text.encode_utf16()
            .flat_map(|u| {
                if big_endian {
                    u.to_be_bytes()
                } else {
                    u.to_le_bytes()
                }
            })
            .collect()
    }

    #[test]
    fn utf16_of_other_scripts_is_read_without_a_byte_order_mark() {
        let long = "Медведь любит малину и мёд в сибирской тайге. ".repeat(200);
        for text in [
            "Медведь любит малину и мёд в сибирской тайге.",
            "東京の猫カフェは午前十時に開店します。",
            "北京是中华人民共和国的首都，也是全国的政治中心。",
            "서울은 대한민국의 수도이며 가장 큰 도시입니다.",
            "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.",
            "القاهرة هي عاصمة مصر وأكبر مدنها.",
            "ירושלים היא עיר הבירה של ישראל.",
            "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย",
            "नई दिल्ली भारत की राजधानी है और एक बड़ा शहर है।",
            "Hà Nội là thủ đô của nước Cộng hòa Xã hội chủ nghĩa Việt Nam.",
            "Emoji 🐻🍯 und Umlaute: Bär, Größe, Höhle.",
            &long,
        ] {
            for big_endian in [false, true] {
                let bytes = utf16_of(text, big_endian);
                assert_eq!(utf16_order(&bytes), Some((big_endian, 0)), "{text}");
                assert_eq!(decode_text(bytes).as_deref(), Ok(text));
            }
        }
    }

    #[test]
    fn single_byte_text_and_binary_are_not_taken_for_utf16() {
        let windows_1252 = [
            &b"Die \xDCbergr\xF6\xDFen f\xFCr M\xE4ntel sind verf\xFCgbar. Le caf\xE9 \xE9tait \
               tr\xE8s anim\xE9, o\xF9 l'on servait des cr\xEApes. \x93Quoted\x94 \x96 \x85 \x80 5"
                [..],
            b"Name;Stra\xDFe;PLZ;Ort\r\nM\xFCller;Hauptstra\xDFe 5;80331;M\xFCnchen\r\n\
              Sch\xE4fer;G\xE4rtnerweg 12;50667;K\xF6ln\r\n\xD6zdemir;Bahnhofstra\xDFe 1;10115",
            b"Lecaf\xE9\xE9taittr\xE8sanim\xE9cematin,o\xF9l'onservaitdescr\xEApes.Stra\xDFe",
            b"\xC9\xC9\xC0\xC0\xC7\xC7 \xDC\xD6\xC4 \xDF\xDF \xE9\xE9 \xE8\xE8 \xE0\xE0 \xF9\xF9",
        ];
        for text in windows_1252 {
            for len in (2..=text.len()).step_by(2) {
                for start in 0..=text.len() - len {
                    let bytes = &text[start..start + len];
                    assert_eq!(utf16_order(bytes), None, "{bytes:?}");
                }
            }
        }
        // UTF-8 of these scripts with a broken byte is not UTF-16 either.
        for text in [
            "東京の猫カフェは午前十時に開店します。",
            "Медведь любит малину.",
        ] {
            for broken in [&b"\xFF"[..], b"\xFF\xFE"] {
                let bytes = [text.as_bytes(), broken].concat();
                assert_eq!(utf16_order(&bytes), None, "{text}");
            }
        }
        // Random bytes of every even length up to 2 KiB, and at the length sniffed.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut random = |len: usize| -> Vec<u8> {
            (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state.to_le_bytes()[3]
                })
                .collect()
        };
        for len in (2..=2048).step_by(2).chain([SNIFF_BYTES, 3 * SNIFF_BYTES]) {
            for _ in 0..2 {
                let bytes = random(len);
                assert_eq!(utf16_order(&bytes), None, "{bytes:?}");
            }
        }
        let err = decode_text(random(3 * SNIFF_BYTES)).expect_err("random bytes");
        assert!(err.0.contains("binary"), "{}", err.0);
    }

    #[test]
    fn other_formats_under_a_text_name_are_refused() {
        for (bytes, said) in [
            (&b"%PDF-1.7\n%\xE2\xE3"[..], "PDF"),
            (b"PK\x03\x04\x14\x00\x06\x00", "ZIP"),
            (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "binary"),
        ] {
            let err = decode_text(bytes.to_vec()).expect_err(said);
            assert!(err.0.contains(said), "{}", err.0);
        }
    }
}
