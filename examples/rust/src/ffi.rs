//! The C ABI of include/nanscope/nanscope.h (ABI 1), declared by hand (no bindgen: the crate has
//! no dependency outside the standard library). Pointers travel as u64, as the trainer nanscope
//! came from passes its device pointers. Structs carry struct_size and zeroed reserved fields; use
//! the `Default` impls, which are the header's NS_*_INIT.
#![allow(non_camel_case_types, dead_code)]
use std::os::raw::{c_char, c_int, c_void};

pub type ns_status = i32;
pub const NS_OK: ns_status = 0;
pub const NS_ERR_ARGUMENT: ns_status = 1;
pub const NS_ERR_HANDLE: ns_status = 2;
pub const NS_ERR_STATE: ns_status = 3;
pub const NS_ERR_SLOT: ns_status = 4;
pub const NS_ERR_MEMORY: ns_status = 5;
pub const NS_ERR_IO: ns_status = 6;
pub const NS_ERR_UNSUPPORTED: ns_status = 7;
pub const NS_ERR_VERSION: ns_status = 8;
pub const NS_ERR_DEVICE: ns_status = 9;
pub const NS_ERR_OUT_OF_MEMORY: ns_status = 10;
pub const NS_ERR_INTERNAL: ns_status = 11;

pub const NS_F32: i32 = 0;
pub const NS_F64: i32 = 1;
pub const NS_HOST: i32 = 0;
pub const NS_DEVICE: i32 = 1;
pub const NS_SLOT_CHECKED: i32 = 0;
pub const NS_SLOT_ABSENT: i32 = 1;
pub const NS_SLOT_DEFERRED: i32 = 2;
pub const NS_ROLE_NONE: i32 = 0;
pub const NS_ROLE_LOSS: i32 = 1;
pub const NS_ROLE_GRAD_NORM: i32 = 2;
pub const NS_HALT_NONE: i32 = 0;
pub const NS_HALT_NAN: i32 = 1;
pub const NS_HALT_GRAD_COLLAPSE: i32 = 2;

/// A session handle: a struct of one u64, so that no integer or address passes for one.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ns_session {
    pub id: u64,
}

#[repr(C)]
pub struct ns_session_options {
    pub struct_size: u32,
    pub reserved0: u32,
    pub run_dir: *const c_char,
    pub trainer: *const c_char,
    pub config_text: *const c_char,
    pub folds: i32,
    pub reserved1: u32,
    pub seed: u64,
    pub guard: i32,
    pub health: i32,
    pub capture: i32,
    pub halt_on_nan: i32,
    pub grad_collapse_below: f64,
    pub overwrite: i32,
    pub reserved2: u32,
}

impl Default for ns_session_options {
    fn default() -> Self {
        ns_session_options {
            struct_size: std::mem::size_of::<ns_session_options>() as u32,
            reserved0: 0,
            run_dir: std::ptr::null(),
            trainer: std::ptr::null(),
            config_text: std::ptr::null(),
            folds: 0,
            reserved1: 0,
            seed: 0,
            guard: 0,
            health: 0,
            capture: 0,
            halt_on_nan: 0,
            grad_collapse_below: 0.0,
            overwrite: 0,
            reserved2: 0,
        }
    }
}

#[repr(C)]
pub struct ns_slot_desc {
    pub struct_size: u32,
    pub reserved0: u32,
    pub name: *const c_char,
    pub phase: *const c_char,
    pub order: i32,
    pub reserved1: u32,
    pub consumers: *const c_char,
    pub count: i64,
    pub dtype: i32,
    pub memory: i32,
    pub address: u64,
    pub state: i32,
    pub role: i32,
    /// 0: the buffer is 1-D [count]; else its shape is shape[..ndim].
    pub ndim: i32,
    pub reserved2: u32,
    pub shape: [i64; 8],
}

impl Default for ns_slot_desc {
    fn default() -> Self {
        ns_slot_desc {
            struct_size: std::mem::size_of::<ns_slot_desc>() as u32,
            reserved0: 0,
            name: std::ptr::null(),
            phase: std::ptr::null(),
            order: 0,
            reserved1: 0,
            consumers: std::ptr::null(),
            count: 0,
            dtype: NS_F32,
            memory: NS_HOST,
            address: 0,
            state: NS_SLOT_CHECKED,
            role: NS_ROLE_NONE,
            ndim: 0,
            reserved2: 0,
            shape: [0; 8],
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ns_step_result {
    pub struct_size: u32,
    pub fired: i32,
    pub first_fire: i32,
    pub entry_slot: i32,
    pub entry_step: i32,
    pub halt: i32,
    pub updated: i32,
    pub halt_step: i32,
    pub replays: i32,
}

impl Default for ns_step_result {
    fn default() -> Self {
        ns_step_result {
            struct_size: std::mem::size_of::<ns_step_result>() as u32,
            fired: 0,
            first_fire: 0,
            entry_slot: -1,
            entry_step: -1,
            halt: NS_HALT_NONE,
            updated: 0,
            halt_step: -1,
            replays: 0,
        }
    }
}

#[link(name = "nanscope")]
extern "C" {
    pub fn ns_version(major: *mut c_int, minor: *mut c_int, patch: *mut c_int);
    pub fn ns_abi_version() -> c_int;
    pub fn ns_last_error() -> *const c_char;
    pub fn ns_status_string(status: i32) -> *const c_char;
    pub fn ns_session_open(o: *const ns_session_options, out: *mut ns_session) -> ns_status;
    pub fn ns_session_close(s: ns_session) -> ns_status;
    pub fn ns_slot_register(s: ns_session, d: *const ns_slot_desc, id: *mut i32) -> ns_status;
    pub fn ns_slot_set_address(s: ns_session, slot: i32, address: u64) -> ns_status;
    pub fn ns_slot_undefer(s: ns_session, slot: i32) -> ns_status;
    pub fn ns_fold_begin(s: ns_session, fold: i32) -> ns_status;
    pub fn ns_fold_end(s: ns_session, fold: i32) -> ns_status;
    pub fn ns_step_begin(s: ns_session, step: i32, stream: *mut c_void) -> ns_status;
    pub fn ns_check(s: ns_session, slots: *const i32, n: i32, stream: *mut c_void) -> ns_status;
    pub fn ns_step_end(s: ns_session, r: *mut ns_step_result) -> ns_status;
    pub fn ns_step_replayed(s: ns_session, stream: *mut c_void, r: *mut ns_step_result) -> ns_status;
    pub fn ns_guard_allows_update(s: ns_session, allowed: *mut i32) -> ns_status;
    pub fn ns_guard_word(s: ns_session, address: *mut u64) -> ns_status;
    pub fn ns_writer_status(s: ns_session, pending: *mut i32) -> ns_status;
    pub fn ns_check_at(s: ns_session, slots: *const i32, addresses: *const u64, n: i32,
                       stream: *mut c_void) -> ns_status;
}
