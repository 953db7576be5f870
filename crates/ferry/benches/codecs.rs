//! Serialization of 1,000,000 `u64` and of 1,000,000 structs `{i32, i32, String}` through each
//! codec: the workloads of Cppless's serialization table.
//!
//! `cargo bench -p ferry --bench codecs` prints a Markdown table (also written to
//! `target/ferry-bench/codecs.md`, or `FERRY_BENCH_OUT`: crates/ferry-tests/benches/report/mod.rs):
//! medians of 15 runs (3 with `-- --quick`), GiB/s of the raw vector (8 MB) for the `u64` case
//! and milliseconds for the struct case.
//!
//! Each codec is measured twice. *Fresh memory*: glibc's defaults, which hand every freed
//! multi-megabyte block back to the OS, so each run also pays first-touch page faults for its
//! output. *Warm heap*: after `mallopt` keeps freed memory in the process, as a long-running
//! worker's heap is; this isolates the codec itself.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

use ferry::Codec;
use serde::{Deserialize, Serialize};

// The harness the ferry-tests benches share: `--quick` and where the report goes.
#[path = "../../ferry-tests/benches/report/mod.rs"]
mod report;

const ELEMENTS: usize = 1_000_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Record {
    a: i32,
    b: i32,
    text: String,
}

fn main() {
    let runs = if report::quick() { 3 } else { 15 };
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let numbers: Vec<u64> = (0..ELEMENTS)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        })
        .collect();
    let records: Vec<Record> = (0..ELEMENTS)
        .map(|i| Record {
            a: i as i32,
            b: -(i as i32),
            text: format!("{i:020}"),
        })
        .collect();

    let mut report = String::from(
        "| codec | memory | 1M u64 size | encode | decode | 1M structs size | encode | decode |\n|---|---|---|---|---|---|---|---|\n",
    );
    for heap in ["fresh memory", "warm heap"] {
        if heap == "warm heap" {
            keep_freed_memory();
        }
        for codec in [Codec::Binary, Codec::BinaryInJson, Codec::Json] {
            row(&mut report, codec, heap, &numbers, &records, runs);
        }
    }
    report::write("codecs", &report);
}

/// Makes glibc keep freed memory instead of unmapping it (no effect on other allocators).
fn keep_freed_memory() {
    // SAFETY: mallopt only changes allocator thresholds; called before any concurrent use.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
    }
}

fn row(
    report: &mut String,
    codec: Codec,
    heap: &str,
    numbers: &Vec<u64>,
    records: &Vec<Record>,
    runs: usize,
) {
    {
        let (u64_size, u64_encode, u64_decode) = measure(codec, numbers, runs);
        let (rec_size, rec_encode, rec_decode) = measure(codec, records, runs);
        let raw = (ELEMENTS * 8) as f64;
        let gib = |d: Duration| raw / d.as_secs_f64() / f64::from(1u32 << 30);
        let _ = writeln!(
            report,
            "| {codec} | {heap} | {:.1} MB | {:.2} GiB/s ({:.2} ms) | {:.2} GiB/s ({:.2} ms) | {:.1} MB | {:.1} ms | {:.1} ms |",
            u64_size as f64 / 1e6,
            gib(u64_encode),
            ms(u64_encode),
            gib(u64_decode),
            ms(u64_decode),
            rec_size as f64 / 1e6,
            ms(rec_encode),
            ms(rec_decode),
        );
    }
}

/// Encoded size and median encode and decode times.
fn measure<T>(codec: Codec, value: &T, runs: usize) -> (usize, Duration, Duration)
where
    T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug,
{
    let encoded = codec.encode(value).expect("encode");
    let decoded: T = codec.decode(&encoded).expect("decode");
    assert!(decoded == *value, "{codec} does not round-trip");
    drop(decoded);
    let mut encode = Vec::with_capacity(runs);
    let mut decode = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let bytes = black_box(codec.encode(black_box(value)).expect("encode"));
        encode.push(started.elapsed());
        let started = Instant::now();
        let back: T = black_box(codec.decode(black_box(&bytes)).expect("decode"));
        decode.push(started.elapsed());
        drop(back);
    }
    (encoded.len(), median(encode), median(decode))
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
