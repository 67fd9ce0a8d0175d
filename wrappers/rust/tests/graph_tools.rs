// Graph DOT export and Function::forward on plain arrays (the seed's section
// 1.4.4 idiom: numerical_grad of `y.creator().forward(&[x.data])`), checked
// against backward of the same graph.
mod common;
use chainerc::nn as F;
use chainerc::*;
use common::*;

#[test]
fn seed_idiom_on_relu_and_softmax_cross_entropy() {
    no_leak(|| {
        let x = Variable::new(&arr64(&values(6, 3, -1.0, 1.0), &[3, 2])).unwrap();
        let y = F::relu(&x).unwrap();
        let gy = arr64(&values(6, 4, -1.0, 1.0), &[3, 2]);
        y.set_grad(Some(&gy)).unwrap();
        y.backward().unwrap();
        let func = y.creator().unwrap().unwrap();
        let xd = x.data().unwrap();
        let gx = numerical_grad(|| func.forward(&[&xd]), &[&xd], &[&gy], 1e-3).unwrap();
        let want = x.grad().unwrap().unwrap().to_vec::<f64>().unwrap();
        assert!(close(&gx[0].to_vec::<f64>().unwrap(), &want, 1e-6));

        let t = Variable::new(&Array::from_slice(&[1i32, 0, 1], &[3]).unwrap()).unwrap();
        let loss = F::softmax_cross_entropy(&x, &t).unwrap();
        let fl = loss.creator().unwrap().unwrap();
        let td = t.data().unwrap();
        let out = fl.forward(&[&xd, &td]).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].to_vec::<f64>().unwrap(), loss.data().unwrap().to_vec::<f64>().unwrap());
        let e = fl.forward(&[&xd]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("takes 2 inputs, got 1"), "{e}");
    });
}

#[test]
fn mlp_graph_dot() {
    no_leak(|| {
        let l1 = F::linear(3, 4, F::LinearOptions::default()).unwrap();
        let l2 = F::linear(4, 2, F::LinearOptions::default()).unwrap();
        let x = Variable::new(&arr32(&[0.5; 15], &[5, 3])).unwrap();
        let t = Variable::new(&Array::from_slice(&[0i32, 1, 1, 0, 1], &[5]).unwrap()).unwrap();
        let h = F::relu(&l1.apply1(&[&x]).unwrap()).unwrap();
        let loss = F::softmax_cross_entropy(&l2.apply1(&[&h]).unwrap(), &t).unwrap();
        let dot = loss.graph_dot().unwrap();
        assert!(dot.starts_with("digraph graphname {"), "{dot}");
        assert_eq!(dot.matches("shape=\"box\"").count(), 4, "{dot}");
        assert_eq!(dot.matches("shape=\"oval\"").count(), 10, "{dot}");
        assert_eq!(dot.matches("->").count(), 13, "{dot}");
        assert!(dot.contains("[label=\"W\\n(4, 3), float32\""), "{dot}");
        let o = GraphDotOptions { output_names: vec!["loss".into()], show_parameters: false, rankdir: "LR".into() };
        let bare = graph_dot(&[&loss], &o).unwrap();
        assert!(bare.contains("[label=\"loss\\n(), float32\""), "{bare}");
        assert_eq!(bare.matches("->").count(), 9, "{bare}");
        let bad = GraphDotOptions { rankdir: "up".into(), ..GraphDotOptions::default() };
        assert_eq!(graph_dot(&[&loss], &bad).unwrap_err().kind(), ErrorKind::InvalidArgument);
    });
}
