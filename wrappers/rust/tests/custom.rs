// Custom functions written in Rust: MulAdd, ExpAdd and a parameterized
// function pass the engine's check_backward; arrays arrive without copying;
// errors and panics in callbacks come back as Errors carrying the cause.
mod common;
use chainerc::*;
use common::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn like(a: &Array, v: Vec<f64>) -> Result<Array> {
    match a.dtype() {
        Dtype::F32 => Array::from_vec(v.into_iter().map(|x| x as f32).collect::<Vec<f32>>(), a.shape()),
        _ => Array::from_vec(v, a.shape()),
    }
}
fn vals(a: &Array) -> Result<Vec<f64>> {
    Ok(match a.dtype() {
        Dtype::F32 => a.as_slice::<f32>()?.iter().map(|&x| x as f64).collect(),
        _ => a.as_slice::<f64>()?.to_vec(),
    })
}

/// w = x * y + z
struct MulAdd;
impl FunctionImpl for MulAdd {
    fn forward(&self, _ctx: &mut Context<'_>, i: &[Array]) -> Result<Vec<Array>> {
        if i.len() != 3 {
            return Err(Error::new(ErrorKind::InvalidArgument, format!("MulAdd takes 3 inputs, got {}", i.len())));
        }
        let (x, y, z) = (vals(&i[0])?, vals(&i[1])?, vals(&i[2])?);
        Ok(vec![like(&i[0], (0..x.len()).map(|k| x[k] * y[k] + z[k]).collect())?])
    }
    fn backward(&self, _ctx: &mut Context<'_>, i: &[Array], _o: &[Array], g: &[Array]) -> Result<Vec<Option<Array>>> {
        let (x, y, gw) = (vals(&i[0])?, vals(&i[1])?, vals(&g[0])?);
        let gx = like(&i[0], (0..x.len()).map(|k| gw[k] * y[k]).collect())?;
        let gy = like(&i[1], (0..x.len()).map(|k| gw[k] * x[k]).collect())?;
        Ok(vec![Some(gx), Some(gy), Some(g[0].clone())])
    }
}

/// y = exp(x) + z, keeping exp(x) (the output minus z would lose precision)
/// in the context for backward.
struct ExpAdd;
impl FunctionImpl for ExpAdd {
    fn forward(&self, ctx: &mut Context<'_>, i: &[Array]) -> Result<Vec<Array>> {
        let (x, z) = (vals(&i[0])?, vals(&i[1])?);
        let e = like(&i[0], x.iter().map(|v| v.exp()).collect())?;
        ctx.save(&e)?;
        let ev = vals(&e)?;
        Ok(vec![like(&i[0], (0..x.len()).map(|k| ev[k] + z[k]).collect())?])
    }
    fn backward(&self, ctx: &mut Context<'_>, _i: &[Array], _o: &[Array], g: &[Array]) -> Result<Vec<Option<Array>>> {
        assert_eq!(ctx.saved_count(), 1);
        let e = vals(&ctx.saved(0)?)?;
        let gy = vals(&g[0])?;
        Ok(vec![Some(like(&g[0], (0..e.len()).map(|k| gy[k] * e[k]).collect())?), Some(g[0].clone())])
    }
}

/// y = W * x elementwise with a parameter W (Chainer's parameterized
/// function): backward accumulates gW += gy * x and returns gx = gy * W.
struct Scale;
impl FunctionImpl for Scale {
    fn forward(&self, ctx: &mut Context<'_>, i: &[Array]) -> Result<Vec<Array>> {
        let w = ctx.function()?.param("W")?;
        let (x, wv) = (vals(&i[0])?, vals(&w.param)?);
        if x.len() != wv.len() {
            return Err(Error::new(ErrorKind::Shape, format!("x has {} elements, W {}", x.len(), wv.len())));
        }
        Ok(vec![like(&i[0], (0..x.len()).map(|k| wv[k] * x[k]).collect())?])
    }
    fn backward(&self, ctx: &mut Context<'_>, i: &[Array], _o: &[Array], g: &[Array]) -> Result<Vec<Option<Array>>> {
        let mut w = ctx.function()?.param("W")?;
        let (x, gy, wv) = (vals(&i[0])?, vals(&g[0])?, vals(&w.param)?);
        // accumulate into the parameter's gradient (float64 here)
        let gw = unsafe { w.grad.as_mut_slice::<f64>()? };
        for k in 0..x.len() {
            gw[k] += gy[k] * x[k];
        }
        Ok(vec![Some(like(&i[0], (0..x.len()).map(|k| gy[k] * wv[k]).collect())?)])
    }
}

fn muladd_inputs<T: Element>(conv: fn(f64) -> T) -> Vec<Array> {
    (0..3)
        .map(|s| Array::from_vec(values(6, s + 10, -1.0, 1.0).into_iter().map(conv).collect(), &[2, 3]).unwrap())
        .collect()
}

#[test]
fn muladd_values_and_check_backward() {
    no_leak(|| {
        let f = Function::new("MulAdd", MulAdd).unwrap();
        assert_eq!(f.name(), "MulAdd");
        let x = Variable::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        let y = Variable::from_slice(&[3.0f32, 4.0], &[2]).unwrap();
        let z = Variable::from_slice(&[5.0f32, 6.0], &[2]).unwrap();
        let w = f.apply1(&[&x, &y, &z]).unwrap();
        assert_eq!(w.to_vec::<f32>().unwrap(), vec![8.0, 14.0]);
        w.set_grad(Some(&Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap())).unwrap();
        w.backward().unwrap();
        assert_eq!(x.grad_vec::<f32>().unwrap().unwrap(), vec![3.0, 8.0]);
        assert_eq!(y.grad_vec::<f32>().unwrap().unwrap(), vec![1.0, 4.0]);
        assert_eq!(z.grad_vec::<f32>().unwrap().unwrap(), vec![1.0, 2.0]);
        assert_eq!(w.creator().unwrap().unwrap().name(), "MulAdd");
        let i64s = muladd_inputs(|v| v);
        check_backward(&f, &i64s.iter().collect::<Vec<_>>(), None, Tolerance { eps: 1e-3, atol: 1e-7, rtol: 1e-6 })
            .unwrap();
        let i32s = muladd_inputs(|v| v as f32);
        let gy = Array::from_vec(values(6, 99, -1.0, 1.0).into_iter().map(|v| v as f32).collect::<Vec<f32>>(), &[2, 3])
            .unwrap();
        check_backward(
            &f,
            &i32s.iter().collect::<Vec<_>>(),
            Some(&[&gy]),
            Tolerance { eps: 1e-2, atol: 1e-3, rtol: 1e-2 },
        )
        .unwrap();
    });
}

#[test]
fn expadd_check_backward_and_composition() {
    no_leak(|| {
        let f = Function::new("ExpAdd", ExpAdd).unwrap();
        let x = Array::from_vec(values(5, 3, -1.0, 1.0), &[5]).unwrap();
        let z = Array::from_vec(values(5, 4, -1.0, 1.0), &[5]).unwrap();
        check_backward(&f, &[&x, &z], None, Tolerance { eps: 1e-3, atol: 1e-7, rtol: 1e-6 }).unwrap();
        // inside a larger graph with built-ins: sum(ExpAdd(x*2, z) * 3)
        check_backward_graph(
            |v| Ok(vec![(&f.apply1(&[&(&v[0] * 2.0), &v[1]])? * 3.0).sum()?]),
            &[&x, &z],
            &[None],
            Tolerance { eps: 1e-3, atol: 1e-6, rtol: 1e-5 },
        )
        .unwrap();
    });
}

#[test]
fn parameterized_function_check_backward_and_param_grad() {
    no_leak(|| {
        let f = Function::new("Scale", Scale).unwrap();
        let w = Array::from_vec(values(4, 7, 0.5, 1.5), &[4]).unwrap();
        let gw = Array::zeros(Dtype::F64, &[4]).unwrap();
        f.add_parameter("W", &w, &gw).unwrap();
        assert_eq!(f.parameter_count(), 1);
        let p = f.parameter(0).unwrap();
        assert_eq!(p.name, "W");
        let x = Array::from_vec(values(4, 8, -1.0, 1.0), &[4]).unwrap();
        check_backward(&f, &[&x], None, Tolerance { eps: 1e-3, atol: 1e-7, rtol: 1e-6 }).unwrap();
        // parameter gradient: accumulated gW vs the numerical gradient w.r.t. W
        gw.fill(0.0).unwrap();
        let xv = Variable::new(&x).unwrap();
        let y = f.apply1(&[&xv]).unwrap().sum().unwrap();
        y.backward().unwrap();
        let ones = Array::ones(Dtype::F64, &[4]).unwrap();
        let fr = f.clone();
        let xc = x.clone();
        let num = numerical_grad(
            || {
                let xv = Variable::new_volatile(&xc)?;
                Ok(vec![fr.apply1(&[&xv])?.data()?])
            },
            &[&w],
            &[&ones],
            1e-3,
        )
        .unwrap();
        gw.allclose(&num[0], 1e-7, 1e-6).unwrap();
        assert!(close(&gw.to_vec::<f64>().unwrap(), &x.to_vec::<f64>().unwrap(), 1e-12));
        // accumulation across backward calls (Chainer 1.x: zero_grads clears)
        y.backward().unwrap();
        let twice: Vec<f64> = x.to_vec::<f64>().unwrap().iter().map(|v| 2.0 * v).collect();
        assert!(close(&gw.to_vec::<f64>().unwrap(), &twice, 1e-12));
    });
}

struct Probe {
    seen: Arc<AtomicUsize>,
}
impl FunctionImpl for Probe {
    fn forward(&self, _ctx: &mut Context<'_>, i: &[Array]) -> Result<Vec<Array>> {
        // report the address of the input's memory as an f64 output
        let p = i[0].as_slice::<f32>()?.as_ptr() as usize;
        self.seen.store(p, Ordering::SeqCst);
        Ok(vec![i[0].clone()])
    }
    fn forward_cpu(&self, ctx: &mut Context<'_>, i: &[Array]) -> Result<Vec<Array>> {
        self.seen.fetch_add(0, Ordering::SeqCst);
        self.forward(ctx, i)
    }
    fn backward(&self, _ctx: &mut Context<'_>, _i: &[Array], _o: &[Array], g: &[Array]) -> Result<Vec<Option<Array>>> {
        Ok(vec![Some(g[0].clone())])
    }
}

struct Dropped(Arc<AtomicUsize>);
impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}
struct WithDrop {
    _d: Dropped,
}
impl FunctionImpl for WithDrop {
    fn forward(&self, _ctx: &mut Context<'_>, i: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![i[0].copy()?])
    }
    fn backward(&self, _ctx: &mut Context<'_>, _i: &[Array], _o: &[Array], g: &[Array]) -> Result<Vec<Option<Array>>> {
        Ok(vec![Some(g[0].clone())])
    }
}

#[test]
fn inputs_arrive_without_copying_and_impl_is_dropped_once() {
    no_leak(|| {
        let seen = Arc::new(AtomicUsize::new(0));
        let f = Function::new("Probe", Probe { seen: seen.clone() }).unwrap();
        let a = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        let x = Variable::new(&a).unwrap();
        let y = f.apply1(&[&x]).unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), a.as_slice::<f32>().unwrap().as_ptr() as usize);
        drop(y);
        let drops = Arc::new(AtomicUsize::new(0));
        let g = Function::new("WithDrop", WithDrop { _d: Dropped(drops.clone()) }).unwrap();
        let y = g.apply1(&[&x]).unwrap();
        drop(g);
        assert_eq!(drops.load(Ordering::SeqCst), 0, "an application keeps the object alive");
        y.backward().unwrap_err(); // 2 elements, no initial grad: graph error
        drop(y);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    });
}

struct Failing {
    panic_in_backward: bool,
}
impl FunctionImpl for Failing {
    fn forward(&self, _ctx: &mut Context<'_>, i: &[Array]) -> Result<Vec<Array>> {
        if i[0].size() == 3 {
            return Err(Error::new(ErrorKind::Shape, "Failing refuses 3 elements"));
        }
        if i[0].size() == 4 {
            panic!("forward exploded on {} elements", i[0].size());
        }
        Ok(vec![i[0].copy()?])
    }
    fn backward(&self, _ctx: &mut Context<'_>, _i: &[Array], _o: &[Array], g: &[Array]) -> Result<Vec<Option<Array>>> {
        if self.panic_in_backward {
            std::panic::panic_any(String::from("backward exploded"));
        }
        Ok(vec![Some(g[0].clone()), Some(g[0].clone())]) // one too many
    }
}

#[test]
fn callback_errors_and_panics_come_back_with_their_cause() {
    no_leak(|| {
        let f = Function::new("Failing", Failing { panic_in_backward: true }).unwrap();
        // an Err from forward: the engine wraps the message; the original Error is the cause
        let x3 = Variable::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
        let mut e = f.apply1(&[&x3]).unwrap_err();
        assert!(e.message().contains("Failing") && e.message().contains("refuses 3 elements"), "{}", e.message());
        match e.take_cause() {
            Some(Cause::Error(inner)) => {
                assert_eq!(inner.kind(), ErrorKind::Shape);
                assert_eq!(inner.message(), "Failing refuses 3 elements");
            }
            other => panic!("expected the callback's Error, got {other:?}"),
        }
        // a panic in forward never unwinds through C
        let x4 = Variable::from_slice(&[1.0f32; 4], &[4]).unwrap();
        let e = f.apply1(&[&x4]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Callback);
        assert!(e.message().contains("forward exploded on 4 elements"), "{}", e.message());
        assert_eq!(e.panic_message().as_deref(), Some("forward exploded on 4 elements"));
        // a panic in backward: the caller of backward gets it; the graph stays usable
        let x1 = Variable::from_slice(&[1.0f32], &[1]).unwrap();
        let y = f.apply1(&[&x1]).unwrap();
        let e = y.backward().unwrap_err();
        assert_eq!(e.panic_message().as_deref(), Some("backward exploded"));
        assert!(e.message().contains("backward"), "{}", e.message());
        // resume_panic re-raises the original payload
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = y.backward().map_err(|e| e.resume_panic());
        }));
        let p = r.unwrap_err();
        assert_eq!(p.downcast_ref::<String>().map(String::as_str), Some("backward exploded"));
        // too many gradients is a contract error reported as an Error
        let g = Function::new("Failing", Failing { panic_in_backward: false }).unwrap();
        let y = g.apply1(&[&x1]).unwrap();
        let e = y.backward().unwrap_err();
        assert!(e.message().contains("2 gradients for 1 inputs"), "{}", e.message());
    });
}

#[test]
fn check_backward_reports_a_wrong_backward() {
    let _s = serial();
    struct Wrong;
    impl FunctionImpl for Wrong {
        fn forward(&self, _ctx: &mut Context<'_>, i: &[Array]) -> Result<Vec<Array>> {
            let x = vals(&i[0])?;
            Ok(vec![like(&i[0], x.iter().map(|v| v * v).collect())?])
        }
        fn backward(
            &self,
            _ctx: &mut Context<'_>,
            i: &[Array],
            _o: &[Array],
            g: &[Array],
        ) -> Result<Vec<Option<Array>>> {
            let (x, gy) = (vals(&i[0])?, vals(&g[0])?);
            Ok(vec![Some(like(&i[0], (0..x.len()).map(|k| gy[k] * x[k]).collect())?)])
            // should be 2x
        }
    }
    let f = Function::new("Wrong", Wrong).unwrap();
    let x = Array::from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
    let e = check_backward(&f, &[&x], None, Tolerance::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotClose);
}

/// Records which inputs needed a gradient in backward.
struct NeedsProbe(Arc<AtomicUsize>);
impl FunctionImpl for NeedsProbe {
    fn forward(&self, _ctx: &mut Context<'_>, i: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![i[0].copy()?])
    }
    fn backward(&self, ctx: &mut Context<'_>, i: &[Array], _o: &[Array], g: &[Array]) -> Result<Vec<Option<Array>>> {
        let mask = (0..i.len()).filter(|&k| ctx.needs_input_grad(k)).fold(0, |m, k| m | (1 << k));
        self.0.store(mask, Ordering::SeqCst);
        Ok(vec![Some(g[0].clone()), Some(g[0].clone())])
    }
}

#[test]
fn requires_grad_and_needs_input_grad() {
    no_leak(|| {
        let seen = Arc::new(AtomicUsize::new(99));
        let f = Function::new("NeedsProbe", NeedsProbe(seen.clone())).unwrap();
        let x = Variable::from_slice(&[1.0f64, 2.0], &[2]).unwrap();
        let data = Variable::from_slice(&[3.0f64, 4.0], &[2]).unwrap();
        assert!(data.requires_grad());
        data.set_requires_grad(false).unwrap();
        assert!(!data.requires_grad());
        let y = f.apply1(&[&x, &data]).unwrap().sum().unwrap();
        y.backward().unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), 0b01, "only x needs a gradient");
        assert!(x.grad().unwrap().is_some());
        assert!(data.grad().unwrap().is_none());
    });
}
