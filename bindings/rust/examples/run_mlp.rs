//! Runs the MLP example built for the CPU and prints its output:
//!
//!   build/bin/loomc build examples/mlp.loom --config configs/host.yaml -o /tmp/mlp.so
//!   cargo run --example run_mlp -- /tmp/mlp.so
//!
//! The inputs are seeded pseudo-random numbers (the same in every run).

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "mlp.so".to_string());
    if let Err(e) = run(&path) {
        eprintln!("loom: {}", e);
        std::process::exit(1);
    }
}

fn run(path: &str) -> Result<(), loom::Error> {
    let lib = loom::Module::load(path)?;
    let main = lib.function("main")?;
    let shapes: [&[i64]; 7] = [&[64, 784], &[512, 784], &[512], &[512, 512], &[512], &[10, 512], &[10]];
    let mut state = 1u64;
    let data: Vec<Vec<f32>> = shapes
        .iter()
        .map(|s| {
            (0..s.iter().product::<i64>())
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1
                })
                .collect()
        })
        .collect();
    let args: Vec<loom::Arg> = data.iter().zip(shapes.iter()).map(|(d, s)| loom::Arg::slice(d, s)).collect();
    let y = main.call(&args)?.into_tensor()?;
    let values = y.to_vec::<f32>()?;
    println!("output: {} {:?}", y.dtype(), y.shape());
    println!("row 0: {:?}", &values[..10]);
    Ok(())
}
