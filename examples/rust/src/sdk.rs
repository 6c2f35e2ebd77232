//! A safe wrapper over the C ABI: a Session that closes itself, calls that return Result with the
//! library's message.
use crate::ffi;
use std::ffi::{CStr, CString};
use std::os::raw::c_void;
use std::ptr;

/// A refused call: its ns_status and the library's message naming the call, slot and value.
#[derive(Debug)]
pub struct Error {
    pub status: ffi::ns_status,
    pub message: String,
}

impl Error {
    /// The status's name and meaning (ns_status_string).
    pub fn status_text(&self) -> String {
        // SAFETY: ns_status_string returns a static NUL-terminated string for any value.
        unsafe { CStr::from_ptr(ffi::ns_status_string(self.status)) }.to_string_lossy().into_owned()
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (status {})", self.message, self.status)
    }
}

impl std::error::Error for Error {}

/// What a step's checks found (ns_step_result).
pub type StepResult = ffi::ns_step_result;

fn check(status: ffi::ns_status) -> Result<(), Error> {
    if status == ffi::NS_OK {
        return Ok(());
    }
    // SAFETY: ns_last_error returns a NUL-terminated string valid until this thread's next call.
    let message = unsafe { CStr::from_ptr(ffi::ns_last_error()) }.to_string_lossy().into_owned();
    Err(Error { status, message })
}

fn text(s: &str) -> CString {
    CString::new(s).expect("no NUL inside")
}

pub struct Slot<'a> {
    pub name: &'a str,
    pub phase: &'a str,
    pub order: i32,
    pub consumers: &'a str,
    /// The buffer: its address as u64 and its f32 count; None for a buffer this run does not have.
    pub buffer: Option<(u64, usize)>,
    /// ffi::NS_ROLE_*: the run's loss or gradient norm (element 0).
    pub role: i32,
}

/// An open session. Not `Sync`: share it between threads behind a lock (the library serialises a
/// session's calls, but the step's order is the trainer's).
pub struct Session {
    handle: ffi::ns_session,
}

impl Session {
    pub fn open(run_dir: &str, trainer: &str, config: &str, folds: i32) -> Result<Session, Error> {
        let (dir, name, cfg) = (text(run_dir), text(trainer), text(config));
        let o = ffi::ns_session_options {
            run_dir: dir.as_ptr(),
            trainer: name.as_ptr(),
            config_text: cfg.as_ptr(),
            folds,
            seed: 3,
            guard: 1,
            health: 1,
            capture: 1,
            overwrite: 1,
            ..Default::default()
        };
        let mut handle = ffi::ns_session::default();
        // SAFETY: `o` and its strings outlive the call; the library copies what it keeps.
        check(unsafe { ffi::ns_session_open(&o, &mut handle) })?;
        Ok(Session { handle })
    }

    pub fn register(&self, s: &Slot) -> Result<i32, Error> {
        let (name, phase, consumers) = (text(s.name), text(s.phase), text(s.consumers));
        let (address, count) = s.buffer.unwrap_or((0, 0));
        let d = ffi::ns_slot_desc {
            name: name.as_ptr(),
            phase: phase.as_ptr(),
            order: s.order,
            consumers: consumers.as_ptr(),
            count: count as i64,
            dtype: ffi::NS_F32,
            memory: ffi::NS_HOST,
            address,
            state: if s.buffer.is_some() { ffi::NS_SLOT_CHECKED } else { ffi::NS_SLOT_ABSENT },
            role: s.role,
            ..Default::default()
        };
        let mut id = -1;
        // SAFETY: as above.
        check(unsafe { ffi::ns_slot_register(self.handle, &d, &mut id) })?;
        Ok(id)
    }

    pub fn fold_begin(&self, fold: i32) -> Result<(), Error> {
        check(unsafe { ffi::ns_fold_begin(self.handle, fold) })
    }
    pub fn fold_end(&self, fold: i32) -> Result<(), Error> {
        check(unsafe { ffi::ns_fold_end(self.handle, fold) })
    }
    /// Between steps: the slot's buffer moved (or a deferred slot's exists now).
    pub fn set_address(&self, slot: i32, address: u64) -> Result<(), Error> {
        check(unsafe { ffi::ns_slot_set_address(self.handle, slot, address) })
    }
    pub fn step_begin(&self, step: i32) -> Result<(), Error> {
        check(unsafe { ffi::ns_step_begin(self.handle, step, ptr::null_mut()) })
    }
    pub fn check(&self, slots: &[i32]) -> Result<(), Error> {
        check(unsafe { ffi::ns_check(self.handle, slots.as_ptr(), slots.len() as i32, ptr::null_mut()) })
    }
    pub fn allows_update(&self) -> Result<bool, Error> {
        let mut allowed = 0;
        check(unsafe { ffi::ns_guard_allows_update(self.handle, &mut allowed) })?;
        Ok(allowed != 0)
    }
    pub fn step_end(&self) -> Result<StepResult, Error> {
        let mut r = StepResult::default();
        check(unsafe { ffi::ns_step_end(self.handle, &mut r) })?;
        Ok(r)
    }
    /// The library's writer: the writes not yet done, or the write that failed since last asked.
    pub fn writer_status(&self) -> Result<i32, Error> {
        let mut pending = 0;
        check(unsafe { ffi::ns_writer_status(self.handle, &mut pending) })?;
        Ok(pending)
    }
    /// The device path's step begun on a CUDA stream (a cudaStream_t).
    pub fn step_begin_on(&self, step: i32, stream: *mut c_void) -> Result<(), Error> {
        check(unsafe { ffi::ns_step_begin(self.handle, step, stream) })
    }
    /// Closes the session, the last run file written; its error if a write failed. The session
    /// is gone whatever the library says, except while a CUDA capture of its stream is under way
    /// (NS_ERR_STATE): then it stays open, to be closed once the capture ends.
    pub fn close(&mut self) -> Result<(), Error> {
        if self.handle.id == 0 {
            return Ok(());
        }
        let status = unsafe { ffi::ns_session_close(self.handle) };
        if status != ffi::NS_ERR_STATE {
            self.handle = ffi::ns_session::default();
        }
        check(status)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.handle.id != 0 {
            // SAFETY: the handle is ours; a failure here has no one left to report to.
            unsafe { ffi::ns_session_close(self.handle) };
        }
    }
}
