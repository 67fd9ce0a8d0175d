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
