//! The C ABI of include/nanscope/nanscope.h, declared by hand (no bindgen: the crate has no
//! dependency outside the standard library). Pointers travel as u64, as the trainer nanscope came
//! from passes its device pointers.
#![allow(non_camel_case_types, dead_code)]
use std::os::raw::{c_char, c_int, c_void};

pub type ns_status = c_int;
pub type ns_session = u64;
pub const NS_OK: ns_status = 0;
pub const NS_F32: i32 = 0;
pub const NS_HOST: i32 = 0;
pub const NS_SLOT_CHECKED: i32 = 0;
pub const NS_SLOT_ABSENT: i32 = 1;
pub const NS_ROLE_NONE: i32 = 0;
pub const NS_ROLE_LOSS: i32 = 1;
pub const NS_ROLE_GRAD_NORM: i32 = 2;

#[repr(C)]
pub struct ns_session_options {
    pub struct_size: u32,
    pub run_dir: *const c_char,
    pub trainer: *const c_char,
    pub config_text: *const c_char,
    pub folds: i32,
    pub seed: u64,
    pub guard: i32,
    pub health: i32,
    pub capture: i32,
    pub halt_on_nan: i32,
    pub grad_collapse_below: f64,
    pub overwrite: i32,
}

#[repr(C)]
pub struct ns_slot_desc {
    pub struct_size: u32,
    pub name: *const c_char,
    pub phase: *const c_char,
    pub order: i32,
    pub consumers: *const c_char,
    pub count: i64,
    pub dtype: i32,
    pub memory: i32,
    pub address: u64,
    pub state: i32,
    pub role: i32,
    /// 0: the buffer is 1-D [count]; else its shape is shape[..ndim].
    pub ndim: i32,
    pub shape: [i64; 8],
}

#[repr(C)]
#[derive(Default, Clone, Copy, Debug)]
pub struct ns_step_result {
    pub struct_size: u32,
    pub fired: i32,
    pub first_fire: i32,
    pub entry_slot: i32,
    pub entry_step: i32,
    pub halt: i32,
    pub updated: i32,
}

extern "C" {
    pub fn ns_abi_version() -> c_int;
    pub fn ns_last_error() -> *const c_char;
    pub fn ns_session_open(o: *const ns_session_options, out: *mut ns_session) -> ns_status;
    pub fn ns_session_close(s: ns_session) -> ns_status;
    pub fn ns_slot_register(s: ns_session, d: *const ns_slot_desc, id: *mut i32) -> ns_status;
    pub fn ns_fold_begin(s: ns_session, fold: i32) -> ns_status;
    pub fn ns_fold_end(s: ns_session, fold: i32) -> ns_status;
    pub fn ns_step_begin(s: ns_session, step: i32, stream: *mut c_void) -> ns_status;
    pub fn ns_check(s: ns_session, slots: *const i32, n: i32, stream: *mut c_void) -> ns_status;
    pub fn ns_step_end(s: ns_session, r: *mut ns_step_result) -> ns_status;
    pub fn ns_guard_allows_update(s: ns_session, allowed: *mut i32) -> ns_status;
}
