// The array functions of issue 42 from Rust: get_item with a negative step
// and an index array, scatter_add, flip, pad, tile, repeat, stack, split_axis,
// against values written out by hand.
mod common;
use chainerc::functions as F;
use chainerc::nn;
use chainerc::nn::Index;
use chainerc::*;
use common::*;

#[test]
fn array_functions_values_and_gradients() {
    no_leak(|| {
        let x = Variable::new(&Array::from_slice(&[0f64, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]).unwrap()).unwrap();
        let idx = Array::from_slice(&[2i32, 0, 2], &[3]).unwrap();
        let y = nn::get_item(&x, &[Index::Slice(None, None, -1), Index::Array(&idx)]).unwrap();
        assert_eq!(y.to_vec::<f64>().unwrap(), vec![5.0, 3.0, 5.0, 2.0, 0.0, 2.0]);
        let s = F::sum(&y).unwrap();
        s.backward().unwrap();
        assert_eq!(x.grad().unwrap().unwrap().to_vec::<f64>().unwrap(), vec![1.0, 0.0, 2.0, 1.0, 0.0, 2.0]);
        let b = Variable::new(&Array::from_slice(&[10f64, 20.0, 30.0], &[3]).unwrap()).unwrap();
        let z = nn::scatter_add(&x, &[Index::At(0)], &b).unwrap();
        assert_eq!(z.to_vec::<f64>().unwrap(), vec![10.0, 21.0, 32.0, 3.0, 4.0, 5.0]);
        let f = F::flip(&x, 1).unwrap();
        assert_eq!(f.to_vec::<f64>().unwrap(), vec![2.0, 1.0, 0.0, 5.0, 4.0, 3.0]);
        let p = F::pad(&x, &[0, 0, 1, 0], 9.0).unwrap();
        assert_eq!(p.to_vec::<f64>().unwrap(), vec![9.0, 0.0, 1.0, 2.0, 9.0, 3.0, 4.0, 5.0]);
        let t = F::tile(&x, &[1, 2]).unwrap();
        assert_eq!(t.to_vec::<f64>().unwrap(), vec![0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 3.0, 4.0, 5.0]);
        let r = F::repeat(&x, &[2], &[]).unwrap();
        assert_eq!(r.to_vec::<f64>().unwrap().len(), 12);
        let st = nn::stack(&[&x, &x], 0).unwrap();
        let parts = nn::split_axis(&st, 2, 0).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[1].to_vec::<f64>().unwrap(), x.to_vec::<f64>().unwrap());
        let at = nn::split_axis_at(&x, &[1], 1).unwrap();
        assert_eq!(at[0].to_vec::<f64>().unwrap(), vec![0.0, 3.0]);
        assert!(nn::get_item(&x, &[Index::At(2)]).is_err());
    });
}
