//! The real DuckDB reads `match` output: types, row count, sort order, and a
//! join back to the input shards. The Python package is installed by
//! `scripts/test.sh` into `.venv/`; `NEARDUP_TEST_PYTHON` names another interpreter.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use parquet::file::reader::{FileReader, SerializedFileReader};

/// `tests/duckdb_check.py`'s report on the pairs in `out` of the `gen`
/// data in `data`.
fn duckdb_check(python: &Path, out: &Path, data: &Path) -> serde_json::Value {
    json_of(
        Command::new(python)
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/duckdb_check.py"))
            .arg(out)
            .arg(data.join("queries/*.parquet"))
            .arg(data.join("corpus/*.parquet")),
    )
}

#[test]
fn duckdb_reads_types_rows_and_order_and_joins_back_to_the_shards() {
    let python = python_with("duckdb");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let bin = env!("CARGO_BIN_EXE_neardup");
    let gen = Command::new(bin)
        .args([
            "gen",
            "--out",
            data.to_str().unwrap(),
            "--queries",
            "3000",
            "--corpus",
            "60000",
            "--shards",
            "3",
            "--plant-rate",
            "0.05",
            "--self-rate",
            "0.05",
        ])
        .output()
        .unwrap();
    assert!(gen.status.success());
    let out = dir.path().join("pairs");
    let matched = Command::new(bin)
        .args([
            "match",
            "--queries",
            data.join("queries").to_str().unwrap(),
            "--corpus",
            data.join("corpus").to_str().unwrap(),
            "--self",
            "--parts",
            "3",
            "--workers",
            "2",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        matched.status.success(),
        "{}",
        String::from_utf8_lossy(&matched.stderr)
    );
    let ours = read_pairs(&out);
    assert!(ours.len() > 1000);

    let report = duckdb_check(&python, &out, &data);
    for column in ["query_id", "corpus_id", "query_simhash", "corpus_simhash"] {
        assert_eq!(report["types"][column], "BIGINT", "{column}");
    }
    assert_eq!(report["types"]["distance"], "TINYINT");
    assert_eq!(report["types"]["self_pair"], "BOOLEAN");
    assert!(ours.iter().any(|p| p.self_pair) && ours.iter().any(|p| !p.self_pair));
    assert_eq!(
        report["self_pairs"],
        ours.iter().filter(|p| p.self_pair).count() as u64
    );
    assert_eq!(report["rows"], ours.len() as u64);
    assert_eq!(report["unsorted"], 0);
    assert_eq!(report["wrong_distance"], 0);
    assert_eq!(report["joined"], ours.len() as u64);

    for part in part_files(&out) {
        let reader = SerializedFileReader::new(std::fs::File::open(&part).unwrap()).unwrap();
        let meta = reader.metadata();
        for rg in meta.row_groups() {
            let sorting = rg.sorting_columns().expect("sorting columns recorded");
            let columns: Vec<i32> = sorting.iter().map(|s| s.column_idx).collect();
            assert_eq!(columns, vec![0, 1]);
            assert!(sorting.iter().all(|s| !s.descending));
            // The ids DuckDB read above are delta-encoded, uncompressed.
            for id in [rg.column(0), rg.column(1)] {
                let delta = parquet::basic::Encoding::DELTA_BINARY_PACKED;
                assert!(id.encodings().any(|e| e == delta));
                assert_eq!(id.compression(), parquet::basic::Compression::UNCOMPRESSED);
            }
        }
    }
}

/// `gen`'s 2,000 queries and 40,000 corpus rows in 2 shards, 5% of them
/// planted near a query, into `out`, with `extra` flags.
fn gen_planted(out: &Path, extra: &[&str]) {
    let out = out.to_str().unwrap();
    let flags = [
        "gen",
        "--out",
        out,
        "--queries",
        "2000",
        "--corpus",
        "40000",
        "--shards",
        "2",
        "--plant-rate",
        "0.05",
    ];
    run_ok(&[&flags[..], extra].concat());
}

/// DuckDB reads the sketches of `gen --sketch` shards as BLOBs and verified
/// pairs' `wide_distance` as SMALLINT, and recomputes every pair's wide
/// distance from the fingerprints and sketches in SQL; the drops `cluster`
/// makes of them carry their pair's two distances.
#[test]
fn duckdb_reads_sketches_and_recomputes_the_wide_distance() {
    let python = python_with("duckdb");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = dir.path().join("pairs");
    let out_s = out.to_str().unwrap();
    gen_planted(&data, &["--self-rate", "0.05", "--sketch"]);
    let queries = data.join("queries").display().to_string();
    let corpus = data.join("corpus").display().to_string();
    run_ok(&[
        "match",
        "--queries",
        &queries,
        "--corpus",
        &corpus,
        "--self",
        "--verify",
        "--out",
        out_s,
    ]);
    let ours = read_pairs(&out);
    assert!(ours.len() > 500, "{}", ours.len());
    let report = duckdb_check(&python, &out, &data);
    assert_eq!(report["types"]["wide_distance"], "SMALLINT");
    assert_eq!(report["shard_types"]["sketch"], "BLOB");
    assert_eq!(report["rows"], ours.len() as u64);
    assert_eq!(report["joined"], ours.len() as u64);
    assert_eq!(report["wrong_wide"], 0);

    // The shards rewritten by DuckDB hold the sketches as BLOBs
    // (variable-length binary): verified alike. A BLOB of another length
    // is an error naming it.
    let copied = dir.path().join("copied");
    let copy = r#"
import sys, duckdb
data, out, short = sys.argv[1:4]
db = duckdb.connect()
for side in ["queries", "corpus"]:
    db.sql(f"copy (select * from '{data}/{side}/*.parquet') to '{out}/{side}.parquet'")
db.sql(f"copy (select id, simhash, sketch[1:23] as sketch from '{data}/corpus/*.parquet') to '{short}'")
"#;
    std::fs::create_dir_all(&copied).unwrap();
    let short = dir.path().join("short.parquet");
    let status = Command::new(&python)
        .args(["-c", copy])
        .args([&data, &copied, &short])
        .status()
        .unwrap();
    assert!(status.success());
    let again = dir.path().join("pairs-copied");
    let copied_side = |side: &str| copied.join(format!("{side}.parquet")).display().to_string();
    run_ok(&[
        "match",
        "--queries",
        &copied_side("queries"),
        "--corpus",
        &copied_side("corpus"),
        "--self",
        "--verify",
        "--out",
        again.to_str().unwrap(),
    ]);
    assert_eq!(read_pairs(&again), ours);
    let refused = neardup(&[
        "match",
        "--queries",
        &copied_side("queries"),
        "--corpus",
        short.to_str().unwrap(),
        "--verify",
        "--out",
        dir.path().join("pairs-short").to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("holds a value of 23 bytes, expected 24"),
        "{stderr}"
    );

    // The drops of verified pairs: DuckDB reads `wide_distance` as
    // SMALLINT, and each drop's two distances are its pair's; `kept_by`,
    // dictionary-encoded, as VARCHAR (without keys, every page is kept for
    // its id).
    let clusters = dir.path().join("clusters");
    run_ok(&[
        "cluster",
        "--pairs",
        out_s,
        "--out",
        clusters.to_str().unwrap(),
    ]);
    let script = r#"
import json, sys
import duckdb
drops, pairs = sys.argv[1], sys.argv[2]
db = duckdb.connect()
types = dict(row[:2] for row in db.sql(f"describe select * from '{drops}'").fetchall())
kept_by = dict(db.sql(f"select kept_by, count(*) from '{drops}' group by 1").fetchall())
rows, wrong = db.sql(f"""
    select count(*), count(*) filter (where p.wide_distance is distinct from d.wide_distance
                                      or p.distance is distinct from d.distance)
    from '{drops}' d left join '{pairs}' p
      on (p.query_id, p.corpus_id) in ((d.id, d.keep_id), (d.keep_id, d.id))""").fetchone()
print(json.dumps({"types": types, "rows": rows, "wrong": wrong, "kept_by": kept_by}))
"#;
    let drops = json_of(
        Command::new(&python)
            .args(["-c", script])
            .arg(clusters.join("drop/*.parquet"))
            .arg(out.join("*.parquet")),
    );
    assert_eq!(drops["types"]["wide_distance"], "SMALLINT", "{drops}");
    assert_eq!(drops["types"]["kept_by"], "VARCHAR", "{drops}");
    assert!(drops["rows"].as_u64().unwrap() > 100, "{drops}");
    assert_eq!(drops["kept_by"], serde_json::json!({"id": drops["rows"]}));
    assert_eq!(drops["wrong"], 0, "{drops}");
}

/// Shards whose `simhash` DuckDB wrote as UBIGINT (Parquet UINT64, the
/// u64's own type) are matched as the INT64 shards of the same bit
/// patterns are: the same pairs, byte for byte.
#[test]
fn uint64_fingerprints_written_by_duckdb_match_as_int64_ones_do() {
    let python = python_with("duckdb");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (queries, corpus) = (data.join("queries"), data.join("corpus"));
    gen_planted(&data, &[]);
    let unsigned = dir.path().join("unsigned");
    for (from, name) in [(&queries, "queries"), (&corpus, "corpus")] {
        std::fs::create_dir_all(unsigned.join(name)).unwrap();
        // The same 64 bits: negative INT64s wrap to the top half of UBIGINT.
        let sql = format!(
            "COPY (SELECT id, ((simhash::HUGEINT + 18446744073709551616) % 18446744073709551616)::UBIGINT AS simhash \
             FROM read_parquet('{}/*.parquet')) TO '{}/part-0.parquet' (FORMAT parquet)",
            from.display(),
            unsigned.join(name).display()
        );
        let status = Command::new(&python)
            .args(["-c", &format!("import duckdb; duckdb.sql({sql:?})")])
            .status()
            .unwrap();
        assert!(status.success(), "DuckDB's COPY of {name}");
    }
    let schema = SerializedFileReader::new(
        std::fs::File::open(unsigned.join("corpus/part-0.parquet")).unwrap(),
    )
    .unwrap()
    .metadata()
    .file_metadata()
    .schema_descr_ptr();
    let simhash = schema
        .columns()
        .iter()
        .find(|c| c.name() == "simhash")
        .unwrap();
    assert_eq!(
        simhash.converted_type(),
        parquet::basic::ConvertedType::UINT_64,
        "DuckDB wrote UINT64"
    );
    let mut outputs = Vec::new();
    for root in [&data, &unsigned] {
        let out = root.join("pairs");
        run_ok(&[
            "match",
            "--queries",
            root.join("queries").to_str().unwrap(),
            "--corpus",
            root.join("corpus").to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(read_pairs(&out).len() > 100);
        outputs.push(part_bytes(&out));
    }
    assert!(outputs[0] == outputs[1], "UINT64 shards gave other pairs");
}
