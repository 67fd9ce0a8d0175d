// 10,000 training steps keep memory flat: live handles and the allocator's
// bytes in use are the same after the loop as after the warm-up (no timing).
use chainerc::*;

struct Scale;
impl FunctionImpl for Scale {
    fn forward(&self, ctx: &mut Context<'_>, i: &[Array]) -> Result<Vec<Array>> {
        let w = ctx.function()?.param("W")?;
        let (x, wv) = (i[0].as_slice::<f32>()?, w.param.as_slice::<f32>()?);
        let y: Vec<f32> = x.iter().zip(wv).map(|(a, b)| a * b).collect();
        Ok(vec![Array::from_vec(y, i[0].shape())?])
    }
    fn backward(&self, ctx: &mut Context<'_>, i: &[Array], _o: &[Array], g: &[Array]) -> Result<Vec<Option<Array>>> {
        let mut w = ctx.function()?.param("W")?;
        let (x, gy) = (i[0].as_slice::<f32>()?, g[0].as_slice::<f32>()?);
        let gw = unsafe { w.grad.as_mut_slice::<f32>()? };
        for k in 0..x.len() {
            gw[k] += gy[k] * x[k];
        }
        let wv = w.param.as_slice::<f32>()?;
        Ok(vec![Some(Array::from_vec(gy.iter().zip(wv).map(|(a, b)| a * b).collect(), i[0].shape())?)])
    }
}

#[test]
fn ten_thousand_training_steps_keep_memory_flat() {
    let n = 16usize;
    let f = Function::new("Scale", Scale).unwrap();
    let w = Array::full(Dtype::F32, &[n as i64], 0.1).unwrap();
    let gw = Array::zeros(Dtype::F32, &[n as i64]).unwrap();
    f.add_parameter("W", &w, &gw).unwrap();
    let bias = Variable::from_slice(&[0.5f32; 16], &[16]).unwrap();
    let x = Array::from_vec((0..n).map(|k| (k as f32) / n as f32).collect::<Vec<f32>>(), &[n as i64]).unwrap();
    let t = Variable::from_slice(&(0..n).map(|k| 0.5 + 2.0 * (k as f32) / n as f32).collect::<Vec<f32>>(), &[n as i64])
        .unwrap();
    let mut first_loss = 0.0;
    let mut last_loss = 0.0;
    let mut at_warmup = (0i64, 0i64);
    for step in 0..10_000 {
        let xv = Variable::new(&x).unwrap();
        let y = &f.apply1(&[&xv]).unwrap() + &bias;
        let d = &y - &t;
        let loss = (&d * &d).sum().unwrap() * (1.0 / n as f64);
        gw.fill(0.0).unwrap();
        loss.backward().unwrap();
        // SGD on W through a mutable view (nothing else touches W here)
        {
            let mut wm = w.clone();
            let wv = unsafe { wm.as_mut_slice::<f32>().unwrap() };
            let g = gw.as_slice::<f32>().unwrap();
            for k in 0..n {
                wv[k] -= 0.5 * g[k];
            }
        }
        let l = loss.to_vec::<f32>().unwrap()[0];
        if step == 0 {
            first_loss = l;
        }
        last_loss = l;
        drop((xv, y, d, loss));
        if step == 100 {
            at_warmup = (debug::live_handles(), memory_stats(Device::Cpu).unwrap().bytes_in_use);
        }
    }
    let end = (debug::live_handles(), memory_stats(Device::Cpu).unwrap().bytes_in_use);
    assert_eq!(end.0, at_warmup.0, "live handles after warm-up {} and after 10,000 steps {}", at_warmup.0, end.0);
    assert!(end.1 <= at_warmup.1, "bytes in use grew from {} to {}", at_warmup.1, end.1);
    assert!(last_loss < first_loss * 0.01, "the loss went from {first_loss} to {last_loss}");
}
