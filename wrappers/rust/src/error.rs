//! The one place where a chainerc status becomes a Rust error.
use chainerc_sys as sys;
use std::any::Any;
use std::ffi::{CStr, CString};
use std::fmt;

/// The error kinds of the C API (`CH_ERR_*`), with their stable values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// An argument was out of range or inconsistent (`CH_ERR_INVALID_ARGUMENT`).
    InvalidArgument,
    /// A required handle was null (`CH_ERR_NULL_HANDLE`).
    NullHandle,
    /// A handle was used after its release (`CH_ERR_RELEASED_HANDLE`).
    ReleasedHandle,
    /// Shapes do not match or are invalid (`CH_ERR_SHAPE`).
    Shape,
    /// Dtypes do not match or are not supported (`CH_ERR_DTYPE`).
    Dtype,
    /// Wrong or unavailable device (`CH_ERR_DEVICE`).
    Device,
    /// An allocation failed (`CH_ERR_OUT_OF_MEMORY`).
    OutOfMemory,
    /// A user callback failed (`CH_ERR_CALLBACK`).
    Callback,
    /// The computational graph does not allow the call (`CH_ERR_GRAPH`).
    Graph,
    /// A gradient check found values not close (`CH_ERR_NOT_CLOSE`).
    NotClose,
    /// Reading or writing a file failed (`CH_ERR_IO`).
    Io,
    /// Not supported by this build or device (`CH_ERR_UNSUPPORTED`).
    Unsupported,
    /// A bug in chainerc (`CH_ERR_INTERNAL`).
    Internal,
    /// A status this version of the wrapper does not know.
    Other(i32),
}

impl ErrorKind {
    /// The kind of a C API status (a negative `ch_status`).
    pub fn from_status(status: i32) -> ErrorKind {
        match status {
            sys::CH_ERR_INVALID_ARGUMENT => ErrorKind::InvalidArgument,
            sys::CH_ERR_NULL_HANDLE => ErrorKind::NullHandle,
            sys::CH_ERR_RELEASED_HANDLE => ErrorKind::ReleasedHandle,
            sys::CH_ERR_SHAPE => ErrorKind::Shape,
            sys::CH_ERR_DTYPE => ErrorKind::Dtype,
            sys::CH_ERR_DEVICE => ErrorKind::Device,
            sys::CH_ERR_OUT_OF_MEMORY => ErrorKind::OutOfMemory,
            sys::CH_ERR_CALLBACK => ErrorKind::Callback,
            sys::CH_ERR_GRAPH => ErrorKind::Graph,
            sys::CH_ERR_NOT_CLOSE => ErrorKind::NotClose,
            sys::CH_ERR_IO => ErrorKind::Io,
            sys::CH_ERR_UNSUPPORTED => ErrorKind::Unsupported,
            sys::CH_ERR_INTERNAL => ErrorKind::Internal,
            other => ErrorKind::Other(other),
        }
    }
    /// The C API status of this kind.
    pub fn status(self) -> i32 {
        match self {
            ErrorKind::InvalidArgument => sys::CH_ERR_INVALID_ARGUMENT,
            ErrorKind::NullHandle => sys::CH_ERR_NULL_HANDLE,
            ErrorKind::ReleasedHandle => sys::CH_ERR_RELEASED_HANDLE,
            ErrorKind::Shape => sys::CH_ERR_SHAPE,
            ErrorKind::Dtype => sys::CH_ERR_DTYPE,
            ErrorKind::Device => sys::CH_ERR_DEVICE,
            ErrorKind::OutOfMemory => sys::CH_ERR_OUT_OF_MEMORY,
            ErrorKind::Callback => sys::CH_ERR_CALLBACK,
            ErrorKind::Graph => sys::CH_ERR_GRAPH,
            ErrorKind::NotClose => sys::CH_ERR_NOT_CLOSE,
            ErrorKind::Io => sys::CH_ERR_IO,
            ErrorKind::Unsupported => sys::CH_ERR_UNSUPPORTED,
            ErrorKind::Internal => sys::CH_ERR_INTERNAL,
            ErrorKind::Other(s) => s,
        }
    }
}

/// What a Rust callback (custom function, graph or eval closure) left behind
/// when it failed; carried through the engine with ch_error_set_payload.
pub enum Cause {
    /// The callback panicked: the original panic payload (resume it with
    /// `std::panic::resume_unwind`).
    Panic(Box<dyn Any + Send + 'static>),
    /// The callback returned this error.
    Error(Box<Error>),
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Panic(p) => write!(f, "Panic({:?})", panic_message(p.as_ref())),
            Cause::Error(e) => write!(f, "Error({e:?})"),
        }
    }
}

/// A failed chainerc call: the status kind, the library's message (which says
/// what was wrong with which values) and, when a Rust callback failed, the
/// original cause.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    cause: Option<Cause>,
}

/// `Result` with chainerc's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error, e.g. for a custom function's callback to return.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into(), cause: None }
    }
    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The C API status of the failure.
    pub fn status(&self) -> i32 {
        self.kind.status()
    }
    /// The library's message, naming what was wrong with which values.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The cause a Rust callback left (a panic or its own error), if any.
    pub fn cause(&self) -> Option<&Cause> {
        self.cause.as_ref()
    }
    /// The payload a callback failed with (a panic or a Rust error), once.
    pub fn take_cause(&mut self) -> Option<Cause> {
        self.cause.take()
    }
    /// The message of the panic that caused this error, if a callback panicked.
    pub fn panic_message(&self) -> Option<String> {
        match &self.cause {
            Some(Cause::Panic(p)) => Some(panic_message(p.as_ref())),
            _ => None,
        }
    }
    /// Unwind again with the original panic if a callback panicked; else
    /// return the error.
    pub fn resume_panic(mut self) -> Error {
        if let Some(Cause::Panic(p)) = self.cause.take() {
            std::panic::resume_unwind(p);
        }
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = unsafe { CStr::from_ptr(sys::ch_status_name(self.kind.status())) };
        write!(f, "{}: {}", name.to_string_lossy(), self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.cause {
            Some(Cause::Error(e)) => Some(e.as_ref()),
            _ => None,
        }
    }
}

pub(crate) fn panic_message(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

// --- payload carried through the C error state -------------------------------

const PAYLOAD_MAGIC: u64 = 0x6368_6169_6e65_7263; // "chainerc"

#[repr(C)]
struct Payload {
    magic: u64,
    cause: Cause,
}

unsafe extern "C" fn destroy_payload(p: *mut std::ffi::c_void) {
    if !p.is_null() {
        // Dropping a panic payload may itself panic: never unwind into C.
        let _ = std::panic::catch_unwind(|| drop(Box::from_raw(p as *mut Payload)));
    }
}

/// Record a callback failure for the engine: status, message and cause.
/// Returns the status for the callback to return.
pub(crate) fn report_failure(kind: ErrorKind, message: &str, cause: Cause) -> sys::ch_status {
    let status = if kind.status() == sys::CH_OK { sys::CH_ERR_CALLBACK } else { kind.status() };
    let msg = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    unsafe {
        sys::ch_error_set(status, msg.as_ptr());
        let payload = Box::into_raw(Box::new(Payload { magic: PAYLOAD_MAGIC, cause }));
        sys::ch_error_set_payload(payload as *mut _, Some(destroy_payload));
    }
    status
}

/// Run a callback body; turn a returned error or a panic into a status
/// (never unwinding through C).
pub(crate) fn guard<F: FnOnce() -> Result<()>>(body: F) -> sys::ch_status {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(Ok(())) => sys::CH_OK,
        Ok(Err(e)) => {
            let kind = e.kind;
            let msg = e.message.clone();
            report_failure(kind, &msg, Cause::Error(Box::new(e)))
        }
        Err(p) => {
            let msg = format!("panic: {}", panic_message(p.as_ref()));
            report_failure(ErrorKind::Callback, &msg, Cause::Panic(p))
        }
    }
}

/// The error of the failed call that just returned `status` on this thread.
#[cold]
pub(crate) fn last_error(status: sys::ch_status) -> Error {
    unsafe {
        let msg = CStr::from_ptr(sys::ch_error_message()).to_string_lossy().into_owned();
        let p = sys::ch_error_take_payload();
        let cause = if p.is_null() {
            None
        } else if (*(p as *const u64)) == PAYLOAD_MAGIC {
            Some(Box::from_raw(p as *mut Payload).cause)
        } else {
            None // another host's payload: not ours to interpret (it is leaked)
        };
        Error { kind: ErrorKind::from_status(status), message: msg, cause }
    }
}

#[inline]
pub(crate) fn check(status: sys::ch_status) -> Result<()> {
    if status == sys::CH_OK {
        Ok(())
    } else {
        Err(last_error(status))
    }
}
