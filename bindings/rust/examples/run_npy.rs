//! Runs an exported library's `main` on float32 `.npy` inputs and writes
//! the output's elements (float32, C order, no header) to a file: the Rust
//! side of tests/bindings/agreement.sh, which compares six languages' runs
//! bit by bit.
//!
//!   cargo run --example run_npy -- LIB.so OUT.f32 INPUT.npy...

use std::fs;

/// A C-ordered little-endian float32 .npy file: its elements and shape.
fn read_npy(path: &str) -> Result<(Vec<f32>, Vec<i64>), String> {
    let bytes = fs::read(path).map_err(|e| format!("{}: {}", path, e))?;
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(format!("{}: not a .npy file", path));
    }
    let (len, start) = if bytes[6] == 1 {
        (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10)
    } else {
        (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
    };
    let header = String::from_utf8_lossy(bytes.get(start..start + len).ok_or(format!("{}: truncated", path))?);
    if !header.contains("'descr': '<f4'") || !header.contains("'fortran_order': False") {
        return Err(format!("{}: not a C-ordered little-endian float32 array", path));
    }
    let dims = header.split("'shape': (").nth(1).and_then(|s| s.split(')').next()).unwrap_or("");
    let shape = dims
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<i64>().map_err(|_| format!("{}: a bad shape ({})", path, dims)))
        .collect::<Result<Vec<i64>, String>>()?;
    let data = bytes[start + len..].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    Ok((data, shape))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: run_npy LIB.so OUT.f32 INPUT.npy...");
        std::process::exit(2);
    }
    let run = || -> Result<(), String> {
        let inputs = args[3..].iter().map(|p| read_npy(p)).collect::<Result<Vec<_>, _>>()?;
        let lib = loom::Module::load(&args[1]).map_err(|e| e.to_string())?;
        let main = lib.function("main").map_err(|e| e.to_string())?;
        let call: Vec<loom::Arg> = inputs.iter().map(|(d, s)| loom::Arg::slice(d, s)).collect();
        let y = main.call(&call).and_then(|v| v.into_tensor()).map_err(|e| e.to_string())?;
        let values = y.as_slice::<f32>().map_err(|e| e.to_string())?;
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        fs::write(&args[2], bytes).map_err(|e| format!("{}: {}", args[2], e))
    };
    if let Err(e) = run() {
        eprintln!("loom: {}", e);
        std::process::exit(1);
    }
}
