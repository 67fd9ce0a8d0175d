//! One epoch of the seed's MNIST MLP (784-100-100-10, ReLU, softmax cross
//! entropy, Adam, mini-batches of 100 shuffled) on Fashion-MNIST through the
//! library's IDX reader, then the test accuracy.
//!
//! Run: cargo run --release --example mnist [-- DATA_DIR [EPOCHS]]
//! (default DATA_DIR /usr/share/datasets/fashion-mnist, Debian's dataset-fashion-mnist).
use chainerc::*;
use std::time::Instant;

struct Mlp {
    l1: Function,
    l2: Function,
    l3: Function,
    set: FunctionSet,
}

impl Mlp {
    fn new(hidden: i64) -> Result<Mlp> {
        let (l1, l2, l3) = (
            nn::linear(784, hidden, Default::default())?,
            nn::linear(hidden, hidden, Default::default())?,
            nn::linear(hidden, 10, Default::default())?,
        );
        let set = FunctionSet::new()?.with("l1", &l1)?.with("l2", &l2)?.with("l3", &l3)?;
        Ok(Mlp { l1, l2, l3, set })
    }
    fn forward(&self, x: &Variable) -> Result<Variable> {
        let h1 = nn::relu(&self.l1.apply1(&[x])?)?;
        let h2 = nn::relu(&self.l2.apply1(&[&h1])?)?;
        self.l3.apply1(&[&h2])
    }
}

/// Rows `idx` of a (N, D) float32 array and of an int32 label vector.
fn batch(x: &[f32], t: &[i32], d: usize, idx: &[usize]) -> Result<(Variable, Variable)> {
    let mut xs = Vec::with_capacity(idx.len() * d);
    let mut ts = Vec::with_capacity(idx.len());
    for &i in idx {
        xs.extend_from_slice(&x[i * d..(i + 1) * d]);
        ts.push(t[i]);
    }
    Ok((
        Variable::new(&Array::from_vec(xs, &[idx.len() as i64, d as i64])?)?,
        Variable::new(&Array::from_vec(ts, &[idx.len() as i64])?)?,
    ))
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).cloned().unwrap_or_else(|| "/usr/share/datasets/fashion-mnist".into());
    let epochs: usize = args.get(2).map(|s| s.parse().expect("EPOCHS")).unwrap_or(1);
    let load = |name: &str, dtype: Dtype, scale: f64| read_idx(&format!("{dir}/{name}"), dtype, scale);
    let x_train = load("train-images-idx3-ubyte.gz", Dtype::F32, 1.0 / 255.0)?;
    let t_train = load("train-labels-idx1-ubyte.gz", Dtype::I32, 1.0)?;
    let x_test = load("t10k-images-idx3-ubyte.gz", Dtype::F32, 1.0 / 255.0)?;
    let t_test = load("t10k-labels-idx1-ubyte.gz", Dtype::I32, 1.0)?;
    let (n_train, n_test, d) = (t_train.size(), t_test.size(), 784usize);
    println!("train {:?}, test {:?} from {dir}", x_train.shape(), x_test.shape());
    let (xtr, ttr) = (x_train.as_slice::<f32>()?, t_train.as_slice::<i32>()?);
    let (xte, tte) = (x_test.as_slice::<f32>()?, t_test.as_slice::<i32>()?);

    config::seed(1);
    let model = Mlp::new(100)?;
    let opt = Optimizer::adam_default()?;
    opt.setup(&model.set)?;
    let mut order: Vec<usize> = (0..n_train).collect();
    let mut rng = 0x2545F4914F6CDD1Du64;
    for epoch in 1..=epochs {
        for i in (1..order.len()).rev() {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            order.swap(i, (rng % (i as u64 + 1)) as usize);
        }
        let t0 = Instant::now();
        let (mut sum_loss, mut sum_acc, mut batches) = (0.0, 0.0, 0);
        for idx in order.chunks(100) {
            let (x, t) = batch(xtr, ttr, d, idx)?;
            let y = model.forward(&x)?;
            let loss = nn::softmax_cross_entropy(&y, &t)?;
            let acc = nn::accuracy(&y, &t)?;
            opt.zero_grads()?;
            loss.backward()?;
            opt.update()?;
            sum_loss += loss.data()?.get(0)?;
            sum_acc += acc.data()?.get(0)?;
            batches += 1;
        }
        let secs = t0.elapsed().as_secs_f64();
        // test: volatile variables, no graph
        let (mut correct, mut test_loss) = (0.0, 0.0);
        let all: Vec<usize> = (0..n_test).collect();
        for idx in all.chunks(1000) {
            let (x, t) = batch(xte, tte, d, idx)?;
            let (xv, tv) = (Variable::new_volatile(&x.data()?)?, Variable::new_volatile(&t.data()?)?);
            let y = model.forward(&xv)?;
            correct += nn::accuracy(&y, &tv)?.data()?.get(0)? * idx.len() as f64;
            test_loss += nn::softmax_cross_entropy(&y, &tv)?.data()?.get(0)? * idx.len() as f64;
        }
        println!(
            "epoch {epoch}: train loss {:.4} accuracy {:.4} ({:.0} samples/s); test loss {:.4} accuracy {:.4}",
            sum_loss / batches as f64,
            sum_acc / batches as f64,
            n_train as f64 / secs,
            test_loss / n_test as f64,
            correct / n_test as f64
        );
    }
    Ok(())
}
