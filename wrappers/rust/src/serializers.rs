//! .npz checkpoints of arrays (include/ch/serializers.h; sets and optimizers
//! have save_npz/load_npz methods) and IDX data sets (include/ch/datasets.h).
use crate::array::{Array, Dtype};
use crate::error::{check, Result};
use crate::function_set::cstring;
use chainerc_sys as sys;
use std::ptr;

/// Write arrays to an .npz with the given keys.
pub fn save_npz_arrays(path: &str, entries: &[(&str, &Array)], compressed: bool) -> Result<()> {
    let p = cstring(path, "path")?;
    let keys: Vec<std::ffi::CString> = entries.iter().map(|(k, _)| cstring(k, "key")).collect::<Result<_>>()?;
    let kp: Vec<*const std::os::raw::c_char> = keys.iter().map(|k| k.as_ptr()).collect();
    let ap: Vec<*mut sys::ch_array> = entries.iter().map(|(_, a)| a.as_ptr()).collect();
    let flags = if compressed { sys::CH_NPZ_COMPRESSED } else { sys::CH_NPZ_STORED };
    check(unsafe { sys::ch_serializers_save_npz_arrays(p.as_ptr(), kp.as_ptr(), ap.as_ptr(), ap.len(), flags) })
}

/// Read the entry `key` of an .npz.
pub fn load_npz_array(path: &str, key: &str) -> Result<Array> {
    let p = cstring(path, "path")?;
    let k = cstring(key, "key")?;
    let mut out = ptr::null_mut();
    check(unsafe { sys::ch_serializers_load_npz_array(&mut out, p.as_ptr(), k.as_ptr()) })?;
    Ok(unsafe { Array::from_raw(out) })
}

/// Read an IDX file (MNIST format, plain or .gz): floating dtypes are
/// multiplied by `scale` (e.g. 1/255); Int32 for labels (scale 1).
pub fn read_idx(path: &str, dtype: Dtype, scale: f64) -> Result<Array> {
    let p = cstring(path, "path")?;
    let mut out = ptr::null_mut();
    check(unsafe { sys::ch_datasets_read_idx(&mut out, p.as_ptr(), dtype.raw(), scale) })?;
    Ok(unsafe { Array::from_raw(out) })
}
