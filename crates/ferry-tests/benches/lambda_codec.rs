//! Typed `lambda` calls in JSON against ferry's binary codec inside the JSON event
//! (`LambdaCodec::BinaryInJson`, Cppless's default archive on Lambda), under `cargo lambda
//! watch`'s emulator with the fixture program as the `bootstrap` of `byte_len(data: Vec<u8>)`.
//!
//! Per size: the event's bytes, the host's encoding time, and the median round trip of 30 calls
//! after 5 warm-up calls, the two codecs alternated call by call.
//!
//! `cargo bench -p ferry-tests --bench lambda_codec` prints a Markdown table (also written to
//! `target/ferry-bench/lambda_codec.md`, or `FERRY_BENCH_OUT`: benches/report/mod.rs).
//! `-- --quick`: 10 calls after 2 warm-up calls per size.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use ferry::aws::{AwsConfig, Credentials};
use ferry::{Codec, Context, LambdaCodec, LambdaConfig};
use ferry_tests::ByteLen;

const SIZES: [usize; 3] = [1 << 10, 64 << 10, 1 << 20];

// The tests' emulator and bootstrap, which start and stop `cargo lambda watch` and the fixture.
#[path = "../tests/common/mod.rs"]
mod common;
mod report;

fn context(port: u16, codec: LambdaCodec) -> Context {
    let aws = AwsConfig::new(
        "eu-west-1",
        Credentials::new("AKIDFERRYBENCH", "ferry-bench-secret", None),
    )
    .with_lambda_endpoint(&format!("http://127.0.0.1:{port}"))
    .unwrap();
    Context::lambda(LambdaConfig::new(aws).functions("_").codec(codec)).unwrap()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Median time to encode `args` in `codec`, of 20.
fn encode_time(args: &ByteLen, codec: Codec) -> Duration {
    median(
        (0..20)
            .map(|_| {
                let started = Instant::now();
                std::hint::black_box(codec.encode(args).unwrap());
                started.elapsed()
            })
            .collect(),
    )
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let emulator = common::Emulator::start();
    let port = emulator.port();
    let _bootstrap = emulator.bootstrap(env!("CARGO_BIN_EXE_ferry-fixture"), "byte_len", &[]);
    let json = context(port, LambdaCodec::Json);
    let binary = context(port, LambdaCodec::BinaryInJson);
    let (warm_up, calls) = if report::quick() { (2, 10) } else { (5, 30) };
    let mut table = String::from(
        "| argument | JSON event | binary-in-JSON event | encode JSON | encode binary-in-JSON | round trip JSON | round trip binary-in-JSON | ratio |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for size in SIZES {
        let data: Vec<u8> = (0..=255).cycle().take(size).collect();
        let args = ByteLen { data: data.clone() };
        let json_bytes = Codec::Json.encode(&args).unwrap().len();
        // `{"__ferry_binary":` + the base64 string + `}`
        let binary_bytes = Codec::BinaryInJson.encode(&args).unwrap().len() + 19;
        let mut samples = (Vec::new(), Vec::new());
        for call in 0..warm_up + calls {
            for (ctx, into) in [(&json, &mut samples.0), (&binary, &mut samples.1)] {
                let started = Instant::now();
                let answered = ctx.call(ByteLen { data: data.clone() }).await.unwrap();
                assert_eq!(answered, size);
                if call >= warm_up {
                    into.push(started.elapsed());
                }
            }
        }
        let (json_trip, binary_trip) = (median(samples.0), median(samples.1));
        let _ = writeln!(
            table,
            "| {} KiB of bytes | {:.1} KiB | {:.1} KiB | {:.0} µs | {:.0} µs | {:.2} ms | {:.2} ms | {:.2}x |",
            size >> 10,
            json_bytes as f64 / 1024.0,
            binary_bytes as f64 / 1024.0,
            encode_time(&args, Codec::Json).as_secs_f64() * 1e6,
            encode_time(&args, Codec::BinaryInJson).as_secs_f64() * 1e6,
            json_trip.as_secs_f64() * 1e3,
            binary_trip.as_secs_f64() * 1e3,
            json_trip.as_secs_f64() / binary_trip.as_secs_f64(),
        );
    }
    report::write("lambda_codec", &table);
}
