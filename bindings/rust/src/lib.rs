//! Loom from Rust: run a library Loom exported, through Loom's stable C
//! API (`loom/c_api.h`, docs/c-api.md), with the runtime library alone.
//!
//! ```no_run
//! let lib = loom::Module::load("mlp.so")?;
//! let main = lib.function("main")?;
//! let x = vec![0.5f32; 64 * 784];
//! let y = main.call(&[loom::Arg::slice(&x, &[64, 784]) /* , weights... */])?;
//! let y = y.into_tensor()?;
//! println!("{:?} {} {:?}", y.shape(), y.dtype(), &y.to_vec::<f32>()?[..10]);
//! # Ok::<(), loom::Error>(())
//! ```
//!
//! Ownership: every handle (`Module`, `Function`, `Tensor`, `Object`) is
//! one counted reference, given back on `Drop` and shared by `Clone`.
//! Threads: handles are `Send + Sync`; a function may be called from
//! several threads at once.  Errors: every fallible call returns
//! `Result<_, loom::Error>` carrying Loom's message.  The crate has no
//! dependencies; it links `libloom_runtime` (build.rs says where from), and
//! with the feature `compiler` also `libloom_core` for `plugin` (passes
//! written in Rust).

pub mod ffi;
#[cfg(feature = "compiler")]
pub mod plugin;

use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::{c_char, c_void};
use std::ptr;

/// Loom's error: the message of the C API's last error on this thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    pub fn new(message: impl Into<String>) -> Error {
        Error { message: message.into() }
    }
    /// Loom's message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// The runtime table (version 1); an Error when the library is older.
pub(crate) fn api() -> Result<&'static ffi::LoomApi> {
    // SAFETY: LoomGetApi returns a pointer to a static table or null.
    let table = unsafe { ffi::LoomGetApi(1) };
    if table.is_null() {
        return Err(Error::new(unsafe { string_of(ffi::LoomGetLastError()) }));
    }
    Ok(unsafe { &*table })
}

unsafe fn string_of(s: *const c_char) -> String {
    if s.is_null() {
        String::new()
    } else {
        CStr::from_ptr(s).to_string_lossy().into_owned()
    }
}

pub(crate) fn check(status: ffi::LoomStatus) -> Result<()> {
    if status == ffi::LOOM_OK {
        return Ok(());
    }
    let api = api()?;
    Err(Error::new(unsafe { string_of((api.last_error)()) }))
}

pub(crate) fn c_string(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::new(format!("a string for Loom holds a NUL byte: {:?}", s)))
}

/// One counted reference to any Loom object.
pub struct Object {
    raw: *mut ffi::LoomObject,
}

// Loom's objects are reference counted atomically and its runtime entries
// may be called from any thread.
unsafe impl Send for Object {}
unsafe impl Sync for Object {}

impl Object {
    /// Takes over a reference the C API handed out (non-null).
    pub(crate) unsafe fn from_raw(raw: *mut ffi::LoomObject) -> Object {
        Object { raw }
    }
    pub fn as_raw(&self) -> *mut ffi::LoomObject {
        self.raw
    }
    /// Gives up the reference to the caller (who must release it).
    pub fn into_raw(self) -> *mut ffi::LoomObject {
        let raw = self.raw;
        std::mem::forget(self);
        raw
    }
    /// The object's type key ("runtime.NDArray", "Function", ...).
    pub fn type_key(&self) -> Result<String> {
        let api = api()?;
        let mut out: *const c_char = ptr::null();
        check(unsafe { (api.object_type_key)(self.raw, &mut out) })?;
        Ok(unsafe { string_of(out) })
    }
    /// The reference count (for tests and leak checks).
    pub fn use_count(&self) -> Result<i32> {
        let api = api()?;
        let mut out = 0;
        check(unsafe { (api.object_use_count)(self.raw, &mut out) })?;
        Ok(out)
    }
    /// The reflected field `name`.
    pub fn field(&self, name: &str) -> Result<Value> {
        let api = api()?;
        let name = c_string(name)?;
        let mut out = ffi::LoomValue::none();
        check(unsafe { (api.object_get_field)(self.raw, name.as_ptr(), &mut out) })?;
        unsafe { Value::take(out) }
    }
}

impl Clone for Object {
    fn clone(&self) -> Object {
        if let Ok(api) = api() {
            unsafe { (api.object_retain)(self.raw) };
        }
        Object { raw: self.raw }
    }
}

impl Drop for Object {
    fn drop(&mut self) {
        if let Ok(api) = api() {
            unsafe { (api.object_release)(self.raw) };
        }
    }
}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Object({})", self.type_key().unwrap_or_default())
    }
}

/// A module: an exported library's module tree.
#[derive(Clone, Debug)]
pub struct Module {
    object: Object,
}

impl Module {
    /// Loads an exported library (`loomc build ... -o LIB.so`), loading the
    /// runtime halves of the backends it names.
    pub fn load(path: impl AsRef<std::path::Path>) -> Result<Module> {
        let api = api()?;
        let path = c_string(&path.as_ref().to_string_lossy())?;
        let mut out = ptr::null_mut();
        check(unsafe { (api.module_load)(path.as_ptr(), ptr::null(), &mut out) })?;
        Ok(Module { object: unsafe { Object::from_raw(out) } })
    }
    /// The function `name` of the module or, depth first, of its imports.
    pub fn function(&self, name: &str) -> Result<Function> {
        let api = api()?;
        let name = c_string(name)?;
        let mut out = ptr::null_mut();
        check(unsafe { (api.module_get_function)(self.object.raw, name.as_ptr(), &mut out) })?;
        Ok(Function { object: unsafe { Object::from_raw(out) } })
    }
    /// The names of the module's own functions.
    pub fn function_names(&self) -> Result<Vec<String>> {
        let api = api()?;
        let mut out = ffi::LoomValue::none();
        check(unsafe { (api.module_function_names)(self.object.raw, &mut out) })?;
        match unsafe { Value::take(out) }? {
            Value::Str(s) => Ok(s.lines().map(str::to_string).collect()),
            _ => Ok(Vec::new()),
        }
    }
    pub fn object(&self) -> &Object {
        &self.object
    }
}

/// A Loom function: a module's, a global one, or one written in Rust.
#[derive(Clone, Debug)]
pub struct Function {
    object: Object,
}

/// An argument of a call.
pub enum Arg<'a> {
    None,
    Int(i64),
    Float(f64),
    Str(&'a str),
    /// A Loom tensor (or any object).
    Object(&'a Object),
    /// The caller's memory as a compact CPU tensor, not copied: it must
    /// stay valid for the call, which `'a` ensures.
    View {
        data: *mut c_void,
        shape: &'a [i64],
        dtype: DataType,
    },
}

impl<'a> Arg<'a> {
    /// A slice seen as a tensor of `shape` (row-major), without a copy.
    pub fn slice<T: Element>(data: &'a [T], shape: &'a [i64]) -> Arg<'a> {
        Arg::View { data: data.as_ptr() as *mut c_void, shape, dtype: T::DTYPE }
    }
    pub fn tensor(t: &'a Tensor) -> Arg<'a> {
        Arg::Object(&t.object)
    }
}

impl<'a> From<i64> for Arg<'a> {
    fn from(v: i64) -> Arg<'a> {
        Arg::Int(v)
    }
}
impl<'a> From<f64> for Arg<'a> {
    fn from(v: f64) -> Arg<'a> {
        Arg::Float(v)
    }
}
impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Arg<'a> {
        Arg::Str(v)
    }
}
impl<'a> From<&'a Tensor> for Arg<'a> {
    fn from(t: &'a Tensor) -> Arg<'a> {
        Arg::tensor(t)
    }
}

impl Function {
    /// The global function `name`; an Error when none is registered.
    pub fn global(name: &str) -> Result<Function> {
        let api = api()?;
        let c_name = c_string(name)?;
        let mut out = ptr::null_mut();
        check(unsafe { (api.global_function_get)(c_name.as_ptr(), &mut out) })?;
        if out.is_null() {
            return Err(Error::new(format!("no global function named '{}'", name)));
        }
        Ok(Function { object: unsafe { Object::from_raw(out) } })
    }

    /// Calls the function.  A slice argument must match the function's
    /// declared shape and dtype (Loom checks and says which one does not).
    pub fn call(&self, args: &[Arg<'_>]) -> Result<Value> {
        let api = api()?;
        let n = args.len();
        // Storage that outlives the call: strings and DLTensor views.
        let mut strings = Vec::new(); // allocates only for a string argument
        let mut views: Vec<ffi::DLTensor> = Vec::with_capacity(n);
        let mut values = Vec::with_capacity(n);
        for a in args {
            let v = match a {
                Arg::None => ffi::LoomValue::none(),
                Arg::Int(i) => ffi::LoomValue { kind: ffi::LOOM_INT, v: ffi::LoomValueData { v_int: *i } },
                Arg::Float(x) => ffi::LoomValue { kind: ffi::LOOM_FLOAT, v: ffi::LoomValueData { v_float: *x } },
                Arg::Str(s) => {
                    strings.push(c_string(s)?);
                    let p = strings.last().unwrap().as_ptr();
                    ffi::LoomValue { kind: ffi::LOOM_STR, v: ffi::LoomValueData { v_str: p } }
                }
                Arg::Object(o) => ffi::LoomValue { kind: ffi::LOOM_OBJECT, v: ffi::LoomValueData { v_object: o.raw } },
                Arg::View { data, shape, dtype } => {
                    views.push(ffi::DLTensor {
                        data: *data,
                        device: ffi::DLDevice { device_type: ffi::KDL_CPU, device_id: 0 },
                        ndim: shape.len() as i32,
                        dtype: dtype.raw,
                        shape: shape.as_ptr() as *mut i64,
                        strides: ptr::null_mut(),
                        byte_offset: 0,
                    });
                    // `views` never grows past `n`, so this address stays put.
                    let p = views.last_mut().unwrap() as *mut ffi::DLTensor;
                    ffi::LoomValue { kind: ffi::LOOM_DLTENSOR, v: ffi::LoomValueData { v_dltensor: p } }
                }
            };
            values.push(v);
        }
        // A view's element count must be what its shape says.
        for a in args {
            if let Arg::View { shape, .. } = a {
                if shape.iter().any(|&d| d < 0) {
                    return Err(Error::new(format!("a tensor view's shape {:?} has a negative extent", shape)));
                }
            }
        }
        let mut result = ffi::LoomValue::none();
        check(unsafe { (api.function_call)(self.object.raw, values.as_ptr(), n as i32, &mut result) })?;
        unsafe { Value::take(result) }
    }

    /// A Loom function that runs `f` (callable from any language through
    /// Loom, from any thread).  A panic in `f` becomes an Error.
    pub fn from_closure<F>(f: F) -> Result<Function>
    where
        F: Fn(&[Value]) -> Result<Value> + Send + Sync + 'static,
    {
        let api = api()?;
        let boxed: Box<Box<dyn Fn(&[Value]) -> Result<Value> + Send + Sync>> = Box::new(Box::new(f));
        let resource = Box::into_raw(boxed) as *mut c_void;
        let mut out = ptr::null_mut();
        let status = unsafe { (api.function_from_c)(call_closure, resource, Some(drop_closure), &mut out) };
        if status != ffi::LOOM_OK {
            unsafe { drop_closure(resource) };
            check(status)?;
        }
        Ok(Function { object: unsafe { Object::from_raw(out) } })
    }

    /// Registers the function as the global `name` (Error if taken and not
    /// `allow_override`).
    pub fn register_global(&self, name: &str, allow_override: bool) -> Result<()> {
        let api = api()?;
        let name = c_string(name)?;
        check(unsafe { (api.global_function_register)(name.as_ptr(), self.object.raw, allow_override as i32) })
    }

    pub fn object(&self) -> &Object {
        &self.object
    }
}

type Closure = Box<dyn Fn(&[Value]) -> Result<Value> + Send + Sync>;

unsafe extern "C" fn call_closure(
    resource: *mut c_void,
    args: *const ffi::LoomValue,
    num_args: i32,
    result: *mut ffi::LoomValue,
) -> ffi::LoomStatus {
    let f = &*(resource as *const Closure);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut values = Vec::with_capacity(num_args.max(0) as usize);
        for k in 0..num_args.max(0) as usize {
            values.push(Value::borrow(&*args.add(k))?);
        }
        f(&values)
    }));
    let message = match outcome {
        Ok(Ok(v)) => match v.into_raw() {
            Ok(raw) => {
                *result = raw;
                return ffi::LOOM_OK;
            }
            Err(e) => e.message,
        },
        Ok(Err(e)) => e.message,
        Err(panic) => format!("a Rust function panicked: {}", panic_message(&panic)),
    };
    if let Ok(api) = api() {
        let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
        (api.set_last_error)(text.as_ptr());
    }
    1
}

unsafe extern "C" fn drop_closure(resource: *mut c_void) {
    drop(Box::from_raw(resource as *mut Closure));
}

pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

/// A value a call returned (or a Rust function received).
#[derive(Clone, Debug)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Tensor(Tensor),
    Object(Object),
}

impl Value {
    /// Takes over what a LoomValue Loom returned holds.
    unsafe fn take(mut raw: ffi::LoomValue) -> Result<Value> {
        if raw.kind == ffi::LOOM_OBJECT {
            return Ok(Value::of_object(Object::from_raw(raw.v.v_object))); // the reference moves over
        }
        let value = Value::borrow(&raw);
        if let Ok(api) = api() {
            (api.value_release)(&mut raw);
        }
        value
    }

    /// A tensor for a runtime.NDArray, else the object (the type key read
    /// without a copy: this runs once per call).
    fn of_object(object: Object) -> Value {
        let mut key: *const c_char = ptr::null();
        let is_tensor = match api() {
            Ok(api) => unsafe {
                (api.object_type_key)(object.raw, &mut key) == ffi::LOOM_OK
                    && !key.is_null()
                    && CStr::from_ptr(key).to_bytes() == b"runtime.NDArray"
            },
            Err(_) => false,
        };
        if is_tensor {
            Value::Tensor(Tensor { object })
        } else {
            Value::Object(object)
        }
    }

    /// A Value for a LoomValue that stays owned by Loom (retains objects).
    unsafe fn borrow(raw: &ffi::LoomValue) -> Result<Value> {
        Ok(match raw.kind {
            ffi::LOOM_NONE => Value::None,
            ffi::LOOM_BOOL => Value::Bool(raw.v.v_int != 0),
            ffi::LOOM_INT => Value::Int(raw.v.v_int),
            ffi::LOOM_FLOAT => Value::Float(raw.v.v_float),
            ffi::LOOM_STR => Value::Str(string_of(raw.v.v_str)),
            ffi::LOOM_OBJECT => {
                (api()?.object_retain)(raw.v.v_object);
                Value::of_object(Object::from_raw(raw.v.v_object))
            }
            k => return Err(Error::new(format!("a value of kind {} cannot come back from Loom", k))),
        })
    }

    /// The LoomValue a Rust function hands Loom (an object's reference
    /// moves with it; a string is copied by Loom before the call returns,
    /// so it is leaked into a thread-local buffer here until the next one).
    fn into_raw(self) -> Result<ffi::LoomValue> {
        Ok(match self {
            Value::None => ffi::LoomValue::none(),
            Value::Bool(b) => ffi::LoomValue { kind: ffi::LOOM_BOOL, v: ffi::LoomValueData { v_int: b as i64 } },
            Value::Int(i) => ffi::LoomValue { kind: ffi::LOOM_INT, v: ffi::LoomValueData { v_int: i } },
            Value::Float(x) => ffi::LoomValue { kind: ffi::LOOM_FLOAT, v: ffi::LoomValueData { v_float: x } },
            Value::Str(s) => {
                let text = c_string(&s)?;
                let p = RESULT_TEXT.with(|cell| {
                    let mut slot = cell.borrow_mut();
                    *slot = text;
                    slot.as_ptr()
                });
                ffi::LoomValue { kind: ffi::LOOM_STR, v: ffi::LoomValueData { v_str: p } }
            }
            Value::Tensor(t) => {
                ffi::LoomValue { kind: ffi::LOOM_OBJECT, v: ffi::LoomValueData { v_object: t.object.into_raw() } }
            }
            Value::Object(o) => {
                ffi::LoomValue { kind: ffi::LOOM_OBJECT, v: ffi::LoomValueData { v_object: o.into_raw() } }
            }
        })
    }

    /// The tensor this value is; an Error naming what it is otherwise.
    pub fn into_tensor(self) -> Result<Tensor> {
        match self {
            Value::Tensor(t) => Ok(t),
            other => Err(Error::new(format!("expected a tensor, got {:?}", other))),
        }
    }
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(*b as i64),
            _ => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Float(x) => Some(*x),
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
}

thread_local! {
    static RESULT_TEXT: std::cell::RefCell<CString> = std::cell::RefCell::new(CString::default());
}

/// A tensor's element type (DLPack's code, bits and lanes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataType {
    pub raw: ffi::DLDataType,
}

impl DataType {
    pub const fn new(code: u8, bits: u8) -> DataType {
        DataType { raw: ffi::DLDataType { code, bits, lanes: 1 } }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.raw.code {
            0 => "int",
            1 => "uint",
            2 => "float",
            4 => "bfloat",
            6 => "bool",
            _ => "code",
        };
        write!(f, "{}{}", kind, self.raw.bits)?;
        if self.raw.lanes > 1 {
            write!(f, "x{}", self.raw.lanes)?;
        }
        Ok(())
    }
}

/// Rust element types with a Loom dtype.
pub trait Element: Copy + Default + 'static {
    const DTYPE: DataType;
}
impl Element for f32 {
    const DTYPE: DataType = DataType::new(2, 32);
}
impl Element for f64 {
    const DTYPE: DataType = DataType::new(2, 64);
}
impl Element for i8 {
    const DTYPE: DataType = DataType::new(0, 8);
}
impl Element for i32 {
    const DTYPE: DataType = DataType::new(0, 32);
}
impl Element for i64 {
    const DTYPE: DataType = DataType::new(0, 64);
}
impl Element for u8 {
    const DTYPE: DataType = DataType::new(1, 8);
}

/// A Loom tensor (runtime.NDArray).
#[derive(Clone, Debug)]
pub struct Tensor {
    object: Object,
}

impl Tensor {
    /// A new CPU tensor holding a copy of `data`, of `shape` (row-major).
    pub fn from_slice<T: Element>(data: &[T], shape: &[i64]) -> Result<Tensor> {
        let count: i64 = shape.iter().product();
        if shape.iter().any(|&d| d < 0) || count as usize != data.len() {
            return Err(Error::new(format!(
                "a tensor of shape {:?} holds {} elements, the slice {}",
                shape,
                count.max(0),
                data.len()
            )));
        }
        let api = api()?;
        let mut out = ptr::null_mut();
        let cpu = ffi::DLDevice { device_type: ffi::KDL_CPU, device_id: 0 };
        check(unsafe { (api.tensor_empty)(shape.as_ptr(), shape.len() as i32, T::DTYPE.raw, cpu, &mut out) })?;
        let tensor = Tensor { object: unsafe { Object::from_raw(out) } };
        let dl = tensor.dltensor()?;
        if !data.is_empty() {
            unsafe {
                let dst = (dl.data as *mut u8).add(dl.byte_offset as usize) as *mut T;
                ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len());
            }
        }
        Ok(tensor)
    }

    fn dltensor(&self) -> Result<&ffi::DLTensor> {
        let api = api()?;
        let mut out: *const ffi::DLTensor = ptr::null();
        check(unsafe { (api.tensor_get_dltensor)(self.object.raw, &mut out) })?;
        Ok(unsafe { &*out })
    }

    pub fn shape(&self) -> Vec<i64> {
        match self.dltensor() {
            Ok(t) if t.ndim > 0 => unsafe { std::slice::from_raw_parts(t.shape, t.ndim as usize).to_vec() },
            _ => Vec::new(),
        }
    }
    pub fn dtype(&self) -> DataType {
        self.dltensor().map(|t| DataType { raw: t.dtype }).unwrap_or(DataType::new(0, 0))
    }
    pub fn device(&self) -> ffi::DLDevice {
        self.dltensor().map(|t| t.device).unwrap_or(ffi::DLDevice { device_type: 0, device_id: 0 })
    }
    /// The elements, borrowed: a CPU tensor of dtype T only.
    pub fn as_slice<T: Element>(&self) -> Result<&[T]> {
        let t = self.dltensor()?;
        if t.dtype != T::DTYPE.raw {
            return Err(Error::new(format!("the tensor holds {}, not {}", DataType { raw: t.dtype }, T::DTYPE)));
        }
        if t.device.device_type != ffi::KDL_CPU {
            return Err(Error::new("the tensor is not on the CPU: copy it there first"));
        }
        let count: i64 = self.shape().iter().product();
        if count == 0 {
            return Ok(&[]);
        }
        Ok(unsafe {
            std::slice::from_raw_parts((t.data as *const u8).add(t.byte_offset as usize) as *const T, count as usize)
        })
    }
    /// The elements, copied.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.as_slice::<T>().map(|s| s.to_vec())
    }
    /// Hands the tensor to a DLPack consumer without copying; it lives
    /// until the consumer calls the deleter.
    pub fn to_dlpack(&self) -> Result<*mut ffi::DLManagedTensor> {
        let api = api()?;
        let mut out = ptr::null_mut();
        check(unsafe { (api.tensor_to_dlpack)(self.object.raw, &mut out) })?;
        Ok(out)
    }
    /// Takes a DLPack producer's tensor without copying.
    ///
    /// # Safety
    /// `managed` must be a valid DLManagedTensor whose ownership passes to
    /// Loom (which calls its deleter, also on failure).
    pub unsafe fn from_dlpack(managed: *mut ffi::DLManagedTensor) -> Result<Tensor> {
        let api = api()?;
        let mut out = ptr::null_mut();
        check((api.tensor_from_dlpack)(managed, &mut out))?;
        Ok(Tensor { object: Object::from_raw(out) })
    }
    pub fn object(&self) -> &Object {
        &self.object
    }
}
