//! The C API's declarations (`loom/c_api.h`, `dlpack/dlpack.h`), as the
//! header lays them out.  Version 1 of both tables; a newer library's
//! tables begin with the same entries.
#![allow(non_camel_case_types, dead_code)]

use std::os::raw::{c_char, c_int, c_void};

pub type LoomStatus = i32;
pub const LOOM_OK: LoomStatus = 0;

pub const LOOM_NONE: i32 = 0;
pub const LOOM_BOOL: i32 = 1;
pub const LOOM_INT: i32 = 2;
pub const LOOM_FLOAT: i32 = 3;
pub const LOOM_STR: i32 = 4;
pub const LOOM_OBJECT: i32 = 5;
pub const LOOM_DLTENSOR: i32 = 6;
pub const LOOM_DLMANAGED: i32 = 7;

pub const KDL_CPU: i32 = 1;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDevice {
    pub device_type: i32,
    pub device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

#[repr(C)]
pub struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *mut i64,
    pub strides: *mut i64,
    pub byte_offset: u64,
}

#[repr(C)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// An opaque counted reference to a Loom object.
#[repr(C)]
pub struct LoomObject {
    _private: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union LoomValueData {
    pub v_int: i64,
    pub v_float: f64,
    pub v_str: *const c_char,
    pub v_object: *mut LoomObject,
    pub v_dltensor: *mut DLTensor,
    pub v_managed: *mut DLManagedTensor,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct LoomValue {
    pub kind: i32,
    pub v: LoomValueData,
}

impl LoomValue {
    pub fn none() -> LoomValue {
        LoomValue { kind: LOOM_NONE, v: LoomValueData { v_int: 0 } }
    }
}

pub type LoomCFunction = unsafe extern "C" fn(
    resource: *mut c_void,
    args: *const LoomValue,
    num_args: i32,
    result: *mut LoomValue,
) -> LoomStatus;
pub type Finalizer = unsafe extern "C" fn(resource: *mut c_void);

#[repr(C)]
pub struct LoomLoadOptions {
    pub struct_size: usize,
    pub inspect_only: i32,
}

#[repr(C)]
pub struct LoomApi {
    pub struct_size: usize,
    pub version: u32,
    pub last_error: unsafe extern "C" fn() -> *const c_char,
    pub set_last_error: unsafe extern "C" fn(message: *const c_char),
    pub object_retain: unsafe extern "C" fn(object: *mut LoomObject) -> LoomStatus,
    pub object_release: unsafe extern "C" fn(object: *mut LoomObject) -> LoomStatus,
    pub object_type_key: unsafe extern "C" fn(object: *mut LoomObject, out: *mut *const c_char) -> LoomStatus,
    pub object_use_count: unsafe extern "C" fn(object: *mut LoomObject, out: *mut i32) -> LoomStatus,
    pub object_get_field:
        unsafe extern "C" fn(object: *mut LoomObject, name: *const c_char, out: *mut LoomValue) -> LoomStatus,
    pub value_release: unsafe extern "C" fn(value: *mut LoomValue) -> LoomStatus,
    pub module_load: unsafe extern "C" fn(
        path: *const c_char,
        options: *const LoomLoadOptions,
        out: *mut *mut LoomObject,
    ) -> LoomStatus,
    pub module_get_function:
        unsafe extern "C" fn(module: *mut LoomObject, name: *const c_char, out: *mut *mut LoomObject) -> LoomStatus,
    pub module_function_names: unsafe extern "C" fn(module: *mut LoomObject, out: *mut LoomValue) -> LoomStatus,
    pub function_call: unsafe extern "C" fn(
        function: *mut LoomObject,
        args: *const LoomValue,
        num_args: i32,
        result: *mut LoomValue,
    ) -> LoomStatus,
    pub function_from_c: unsafe extern "C" fn(
        fn_: LoomCFunction,
        resource: *mut c_void,
        finalizer: Option<Finalizer>,
        out: *mut *mut LoomObject,
    ) -> LoomStatus,
    pub global_function_get: unsafe extern "C" fn(name: *const c_char, out: *mut *mut LoomObject) -> LoomStatus,
    pub global_function_register:
        unsafe extern "C" fn(name: *const c_char, function: *mut LoomObject, allow_override: i32) -> LoomStatus,
    pub tensor_empty: unsafe extern "C" fn(
        shape: *const i64,
        ndim: i32,
        dtype: DLDataType,
        device: DLDevice,
        out: *mut *mut LoomObject,
    ) -> LoomStatus,
    pub tensor_from_dlpack:
        unsafe extern "C" fn(managed: *mut DLManagedTensor, out: *mut *mut LoomObject) -> LoomStatus,
    pub tensor_to_dlpack: unsafe extern "C" fn(tensor: *mut LoomObject, out: *mut *mut DLManagedTensor) -> LoomStatus,
    pub tensor_get_dltensor: unsafe extern "C" fn(tensor: *mut LoomObject, out: *mut *const DLTensor) -> LoomStatus,
    pub tensor_copy: unsafe extern "C" fn(src: *mut LoomObject, dst: *mut LoomObject) -> LoomStatus,
    pub device_list: unsafe extern "C" fn(out: *mut DLDevice, capacity: i32, count: *mut i32) -> LoomStatus,
    pub device_synchronize: unsafe extern "C" fn(device: DLDevice) -> LoomStatus,
    pub device_register: *const c_void, // for plugins in C; not bound here
}

pub type LoomPassFunction =
    unsafe extern "C" fn(resource: *mut c_void, module: *mut LoomObject, out: *mut *mut LoomObject) -> LoomStatus;

#[repr(C)]
pub struct LoomPassInfo {
    pub struct_size: usize,
    pub name: *const c_char,
    pub opt_level: i32,
    pub summary: *const c_char,
}

#[repr(C)]
pub struct LoomCompilerApi {
    pub struct_size: usize,
    pub version: u32,
    pub ir_parse:
        unsafe extern "C" fn(text: *const c_char, name: *const c_char, out: *mut *mut LoomObject) -> LoomStatus,
    pub ir_print: unsafe extern "C" fn(module: *mut LoomObject, out: *mut LoomValue) -> LoomStatus,
    pub run_passes: unsafe extern "C" fn(
        module: *mut LoomObject,
        passes: *const c_char,
        opt_level: i32,
        out: *mut *mut LoomObject,
    ) -> LoomStatus,
    pub pass_register: unsafe extern "C" fn(
        info: *const LoomPassInfo,
        fn_: LoomPassFunction,
        resource: *mut c_void,
        finalizer: Option<Finalizer>,
    ) -> LoomStatus,
}

/// The plugin ABI's manifest header (`loom/plugin.h`), for plugins
/// written in Rust (`loom::plugin`).
#[repr(C)]
pub struct LoomPluginManifestHeader {
    pub magic: [u8; 8],
    pub struct_size: u32,
    pub abi_major: u16,
    pub abi_minor: u16,
    pub text_size: u32,
    pub reserved: u32,
}

#[repr(C)]
pub struct LoomPluginHost {
    pub struct_size: u32,
    pub abi_major: u16,
    pub abi_minor: u16,
    pub core_version: *const c_char,
    pub plugin_name: *const c_char,
    pub plugin_path: *const c_char,
    pub flags: u32,
}

extern "C" {
    pub fn LoomGetApi(version: u32) -> *const LoomApi;
    pub fn LoomGetLastError() -> *const c_char;
}

// The compiler table lives in libloom_core, which only the `compiler`
// feature links (a deployed program needs the runtime library alone).
#[cfg(feature = "compiler")]
extern "C" {
    pub fn LoomGetCompilerApi(version: u32) -> *const LoomCompilerApi;
}

pub type InitFn = unsafe extern "C" fn(host: *const LoomPluginHost, error: *mut c_char, error_size: usize) -> c_int;
