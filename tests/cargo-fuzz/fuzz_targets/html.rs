//! Main-content extraction and plain text of arbitrary HTML: never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neardup::fingerprint::crawl::html::{page_text, to_text, MainRules, PageText};

fuzz_target!(|data: &[u8]| {
    let html = String::from_utf8_lossy(data);
    let _ = page_text(&html, PageText::Main(MainRules::FIRST));
    let _ = page_text(&html, PageText::Main(MainRules::SECOND));
    let _ = page_text(&html, PageText::All);
    let _ = to_text(&html);
});
