// A custom function whose GPU half runs user kernels on the device (the
// seed's MulAdd of section 1.4.2), checked with check_backward on cuda:0, and
// what the callback context gives a GPU callback (device, stream, device
// pointers, the current device). Skips without a CUDA device with user
// kernels (runs on the emulated devices: scripts/test.sh).
use chainerc::{
    check_backward, device, kernel, Array, Context, Device, ElementwiseKernel, Function, FunctionImpl, Result,
    Tolerance,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

struct MulAdd {
    fwd: ElementwiseKernel,
    bwd: ElementwiseKernel,
    gpu_calls: Arc<AtomicUsize>,
}

fn check_context(ctx: &Context<'_>, inputs: &[Array]) {
    assert_eq!(ctx.device(), Device::Cuda(0));
    assert!(!ctx.stream().is_null(), "the device's engine stream");
    assert_eq!(device::current_device().unwrap(), 0);
    for a in inputs {
        assert_eq!(a.device(), Device::Cuda(0));
        assert!(!a.data_ptr().is_null());
    }
}

impl FunctionImpl for MulAdd {
    fn forward(&self, _: &mut Context<'_>, _: &[Array]) -> Result<Vec<Array>> {
        panic!("the generic forward ran although forward_gpu exists")
    }
    fn backward(&self, _: &mut Context<'_>, _: &[Array], _: &[Array], _: &[Array]) -> Result<Vec<Option<Array>>> {
        panic!("the generic backward ran although backward_gpu exists")
    }
    fn forward_gpu(&self, ctx: &mut Context<'_>, inputs: &[Array]) -> Result<Vec<Array>> {
        check_context(ctx, inputs);
        self.gpu_calls.fetch_add(1, Ordering::SeqCst);
        self.fwd.call(&[&inputs[0], &inputs[1], &inputs[2]], None)
    }
    fn backward_gpu(
        &self,
        ctx: &mut Context<'_>,
        inputs: &[Array],
        _outputs: &[Array],
        grad_outputs: &[Array],
    ) -> Result<Vec<Option<Array>>> {
        check_context(ctx, inputs);
        self.gpu_calls.fetch_add(1, Ordering::SeqCst);
        let mut g = self.bwd.call(&[&inputs[0], &inputs[1], &grad_outputs[0]], None)?.into_iter();
        Ok(vec![g.next(), g.next(), Some(grad_outputs[0].clone())])
    }
}

#[test]
fn muladd_gpu_callbacks_with_user_kernels_pass_check_backward() {
    if device::device_count() == 0 || !kernel::cuda_supported() {
        assert!(
            std::env::var("CH_REQUIRE_GPU").as_deref() != Ok("1"),
            "CH_REQUIRE_GPU=1 but no CUDA device: {}",
            device::unavailable_reason()
        );
        return;
    }
    let calls = Arc::new(AtomicUsize::new(0));
    let imp = MulAdd {
        fwd: ElementwiseKernel::new("float64 x, float64 y, float64 z", "float64 w", "w = x * y + z", "muladd_fwd")
            .unwrap(),
        bwd: ElementwiseKernel::new(
            "float64 x, float64 y, float64 gw",
            "float64 gx, float64 gy",
            "gx = y * gw; gy = x * gw",
            "muladd_bwd",
        )
        .unwrap(),
        gpu_calls: calls.clone(),
    };
    let f = Function::new("MulAdd", imp).unwrap();
    let xs: Vec<Array> = (0..3)
        .map(|k| {
            let host: Vec<f64> = (0..35).map(|i| ((i * 7 + k * 13) % 11) as f64 / 5.0 - 1.0).collect();
            Array::from_slice(&host, &[5, 7]).unwrap().to_device(Device::Cuda(0)).unwrap()
        })
        .collect();
    let refs: Vec<&Array> = xs.iter().collect();
    check_backward(&f, &refs, None, Tolerance { eps: 1e-6, atol: 1e-8, rtol: 1e-6 }).unwrap();
    assert!(calls.load(Ordering::SeqCst) >= 2, "the GPU callbacks never ran");
}
