//! The Rust binding against Loom itself: the MLP example exported for the
//! CPU (`loomc build`), run from Rust and compared with a float64
//! reference computed here; tensors from Vec and slices; errors; scalars
//! and functions written in Rust; eight threads; DLPack; reference counts.
//! LOOMC names loomc (default: the build tree's).

use loom::{Arg, Function, Module, Tensor, Value};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

fn loomc() -> PathBuf {
    std::env::var("LOOMC")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../build/bin/loomc"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

static MLP: Mutex<Option<PathBuf>> = Mutex::new(None);

/// examples/mlp.loom built for configs/host.yaml, once per test process.
fn mlp_library() -> PathBuf {
    let mut slot = MLP.lock().unwrap();
    if let Some(p) = slot.as_ref() {
        return p.clone();
    }
    let dir = std::env::temp_dir().join(format!("loom-rust-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("mlp.so");
    let status = Command::new(loomc())
        .arg("build")
        .arg(root().join("examples/mlp.loom"))
        .arg("--config")
        .arg(root().join("configs/host.yaml"))
        .arg("-o")
        .arg(&out)
        .status()
        .expect("cannot run loomc (set LOOMC)");
    assert!(status.success(), "loomc build failed");
    *slot = Some(out.clone());
    out
}

const SHAPES: [&[i64]; 7] = [&[64, 784], &[512, 784], &[512], &[512, 512], &[512], &[10, 512], &[10]];

fn inputs(seed: u64) -> Vec<Vec<f32>> {
    let mut state = seed;
    SHAPES
        .iter()
        .map(|s| {
            (0..s.iter().product::<i64>())
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.2
                })
                .collect()
        })
        .collect()
}

fn views(data: &[Vec<f32>]) -> Vec<Arg<'_>> {
    data.iter().zip(SHAPES.iter()).map(|(d, s)| Arg::slice(d, s)).collect()
}

/// dense (x @ w.T + b), relu twice, then softmax, in float64.
fn reference(d: &[Vec<f32>]) -> Vec<f64> {
    fn dense(x: &[f64], rows: usize, w: &[f32], b: &[f32], out: usize) -> Vec<f64> {
        let inner = x.len() / rows;
        let mut y = vec![0.0; rows * out];
        for r in 0..rows {
            for o in 0..out {
                let mut s = b[o] as f64;
                for k in 0..inner {
                    s += x[r * inner + k] * w[o * inner + k] as f64;
                }
                y[r * out + o] = s;
            }
        }
        y
    }
    let x: Vec<f64> = d[0].iter().map(|&v| v as f64).collect();
    let h1: Vec<f64> = dense(&x, 64, &d[1], &d[2], 512).into_iter().map(|v| v.max(0.0)).collect();
    let h2: Vec<f64> = dense(&h1, 64, &d[3], &d[4], 512).into_iter().map(|v| v.max(0.0)).collect();
    let z = dense(&h2, 64, &d[5], &d[6], 10);
    let mut y = vec![0.0; z.len()];
    for r in 0..64 {
        let row = &z[r * 10..r * 10 + 10];
        let m = row.iter().cloned().fold(f64::MIN, f64::max);
        let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
        for o in 0..10 {
            y[r * 10 + o] = (row[o] - m).exp() / s;
        }
    }
    y
}

fn max_difference(a: &[f32], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(&x, &y)| (x as f64 - y).abs()).fold(0.0, f64::max)
}

#[test]
fn the_mlp_matches_a_float64_reference() {
    let lib = Module::load(mlp_library()).unwrap();
    assert!(lib.function_names().unwrap().iter().any(|n| n == "main"), "{:?}", lib.function_names());
    let main = lib.function("main").unwrap();
    let d = inputs(11);
    let y = main.call(&views(&d)).unwrap().into_tensor().unwrap();
    assert_eq!(y.shape(), vec![64, 10]);
    assert_eq!(y.dtype().to_string(), "float32");
    let err = max_difference(y.as_slice::<f32>().unwrap(), &reference(&d));
    assert!(err < 1e-5, "{} from the reference", err);
}

#[test]
fn tensors_made_from_vecs_give_what_slices_give() {
    let main = Module::load(mlp_library()).unwrap().function("main").unwrap();
    let d = inputs(12);
    let tensors: Vec<Tensor> = d.iter().zip(SHAPES.iter()).map(|(v, s)| Tensor::from_slice(v, s).unwrap()).collect();
    assert_eq!(tensors[1].shape(), vec![512, 784]);
    assert_eq!(tensors[1].to_vec::<f32>().unwrap(), d[1]);
    let args: Vec<Arg> = tensors.iter().map(Arg::tensor).collect();
    let a = main.call(&args).unwrap().into_tensor().unwrap().to_vec::<f32>().unwrap();
    let b = main.call(&views(&d)).unwrap().into_tensor().unwrap().to_vec::<f32>().unwrap();
    assert_eq!(a, b);
}

#[test]
fn errors_carry_looms_message() {
    let e = Module::load("/nonexistent/model.so").unwrap_err();
    assert!(e.message().contains("/nonexistent/model.so"), "{}", e);
    let lib = Module::load(mlp_library()).unwrap();
    let e = lib.function("mian").unwrap_err();
    assert!(e.message().contains("main"), "{}", e); // the closest name
    let main = lib.function("main").unwrap();
    let e = main.call(&[Arg::Int(1)]).unwrap_err();
    assert!(e.message().contains("7 arguments"), "{}", e);
    let d = inputs(13);
    let mut args = views(&d);
    let wrong: [i64; 2] = [32, 784];
    args[0] = Arg::slice(&d[0][..32 * 784], &wrong);
    let e = main.call(&args).unwrap_err();
    assert!(e.message().contains("64") && e.message().contains("32"), "{}", e);
    let t = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let e = t.to_vec::<i32>().unwrap_err();
    assert!(e.message().contains("float32"), "{}", e);
    assert!(Tensor::from_slice(&[1.0f32, 2.0], &[3]).is_err());
    assert!(Function::global("no.such.function").is_err());
}

#[test]
fn scalars_and_functions_written_in_rust() {
    let f = Function::from_closure(|args: &[Value]| {
        if args.len() != 2 {
            return Err(loom::Error::new("rust_test.axpb takes 2 numbers"));
        }
        match (args[0].as_f64(), args[1].as_i64()) {
            (Some(a), Some(b)) => Ok(Value::Float(a * 2.0 + b as f64)),
            _ => Err(loom::Error::new("rust_test.axpb takes a float and an int")),
        }
    })
    .unwrap();
    f.register_global("rust_test.axpb", true).unwrap();
    let g = Function::global("rust_test.axpb").unwrap();
    match g.call(&[Arg::Float(1.5), Arg::Int(3)]).unwrap() {
        Value::Float(x) => assert_eq!(x, 6.0),
        other => panic!("{:?}", other),
    }
    let e = g.call(&[Arg::Int(1)]).unwrap_err();
    assert!(e.message().contains("takes 2 numbers"), "{}", e);
    // A string in and out, and a tensor back.
    let echo = Function::from_closure(|args: &[Value]| match &args[0] {
        Value::Str(s) => Ok(Value::Str(format!("{}!", s))),
        Value::Tensor(t) => Ok(Value::Tensor(t.clone())),
        _ => Ok(Value::None),
    })
    .unwrap();
    match echo.call(&[Arg::Str("loom")]).unwrap() {
        Value::Str(s) => assert_eq!(s, "loom!"),
        other => panic!("{:?}", other),
    }
    let t = Tensor::from_slice(&[1i32, 2, 3], &[3]).unwrap();
    let back = echo.call(&[Arg::tensor(&t)]).unwrap().into_tensor().unwrap();
    assert_eq!(back.to_vec::<i32>().unwrap(), vec![1, 2, 3]);
    // A panic is an Error, not an abort.
    let boom = Function::from_closure(|_: &[Value]| -> loom::Result<Value> { panic!("deliberately") }).unwrap();
    let e = boom.call(&[]).unwrap_err();
    assert!(e.message().contains("panicked") && e.message().contains("deliberately"), "{}", e);
}

#[test]
fn eight_threads_calling_one_function_agree_with_one() {
    let main = Module::load(mlp_library()).unwrap().function("main").unwrap();
    let d = inputs(14);
    let want = main.call(&views(&d)).unwrap().into_tensor().unwrap().to_vec::<f32>().unwrap();
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..5 {
                    let got = main.call(&views(&d)).unwrap().into_tensor().unwrap().to_vec::<f32>().unwrap();
                    assert_eq!(got, want);
                }
            });
        }
    });
}

#[test]
fn dlpack_round_trip_and_reference_counts() {
    let t = Tensor::from_slice(&[1.0f64, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    assert_eq!(t.object().use_count().unwrap(), 1);
    let u = t.clone();
    assert_eq!(t.object().use_count().unwrap(), 2);
    drop(u);
    assert_eq!(t.object().use_count().unwrap(), 1);
    let managed = t.to_dlpack().unwrap();
    let back = unsafe { Tensor::from_dlpack(managed) }.unwrap();
    assert_eq!(back.shape(), vec![2, 2]);
    assert_eq!(back.to_vec::<f64>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    assert_eq!(back.object().type_key().unwrap(), "runtime.NDArray");
}
