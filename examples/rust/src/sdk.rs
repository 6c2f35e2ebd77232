//! A safe wrapper over the C ABI: a Session that closes itself, calls that return Result with the
//! library's message.
use crate::ffi;
use std::ffi::{CStr, CString};
use std::ptr;

#[derive(Debug)]
pub struct Error {
    pub status: i32,
    pub message: String,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (status {})", self.message, self.status)
    }
}

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

pub struct Session {
    handle: ffi::ns_session,
}

impl Session {
    pub fn open(run_dir: &str, trainer: &str, config: &str, folds: i32) -> Result<Session, Error> {
        let (dir, name, cfg) = (text(run_dir), text(trainer), text(config));
        let o = ffi::ns_session_options {
            struct_size: std::mem::size_of::<ffi::ns_session_options>() as u32,
            run_dir: dir.as_ptr(),
            trainer: name.as_ptr(),
            config_text: cfg.as_ptr(),
            folds,
            seed: 3,
            guard: 1,
            health: 1,
            capture: 1,
            halt_on_nan: 0,
            grad_collapse_below: 0.0,
            overwrite: 1,
        };
        let mut handle = 0;
        // SAFETY: `o` and its strings outlive the call; the library copies what it keeps.
        check(unsafe { ffi::ns_session_open(&o, &mut handle) })?;
        Ok(Session { handle })
    }

    pub fn register(&self, s: &Slot) -> Result<i32, Error> {
        let (name, phase, consumers) = (text(s.name), text(s.phase), text(s.consumers));
        let (address, count) = s.buffer.unwrap_or((0, 0));
        let d = ffi::ns_slot_desc {
            struct_size: std::mem::size_of::<ffi::ns_slot_desc>() as u32,
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
            ndim: 0,
            shape: [0; 8],
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
    pub fn step_end(&self) -> Result<ffi::ns_step_result, Error> {
        let mut r = ffi::ns_step_result {
            struct_size: std::mem::size_of::<ffi::ns_step_result>() as u32,
            ..Default::default()
        };
        check(unsafe { ffi::ns_step_end(self.handle, &mut r) })?;
        Ok(r)
    }
    /// Closes the session, the last run file written; its error if a write failed.
    pub fn close(mut self) -> Result<(), Error> {
        let h = std::mem::replace(&mut self.handle, 0);
        check(unsafe { ffi::ns_session_close(h) })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.handle != 0 {
            // SAFETY: the handle is ours; a failure here has no one left to report to.
            unsafe { ffi::ns_session_close(self.handle) };
        }
    }
}
