// Double backprop from Rust: backward_double + grad_var, grad, NoBackpropMode.
// Expected values derived by hand (y = sum(x^3): y' = 3x^2, y'' = 6x).
mod common;
use chainerc::functions as F;
use chainerc::*;
use common::*;

#[test]
fn second_derivative_of_a_cube() {
    no_leak(|| {
        let x = Variable::new(&Array::from_slice(&[0.5f64, -1.0, 2.0], &[3]).unwrap()).unwrap();
        let c = F::pow_scalar(&x, 3.0).unwrap();
        let y = F::sum(&c).unwrap();
        y.backward_double(false).unwrap();
        let gx = x.grad_var().unwrap().unwrap();
        assert_eq!(gx.to_vec::<f64>().unwrap(), vec![0.75, 3.0, 12.0]);
        x.set_grad(None).unwrap();
        let s = F::sum(&gx).unwrap();
        let h = grad(&[&s], &[&x], false).unwrap();
        assert_eq!(h[0].as_ref().unwrap().to_vec::<f64>().unwrap(), vec![3.0, -6.0, 12.0]);
        let _off = NoBackpropMode::new().unwrap();
        let e = F::exp(&x).unwrap();
        assert!(e.creator().unwrap().is_none());
    });
}

/// w = x * y + z, with its backward over variables too (twice differentiable).
struct MulAdd;
impl FunctionImpl for MulAdd {
    fn forward(&self, _ctx: &mut Context<'_>, i: &[Array]) -> Result<Vec<Array>> {
        let _off = NoBackpropMode::new()?;
        let (x, y, z) = (Variable::new(&i[0])?, Variable::new(&i[1])?, Variable::new(&i[2])?);
        Ok(vec![F::add(&F::mul(&x, &y)?, &z)?.data()?])
    }
    fn backward(&self, _ctx: &mut Context<'_>, i: &[Array], _o: &[Array], g: &[Array]) -> Result<Vec<Option<Array>>> {
        let _off = NoBackpropMode::new()?;
        let (x, y, gw) = (Variable::new(&i[0])?, Variable::new(&i[1])?, Variable::new(&g[0])?);
        Ok(vec![Some(F::mul(&gw, &y)?.data()?), Some(F::mul(&gw, &x)?.data()?), Some(g[0].clone())])
    }
    fn has_graph_backward(&self) -> bool {
        true
    }
    fn backward_graph(&self, i: &[Variable], _o: &[Variable], g: &[Variable]) -> Result<Vec<Option<Variable>>> {
        Ok(vec![Some(F::mul(&g[0], &i[1])?), Some(F::mul(&g[0], &i[0])?), Some(g[0].clone())])
    }
}

#[test]
fn custom_muladd_twice_differentiable() {
    no_leak(|| {
        let f = Function::new("MulAdd", MulAdd).unwrap();
        let x = Variable::from_slice(&[1.0f64, 2.0], &[2]).unwrap();
        let y = Variable::from_slice(&[3.0f64, -1.0], &[2]).unwrap();
        let z = Variable::from_slice(&[0.5f64, 0.5], &[2]).unwrap();
        let w = f.apply1(&[&x, &y, &z]).unwrap();
        let s = F::sum(&F::mul(&w, &w).unwrap()).unwrap(); // ds/dx = 2 w y, d2s/dx2 = 2 y^2
        let g = grad(&[&s], &[&x], true).unwrap();
        let g0 = g[0].as_ref().unwrap();
        assert_eq!(g0.to_vec::<f64>().unwrap(), vec![21.0, 3.0]);
        let gg = grad(&[&F::sum(g0).unwrap()], &[&x], false).unwrap();
        assert_eq!(gg[0].as_ref().unwrap().to_vec::<f64>().unwrap(), vec![18.0, 2.0]);
    });
}

#[test]
fn check_double_backward_of_tanh_and_the_switch() {
    no_leak(|| {
        let x = Array::from_slice(&[0.3f64, -0.8, 1.2, 0.1], &[2, 2]).unwrap();
        let tol = Tolerance { eps: 1e-4, atol: 1e-6, rtol: 1e-5 };
        check_double_backward(|v| Ok(vec![v[0].tanh()?]), &[&x], &[None], &[], tol).unwrap();
        assert!(enable_backprop() && backprop_mode_enabled());
    });
}
