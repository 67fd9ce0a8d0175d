// Device copies and user kernels through the safe crate. Without a GPU (CI)
// every CUDA request is ErrorKind::Device; references are computed here.
use chainerc::{device, kernel, Array, Device, Dtype, ElementwiseKernel, ErrorKind, ReductionKernel, Stream};

#[test]
fn copies_fills_and_missing_devices() {
    let a = Array::from_slice(&[1.0f64, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let b = a.to_device(Device::Cpu).unwrap();
    b.fill(0.0).unwrap();
    assert_eq!(a.to_vec::<f64>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    b.copy_from(&a).unwrap();
    assert_eq!(b.to_vec::<f64>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    let u = Array::empty(Dtype::F32, &[1000]).unwrap();
    u.fill_uniform(-2.0, 3.0).unwrap();
    assert!(u.to_vec::<f32>().unwrap().iter().all(|&x| (-2.0..3.0).contains(&x)));
    u.fill_normal(0.0, 1.0).unwrap();
    assert!(!u.is_pinned());
    if device::device_count() == 0 {
        assert!(
            std::env::var("CH_REQUIRE_GPU").as_deref() != Ok("1"),
            "CH_REQUIRE_GPU=1 but no CUDA device: {}",
            device::unavailable_reason()
        );
        assert!(!device::unavailable_reason().is_empty());
        assert_eq!(device::cuda(0), Device::Cuda(0));
        let err = a.to_device(Device::Cuda(0)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Device, "{err}");
        assert!(err.to_string().contains("cuda:0"), "{err}");
        assert_eq!(Stream::new(Device::Cuda(0)).err().unwrap().kind(), ErrorKind::Device);
        assert_eq!(device::DeviceScope::new(0).err().unwrap().kind(), ErrorKind::Device);
        assert!(device::memory_limit(Device::Cuda(0)).is_err());
        return;
    }
    let g = a.to_device(Device::Cuda(0)).unwrap();
    assert_eq!(g.to_device(Device::Cpu).unwrap().to_vec::<f64>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    let s = Stream::new(Device::Cuda(0)).unwrap();
    let p = Array::new_pinned(Dtype::F64, &[2, 2]).unwrap();
    p.copy_from(&a).unwrap();
    let h = p.to_device_async(Device::Cuda(0), &s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(h.to_device(Device::Cpu).unwrap().to_vec::<f64>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    assert_eq!(s.device(), Device::Cuda(0));
    assert!(!s.native().is_null());
}

#[test]
fn user_kernels_on_the_cpu() {
    if !kernel::cpu_supported() {
        eprintln!("skipped: user kernels do not run on the CPU in this build");
        return;
    }
    let xs = [0.5f64, -1.0, 2.0, 3.0, -0.25, 1.5];
    let ys = [1.0f64, 2.0, -3.0, 0.5, 4.0, -2.0];
    let zs = [0.1f64, 0.2, 0.3, 0.4, 0.5, 0.6];
    let (x, y, z) = (
        Array::from_slice(&xs, &[2, 3]).unwrap(),
        Array::from_slice(&ys, &[2, 3]).unwrap(),
        Array::from_slice(&zs, &[2, 3]).unwrap(),
    );
    let k = ElementwiseKernel::new("T x, T y, T z", "T w", "w = x * y + z", "muladd").unwrap();
    assert_eq!((k.inputs(), k.outputs()), (3, 1));
    let w = k.call(&[&x, &y, &z], None).unwrap();
    let want: Vec<f64> = (0..6).map(|i| xs[i] * ys[i] + zs[i]).collect();
    assert_eq!(w[0].to_vec::<f64>().unwrap(), want);
    let given = Array::empty(Dtype::F64, &[2, 3]).unwrap();
    k.clone().call(&[&x, &y, &z], Some(&[&given])).unwrap();
    assert_eq!(given.to_vec::<f64>().unwrap(), want);

    let ss = ReductionKernel::new("T x", "T y", "x * x", "a + b", "y = a", Some("0"), "sum_sq", None).unwrap();
    let rows = ss.call(&[&x], None, Some(&[1]), false).unwrap();
    let r0: f64 = xs[..3].iter().map(|v| v * v).sum();
    let r1: f64 = xs[3..].iter().map(|v| v * v).sum();
    let got = rows[0].to_vec::<f64>().unwrap();
    assert!((got[0] - r0).abs() < 1e-14 && (got[1] - r1).abs() < 1e-14, "{got:?}");
    let all = ss.call(&[&x], None, None, false).unwrap();
    assert!((all[0].to_vec::<f64>().unwrap()[0] - (r0 + r1)).abs() < 1e-14);

    let bad = ElementwiseKernel::new("T x", "T y", "y = x +* 1", "broken").unwrap();
    assert_eq!(bad.call(&[&x], None).err().unwrap().kind(), ErrorKind::InvalidArgument);
    assert_eq!(k.call(&[&x, &y, &z], None).unwrap().len(), 1); // still working
}
