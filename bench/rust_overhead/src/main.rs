//! Per-op overhead of chainerc called from Rust through the safe wrapper:
//! the op chain of bench/overhead.cpp (1,000 ops cycling x*2, +1, exp, log,
//! +(-1), *0.5, exp, log on 1-element float32 arrays), forward + backward,
//! forward only, and forward without history (volatile); plus the MulAdd
//! custom function (w = x*y + z on 10 elements) written in Rust. Each figure
//! is the median over repeats (each at least --min-time seconds) of the time
//! per op (or per call), in microseconds, as the C benchmark computes it.
//!
//! Usage: rust_overhead [--ops N] [--repeats N] [--min-time SECONDS] [--quick]
use chainerc::functions as F;
use chainerc::*;
use std::time::Instant;

fn step(i: usize, x: &Variable) -> Variable {
    let r = match i % 8 {
        0 => F::mul_scalar(x, 2.0),
        1 => F::add_scalar(x, 1.0),
        2 => F::exp(x),
        3 => F::log(x),
        4 => F::add_scalar(x, -1.0),
        5 => F::mul_scalar(x, 0.5),
        6 => F::exp(x),
        _ => F::log(x),
    };
    r.expect("op failed")
}

fn chain(x: &Variable, gy: &Array, n_ops: usize, backward: bool) {
    let mut cur = step(0, x);
    for i in 1..n_ops {
        cur = step(i, &cur);
    }
    if backward {
        cur.set_grad(Some(gy)).unwrap();
        cur.backward().unwrap();
    }
}

struct MulAdd;
impl FunctionImpl for MulAdd {
    fn forward(&self, _ctx: &mut Context<'_>, i: &[Array]) -> Result<Vec<Array>> {
        let (x, y, z) = (i[0].as_slice::<f32>()?, i[1].as_slice::<f32>()?, i[2].as_slice::<f32>()?);
        let mut out = Array::empty(Dtype::F32, i[0].shape())?;
        let w = unsafe { out.as_mut_slice::<f32>()? };
        for k in 0..w.len() {
            w[k] = x[k] * y[k] + z[k];
        }
        Ok(vec![out])
    }
    fn backward(&self, _ctx: &mut Context<'_>, i: &[Array], _o: &[Array], g: &[Array]) -> Result<Vec<Option<Array>>> {
        let (x, y, gw) = (i[0].as_slice::<f32>()?, i[1].as_slice::<f32>()?, g[0].as_slice::<f32>()?);
        let mut ga = Array::empty(Dtype::F32, i[0].shape())?;
        let mut gb = Array::empty(Dtype::F32, i[1].shape())?;
        {
            let gx = unsafe { ga.as_mut_slice::<f32>()? };
            let gy = unsafe { gb.as_mut_slice::<f32>()? };
            for k in 0..gw.len() {
                gx[k] = gw[k] * y[k];
                gy[k] = gw[k] * x[k];
            }
        }
        Ok(vec![Some(ga), Some(gb), Some(g[0].clone())])
    }
}

struct Bench<'a> {
    name: &'static str,
    per: f64,
    body: Box<dyn FnMut() + 'a>,
    iters: u64,
    samples: Vec<f64>,
}

fn main() {
    let mut n_ops = 1000usize;
    let mut repeats = 7usize;
    let mut min_time = 0.05f64;
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--ops" => {
                i += 1;
                n_ops = args[i].parse().expect("--ops N");
            }
            "--repeats" => {
                i += 1;
                repeats = args[i].parse().expect("--repeats N");
            }
            "--min-time" => {
                i += 1;
                min_time = args[i].parse().expect("--min-time SECONDS");
            }
            "--quick" => {
                repeats = 3;
                min_time = 0.01;
            }
            "--bench" => {} // accepted for `cargo bench`-like invocations
            a => panic!("unknown argument {a}"),
        }
        i += 1;
    }
    // Like the C benchmark: a multi-threaded process (Rust's runtime may
    // start none; start and join one so glibc takes its thread-safe paths).
    std::thread::spawn(|| {}).join().unwrap();

    let xa = Array::full(Dtype::F32, &[1], 0.5).unwrap();
    let gy = Array::full(Dtype::F32, &[1], 1.0).unwrap();
    let x = Variable::new(&xa).unwrap();
    let xv = Variable::new_volatile(&xa).unwrap();
    chain(&x, &gy, n_ops, true);
    let g = x.grad().unwrap().unwrap().get(0).unwrap();
    assert!((g - 1.0).abs() < 1e-3, "d(chain)/dx = {g}, expected 1");

    let f = Function::new("MulAdd", MulAdd).unwrap();
    let abc: Vec<Variable> =
        [2.0, 3.0, 4.0].iter().map(|&v| Variable::new(&Array::full(Dtype::F32, &[10], v).unwrap()).unwrap()).collect();
    let gw = Array::full(Dtype::F32, &[10], 1.0).unwrap();
    let call = |backward: bool| {
        let w = f.apply1(&[&abc[0], &abc[1], &abc[2]]).unwrap();
        if backward {
            w.set_grad(Some(&gw)).unwrap();
            w.backward().unwrap();
        }
    };
    call(true);
    assert_eq!(abc[0].grad_vec::<f32>().unwrap().unwrap()[0], 3.0);

    let mut benches = vec![
        Bench {
            name: "per op: forward + backward (history), 1 element",
            per: n_ops as f64,
            body: Box::new(|| chain(&x, &gy, n_ops, true)),
            iters: 1,
            samples: vec![],
        },
        Bench {
            name: "per op: forward only (history), 1 element",
            per: n_ops as f64,
            body: Box::new(|| chain(&x, &gy, n_ops, false)),
            iters: 1,
            samples: vec![],
        },
        Bench {
            name: "per op: forward (no history), 1 element",
            per: n_ops as f64,
            body: Box::new(|| chain(&xv, &gy, n_ops, false)),
            iters: 1,
            samples: vec![],
        },
        Bench {
            name: "MulAdd custom function (Rust): forward + backward, 10 elements",
            per: 1.0,
            body: Box::new(|| call(true)),
            iters: 1,
            samples: vec![],
        },
        Bench {
            name: "MulAdd custom function (Rust): forward only, 10 elements",
            per: 1.0,
            body: Box::new(|| call(false)),
            iters: 1,
            samples: vec![],
        },
    ];
    for b in benches.iter_mut() {
        (b.body)();
        (b.body)();
        let mut iters = 1u64;
        loop {
            let t0 = Instant::now();
            for _ in 0..iters {
                (b.body)();
            }
            let dt = t0.elapsed().as_secs_f64();
            if dt >= min_time || iters >= 1 << 26 {
                break;
            }
            let scale = if dt > 0.0 { 1.2 * min_time / dt } else { 16.0 };
            iters = (iters * 2).max((iters as f64 * scale) as u64);
        }
        b.iters = iters;
    }
    for _ in 0..repeats {
        for b in benches.iter_mut() {
            let t0 = Instant::now();
            for _ in 0..b.iters {
                (b.body)();
            }
            b.samples.push(t0.elapsed().as_secs_f64() / b.iters as f64 * 1e6 / b.per);
        }
    }
    println!("## chainerc from Rust: per-call overhead (CPU, float32)\n");
    println!("Chain of {n_ops} ops cycling x*2, +1, exp, log, +(-1), *0.5, exp, log (as bench/overhead.cpp); median of {repeats} repeats of at least {:.0} ms.\n", min_time * 1e3);
    println!("| what | µs |");
    println!("| --- | ---: |");
    for b in benches.iter_mut() {
        b.samples.sort_by(|a, c| a.partial_cmp(c).unwrap());
        println!("| {} | {:.3} |", b.name, b.samples[b.samples.len() / 2]);
    }
    drop(benches);
    drop((x, xv, abc, f));
    println!("\nlive handles at exit (x, gy arrays, gw): {}", debug::live_handles());
}
