//! HTML to text: the page's character data, without markup, scripts, styles
//! or comments. Tokenized by html5gum (WHATWG tokenizer), with its naive state
//! switching so script and style bodies are read as raw text, not as tags.

use html5gum::{DefaultEmitter, Token, Tokenizer};

/// Elements whose content is never page text.
const HIDDEN: &[&[u8]] = &[b"script", b"style", b"noscript", b"template"];

/// The text of an HTML page, words separated by spaces at every tag (so
/// `a<br>b` and `<p>a</p><p>b</p>` do not glue words together). The title
/// counts as text.
pub fn to_text(html: &str) -> String {
    let mut emitter = DefaultEmitter::default();
    emitter.naively_switch_states(true);
    let mut text = String::with_capacity(html.len() / 2);
    let mut hidden: Vec<Vec<u8>> = Vec::new();
    for token in Tokenizer::new_with_emitter(html, emitter).flatten() {
        match token {
            Token::StartTag(tag) => {
                let name = tag.name.to_ascii_lowercase();
                if HIDDEN.contains(&name.as_slice()) && !tag.self_closing {
                    hidden.push(name);
                }
                text.push(' ');
            }
            Token::EndTag(tag) => {
                let name = tag.name.to_ascii_lowercase();
                if let Some(i) = hidden.iter().rposition(|h| *h == name) {
                    hidden.truncate(i);
                }
                text.push(' ');
            }
            Token::String(s) if hidden.is_empty() => {
                text.push_str(&String::from_utf8_lossy(&s));
            }
            _ => {}
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(html: &str) -> String {
        to_text(html)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn keeps_text_and_drops_scripts_styles_and_comments() {
        let page = r#"<!DOCTYPE html><html><head><title>Title &amp; more</title>
            <style>body { color: red }</style><script>if (a < b) { document.write("<p>no</p>") }</script>
            <meta charset="utf-8"></head><body><!-- comment --><h1>Heading</h1>
            <p>First<br>second <a href="/x">link</a></p><noscript>enable js</noscript>
            <script type="application/ld+json">{"x": 1}</script><p>你好，世界</p></body></html>"#;
        assert_eq!(
            words(page),
            "Title & more Heading First second link 你好，世界"
        );
    }

    #[test]
    fn tolerates_tag_soup() {
        assert_eq!(
            words("<p>one<div>two</p>three<b>four"),
            "one two three four"
        );
        assert_eq!(words("plain text"), "plain text");
    }
}
