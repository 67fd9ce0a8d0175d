// A training loop written for the CPU runs on cuda:0 by moving its model
// (FunctionSet::to_gpu) and each batch (Array::to_device), and ends with the
// CPU's parameters. Skips without a CUDA device (runs on the emulated devices:
// scripts/test.sh).
use chainerc::{device, nn, Array, Device, FunctionSet, Optimizer, Variable};

fn train_on(dev: Device) -> Vec<Vec<f32>> {
    let w = Array::from_slice(&[-0.5f32, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6], &[3, 4]).unwrap();
    let b = Array::from_slice(&[0.1f32, -0.2, 0.3], &[3]).unwrap();
    let l1 =
        nn::linear(4, 3, nn::LinearOptions { initial_w: Some(&w), initial_b: Some(&b), ..Default::default() }).unwrap();
    let model = FunctionSet::new().unwrap();
    model.add("l1", &l1).unwrap();
    if dev != Device::Cpu {
        model.to_gpu(dev).unwrap();
    }
    let opt = Optimizer::momentum_sgd(0.1, 0.9).unwrap();
    opt.setup(&model).unwrap();
    for step in 0..5usize {
        let xs: Vec<f32> = (0..32).map(|i| ((i * 7 + step) % 11) as f32 / 11.0).collect();
        let ts: Vec<i32> = (0..8).map(|i| ((i + step) % 3) as i32).collect();
        let x = Variable::new(&Array::from_slice(&xs, &[8, 4]).unwrap().to_device(dev).unwrap()).unwrap();
        let t = Variable::new(&Array::from_slice(&ts, &[8]).unwrap().to_device(dev).unwrap()).unwrap();
        let h = l1.apply1(&[&x]).unwrap().relu().unwrap();
        let loss = nn::softmax_cross_entropy(&h, &t).unwrap();
        opt.zero_grads().unwrap();
        loss.backward().unwrap();
        opt.update().unwrap();
    }
    model.parameters().unwrap().iter().map(|p| p.param.to_vec::<f32>().unwrap()).collect()
}

#[test]
fn training_loop_on_cuda0_matches_the_cpu() {
    if device::device_count() == 0 {
        eprintln!("skipped: no CUDA device");
        return;
    }
    let on_cpu = train_on(Device::Cpu);
    let on_gpu = train_on(Device::Cuda(0));
    assert_eq!(on_cpu.len(), on_gpu.len());
    for (c, g) in on_cpu.iter().zip(&on_gpu) {
        for (a, b) in c.iter().zip(g) {
            assert!((a - b).abs() <= 1e-5, "cpu {a} vs cuda:0 {b}");
        }
    }
    assert_ne!(on_cpu[1], vec![0.1f32, -0.2, 0.3], "the loop did not train");
}
