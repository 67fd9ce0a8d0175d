// Neural-network API through the wrapper: every built-in NN function passes
// check_backward (float64), parameterized functions, FunctionSet, every
// optimizer, npz checkpoints, IDX files, an MLP that learns.
mod common;
use chainerc::nn;
use chainerc::*;
use common::*;

fn tol() -> Tolerance {
    Tolerance { eps: 1e-4, atol: 1e-5, rtol: 1e-4 }
}
fn one(v: Variable) -> Result<Vec<Variable>> {
    Ok(vec![v])
}
/// Values in [lo, hi) kept at least `gap` away from 0 (for kinks).
fn away(n: usize, seed: u64, gap: f64) -> Vec<f64> {
    values(n, seed, -1.0, 1.0).into_iter().map(|v| if v.abs() < gap { v.signum() * gap + v } else { v }).collect()
}

#[test]
fn activations_and_array_functions_pass_check_backward() {
    no_leak(|| {
        let x = arr64(&away(12, 1, 0.1), &[3, 4]);
        let y = arr64(&values(12, 2, -1.0, 1.0), &[3, 4]);
        for (name, g) in [
            ("relu", (|v: &[Variable]| one(nn::relu(&v[0])?)) as fn(&[Variable]) -> Result<Vec<Variable>>),
            ("leaky_relu", |v| one(nn::leaky_relu(&v[0], 0.2)?)),
            ("sigmoid", |v| one(nn::sigmoid(&v[0])?)),
            ("tanh", |v| one(nn::tanh(&v[0])?)),
            ("methods", |v| one(v[0].tanh()?.sigmoid()?.matmul(&v[0].relu()?.reshape(&[4, 3])?)?)),
            ("softmax", |v| one(nn::softmax(&v[0])?)),
            ("transpose", |v| one(nn::transpose(&v[0], &[1, 0])?)),
            ("copy", |v| one(nn::copy(&v[0], Device::Cpu)?)),
            ("matmul_t", |v| one(nn::matmul(&v[0], &v[0], false, true)?)),
        ] {
            check_backward_graph(g, &[&x], &[None], tol()).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        check_backward_graph(|v| one(nn::concat(&[&v[0], &v[1]], 1)?), &[&x, &y], &[None], tol()).unwrap();
        check_backward_graph(|v| one(nn::matmul(&v[0], &v[1], true, false)?), &[&x, &y], &[None], tol()).unwrap();
        check_backward_graph(|v| one(nn::mean_squared_error(&v[0], &v[1])?), &[&x, &y], &[None], tol()).unwrap();
        let a = arr64(&values(24, 3, -1.0, 1.0), &[2, 3, 4]);
        let b = arr64(&values(16, 4, -1.0, 1.0), &[2, 4, 2]);
        check_backward_graph(|v| one(nn::batch_matmul(&v[0], &v[1], false, false)?), &[&a, &b], &[None], tol())
            .unwrap();
        // lstm: both outputs
        let c = arr64(&values(6, 5, -1.0, 1.0), &[2, 3]);
        let xs = arr64(&values(24, 6, -1.0, 1.0), &[2, 12]);
        check_backward_graph(
            |v| {
                let (c, h) = nn::lstm(&v[0], &v[1])?;
                Ok(vec![c, h])
            },
            &[&c, &xs],
            &[None, None],
            tol(),
        )
        .unwrap();
    });
}

#[test]
fn losses_accuracy_dropout() {
    no_leak(|| {
        let x = arr64(&values(12, 7, -2.0, 2.0), &[4, 3]);
        let t = Array::from_slice(&[0i32, 2, 1, 2], &[4]).unwrap();
        check_backward_graph(|v| one(nn::softmax_cross_entropy(&v[0], &v[1])?), &[&x, &t], &[None], tol()).unwrap();
        // value against a direct computation
        let xv = Variable::new(&x).unwrap();
        let tv = Variable::new(&t).unwrap();
        let loss = nn::softmax_cross_entropy(&xv, &tv).unwrap().to_vec::<f64>().unwrap()[0];
        let xs = x.to_vec::<f64>().unwrap();
        let ts = [0usize, 2, 1, 2];
        let want: f64 = (0..4)
            .map(|i| {
                let r = &xs[3 * i..3 * i + 3];
                let m = r.iter().cloned().fold(f64::MIN, f64::max);
                let lse = m + r.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
                lse - r[ts[i]]
            })
            .sum::<f64>()
            / 4.0;
        assert!((loss - want).abs() < 1e-12, "{loss} vs {want}");
        // accuracy: rows whose argmax is the label
        let y = Variable::from_slice(&[0.9f32, 0.1, 0.2, 0.8, 0.5, 0.4], &[3, 2]).unwrap();
        let l = Variable::from_slice(&[0i32, 1, 1], &[3]).unwrap();
        let acc = nn::accuracy(&y, &l).unwrap().to_vec::<f32>().unwrap()[0];
        assert!((acc - 2.0 / 3.0).abs() < 1e-6);
        let bad = Variable::from_slice(&[0i32, 1, 5], &[3]).unwrap();
        assert_eq!(nn::accuracy(&y, &bad).unwrap_err().kind(), ErrorKind::InvalidArgument);
        // dropout: test mode is the identity; train mode zeroes about `ratio` and scales the rest
        let ones = Variable::new(&Array::ones(Dtype::F32, &[10000]).unwrap()).unwrap();
        let d = nn::dropout(&ones, 0.5, Mode::Test).unwrap().to_vec::<f32>().unwrap();
        assert!(d.iter().all(|&v| v == 1.0));
        config::seed(3);
        let d = nn::dropout(&ones, 0.5, Mode::Train).unwrap().to_vec::<f32>().unwrap();
        let zeros = d.iter().filter(|&&v| v == 0.0).count();
        assert!((4500..5500).contains(&zeros), "{zeros} zeros");
        assert!(d.iter().all(|&v| v == 0.0 || (v - 2.0).abs() < 1e-6));
    });
}

#[test]
fn normalization_and_pooling_pass_check_backward() {
    no_leak(|| {
        // distinct values so that max pooling has no ties
        let mut v = values(2 * 2 * 4 * 4, 8, -1.0, 1.0);
        for (i, x) in v.iter_mut().enumerate() {
            *x += i as f64 * 0.01;
        }
        let x = arr64(&v, &[2, 2, 4, 4]);
        check_backward_graph(|v| one(nn::max_pooling_2d(&v[0], (2, 2), (2, 2), (0, 0), false)?), &[&x], &[None], tol())
            .unwrap();
        check_backward_graph(|v| one(nn::average_pooling_2d(&v[0], (3, 3), (1, 1), (1, 1))?), &[&x], &[None], tol())
            .unwrap();
        check_backward_graph(
            |v| one(nn::local_response_normalization(&v[0], 5, 2.0, 1e-4, 0.75)?),
            &[&x],
            &[None],
            tol(),
        )
        .unwrap();
        let pooled = nn::max_pooling_2d(&Variable::new(&x).unwrap(), (2, 2), (2, 2), (0, 0), false).unwrap();
        assert_eq!(pooled.shape().unwrap(), vec![2, 2, 2, 2]);
        // batch normalization: train mode normalises each channel of the batch
        let bn = nn::batch_normalization(&[2], 0.9, 1e-5, Dtype::F64).unwrap();
        let xb = arr64(&values(8, 9, -3.0, 5.0), &[4, 2]);
        let y = nn::batch_normalization_apply(&bn, &Variable::new(&xb).unwrap(), Mode::Train, false).unwrap();
        let yv = y.to_vec::<f64>().unwrap();
        for c in 0..2 {
            let col: Vec<f64> = (0..4).map(|i| yv[2 * i + c]).collect();
            let mean = col.iter().sum::<f64>() / 4.0;
            let var = col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 4.0;
            assert!(mean.abs() < 1e-9 && (var - 1.0).abs() < 1e-3, "channel {c}: mean {mean} var {var}");
        }
        let (m, var) = nn::batch_normalization_state(&bn).unwrap();
        assert_eq!(m.shape(), &[2]);
        assert_eq!(var.shape(), &[2]);
        nn::batch_normalization_start_finetuning(&bn).unwrap();
        check_backward_graph(
            |v| one(nn::batch_normalization_apply(&bn, &v[0], Mode::Train, false)?),
            &[&xb],
            &[None],
            Tolerance { eps: 1e-4, atol: 1e-4, rtol: 1e-3 },
        )
        .unwrap();
    });
}

#[test]
fn parameterized_functions() {
    no_leak(|| {
        // Linear with given W and b: y = x W^T + b
        let w = arr64(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        let b = arr64(&[0.5, -0.5], &[2]);
        let lin = nn::linear(
            3,
            2,
            nn::LinearOptions { dtype: Dtype::F64, initial_w: Some(&w), initial_b: Some(&b), ..Default::default() },
        )
        .unwrap();
        assert_eq!(lin.parameters().unwrap().iter().map(|p| p.name.clone()).collect::<Vec<_>>(), vec!["W", "b"]);
        let x = Variable::from_slice(&[1.0f64, 0.0, -1.0], &[1, 3]).unwrap();
        assert_eq!(lin.apply1(&[&x]).unwrap().to_vec::<f64>().unwrap(), vec![1.0 - 3.0 + 0.5, 4.0 - 6.0 - 0.5]);
        let xs = arr64(&values(6, 10, -1.0, 1.0), &[2, 3]);
        check_backward(&lin, &[&xs], None, tol()).unwrap();
        // nobias with initial_b is refused
        let e = nn::linear(
            3,
            2,
            nn::LinearOptions { nobias: true, initial_b: Some(&b), dtype: Dtype::F64, ..Default::default() },
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        // random init: W ~ N(0, 1/in) with the engine's generator
        config::seed(0);
        let big = nn::linear(400, 50, Default::default()).unwrap();
        let wv = big.param("W").unwrap().param.to_vec::<f32>().unwrap();
        let var = wv.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / wv.len() as f64;
        assert!((var * 400.0 - 1.0).abs() < 0.1, "W variance {var}");
        // Convolution2D, PReLU, EmbedID, Parameter
        let conv =
            nn::convolution_2d(2, 3, (3, 3), nn::ConvOptions { pad: (1, 1), dtype: Dtype::F64, ..Default::default() })
                .unwrap();
        let xc = arr64(&values(2 * 2 * 4 * 4, 11, -1.0, 1.0), &[2, 2, 4, 4]);
        check_backward(&conv, &[&xc], None, tol()).unwrap();
        assert_eq!(conv.apply1(&[&Variable::new(&xc).unwrap()]).unwrap().shape().unwrap(), vec![2, 3, 4, 4]);
        let prelu = nn::prelu(&[4], Dtype::F64, 0.25).unwrap();
        check_backward(&prelu, &[&arr64(&away(12, 12, 0.1), &[3, 4])], None, tol()).unwrap();
        let we = arr64(&[0.0, 1.0, 10.0, 11.0, 20.0, 21.0], &[3, 2]);
        let emb = nn::embed_id(3, 2, Dtype::F64, Some(&we)).unwrap();
        let ids = Variable::from_slice(&[2i32, 0], &[2]).unwrap();
        assert_eq!(emb.apply1(&[&ids]).unwrap().to_vec::<f64>().unwrap(), vec![20.0, 21.0, 0.0, 1.0]);
        let bad_ids = Variable::from_slice(&[3i32], &[1]).unwrap();
        assert_eq!(emb.apply1(&[&bad_ids]).unwrap_err().kind(), ErrorKind::InvalidArgument);
        let p = nn::parameter(&arr64(&[1.0, 2.0], &[2])).unwrap();
        let out = p.apply1(&[]).unwrap();
        assert_eq!(out.to_vec::<f64>().unwrap(), vec![1.0, 2.0]);
        // Inception: output channels out1 + out3 + out5 + proj_pool, twelve parameters
        config::seed(2);
        let inc = nn::inception(2, 1, 1, 2, 1, 1, 1, Dtype::F64).unwrap();
        assert_eq!(inc.parameter_count(), 12);
        assert_eq!(inc.parameter(0).unwrap().name, "conv1/W");
        let xi = arr64(&values(2 * 2 * 5 * 5, 14, -1.0, 1.0), &[2, 2, 5, 5]);
        assert_eq!(inc.apply1(&[&Variable::new(&xi).unwrap()]).unwrap().shape().unwrap(), vec![2, 5, 5, 5]);
        check_backward(&inc, &[&xi], None, Tolerance { eps: 1e-4, atol: 1e-4, rtol: 1e-3 }).unwrap();
        // BinaryHierarchicalSoftmax on a Huffman tree
        let (tree, n_internal) = nn::create_huffman_tree(&[5.0, 1.0, 2.0, 8.0]).unwrap();
        assert_eq!(n_internal, 3);
        assert_eq!(tree.len(), 6);
        let hs = nn::binary_hierarchical_softmax(3, &tree, n_internal, Dtype::F64, None).unwrap();
        let xh = arr64(&values(6, 13, -1.0, 1.0), &[2, 3]);
        let th = Array::from_slice(&[3i32, 1], &[2]).unwrap();
        check_backward(&hs, &[&xh, &th], None, tol()).unwrap();
    });
}

#[test]
fn function_set_members_parameters_and_npz() {
    no_leak(|| {
        let dir = std::env::temp_dir().join(format!("chainerc-rust-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        config::seed(1);
        let model = FunctionSet::new().unwrap();
        model.add("l2", &nn::linear(4, 2, Default::default()).unwrap()).unwrap();
        model.add("l1", &nn::linear(3, 4, Default::default()).unwrap()).unwrap();
        let enc = FunctionSet::new()
            .unwrap()
            .with("lin", &nn::linear(2, 2, nn::LinearOptions { nobias: true, ..Default::default() }).unwrap())
            .unwrap();
        model.add_set("enc", &enc).unwrap();
        assert_eq!(model.member_names().unwrap(), vec!["enc", "l1", "l2"]);
        let paths: Vec<String> = model.parameters().unwrap().into_iter().map(|p| p.path).collect();
        assert_eq!(paths, vec!["enc/lin/W", "l1/W", "l1/b", "l2/W", "l2/b"]);
        let (params, grads) = model.collect_parameters().unwrap();
        assert_eq!((params.len(), grads.len()), (5, 5));
        assert_eq!(model.get("l1").unwrap().name(), "Linear");
        assert!(model.get("enc").is_err());
        assert_eq!(model.get_set("enc").unwrap().member_count(), 1);
        // save, perturb, load back
        let path = dir.join("model.npz");
        let p = path.to_str().unwrap();
        model.save_npz(p, true).unwrap();
        let saved = load_npz_array(p, "l1/W").unwrap().to_vec::<f32>().unwrap();
        assert_eq!(saved, params[1].to_vec::<f32>().unwrap());
        for a in &params {
            a.fill(0.0).unwrap();
        }
        model.load_npz(p).unwrap();
        assert_eq!(params[1].to_vec::<f32>().unwrap(), saved);
        // copy_parameters_from another set of the same structure
        let other = FunctionSet::new().unwrap();
        other.add("l2", &nn::linear(4, 2, Default::default()).unwrap()).unwrap();
        other.add("l1", &nn::linear(3, 4, Default::default()).unwrap()).unwrap();
        other
            .add_set(
                "enc",
                &FunctionSet::new()
                    .unwrap()
                    .with("lin", &nn::linear(2, 2, nn::LinearOptions { nobias: true, ..Default::default() }).unwrap())
                    .unwrap(),
            )
            .unwrap();
        other.copy_parameters_from(&model).unwrap();
        assert_eq!(other.parameter(1).unwrap().param.to_vec::<f32>().unwrap(), saved);
        let e = model.load_npz(dir.join("missing.npz").to_str().unwrap()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io);
        save_npz_arrays(p, &[("a", &arr64(&[1.0, 2.0], &[2]))], false).unwrap();
        assert_eq!(load_npz_array(p, "a").unwrap().to_vec::<f64>().unwrap(), vec![1.0, 2.0]);
        model.to_cpu().unwrap();
        // devices: a CUDA device without the CUDA backend is refused
        if let Err(e) = model.to_gpu(Device::Cuda(0)) {
            assert!(matches!(e.kind(), ErrorKind::Device | ErrorKind::Unsupported), "{e}");
        }
        let xv = Variable::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        if let Err(e) = nn::copy(&xv, Device::Cuda(0)) {
            assert!(matches!(e.kind(), ErrorKind::Device | ErrorKind::Unsupported), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    });
}

/// A user-defined optimizer: plain SGD written in Rust.
struct RustSgd(f64);
impl OptimizerImpl for RustSgd {
    fn update_one(&self, param: &Array, grad: &Array, _states: &[Array], _t: i64) -> Result<()> {
        let g = grad.to_vec::<f64>()?;
        let p: Vec<f64> = param.to_vec::<f64>()?.iter().zip(&g).map(|(p, g)| p - self.0 * g).collect();
        param.write(&p)
    }
}

/// Momentum SGD written in Rust, with one state array "v".
struct RustMomentum {
    lr: f64,
    momentum: f64,
}
impl OptimizerImpl for RustMomentum {
    fn state_names(&self) -> Vec<String> {
        vec!["v".into()]
    }
    fn update_one(&self, param: &Array, grad: &Array, states: &[Array], _t: i64) -> Result<()> {
        let g = grad.to_vec::<f64>()?;
        let mut v = states[0].to_vec::<f64>()?;
        let mut p = param.to_vec::<f64>()?;
        for k in 0..p.len() {
            v[k] = self.momentum * v[k] - self.lr * g[k];
            p[k] += v[k];
        }
        states[0].write(&v)?;
        param.write(&p)
    }
}

#[test]
fn custom_optimizer_with_state_matches_momentum_sgd() {
    no_leak(|| {
        let ours = Optimizer::custom("RustMomentum", RustMomentum { lr: 0.1, momentum: 0.9 }).unwrap();
        let theirs = Optimizer::momentum_sgd(0.1, 0.9).unwrap();
        let (w1, w2) = (arr64(&[1.0, -1.0], &[2]), arr64(&[1.0, -1.0], &[2]));
        let g = arr64(&[0.5, 0.25], &[2]);
        ours.setup_arrays(&[&w1], &[&g]).unwrap();
        theirs.setup_arrays(&[&w2], &[&g]).unwrap();
        for _ in 0..3 {
            ours.update().unwrap();
            theirs.update().unwrap();
        }
        assert!(close(&w1.to_vec::<f64>().unwrap(), &w2.to_vec::<f64>().unwrap(), 1e-12));
        assert_eq!(ours.state(0).unwrap().0, "0/v");
        // a failing user optimizer reports its error with the cause
        struct Bad;
        impl OptimizerImpl for Bad {
            fn update_one(&self, _: &Array, _: &Array, _: &[Array], t: i64) -> Result<()> {
                panic!("update exploded at t = {t}")
            }
        }
        let bad = Optimizer::custom("Bad", Bad).unwrap();
        bad.setup_arrays(&[&w1], &[&g]).unwrap();
        let e = bad.update().unwrap_err();
        assert_eq!(e.panic_message().as_deref(), Some("update exploded at t = 1"));
        assert!(e.message().contains("Bad"), "{}", e.message());
    });
}

#[test]
fn every_optimizer_first_step_and_convergence() {
    no_leak(|| {
        let g0 = [0.5f64, -2.0];
        // first-step updates from w = 1 with gradient g0, from the update rules
        let cases: Vec<(&str, Optimizer, Box<dyn Fn(f64) -> f64>)> = vec![
            ("SGD", Optimizer::sgd(0.1).unwrap(), Box::new(|g| 1.0 - 0.1 * g)),
            ("MomentumSGD", Optimizer::momentum_sgd(0.1, 0.9).unwrap(), Box::new(|g| 1.0 - 0.1 * g)),
            ("AdaGrad", Optimizer::adagrad(0.1, 1e-8).unwrap(), Box::new(|g: f64| 1.0 - 0.1 * g / (g.abs() + 1e-8))),
            (
                "AdaDelta",
                Optimizer::adadelta(0.95, 1e-6).unwrap(),
                Box::new(|g: f64| {
                    let msg = 0.05 * g * g;
                    1.0 - ((1e-6f64) / (msg + 1e-6)).sqrt() * g
                }),
            ),
            (
                "Adam",
                Optimizer::adam_default().unwrap(),
                Box::new(|g: f64| {
                    let (m, v) = (0.1 * g, 0.001 * g * g);
                    let lr = 0.001 * (1.0f64 - 0.999).sqrt() / (1.0 - 0.9);
                    1.0 - lr * m / (v.sqrt() + 1e-8)
                }),
            ),
            (
                "RMSprop",
                Optimizer::rmsprop(0.01, 0.99, 1e-8).unwrap(),
                Box::new(|g: f64| 1.0 - 0.01 * g / ((0.01 * g * g).sqrt() + 1e-8)),
            ),
            ("RustSgd", Optimizer::custom("RustSgd", RustSgd(0.1)).unwrap(), Box::new(|g| 1.0 - 0.1 * g)),
        ];
        for (name, opt, want) in &cases {
            assert_eq!(&opt.name(), name);
            let w = arr64(&[1.0, 1.0], &[2]);
            let gw = arr64(&g0, &[2]);
            opt.setup_arrays(&[&w], &[&gw]).unwrap();
            opt.update().unwrap();
            assert_eq!(opt.t(), 1);
            let got = w.to_vec::<f64>().unwrap();
            let exp: Vec<f64> = g0.iter().map(|&g| want(g)).collect();
            assert!(close(&got, &exp, 1e-9), "{name}: {got:?} vs {exp:?}");
            // then minimise sum((W - 3)^2) through the engine: W of a Linear
            // without bias applied to a one
            let w0 = arr64(&[0.0, 0.0], &[2, 1]);
            let f = nn::linear(
                1,
                2,
                nn::LinearOptions { dtype: Dtype::F64, nobias: true, initial_w: Some(&w0), ..Default::default() },
            )
            .unwrap();
            let set = FunctionSet::new().unwrap();
            set.add("p", &f).unwrap();
            opt.setup(&set).unwrap();
            let one = Variable::from_slice(&[1.0f64], &[1, 1]).unwrap();
            let target = Variable::from_slice(&[3.0f64, 3.0], &[1, 2]).unwrap();
            let steps = if *name == "AdaDelta" { 3000 } else { 600 };
            if *name == "Adam" {
                opt.set_hyperparam("alpha", 0.05).unwrap();
            }
            if *name == "AdaGrad" {
                opt.set_hyperparam("lr", 0.5).unwrap();
            }
            let mut last = f64::MAX;
            for _ in 0..steps {
                opt.zero_grads().unwrap();
                let d = &f.apply1(&[&one]).unwrap() - &target;
                let loss = (&d * &d).sum().unwrap();
                loss.backward().unwrap();
                opt.update().unwrap();
                last = loss.to_vec::<f64>().unwrap()[0];
            }
            assert!(last < 1e-2, "{name}: loss {last} after {steps} steps");
        }
        let adam = Optimizer::adam_default().unwrap();
        for (name, want) in [("alpha", 0.001), ("beta1", 0.9), ("beta2", 0.999), ("lam", 0.99999999), ("eps", 1e-8)] {
            assert_eq!(adam.hyperparam(name).unwrap(), want, "Adam default {name}");
        }
        // hyperparameters, clipping, weight decay, state keys
        let opt = Optimizer::momentum_sgd(0.01, 0.9).unwrap();
        assert_eq!(opt.hyperparam("momentum").unwrap(), 0.9);
        opt.set_hyperparam("lr", 0.5).unwrap();
        assert_eq!(opt.hyperparam("lr").unwrap(), 0.5);
        assert_eq!(opt.hyperparam("nope").unwrap_err().kind(), ErrorKind::InvalidArgument);
        let w = arr64(&[1.0, 1.0], &[2]);
        let gw = arr64(&[3.0, 4.0], &[2]);
        opt.setup_arrays(&[&w], &[&gw]).unwrap();
        assert!((opt.compute_grads_norm().unwrap() - 5.0).abs() < 1e-12);
        opt.clip_grads(1.0).unwrap();
        assert!((opt.compute_grads_norm().unwrap() - 1.0).abs() < 1e-12);
        opt.weight_decay(0.1).unwrap();
        assert!(close(&gw.to_vec::<f64>().unwrap(), &[0.6 + 0.1, 0.8 + 0.1], 1e-12));
        assert_eq!(opt.state_count(), 1);
        assert_eq!(opt.state(0).unwrap().0, "0/v");
        assert_eq!(Optimizer::sgd(-1.0).unwrap_err().kind(), ErrorKind::InvalidArgument);
    });
}

/// Parameters get their gradients whatever the inputs' requires_grad:
/// Parameter (no input at all) and a Linear applied to data that requires no
/// gradient.
#[test]
fn parameters_get_gradients_when_inputs_require_none() {
    no_leak(|| {
        let p = nn::parameter(&arr64(&[1.0, 2.0], &[2])).unwrap();
        let y = (&p.apply1(&[]).unwrap() * 3.0).sum().unwrap();
        y.backward().unwrap();
        assert_eq!(p.param("W").unwrap().grad.to_vec::<f64>().unwrap(), vec![3.0, 3.0], "Parameter's gradient");
        let w = arr64(&[1.0, 2.0], &[1, 2]);
        let lin = nn::linear(
            2,
            1,
            nn::LinearOptions { dtype: Dtype::F64, nobias: true, initial_w: Some(&w), ..Default::default() },
        )
        .unwrap();
        let x = Variable::from_slice(&[5.0f64, 7.0], &[1, 2]).unwrap();
        x.set_requires_grad(false).unwrap();
        lin.apply1(&[&x]).unwrap().sum().unwrap().backward().unwrap();
        assert_eq!(lin.param("W").unwrap().grad.to_vec::<f64>().unwrap(), vec![5.0, 7.0], "Linear's W gradient");
        assert!(x.grad().unwrap().is_none());
    });
}

#[test]
fn optimizer_checkpoint_roundtrip() {
    no_leak(|| {
        let dir = std::env::temp_dir().join(format!("chainerc-rust-opt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("opt.npz");
        let p = path.to_str().unwrap();
        let w = arr64(&[1.0, 1.0], &[2]);
        let gw = arr64(&[0.5, -0.5], &[2]);
        let opt = Optimizer::adam_default().unwrap();
        opt.setup_arrays(&[&w], &[&gw]).unwrap();
        for _ in 0..3 {
            opt.update().unwrap();
        }
        assert_eq!(opt.epoch(), 0);
        opt.new_epoch().unwrap();
        opt.new_epoch().unwrap();
        opt.save_npz(p, false).unwrap();
        let (_, m) = opt.state(0).unwrap();
        let m_saved = m.to_vec::<f64>().unwrap();
        let again = Optimizer::adam_default().unwrap();
        again.setup_arrays(&[&w], &[&gw]).unwrap();
        again.load_npz(p).unwrap();
        assert_eq!(again.t(), 3);
        assert_eq!(again.epoch(), 2);
        assert_eq!(again.state(0).unwrap().1.to_vec::<f64>().unwrap(), m_saved);
        std::fs::remove_dir_all(&dir).unwrap();
    });
}

#[test]
fn idx_reader() {
    let _s = serial();
    let path = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
    if !std::path::Path::new(path).exists() {
        eprintln!("skipping: {path} not installed");
        return;
    }
    let labels = read_idx(path, Dtype::I32, 1.0).unwrap();
    assert_eq!(labels.shape(), &[10000]);
    let v = labels.as_slice::<i32>().unwrap();
    assert!(v.iter().all(|&l| (0..10).contains(&l)));
    let e = read_idx("/nonexistent.idx", Dtype::F32, 1.0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(e.message().contains("/nonexistent.idx"), "{}", e.message());
}

#[test]
fn mlp_learns_and_keeps_memory_flat_for_10000_steps() {
    no_leak(|| {
        config::seed(5);
        let model = FunctionSet::new().unwrap();
        model.add("l1", &nn::linear(4, 16, Default::default()).unwrap()).unwrap();
        model.add("l2", &nn::linear(16, 3, Default::default()).unwrap()).unwrap();
        let (l1, l2) = (model.get("l1").unwrap(), model.get("l2").unwrap());
        let opt = Optimizer::momentum_sgd(0.05, 0.9).unwrap();
        opt.setup(&model).unwrap();
        // a separable toy problem: the label is the argmax of the first 3 features
        let n = 8usize;
        let mut first = 0.0;
        let mut last = 0.0;
        let mut warm = (0i64, 0i64);
        for step in 0..10_000u64 {
            if step == 100 {
                // nothing of the previous step is alive here, as after the loop
                warm = (debug::live_handles(), memory_stats(Device::Cpu).unwrap().bytes_in_use);
            }
            let xs: Vec<f32> = values(n * 4, step, -1.0, 1.0).into_iter().map(|v| v as f32).collect();
            let ts: Vec<i32> = (0..n)
                .map(|i| {
                    let r = &xs[4 * i..4 * i + 3];
                    (0..3).max_by(|&a, &b| r[a].partial_cmp(&r[b]).unwrap()).unwrap() as i32
                })
                .collect();
            let x = Variable::from_slice(&xs, &[n as i64, 4]).unwrap();
            let t = Variable::from_slice(&ts, &[n as i64]).unwrap();
            let h = nn::relu(&l1.apply1(&[&x]).unwrap()).unwrap();
            let y = l2.apply1(&[&h]).unwrap();
            let loss = nn::softmax_cross_entropy(&y, &t).unwrap();
            opt.zero_grads().unwrap();
            loss.backward().unwrap();
            opt.update().unwrap();
            let l = loss.to_vec::<f32>().unwrap()[0] as f64;
            if step < 100 {
                first += l / 100.0;
            }
            if step >= 9_900 {
                last += l / 100.0;
            }
        }
        let end = (debug::live_handles(), memory_stats(Device::Cpu).unwrap().bytes_in_use);
        assert_eq!(end.0, warm.0, "live handles {} after warm-up, {} at the end", warm.0, end.0);
        assert!(end.1 <= warm.1, "bytes in use grew from {} to {}", warm.1, end.1);
        assert!(last < 0.5 * first, "mean loss {first} at the start, {last} at the end");
    });
}

#[test]
fn sgd_step_in_backward_matches_the_usual_loop() {
    // Holds the leak checks' lock: its handles would show up in a parallel
    // test's before/after count.
    no_leak(|| {
        // The weights' SGD step taken in backward gives the usual loop's parameters.
        let run = |in_backward: bool| -> Vec<Vec<f64>> {
            let w1 = arr64(&values(30, 1, -0.5, 0.5), &[5, 6]);
            let w2 = arr64(&values(15, 2, -0.5, 0.5), &[3, 5]);
            let opts = |w| nn::LinearOptions { dtype: Dtype::F64, initial_w: Some(w), ..Default::default() };
            let model = FunctionSet::new().unwrap();
            model.add("l1", &nn::linear(6, 5, opts(&w1)).unwrap()).unwrap();
            model.add("l2", &nn::linear(5, 3, opts(&w2)).unwrap()).unwrap();
            let (l1, l2) = (model.get("l1").unwrap(), model.get("l2").unwrap());
            let opt = Optimizer::sgd(0.2).unwrap();
            opt.setup(&model).unwrap();
            opt.set_step_in_backward(in_backward).unwrap();
            assert_eq!(opt.step_in_backward(), in_backward);
            for step in 0..4u64 {
                opt.zero_grads().unwrap();
                let x = Variable::from_slice(&values(48, 10 + step, -1.0, 1.0), &[8, 6]).unwrap();
                let t = Variable::from_slice(&[0i32, 1, 2, 0, 1, 2, 1, 0], &[8]).unwrap();
                let h = nn::relu(&l1.apply1(&[&x]).unwrap()).unwrap();
                let loss = nn::softmax_cross_entropy(&l2.apply1(&[&h]).unwrap(), &t).unwrap();
                loss.backward().unwrap();
                assert_eq!(opt.clip_grads(1.0).is_err(), in_backward);
                opt.update().unwrap();
            }
            model.parameters().unwrap().iter().map(|p| p.param.to_vec::<f64>().unwrap()).collect()
        };
        let (usual, stepped) = (run(false), run(true));
        for (a, b) in usual.iter().zip(&stepped) {
            assert!(close(a, b, 1e-12), "{a:?} vs {b:?}");
        }
        assert!(!close(&usual[0], &values(30, 1, -0.5, 0.5), 1e-3), "the weights moved");
        let adam = Optimizer::adam_default().unwrap();
        assert!(adam.set_step_in_backward(true).is_err());
    });
}

#[test]
fn chainer7_optimizers_follow_chainer7s_rules() {
    // One step from w = 1 with gradient g, by Chainer 7's AdamRule and
    // NesterovAG.update_core_cpu (the C suite's references are cross-checked
    // with Chainer 7 itself).
    let g0 = [0.5, -2.0];
    let adamw = |g: f64| {
        let (m, v) = (0.1 * g, 0.001 * g * g);
        let lr = 0.01 * (1.0f64 - 0.999).sqrt() / (1.0 - 0.9);
        (1.0 - 0.5 * 0.1) - 0.5 * (lr / (v.sqrt() + 1e-8) * m)
    };
    let cases: Vec<(&str, Optimizer, Box<dyn Fn(f64) -> f64>, usize)> = vec![
        (
            "NesterovAG",
            Optimizer::nesterov_ag(0.1, 0.5).unwrap(),
            Box::new(|g: f64| 1.0 + 0.25 * (-0.1 * g) - 1.5 * 0.1 * g),
            1,
        ),
        (
            "Adam",
            Optimizer::adam_with(&AdamOptions { alpha: 0.01, eta: 0.5, weight_decay_rate: 0.1, ..Default::default() })
                .unwrap(),
            Box::new(adamw),
            2,
        ),
        (
            "Adam",
            Optimizer::adam_with(&AdamOptions {
                alpha: 0.01,
                eta: 0.5,
                weight_decay_rate: 0.1,
                amsgrad: true,
                ..Default::default()
            })
            .unwrap(),
            Box::new(adamw), // vhat = v after one step
            3,
        ),
    ];
    for (name, opt, want, states) in &cases {
        assert_eq!(&opt.name(), name);
        let w = arr64(&[1.0, 1.0], &[2]);
        let gw = arr64(&g0, &[2]);
        opt.setup_arrays(&[&w], &[&gw]).unwrap();
        opt.update().unwrap();
        let got = w.to_vec::<f64>().unwrap();
        let exp: Vec<f64> = g0.iter().map(|&g| want(g)).collect();
        assert!(close(&got, &exp, 1e-12), "{name}: {got:?} vs {exp:?}");
        assert_eq!(opt.state_count(), *states, "{name}");
    }
    let d = Optimizer::adam_with(&AdamOptions::default()).unwrap();
    assert_eq!(d.hyperparam("lam").unwrap(), 1.0);
    assert_eq!(d.hyperparam("amsgrad").unwrap(), 0.0);
    assert_eq!(d.set_hyperparam("amsgrad", 1.0).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let bad = Optimizer::adam_with(&AdamOptions { weight_decay_rate: -1.0, ..Default::default() });
    assert_eq!(bad.err().unwrap().kind(), ErrorKind::InvalidArgument);
}
