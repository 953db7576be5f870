//! The cost of one SigV4 signature of a Lambda Invoke request, as a hot client pays it:
//! `ferry::aws::Signer::sign` with a reused signer.
//!
//! `cargo bench -p ferry --bench sigv4` prints nanoseconds per signature (median of repeated
//! runs) for a small and a 6 KiB body, with and without a session token.

use std::hint::black_box;
use std::time::Instant;

use ferry::aws::{Credentials, Signer};

const SIGNATURES: u32 = 20_000;
const RUNS: usize = 11;

fn main() {
    let url = "https://lambda.eu-west-1.amazonaws.com/2015-03-31/functions/app-count-queens-1a2b3c4d/invocations";
    let headers = [
        ("content-type", "application/json"),
        ("x-amz-invocation-type", "RequestResponse"),
    ];
    let small = br#"{"n": 8, "cols": 0, "left": 0, "right": 0}"#.to_vec();
    let large = vec![b'7'; 6 << 10];
    println!("| credentials | body | ns per signature (median of {RUNS} x {SIGNATURES}) |");
    println!("|---|---|---|");
    for (label, token) in [
        ("access key", None),
        ("session token", Some("FwoGZXIvYXdzEXAMPLETOKEN".repeat(16))),
    ] {
        let signer = Signer::new(
            &Credentials::new(
                "AKIDEXAMPLE",
                "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                token,
            ),
            "eu-west-1",
            "lambda",
        );
        for (body_label, body) in [("42 B", &small), ("6 KiB", &large)] {
            let mut runs: Vec<f64> = (0..RUNS)
                .map(|_| {
                    let start = Instant::now();
                    for _ in 0..SIGNATURES {
                        let signed = signer
                            .sign("POST", black_box(url), &headers, black_box(body))
                            .expect("sign");
                        black_box(signed);
                    }
                    start.elapsed().as_nanos() as f64 / f64::from(SIGNATURES)
                })
                .collect();
            runs.sort_by(f64::total_cmp);
            println!("| {label} | {body_label} | {:.0} |", runs[RUNS / 2]);
        }
    }
}
