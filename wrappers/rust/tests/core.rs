// Arrays, variables, operators, backward, volatile, unchain, built-in
// functions (values and check_backward), errors.
mod common;
use chainerc::functions as F;
use chainerc::*;
use common::*;

#[test]
fn version_matches() {
    let _s = serial();
    assert_eq!(version(), sys::CH_VERSION);
    assert_eq!(version_string(), "0.1.0");
}

#[test]
fn array_roundtrip_and_views() {
    no_leak(|| {
        let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
        assert_eq!(a.dtype(), Dtype::F32);
        assert_eq!(a.shape(), &[2, 3]);
        assert_eq!(a.ndim(), 2);
        assert_eq!(a.size(), 6);
        assert_eq!(a.nbytes(), 24);
        assert_eq!(a.device(), Device::Cpu);
        assert_eq!(a.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(a.get(4).unwrap(), 5.0);
        let r = a.reshape(&[3, 2]).unwrap();
        assert_eq!(r.shape(), &[3, 2]);
        // reshape shares memory; copy does not
        let c = a.copy().unwrap();
        a.fill(7.0).unwrap();
        assert_eq!(r.to_vec::<f32>().unwrap(), vec![7.0; 6]);
        assert_eq!(c.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        c.write(&[0.5f32; 6]).unwrap();
        assert_eq!(c.get(0).unwrap(), 0.5);
        let z = Array::zeros(Dtype::F64, &[4]).unwrap();
        assert_eq!(z.to_vec::<f64>().unwrap(), vec![0.0; 4]);
        let s = Array::scalar(3i32).unwrap();
        assert_eq!(s.ndim(), 0);
        assert_eq!(s.size(), 1);
        assert_eq!(s.as_slice::<i32>().unwrap(), &[3]);
        let mut m = Array::ones(Dtype::F64, &[3]).unwrap();
        unsafe { m.as_mut_slice::<f64>().unwrap()[1] = 9.0 };
        assert_eq!(m.to_vec::<f64>().unwrap(), vec![1.0, 9.0, 1.0]);
        let fl = Array::full_like(&a, 2.5).unwrap();
        assert_eq!((fl.dtype(), fl.shape(), fl.get(5).unwrap()), (Dtype::F32, &[2i64, 3][..], 2.5));
        assert_eq!(Array::empty_like(&a).unwrap().shape(), &[2, 3]);
        assert_eq!(Dtype::F64.name(), "float64");
        let e = Array::empty(Dtype::F32, &[2]).unwrap();
        e.fill(1.5).unwrap();
        assert_eq!(e.to_vec::<f32>().unwrap(), vec![1.5, 1.5]);
    });
}

#[test]
fn array_from_vec_is_zero_copy() {
    no_leak(|| {
        let v = vec![1.0f64, 2.0, 3.0];
        let p = v.as_ptr();
        let a = Array::from_vec(v, &[3]).unwrap();
        assert_eq!(a.as_slice::<f64>().unwrap().as_ptr(), p);
        let b = a.clone();
        drop(a);
        assert_eq!(b.to_vec::<f64>().unwrap(), vec![1.0, 2.0, 3.0]);
    });
}

#[test]
fn array_errors_name_the_values() {
    let _s = serial();
    let e = Array::from_slice(&[1.0f32, 2.0], &[3]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Shape);
    assert!(e.message().contains("2 elements") && e.message().contains("[3]"), "{}", e.message());
    let a = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let e = a.as_slice::<f64>().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Dtype);
    let e = a.reshape(&[3]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Shape);
    assert!(e.message().contains('3'), "{}", e.message());
    let e = a.get(5).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().starts_with("CH_ERR_INVALID_ARGUMENT: "), "{e}");
    let e = Array::full(Dtype::F32, &[-1], 0.0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Shape);
}

#[test]
fn variable_operators_and_backward() {
    no_leak(|| {
        let x = Variable::from_slice(&[1.0f64, 2.0, 3.0], &[3]).unwrap();
        let y = Variable::from_slice(&[4.0f64, 5.0, 6.0], &[3]).unwrap();
        // z = sum(x*y + x/y - (-x) - 2 + 1/x * 3)
        let z = (&x * &y + &x / &y - (-&x) - 2.0 + 1.0 / &x * 3.0).sum().unwrap();
        let xs = [1.0, 2.0, 3.0];
        let ys = [4.0, 5.0, 6.0];
        let want: f64 = (0..3).map(|i| xs[i] * ys[i] + xs[i] / ys[i] + xs[i] - 2.0 + 3.0 / xs[i]).sum();
        assert!((z.to_vec::<f64>().unwrap()[0] - want).abs() < 1e-12);
        z.backward().unwrap();
        let gx = x.grad_vec::<f64>().unwrap().unwrap();
        let gy = y.grad_vec::<f64>().unwrap().unwrap();
        let wgx: Vec<f64> = (0..3).map(|i| ys[i] + 1.0 / ys[i] + 1.0 - 3.0 / (xs[i] * xs[i])).collect();
        let wgy: Vec<f64> = (0..3).map(|i| xs[i] - xs[i] / (ys[i] * ys[i])).collect();
        assert!(close(&gx, &wgx, 1e-12), "{gx:?} vs {wgx:?}");
        assert!(close(&gy, &wgy, 1e-12), "{gy:?} vs {wgy:?}");
        // creator inspection
        let c = z.creator().unwrap().unwrap();
        assert_eq!(c.input_count(), 1);
        assert!(x.creator().unwrap().is_none());
    });
}

#[test]
fn backward_with_initial_error_and_retain_grad() {
    no_leak(|| {
        let x = Variable::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        let h = &x * 3.0;
        let y = h.exp().unwrap();
        // not one element and no grad: a graph error
        let e = y.backward().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Graph);
        y.set_grad(Some(&Array::from_slice(&[1.0f32, 0.5], &[2]).unwrap())).unwrap();
        y.backward_retain_grad().unwrap();
        assert!(h.grad().unwrap().is_some());
        let g = x.grad_vec::<f32>().unwrap().unwrap();
        let want = [3.0 * (3.0f32).exp(), 0.5 * 3.0 * (6.0f32).exp()];
        assert!((g[0] - want[0]).abs() < 1e-3 && (g[1] - want[1]).abs() < 1e-2, "{g:?}");
        y.set_grad(None).unwrap();
        assert!(y.grad().unwrap().is_none());
    });
}

#[test]
fn volatile_records_no_history() {
    no_leak(|| {
        let a = Array::from_slice(&[1.0f32], &[1]).unwrap();
        let x = Variable::new_volatile(&a).unwrap();
        assert!(x.is_volatile());
        let y = &x * 2.0 + 1.0;
        assert!(y.is_volatile());
        assert!(y.creator().unwrap().is_none());
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![3.0]);
        // mixing volatile and non-volatile is a graph error
        let n = Variable::new(&a).unwrap();
        let e = F::add(&x, &n).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Graph);
    });
}

#[test]
fn unchain_backward_cuts_the_graph() {
    no_leak(|| {
        let x = Variable::from_slice(&[2.0f64], &[1]).unwrap();
        let h = &x * 3.0;
        let y = &h * &h;
        h.unchain_backward().unwrap();
        assert!(h.creator().unwrap().is_none());
        y.backward().unwrap();
        assert!(x.grad().unwrap().is_none());
        assert_eq!(h.grad_vec::<f64>().unwrap().unwrap(), vec![12.0]);
    });
}

#[test]
#[should_panic(expected = "CH_ERR_SHAPE")]
fn operator_panics_with_the_message() {
    let _s = serial();
    let a = Variable::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let b = Variable::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    let _ = &a + &b;
}

#[test]
fn binary_errors_name_shapes_and_dtypes() {
    let _s = serial();
    let a = Variable::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let b = Variable::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    let e = F::mul(&a, &b).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Shape);
    assert!(e.message().contains('2') && e.message().contains('3'), "{}", e.message());
    let c = Variable::from_slice(&[1.0f64, 2.0], &[2]).unwrap();
    let e = F::add(&a, &c).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Dtype);
    let i = Variable::from_slice(&[1i32, 2], &[2]).unwrap();
    assert_eq!(F::exp(&i).unwrap_err().kind(), ErrorKind::Dtype);
}

/// Every built-in math function passes check_backward (float64) through a
/// Rust graph closure.
#[test]
fn builtin_functions_pass_check_backward() {
    let _s = serial();
    let x = arr64(&values(6, 1, 0.5, 2.0), &[2, 3]);
    let y = arr64(&values(6, 2, 0.5, 2.0), &[2, 3]);
    let b = arr64(&values(3, 3, 0.5, 2.0), &[3]);
    let tol = Tolerance { eps: 1e-4, atol: 1e-6, rtol: 1e-5 };
    type G = fn(&[Variable]) -> Result<Vec<Variable>>;
    let unary: Vec<(&str, G)> = vec![
        ("neg", |v| Ok(vec![F::neg(&v[0])?])),
        ("exp", |v| Ok(vec![F::exp(&v[0])?])),
        ("log", |v| Ok(vec![F::log(&v[0])?])),
        ("sum", |v| Ok(vec![F::sum(&v[0])?])),
        ("sum_axis0", |v| Ok(vec![F::sum_axis(&v[0], 0, false)?])),
        ("sum_axis-1_keep", |v| Ok(vec![F::sum_axis(&v[0], -1, true)?])),
        ("identity", |v| Ok(vec![F::identity(&v[0])?])),
        ("reshape", |v| Ok(vec![F::reshape(&v[0], &[3, -1])?])),
        ("add_scalar", |v| Ok(vec![F::add_scalar(&v[0], 1.5)?])),
        ("sub_scalar", |v| Ok(vec![F::sub_scalar(&v[0], 1.5)?])),
        ("rsub_scalar", |v| Ok(vec![F::rsub_scalar(&v[0], 1.5)?])),
        ("mul_scalar", |v| Ok(vec![F::mul_scalar(&v[0], 1.5)?])),
        ("div_scalar", |v| Ok(vec![F::div_scalar(&v[0], 1.5)?])),
        ("rdiv_scalar", |v| Ok(vec![F::rdiv_scalar(&v[0], 1.5)?])),
        ("pow_scalar", |v| Ok(vec![F::pow_scalar(&v[0], 2.5)?])),
        ("rpow_scalar", |v| Ok(vec![F::rpow_scalar(&v[0], 1.7)?])),
    ];
    for (name, g) in unary {
        check_backward_graph(g, &[&x], &[None], tol).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let binary: Vec<(&str, G)> = vec![
        ("add", |v| Ok(vec![F::add(&v[0], &v[1])?])),
        ("sub", |v| Ok(vec![F::sub(&v[0], &v[1])?])),
        ("mul", |v| Ok(vec![F::mul(&v[0], &v[1])?])),
        ("div", |v| Ok(vec![F::div(&v[0], &v[1])?])),
    ];
    for (name, g) in &binary {
        check_backward_graph(g, &[&x, &y], &[None], tol).unwrap_or_else(|e| panic!("{name}: {e}"));
        // broadcasting (2,3) with (3,)
        check_backward_graph(g, &[&x, &b], &[None], tol).unwrap_or_else(|e| panic!("{name} broadcast: {e}"));
    }
    check_backward_graph(|v| Ok(vec![F::broadcast_to(&v[0], &[2, 3])?]), &[&b], &[None], tol).unwrap();
    // float32 with looser tolerances
    let x32 = arr32(&[0.5, 1.0, 1.5], &[3]);
    check_backward_graph(
        |v| Ok(vec![(&v[0] * &v[0]).exp()?]),
        &[&x32],
        &[None],
        Tolerance { eps: 1e-2, atol: 1e-3, rtol: 1e-2 },
    )
    .unwrap();
}

#[test]
fn builtin_values() {
    no_leak(|| {
        let x = Variable::from_slice(&[1.0f64, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
        assert_eq!(F::sum_axis(&x, 0, false).unwrap().to_vec::<f64>().unwrap(), vec![4.0, 6.0]);
        assert_eq!(F::sum_axis(&x, 1, true).unwrap().shape().unwrap(), vec![2, 1]);
        assert_eq!(F::pow_scalar(&x, 2.0).unwrap().to_vec::<f64>().unwrap(), vec![1.0, 4.0, 9.0, 16.0]);
        assert_eq!(F::rpow_scalar(&x, 2.0).unwrap().to_vec::<f64>().unwrap(), vec![2.0, 4.0, 8.0, 16.0]);
        assert_eq!(F::rsub_scalar(&x, 1.0).unwrap().to_vec::<f64>().unwrap(), vec![0.0, -1.0, -2.0, -3.0]);
        assert_eq!((2.0 - &x).to_vec::<f64>().unwrap(), vec![1.0, 0.0, -1.0, -2.0]);
        let b = Variable::from_slice(&[10.0f64, 20.0], &[2]).unwrap();
        assert_eq!((&x + &b).to_vec::<f64>().unwrap(), vec![11.0, 22.0, 13.0, 24.0]);
        assert_eq!(F::broadcast_to(&b, &[2, 2]).unwrap().to_vec::<f64>().unwrap(), vec![10.0, 20.0, 10.0, 20.0]);
        let l = x.log().unwrap().exp().unwrap();
        assert!(close(&l.to_vec::<f64>().unwrap(), &[1.0, 2.0, 3.0, 4.0], 1e-12));
    });
}

#[test]
fn numerical_grad_and_allclose() {
    let _s = serial();
    let x = arr64(&[1.0, 2.0], &[2]);
    let gy = arr64(&[1.0, 1.0], &[2]);
    // f(x) = x^2 elementwise, computed in Rust on the current contents of x
    let xr = x.clone();
    let g = numerical_grad(
        || {
            let v: Vec<f64> = xr.as_slice::<f64>()?.iter().map(|a| a * a).collect();
            Ok(vec![Array::from_slice(&v, &[2])?])
        },
        &[&x],
        &[&gy],
        1e-3,
    )
    .unwrap();
    assert!(close(&g[0].to_vec::<f64>().unwrap(), &[2.0, 4.0], 1e-6));
    g[0].allclose(&arr64(&[2.0, 4.0], &[2]), 1e-6, 1e-6).unwrap();
    let e = g[0].allclose(&arr64(&[2.0, 5.0], &[2]), 1e-6, 1e-6).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotClose);
    assert!(e.message().contains('5'), "{}", e.message());
}

#[test]
fn config_and_memory_stats() {
    let _s = serial();
    config::seed(1);
    assert!(config::num_threads() >= 1);
    assert_eq!(config::set_num_threads(0).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert!(!config::blas().is_empty());
    assert_eq!(config::gemm(), "auto");
    config::set_gemm("openblas").unwrap();
    assert_eq!(config::gemm(), "openblas");
    assert_eq!(config::set_gemm("no-such-blas").unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(config::gemm(), "openblas");
    config::set_gemm("auto").unwrap();
    assert_eq!(config::gemm(), "auto");
    let cache = config::gemm_cache();
    config::set_gemm_cache(Some("")).unwrap();
    assert_eq!(config::gemm_cache(), "");
    assert!(config::blas().ends_with(" | choices not kept on disk"), "{}", config::blas());
    config::set_gemm_cache(Some("/tmp/chainerc-rust-test-gemm")).unwrap();
    assert_eq!(config::gemm_cache(), "/tmp/chainerc-rust-test-gemm");
    let e = config::set_gemm_cache(Some(&"x".repeat(5000))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("5000 bytes"), "{}", e.message());
    assert_eq!(config::gemm_cache(), "/tmp/chainerc-rust-test-gemm");
    assert_eq!(config::set_gemm_cache(Some("a\0b")).unwrap_err().kind(), ErrorKind::InvalidArgument);
    config::set_gemm_cache(None).unwrap();
    assert_eq!(config::gemm_cache(), cache, "back to the environment's directory");
    assert!(config::use_cudnn() && !config::allow_tf32(), "defaults: cuDNN on, TF32 off");
    let (st, why, _) = config::cudnn_state();
    assert!((0..=6).contains(&st) && (st == 0 || !why.is_empty()), "{st} {why}");
    assert_eq!(config::cudnn_calls(Some("no such kernel")), 0);
    config::reset_cudnn_calls();
    assert_eq!(config::cudnn_calls(None), 0);
    config::set_use_cudnn(false);
    let (st, why, _) = config::cudnn_state();
    assert!(st == 1 && why.contains("ch_config_set_use_cudnn(0)"), "{st} {why}");
    config::set_allow_tf32(true);
    assert!(!config::use_cudnn() && config::allow_tf32());
    config::set_use_cudnn(true);
    config::set_allow_tf32(false);
    assert!(config::use_cudnn() && !config::allow_tf32());
    assert!(!config::deterministic(), "determinism starts off");
    config::set_deterministic(true);
    assert!(config::deterministic());
    config::set_deterministic(false);
    assert!(!config::deterministic());
    let s = memory_stats(Device::Cpu).unwrap();
    assert!(s.allocations >= 0 && s.bytes_in_use >= 0);
    empty_cache(Device::Cpu).unwrap();
    if let Err(e) = memory_stats(Device::Cuda(0)) {
        assert!(matches!(e.kind(), ErrorKind::Device | ErrorKind::Unsupported), "{e}");
    }
}

#[test]
fn handles_move_between_threads() {
    let _s = serial();
    let x = Variable::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let y = std::thread::spawn(move || {
        let y = (&x * &x).sum().unwrap();
        y.backward().unwrap();
        x.grad_vec::<f32>().unwrap().unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(y, vec![2.0, 4.0]);
}
