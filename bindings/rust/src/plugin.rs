//! Plugins written in Rust, on the C plugin tier (docs/c-api.md, "Plugins
//! in C"; docs/languages.md, "A pass in Rust"): a `cdylib` whose manifest
//! (`loom_plugin!`) declares what it provides and whose init registers
//! passes through the compiler table.  A pass works on IR text
//! (`IrModule::text`, `IrModule::parse`) or through the object protocol
//! (`Object::field`).  A panic in a pass, or in the init, becomes a Loom
//! error naming it; it never unwinds into Loom.

use crate::{api, c_string, check, ffi, panic_message, string_of, Error, Object, Result};
use std::os::raw::{c_char, c_int, c_void};
use std::ptr;

/// The version of Loom this crate describes: a plugin's manifest records
/// it, and a core of the same major version and a newer minor loads it.
#[macro_export]
macro_rules! core_version {
    () => {
        "0.2.0"
    };
}

/// The compiler table (libloom_core, version 1).
pub fn compiler() -> Result<&'static ffi::LoomCompilerApi> {
    let table = unsafe { ffi::LoomGetCompilerApi(1) };
    if table.is_null() {
        return Err(Error::new(unsafe { string_of(ffi::LoomGetLastError()) }));
    }
    Ok(unsafe { &*table })
}

/// An IRModule.
#[derive(Clone, Debug)]
pub struct IrModule {
    object: Object,
}

impl IrModule {
    /// Parses IR text; `name` stands for the file in messages.
    pub fn parse(text: &str, name: &str) -> Result<IrModule> {
        let c = compiler()?;
        let (text, name) = (c_string(text)?, c_string(name)?);
        let mut out = ptr::null_mut();
        check(unsafe { (c.ir_parse)(text.as_ptr(), name.as_ptr(), &mut out) })?;
        Ok(IrModule { object: unsafe { Object::from_raw(out) } })
    }
    /// The module as IR text.
    pub fn text(&self) -> Result<String> {
        let c = compiler()?;
        let mut out = ffi::LoomValue::none();
        check(unsafe { (c.ir_print)(self.object.as_raw(), &mut out) })?;
        let s = unsafe { string_of(out.v.v_str) };
        unsafe { (api()?.value_release)(&mut out) };
        Ok(s)
    }
    /// Runs registered passes (comma separated, as a YAML pipeline names
    /// them) at `opt_level`.
    pub fn run_passes(&self, passes: &str, opt_level: i32) -> Result<IrModule> {
        let c = compiler()?;
        let passes = c_string(passes)?;
        let mut out = ptr::null_mut();
        check(unsafe { (c.run_passes)(self.object.as_raw(), passes.as_ptr(), opt_level, &mut out) })?;
        Ok(IrModule { object: unsafe { Object::from_raw(out) } })
    }
    pub fn object(&self) -> &Object {
        &self.object
    }
}

struct Pass {
    name: String,
    body: Box<dyn Fn(&IrModule) -> Result<IrModule> + Send + Sync>,
}

unsafe extern "C" fn run_pass(
    resource: *mut c_void,
    module: *mut ffi::LoomObject,
    out: *mut *mut ffi::LoomObject,
) -> i32 {
    let pass = &*(resource as *const Pass);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let api = api()?;
        (api.object_retain)(module);
        let input = IrModule { object: Object::from_raw(module) };
        (pass.body)(&input)
    }));
    let message = match outcome {
        Ok(Ok(m)) => {
            *out = m.object.into_raw();
            return ffi::LOOM_OK;
        }
        Ok(Err(e)) => format!("{}: {}", pass.name, e),
        Err(panic) => format!("{} panicked: {}", pass.name, panic_message(&panic)),
    };
    if let Ok(api) = api() {
        let text = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
        (api.set_last_error)(text.as_ptr());
    }
    1
}

unsafe extern "C" fn drop_pass(resource: *mut c_void) {
    drop(Box::from_raw(resource as *mut Pass));
}

/// Registers a pass (IRModule -> IRModule) named `name`: YAML pipelines,
/// `loomc opt --passes`, Python and `IrModule::run_passes` then run it.
pub fn register_pass<F>(name: &str, summary: &str, opt_level: i32, body: F) -> Result<()>
where
    F: Fn(&IrModule) -> Result<IrModule> + Send + Sync + 'static,
{
    let c = compiler()?;
    let (c_name, c_summary) = (c_string(name)?, c_string(summary)?);
    let info = ffi::LoomPassInfo {
        struct_size: std::mem::size_of::<ffi::LoomPassInfo>(),
        name: c_name.as_ptr(),
        opt_level,
        summary: c_summary.as_ptr(),
    };
    let resource = Box::into_raw(Box::new(Pass { name: name.to_string(), body: Box::new(body) })) as *mut c_void;
    let status = unsafe { (c.pass_register)(&info, run_pass, resource, Some(drop_pass)) };
    if status != ffi::LOOM_OK {
        // Loom calls the finalizer only for a pass it registered.
        unsafe { drop_pass(resource) };
    }
    check(status)
}

/// A plugin's manifest: the plugin ABI's header and its text, laid out as
/// `loom/plugin.h` says, in the section `.loom_manifest`.
#[repr(C)]
pub struct Manifest<const N: usize> {
    pub header: ffi::LoomPluginManifestHeader,
    pub text: [u8; N],
}

impl<const N: usize> Manifest<N> {
    pub const fn new(text: &[u8]) -> Manifest<N> {
        let mut bytes = [0u8; N];
        let mut k = 0;
        while k < N && k < text.len() {
            bytes[k] = text[k];
            k += 1;
        }
        Manifest {
            header: ffi::LoomPluginManifestHeader {
                magic: *b"LOOMPLG\0",
                struct_size: std::mem::size_of::<ffi::LoomPluginManifestHeader>() as u32,
                abi_major: 1,
                abi_minor: 2,
                text_size: N as u32,
                reserved: 0,
            },
            text: bytes,
        }
    }
}

/// Runs a plugin's init body: its Error or panic becomes the message the
/// core reports (`error`, `error_size`), and 1.
///
/// # Safety
/// `error` must point to `error_size` writable bytes (the core's buffer).
pub unsafe fn run_init<F: FnOnce() -> Result<()>>(error: *mut c_char, error_size: usize, init: F) -> c_int {
    // A panic's message reaches the user in Loom's error; the default hook
    // would print it (and a backtrace) on stderr besides.  The hook is this
    // plugin's own: a cdylib carries its own copy of std.
    std::panic::set_hook(Box::new(|_| {}));
    let message = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(init)) {
        Ok(Ok(())) => return 0,
        Ok(Err(e)) => e.to_string(),
        Err(panic) => format!("the plugin's init panicked: {}", panic_message(&panic)),
    };
    if !error.is_null() && error_size > 0 {
        let n = message.len().min(error_size - 1);
        ptr::copy_nonoverlapping(message.as_ptr() as *const c_char, error, n);
        *error.add(n) = 0;
    }
    1
}

/// Declares a plugin written in Rust: its manifest (name, version,
/// description, the capabilities it provides, so `loomc passes list` finds
/// its passes without loading it) and its init, a `fn() -> loom::Result<()>`.
///
/// ```ignore
/// loom::loom_plugin! {
///     name: "rust_passes", version: "1.0.0",
///     description: "a pass written in Rust",
///     provides: "pass:RustFoldDoubleNegation",
///     init: init
/// }
/// ```
#[macro_export]
macro_rules! loom_plugin {
    (name: $name:literal, version: $version:literal, description: $description:literal,
     provides: $provides:literal, init: $init:path) => {
        const __LOOM_MANIFEST_TEXT: &[u8] = concat!(
            "name=",
            $name,
            "\nversion=",
            $version,
            "\ndescription=",
            $description,
            "\nprovides=",
            $provides,
            "\ncore_version=",
            $crate::core_version!(),
            "\ncxx_abi=none\nc_api=1\n\0"
        )
        .as_bytes();
        #[used]
        #[link_section = ".loom_manifest"]
        static __LOOM_MANIFEST: $crate::plugin::Manifest<{ __LOOM_MANIFEST_TEXT.len() }> =
            $crate::plugin::Manifest::new(__LOOM_MANIFEST_TEXT);

        /// The plugin's init (loom/plugin.h), called once by the core.
        #[no_mangle]
        pub unsafe extern "C" fn loom_plugin_init_v1(
            _host: *const $crate::ffi::LoomPluginHost,
            error: *mut ::std::os::raw::c_char,
            error_size: usize,
        ) -> ::std::os::raw::c_int {
            // Reading the manifest keeps the linker from dropping its section.
            let _ = ::std::ptr::read_volatile(&__LOOM_MANIFEST.header.reserved);
            $crate::plugin::run_init(error, error_size, $init)
        }
    };
}
