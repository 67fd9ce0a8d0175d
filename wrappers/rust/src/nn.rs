//! Neural-network built-ins (include/ch/functions.h sections activation,
//! connection, array, math, loss, evaluation, noise, normalization, pooling):
//! stateless functions return variables; parameterized ones ("links": Linear,
//! Convolution2D, EmbedID, PReLU, Parameter, Inception, BatchNormalization,
//! BinaryHierarchicalSoftmax) are `Function` objects applied with
//! `Function::apply1`, whose parameters (`Function::parameters`) are shared
//! by every application, optimizers update them in place.
use crate::array::{Array, Dtype};
use crate::config::Mode;
use crate::error::{check, Result};
use crate::function::Function;
use crate::functions::wrap_out;
use crate::variable::Variable;
use chainerc_sys as sys;
use std::ptr;

fn opt_ptr(a: Option<&Array>) -> *const sys::ch_array {
    a.map_or(ptr::null(), |a| a.as_ptr() as *const _)
}

fn wrap_fn(st: sys::ch_status, out: *mut sys::ch_function) -> Result<Function> {
    check(st)?;
    Ok(unsafe { Function::from_raw(out) })
}

// The plain functions (activation, array, math, loss, evaluation, noise,
// normalization), generated from src/ops/manifest.py (scripts/gen_functions.py).
include!("nn_gen.rs");

// ---- activation
/// LSTM unit: (c, h) from the previous cell state and the (N, 4 * units) input.
pub fn lstm(c_prev: &Variable, x: &Variable) -> Result<(Variable, Variable)> {
    let (mut c, mut h) = (ptr::null_mut(), ptr::null_mut());
    check(unsafe { sys::ch_functions_lstm(&mut c, &mut h, c_prev.as_ptr(), x.as_ptr()) })?;
    Ok(unsafe { (Variable::from_raw(c), Variable::from_raw(h)) })
}

// ---- array
/// Concatenate along `axis` (Chainer's default: 1).
pub fn concat(xs: &[&Variable], axis: i32) -> Result<Variable> {
    let ps: Vec<*mut sys::ch_variable> = xs.iter().map(|v| v.as_ptr()).collect();
    let mut out = ptr::null_mut();
    wrap_out(unsafe { sys::ch_functions_concat(&mut out, ps.as_ptr(), ps.len(), axis) }, out)
}
/// Join variables of one shape along a new axis `axis` (Chainer 7's stack).
pub fn stack(xs: &[&Variable], axis: i32) -> Result<Variable> {
    let ps: Vec<*mut sys::ch_variable> = xs.iter().map(|v| v.as_ptr()).collect();
    let mut out = ptr::null_mut();
    wrap_out(unsafe { sys::ch_functions_stack(&mut out, ps.as_ptr(), ps.len(), axis) }, out)
}

fn split_into(x: &Variable, indices: Option<&[i64]>, sections: i32, axis: i32) -> Result<Vec<Variable>> {
    let n = match indices {
        Some(i) => i.len() + 1,
        None => sections.max(0) as usize,
    };
    let mut ps: Vec<*mut sys::ch_variable> = vec![ptr::null_mut(); n];
    let (ip, ni) = indices.map_or((ptr::null(), 0), |i| (i.as_ptr(), i.len() as i32));
    check(unsafe { sys::ch_functions_split_axis(ps.as_mut_ptr(), n, x.as_ptr(), ip, ni, sections, axis) })?;
    Ok(ps.into_iter().map(|p| unsafe { Variable::from_raw(p) }).collect())
}

/// x cut along `axis` into `sections` equal pieces (Chainer 7's split_axis).
pub fn split_axis(x: &Variable, sections: i32, axis: i32) -> Result<Vec<Variable>> {
    split_into(x, None, sections, axis)
}

/// x cut along `axis` at the sorted positions `indices` (indices.len() + 1 pieces).
pub fn split_axis_at(x: &Variable, indices: &[i64], axis: i32) -> Result<Vec<Variable>> {
    split_into(x, Some(indices), 0, axis)
}

/// One item of a get_item / scatter_add key (NumPy's x[...]; include/ch/index.h).
#[derive(Clone, Copy)]
pub enum Index<'a> {
    /// x[i] (negative counts from the end); the axis goes away.
    At(i64),
    /// x[start:stop:step], None bounds as in Python.
    Slice(Option<i64>, Option<i64>, i64),
    /// None: a new axis of extent 1.
    NewAxis,
    /// `...`
    Ellipsis,
    /// An int32 index array along one axis.
    Array(&'a Array),
}

fn key_items(key: &[Index]) -> Vec<sys::ch_index> {
    key.iter()
        .map(|k| {
            let mut it = sys::ch_index {
                version: sys::CH_INDEX_VERSION as u32,
                kind: sys::CH_INDEX_SLICE,
                flags: 0,
                reserved: 0,
                start: 0,
                stop: 0,
                step: 1,
                array: ptr::null(),
            };
            match *k {
                Index::At(i) => {
                    it.kind = sys::CH_INDEX_INT;
                    it.start = i;
                }
                Index::Slice(a, b, s) => {
                    if let Some(a) = a {
                        it.flags |= sys::CH_INDEX_HAS_START;
                        it.start = a;
                    }
                    if let Some(b) = b {
                        it.flags |= sys::CH_INDEX_HAS_STOP;
                        it.stop = b;
                    }
                    it.step = s;
                }
                Index::NewAxis => it.kind = sys::CH_INDEX_NEWAXIS,
                Index::Ellipsis => it.kind = sys::CH_INDEX_ELLIPSIS,
                Index::Array(a) => {
                    it.kind = sys::CH_INDEX_ARRAY;
                    it.array = a.as_ptr() as *const _;
                }
            }
            it
        })
        .collect()
}

/// x[key] (Chainer 7's get_item).
pub fn get_item(x: &Variable, key: &[Index]) -> Result<Variable> {
    let items = key_items(key);
    let mut out = ptr::null_mut();
    wrap_out(unsafe { sys::ch_functions_get_item(&mut out, x.as_ptr(), items.as_ptr(), items.len() as i32) }, out)
}

/// A copy of a with b added at a[key] (Chainer 7's scatter_add; repeated positions add up).
pub fn scatter_add(a: &Variable, key: &[Index], b: &Variable) -> Result<Variable> {
    let items = key_items(key);
    let mut out = ptr::null_mut();
    wrap_out(
        unsafe { sys::ch_functions_scatter_add(&mut out, a.as_ptr(), items.as_ptr(), items.len() as i32, b.as_ptr()) },
        out,
    )
}

// ---- pooling
/// 2-d max pooling: kernel (kh, kw), stride (sy, sx), padding (ph, pw).
pub fn max_pooling_2d(x: &Variable, k: (i64, i64), s: (i64, i64), p: (i64, i64), cover_all: bool) -> Result<Variable> {
    let mut out = ptr::null_mut();
    wrap_out(
        unsafe {
            sys::ch_functions_max_pooling_2d(&mut out, x.as_ptr(), k.0, k.1, s.0, s.1, p.0, p.1, cover_all as i32)
        },
        out,
    )
}
/// 2-d average pooling.
pub fn average_pooling_2d(x: &Variable, k: (i64, i64), s: (i64, i64), p: (i64, i64)) -> Result<Variable> {
    let mut out = ptr::null_mut();
    wrap_out(unsafe { sys::ch_functions_average_pooling_2d(&mut out, x.as_ptr(), k.0, k.1, s.0, s.1, p.0, p.1) }, out)
}

// ---- parameterized functions (links)

/// Options of `linear` (Chainer's defaults: wscale 1, bias 0, with bias, random W).
#[derive(Debug, Clone, Copy)]
pub struct LinearOptions<'a> {
    /// Dtype of the parameters.
    pub dtype: Dtype,
    /// Scale of the random initial weights.
    pub wscale: f64,
    /// Initial value of the bias.
    pub bias: f64,
    /// No bias parameter.
    pub nobias: bool,
    /// Initial weights (copied) instead of random ones.
    pub initial_w: Option<&'a Array>,
    /// Initial bias (copied) instead of `bias`.
    pub initial_b: Option<&'a Array>,
}

impl Default for LinearOptions<'_> {
    fn default() -> Self {
        LinearOptions { dtype: Dtype::F32, wscale: 1.0, bias: 0.0, nobias: false, initial_w: None, initial_b: None }
    }
}

/// Linear (fully connected) layer: parameters "W" (out, in) and "b" (out).
pub fn linear(in_size: i64, out_size: i64, o: LinearOptions<'_>) -> Result<Function> {
    let mut out = ptr::null_mut();
    wrap_fn(
        unsafe {
            sys::ch_functions_linear_new(
                &mut out,
                in_size,
                out_size,
                o.dtype.raw(),
                o.wscale,
                o.bias,
                o.nobias as i32,
                opt_ptr(o.initial_w),
                opt_ptr(o.initial_b),
            )
        },
        out,
    )
}

/// Options of `convolution_2d` (stride 1, no padding, wscale 1, bias 0).
#[derive(Debug, Clone, Copy)]
pub struct ConvOptions<'a> {
    /// Stride (rows, columns).
    pub stride: (i64, i64),
    /// Zero padding (rows, columns).
    pub pad: (i64, i64),
    /// Dtype of the parameters.
    pub dtype: Dtype,
    /// Scale of the random initial weights.
    pub wscale: f64,
    /// Initial value of the bias.
    pub bias: f64,
    /// No bias parameter.
    pub nobias: bool,
    /// Initial weights (copied) instead of random ones.
    pub initial_w: Option<&'a Array>,
    /// Initial bias (copied) instead of `bias`.
    pub initial_b: Option<&'a Array>,
}

impl Default for ConvOptions<'_> {
    fn default() -> Self {
        ConvOptions {
            stride: (1, 1),
            pad: (0, 0),
            dtype: Dtype::F32,
            wscale: 1.0,
            bias: 0.0,
            nobias: false,
            initial_w: None,
            initial_b: None,
        }
    }
}

/// 2-d convolution: parameters "W" (out, in, kh, kw) and "b" (out).
pub fn convolution_2d(in_channels: i64, out_channels: i64, ksize: (i64, i64), o: ConvOptions<'_>) -> Result<Function> {
    let mut out = ptr::null_mut();
    wrap_fn(
        unsafe {
            sys::ch_functions_convolution_2d_new(
                &mut out,
                in_channels,
                out_channels,
                ksize.0,
                ksize.1,
                o.stride.0,
                o.stride.1,
                o.pad.0,
                o.pad.1,
                o.dtype.raw(),
                o.wscale,
                o.bias,
                o.nobias as i32,
                opt_ptr(o.initial_w),
                opt_ptr(o.initial_b),
            )
        },
        out,
    )
}

/// Embedding of int32 ids: parameter "W" (in_size, out_size).
pub fn embed_id(in_size: i64, out_size: i64, dtype: Dtype, initial_w: Option<&Array>) -> Result<Function> {
    let mut out = ptr::null_mut();
    wrap_fn(
        unsafe { sys::ch_functions_embed_id_new(&mut out, in_size, out_size, dtype.raw(), opt_ptr(initial_w)) },
        out,
    )
}

/// Parametric ReLU with slopes "W" of `shape` initialised to `init` (Chainer: 0.25).
pub fn prelu(shape: &[i64], dtype: Dtype, init: f64) -> Result<Function> {
    let mut out = ptr::null_mut();
    wrap_fn(
        unsafe { sys::ch_functions_prelu_new(&mut out, shape.as_ptr(), shape.len() as i32, dtype.raw(), init) },
        out,
    )
}

/// A function with no input returning its parameter "W" (a copy of `initial`).
pub fn parameter(initial: &Array) -> Result<Function> {
    let mut out = ptr::null_mut();
    wrap_fn(unsafe { sys::ch_functions_parameter_new(&mut out, initial.as_ptr()) }, out)
}

/// GoogLeNet's Inception module (twelve parameters "conv1/W" ... "projp/b").
#[allow(clippy::too_many_arguments)]
pub fn inception(
    in_channels: i64,
    out1: i64,
    proj3: i64,
    out3: i64,
    proj5: i64,
    out5: i64,
    proj_pool: i64,
    dtype: Dtype,
) -> Result<Function> {
    let mut out = ptr::null_mut();
    wrap_fn(
        unsafe {
            sys::ch_functions_inception_new(
                &mut out,
                in_channels,
                out1,
                proj3,
                out3,
                proj5,
                out5,
                proj_pool,
                dtype.raw(),
            )
        },
        out,
    )
}

/// Batch normalization over `size` (Chainer's defaults: decay 0.9, eps 1e-5).
pub fn batch_normalization(size: &[i64], decay: f64, eps: f64, dtype: Dtype) -> Result<Function> {
    let mut out = ptr::null_mut();
    wrap_fn(
        unsafe {
            sys::ch_functions_batch_normalization_new(
                &mut out,
                size.as_ptr(),
                size.len() as i32,
                decay,
                eps,
                dtype.raw(),
            )
        },
        out,
    )
}

/// Apply a batch normalization in train or test mode (finetune: accumulate
/// the population statistics).
pub fn batch_normalization_apply(bn: &Function, x: &Variable, mode: Mode, finetune: bool) -> Result<Variable> {
    let mut out = ptr::null_mut();
    wrap_out(
        unsafe {
            sys::ch_functions_batch_normalization_apply(&mut out, bn.as_ptr(), x.as_ptr(), mode.raw(), finetune as i32)
        },
        out,
    )
}

/// The running (avg_mean, avg_var) of a batch normalization.
pub fn batch_normalization_state(bn: &Function) -> Result<(Array, Array)> {
    let (mut m, mut v) = (ptr::null_mut(), ptr::null_mut());
    check(unsafe { sys::ch_functions_batch_normalization_state(&mut m, &mut v, bn.as_ptr()) })?;
    Ok(unsafe { (Array::from_raw(m), Array::from_raw(v)) })
}

/// Reset the statistics before fine-tuning.
pub fn batch_normalization_start_finetuning(bn: &Function) -> Result<()> {
    check(unsafe { sys::ch_functions_batch_normalization_start_finetuning(bn.as_ptr()) })
}

/// Hierarchical softmax over a binary tree (`tree` as produced by
/// `create_huffman_tree`).
pub fn binary_hierarchical_softmax(
    in_size: i64,
    tree: &[i32],
    n_internal: i64,
    dtype: Dtype,
    initial_w: Option<&Array>,
) -> Result<Function> {
    let mut out = ptr::null_mut();
    wrap_fn(
        unsafe {
            sys::ch_functions_binary_hierarchical_softmax_new(
                &mut out,
                in_size,
                tree.as_ptr(),
                n_internal,
                dtype.raw(),
                opt_ptr(initial_w),
            )
        },
        out,
    )
}

/// Chainer's create_huffman_tree for words 0..counts.len(); returns the
/// pre-order tree and its number of internal nodes.
pub fn create_huffman_tree(counts: &[f64]) -> Result<(Vec<i32>, i64)> {
    let n = counts.len() as i64;
    let cap = (2 * (n.max(1) - 1)).max(0);
    let mut tree = vec![0i32; cap as usize];
    check(unsafe {
        sys::ch_functions_binary_hierarchical_softmax_create_huffman_tree(tree.as_mut_ptr(), cap, counts.as_ptr(), n)
    })?;
    Ok((tree, n - 1))
}
