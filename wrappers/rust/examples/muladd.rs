//! A custom differentiable function written in Rust: w = x * y + z.
//! Run: cargo run --example muladd (with CHAINERC_LIB_DIR or the repository's build/src).
use chainerc::*;

/// The engine calls forward/backward through the C callbacks; the arrays
/// arrive without copying.
struct MulAdd;

impl FunctionImpl for MulAdd {
    fn forward(&self, _ctx: &mut Context<'_>, inputs: &[Array]) -> Result<Vec<Array>> {
        let (x, y, z) = (inputs[0].as_slice::<f64>()?, inputs[1].as_slice::<f64>()?, inputs[2].as_slice::<f64>()?);
        let w: Vec<f64> = (0..x.len()).map(|i| x[i] * y[i] + z[i]).collect();
        Ok(vec![Array::from_vec(w, inputs[0].shape())?])
    }

    fn backward(
        &self,
        _ctx: &mut Context<'_>,
        inputs: &[Array],
        _outputs: &[Array],
        grad_outputs: &[Array],
    ) -> Result<Vec<Option<Array>>> {
        let (x, y, gw) =
            (inputs[0].as_slice::<f64>()?, inputs[1].as_slice::<f64>()?, grad_outputs[0].as_slice::<f64>()?);
        let gx: Vec<f64> = (0..x.len()).map(|i| gw[i] * y[i]).collect();
        let gy: Vec<f64> = (0..x.len()).map(|i| gw[i] * x[i]).collect();
        Ok(vec![
            Some(Array::from_vec(gx, inputs[0].shape())?),
            Some(Array::from_vec(gy, inputs[1].shape())?),
            Some(grad_outputs[0].clone()), // gz = gw, shared, not copied
        ])
    }
}

fn main() -> Result<()> {
    let muladd = Function::new("MulAdd", MulAdd)?;
    let x = Variable::from_slice(&[1.0f64, 2.0, 3.0], &[3])?;
    let y = Variable::from_slice(&[4.0f64, 5.0, 6.0], &[3])?;
    let z = Variable::from_slice(&[7.0f64, 8.0, 9.0], &[3])?;

    // loss = sum(MulAdd(x, y, z) * 2) — custom and built-in functions mix freely.
    let w = muladd.apply1(&[&x, &y, &z])?;
    let loss = (&w * 2.0).sum()?;
    loss.backward()?;
    println!("w      = {:?}", w.to_vec::<f64>()?);
    println!("loss   = {:?}", loss.to_vec::<f64>()?);
    println!("dL/dx  = {:?}", x.grad_vec::<f64>()?.unwrap());
    println!("dL/dy  = {:?}", y.grad_vec::<f64>()?.unwrap());
    println!("dL/dz  = {:?}", z.grad_vec::<f64>()?.unwrap());

    // The engine's own gradient check (numerical vs. backward).
    let inputs: Vec<Array> = [x.data()?, y.data()?, z.data()?].into();
    check_backward(&muladd, &inputs.iter().collect::<Vec<_>>(), None, Tolerance::default())?;
    println!("check_backward: ok");
    Ok(())
}
