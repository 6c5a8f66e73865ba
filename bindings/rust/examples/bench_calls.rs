//! The Rust side of bench/languages.py: the time per call of @noop and
//! @add1k of bench/languages/calls.loom (exported), called with slices
//! (no copy), the median of 7 batches after a warm-up, as call_bench.c
//! does in C.  Prints "noop US" and "add1k US".
//!
//!   cargo run --release --example bench_calls -- LIB.so [CALLS]

use std::time::Instant;

fn median_us(calls: usize, mut f: impl FnMut() -> Result<(), loom::Error>) -> Result<f64, loom::Error> {
    for _ in 0..calls / 10 + 1 {
        f()?;
    }
    let mut batches = Vec::new();
    for _ in 0..7 {
        let start = Instant::now();
        for _ in 0..calls {
            f()?;
        }
        batches.push(start.elapsed().as_secs_f64() / calls as f64 * 1e6);
    }
    batches.sort_by(|a, b| a.partial_cmp(b).unwrap());
    Ok(batches[3])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let calls: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20000);
    let run = || -> Result<(f64, f64), loom::Error> {
        let lib = loom::Module::load(args.get(1).map(String::as_str).unwrap_or("calls.so"))?;
        let (noop, add) = (lib.function("noop")?, lib.function("add1k")?);
        let x: Vec<f32> = (0..1024).map(|k| k as f32).collect();
        let y = vec![1.0f32; 1024];
        let (one, n1k) = ([1i64], [1024i64]);
        let t_noop = median_us(calls, || noop.call(&[loom::Arg::slice(&x[..1], &one)]).map(drop))?;
        let t_add = median_us(calls, || add.call(&[loom::Arg::slice(&x, &n1k), loom::Arg::slice(&y, &n1k)]).map(drop))?;
        Ok((t_noop, t_add))
    };
    match run() {
        Ok((a, b)) => println!("noop {:.3}\nadd1k {:.3}", a, b),
        Err(e) => {
            eprintln!("loom: {}", e);
            std::process::exit(1);
        }
    }
}
