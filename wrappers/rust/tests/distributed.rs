//! chainerc::distributed (feature `distributed`): this test binary runs itself
//! on 2 ranks under mpirun (the ignored test `worker`), skipped when mpirun is
//! missing.
#![cfg(feature = "distributed")]
use chainerc::distributed::{self as dist, Communicator, ReduceOp};
use chainerc::nn::{linear, softmax_cross_entropy, LinearOptions};
use chainerc::{Array, Dtype, ErrorKind, FunctionSet, Optimizer, Variable};
use std::process::Command;

fn model(hidden: i64, seed: u64) -> FunctionSet {
    chainerc::config::seed(seed);
    let o = LinearOptions { dtype: Dtype::F64, ..Default::default() };
    let set = FunctionSet::new().unwrap();
    set.add("l1", &linear(3, hidden, o).unwrap()).unwrap();
    set.add("l2", &linear(hidden, 2, o).unwrap()).unwrap();
    set
}

#[test]
#[ignore = "run by `two_ranks` under mpirun"]
fn worker() {
    let comm = Communicator::new_mpi().unwrap();
    let (rank, size) = (comm.rank(), comm.size());
    assert_eq!(size, 2);
    // allreduce_array: sum and mean
    let a = Array::from_slice(&[rank as f64, 1.0], &[2]).unwrap();
    comm.allreduce_array(&a, ReduceOp::Sum).unwrap();
    assert_eq!(a.to_vec::<f64>().unwrap(), vec![1.0, 2.0]);
    comm.allreduce_array(&a, ReduceOp::Mean).unwrap();
    assert_eq!(a.to_vec::<f64>().unwrap(), vec![1.0, 2.0]);
    // scatter: equal shares
    let mine = comm.scatter_indices(9, true, 3).unwrap();
    assert_eq!(mine.len(), 5);
    // a multi-node SGD step: the ranks stay equal
    let m = model(4, 1 + rank as u64);
    let opt = dist::create_multi_node_optimizer(&Optimizer::sgd(0.1).unwrap(), &comm).unwrap();
    opt.setup(&m).unwrap();
    comm.bcast_data(&m).unwrap();
    opt.zero_grads().unwrap();
    let x = Variable::from_slice(&[0.5 + rank as f64, -1.0, 2.0], &[1, 3]).unwrap();
    let t = Variable::from_slice(&[rank], &[1]).unwrap();
    let l1 = m.get("l1").unwrap();
    let l2 = m.get("l2").unwrap();
    let y = l2.apply1(&[&l1.apply1(&[&x]).unwrap().tanh().unwrap()]).unwrap();
    softmax_cross_entropy(&y, &t).unwrap().backward().unwrap();
    opt.update().unwrap();
    for p in m.parameters().unwrap() {
        let mean = Array::from_slice(&p.param.to_vec::<f64>().unwrap(), p.param.shape()).unwrap();
        comm.allreduce_array(&mean, ReduceOp::Mean).unwrap();
        assert_eq!(mean.to_vec::<f64>().unwrap(), p.param.to_vec::<f64>().unwrap(), "{}", p.path);
    }
    // mismatched models: InvalidArgument on every rank
    let bad = model(4 + rank as i64, 1);
    let e = comm.allreduce_grads(&bad).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("on rank 0 but"), "{}", e.message());
    comm.barrier().unwrap();
    println!("rank {rank}: ok");
}

#[test]
fn two_ranks() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        eprintln!("mpirun not found: skipped");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .arg(&exe)
        .args(["--ignored", "--exact", "worker", "--nocapture", "--test-threads", "1"])
        .env("OMPI_MCA_mpi_yield_when_idle", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("rank 0: ok") && text.contains("rank 1: ok"), "{text}");
}

/// Every CH_API function of distributed.h is declared and called in
/// src/distributed.rs (chainerc-sys skips that header: it is libchainerc_mpi's).
#[test]
fn every_distributed_function_is_wrapped() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let h = std::fs::read_to_string(root.join("../../include/ch/distributed.h")).unwrap();
    let src = std::fs::read_to_string(root.join("src/distributed.rs")).unwrap();
    let mut n = 0;
    for part in h.split("CH_API ").skip(1) {
        let decl = &part[..part.find('(').unwrap()];
        let name = decl.split_whitespace().last().unwrap().trim_start_matches('*');
        n += 1;
        assert!(src.matches(&format!("{name}(")).count() >= 2, "{name} is not wrapped");
    }
    assert!(n >= 10, "parsed {n} functions");
}
