//! The functions of include/contentcards.h this crate uses, declared by hand as `extern "C"`
//! (the header is the contract: each signature here is the header's, type for type).
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_double, c_int};

/// Opaque handles: never dereferenced, only passed back.
#[repr(C)]
pub struct cc_controller {
    _private: [u8; 0],
}
#[repr(C)]
pub struct cc_snapshot {
    _private: [u8; 0],
}

pub const CC_OK: c_int = 0;

extern "C" {
    pub fn cc_version() -> *const c_char;
    pub fn cc_last_error_message() -> *const c_char;
    pub fn cc_status_name(status: c_int) -> *const c_char;
    pub fn cc_string_free(string: *mut c_char);

    pub fn cc_controller_open(out: *mut *mut cc_controller, config_json: *const c_char) -> c_int;
    pub fn cc_controller_close(controller: *mut cc_controller) -> c_int;
    pub fn cc_controller_refresh(out_summary_json: *mut *mut c_char, controller: *mut cc_controller,
                                 timeout_seconds: c_double) -> c_int;
    pub fn cc_controller_counts(out_total: *mut i64, out_unviewed: *mut i64, controller: *mut cc_controller,
                                filter_json: *const c_char) -> c_int;
    pub fn cc_controller_all_counts(out_total: *mut i64, out_unviewed: *mut i64, out_unread: *mut i64,
                                    controller: *mut cc_controller, filter_json: *const c_char) -> c_int;
    pub fn cc_controller_log_impression(controller: *mut cc_controller, card_id: *const c_char) -> c_int;
    pub fn cc_controller_log_click(controller: *mut cc_controller, card_id: *const c_char) -> c_int;
    pub fn cc_controller_log_dismissal(controller: *mut cc_controller, card_id: *const c_char) -> c_int;
    pub fn cc_controller_log_feed_displayed(controller: *mut cc_controller) -> c_int;
    pub fn cc_controller_mark_read(out_changed: *mut c_int, controller: *mut cc_controller,
                                   card_id: *const c_char, read: c_int) -> c_int;
    pub fn cc_controller_mark_all_read(out_changed: *mut i64, controller: *mut cc_controller,
                                       filter_json: *const c_char) -> c_int;
    pub fn cc_controller_pending_events(out_count: *mut i64, controller: *mut cc_controller) -> c_int;

    pub fn cc_controller_snapshot(out: *mut *mut cc_snapshot, controller: *mut cc_controller,
                                  filter_json: *const c_char) -> c_int;
    pub fn cc_snapshot_count(out_count: *mut usize, snapshot: *const cc_snapshot) -> c_int;
    pub fn cc_snapshot_string(out: *mut *const c_char, snapshot: *const cc_snapshot, index: usize,
                              field: *const c_char) -> c_int;
    pub fn cc_snapshot_bool(out: *mut c_int, snapshot: *const cc_snapshot, index: usize,
                            field: *const c_char) -> c_int;
    pub fn cc_snapshot_extra(out: *mut *const c_char, snapshot: *const cc_snapshot, index: usize,
                             key: *const c_char) -> c_int;
    pub fn cc_snapshot_close(snapshot: *mut cc_snapshot) -> c_int;
}
