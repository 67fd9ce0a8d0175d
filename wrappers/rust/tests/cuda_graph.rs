//! CudaGraph's refusals where no capture can run (the CPU, no capture begun);
//! capture and replay themselves are tested on the emulated devices in C
//! (tests/gpu/test_gpu_graph.cpp) and Python.
use chainerc::{CudaGraph, Device, ErrorKind};

#[test]
fn capture_on_the_cpu_is_a_device_error_and_nothing_is_left_open() {
    let err = CudaGraph::begin_capture(Device::Cpu).err().expect("the CPU cannot be captured");
    assert_eq!(err.kind(), ErrorKind::Device);
    let err = CudaGraph::end_capture(Device::Cpu).err().expect("no capture was begun");
    assert!(matches!(err.kind(), ErrorKind::InvalidArgument | ErrorKind::Device));
    let err = CudaGraph::capture(Device::Cpu, || Ok(())).err().expect("the CPU cannot be captured");
    assert_eq!(err.kind(), ErrorKind::Device);
}

#[test]
fn engine_stream_of_a_missing_device_is_null() {
    if chainerc::device::device_count() == 0 {
        assert!(chainerc::device::engine_stream(0).is_null());
    }
    assert!(chainerc::device::engine_stream(-1).is_null());
}
