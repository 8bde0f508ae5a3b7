//! The WARC/WET reader on arbitrary bytes, plain and as one gzip member:
//! it may report bad records, or fail with an error, but never panic.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use neardup::fingerprint::crawl::http::HttpBodies;
use neardup::fingerprint::crawl::warc;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir();
    let path = dir.join(format!("neardup-fuzz-{}.warc", std::process::id()));
    std::fs::write(&path, data).unwrap();
    let plain = neardup::io::storage::Location::Local(path.clone());
    let _ = warc::read(&plain, HttpBodies::Decoded, &mut |_record, _offset| Ok(()));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data).unwrap();
    std::fs::write(&path, gz.finish().unwrap()).unwrap();
    let _ = warc::read(&plain, HttpBodies::Decoded, &mut |_record, _offset| Ok(()));
});
