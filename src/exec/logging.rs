//! Log setup: `tracing` to stderr, quiet unless `RUST_LOG` asks for more;
//! colours only on a terminal, and never under `NO_COLOR`, `CLICOLOR=0`
//! or `TERM=dumb`.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Installs the stderr subscriber; `RUST_LOG=info` shows the run's stages.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let colours = colours_on(&std::io::stderr());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colours)
        .with_writer(|| LogLines)
        .with_target(false)
        // A stderr that cannot be written (a full disk, a closed pipe)
        // loses the logs; reporting that on stderr would panic.
        .log_internal_errors(false)
        .try_init();
}

/// Whether to colour what goes to `stream`: a terminal that is not `dumb`,
/// unless `NO_COLOR` is set or `CLICOLOR` is `0`, as most tools take them.
pub(crate) fn colours_on(stream: &impl IsTerminal) -> bool {
    let variable = |name| std::env::var_os(name);
    stream.is_terminal()
        && variable("NO_COLOR").is_none()
        && variable("TERM").is_none_or(|term| term != "dumb")
        && variable("CLICOLOR").is_none_or(|setting| setting != "0")
}

/// Writes `line` to stderr, ignoring a stderr that cannot be written (a
/// full disk, a closed pipe): `eprintln!` would panic there instead.
pub fn print_error(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Crawled text (a page's words) as a terminal or a page may show it:
/// control characters other than line breaks and tabs, bidirectional
/// controls and invisible characters are written as `\u{…}`, so a crawled
/// string can neither drive a terminal (an escape sequence) nor show
/// itself reversed (U+202E) as another text.
pub(crate) fn visible(text: &str) -> Cow<'_, str> {
    escaped_where(text, |c| {
        (c.is_control() && c != '\n' && c != '\t') || is_invisible(c)
    })
}

/// A one-line value (a URL, a host, a name) as [`visible`] shows text, its
/// line breaks and tabs escaped too: two URLs that differ only there, or
/// in a character that shows as nothing, never look the same.
pub(crate) fn visible_line(text: &str) -> Cow<'_, str> {
    escaped_where(text, |c| c.is_control() || is_invisible(c))
}

/// Characters that show as nothing or reorder the text around them: the
/// format characters (Unicode's Cf: bidirectional controls, zero widths,
/// the soft hyphen, word joiners, tags) and the fillers that render blank.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00ad}' | '\u{034f}' | '\u{061c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}'
        | '\u{17b5}' | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200f}'
        | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{3164}' | '\u{feff}'
        | '\u{ffa0}' | '\u{fff0}'..='\u{fffb}' | '\u{1bca0}'..='\u{1bca3}'
        | '\u{1d173}'..='\u{1d17a}' | '\u{e0000}'..='\u{e007f}')
}

/// `text` with each character that `hidden` takes written as `\u{…}`.
fn escaped_where(text: &str, hidden: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&hidden) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match hidden(c) {
            true => {
                let _ = write!(shown, "\\u{{{:04x}}}", c as u32);
            }
            false => shown.push(c),
        }
    }
    Cow::Owned(shown)
}

/// Stderr for log lines, written around a progress bar being drawn.
struct LogLines;

impl std::io::Write for LogLines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        crate::exec::progress::write_around_bar(bytes)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The process's resident and peak resident memory in MiB (Linux; zeros
/// elsewhere), for the stage logs: which stage holds the memory is the
/// first question a run that peaks too high raises.
pub(crate) fn resident_mib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kib| kib / 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidi_characters_are_shown_as_escapes() {
        assert!(matches!(
            visible("https://a.example/ü?q=1"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            visible("https://rtl.example/\u{202e}evil\u{202c}/gpj.exe"),
            "https://rtl.example/\\u{202e}evil\\u{202c}/gpj.exe"
        );
        assert_eq!(visible("a\u{1b}[31mb\0c"), "a\\u{001b}[31mb\\u{0000}c");
        assert_eq!(visible("line\nnext\ttab"), "line\nnext\ttab");
        // Characters that show as nothing, in text and in a URL.
        assert_eq!(visible("soft\u{ad}hy\u{2060}"), "soft\\u{00ad}hy\\u{2060}");
        assert_eq!(
            visible_line("https://ws.example/x\ny\t\u{2063}\u{34f}"),
            "https://ws.example/x\\u{000a}y\\u{0009}\\u{2063}\\u{034f}"
        );
        assert!(matches!(
            visible_line("https://例え.jp/ü"),
            Cow::Borrowed(_)
        ));
    }
}
