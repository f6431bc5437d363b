//! libcontentcards from Rust, with the standard library alone: `ffi` declares the C functions
//! of include/contentcards.h; this module wraps them safely. Handles and strings the library
//! owns are released by `Drop` (`cc_controller_close`, `cc_snapshot_close`, `cc_string_free`),
//! every status is turned into a `Result` with the library's message, and Rust strings cross
//! as NUL-terminated copies (an interior NUL is an error here, never undefined behaviour).
pub mod ffi;

use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::{c_char, c_int};
use std::ptr;

/// A failed call: the status (a negative CC_E_* code), its name and the library's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: i32,
    pub name: String,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// The thread's last error, read right after the failing call (as the header says).
fn error(status: c_int) -> Error {
    unsafe {
        Error {
            code: status,
            name: text(ffi::cc_status_name(status)).unwrap_or_default(),
            message: text(ffi::cc_last_error_message()).unwrap_or_default(),
        }
    }
}

fn check(status: c_int) -> Result<()> {
    if status == ffi::CC_OK { Ok(()) } else { Err(error(status)) }
}

/// A copy of a library-owned C string (NULL: None).
unsafe fn text(p: *const c_char) -> Option<String> {
    if p.is_null() { None } else { Some(CStr::from_ptr(p).to_string_lossy().into_owned()) }
}

/// A Rust string as a C string argument; an interior NUL is refused before the call.
fn c(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error {
        code: -1,
        name: "CC_E_INVALID_ARGUMENT".into(),
        message: format!("{:?} holds a NUL character", s),
    })
}

/// A string the library allocated (a `char **` output): freed with cc_string_free on drop.
pub struct LibString(*mut c_char);

impl LibString {
    pub fn as_str(&self) -> &str {
        if self.0.is_null() { "" } else { unsafe { CStr::from_ptr(self.0) }.to_str().unwrap_or("") }
    }
}

impl Drop for LibString {
    fn drop(&mut self) {
        unsafe { ffi::cc_string_free(self.0) }
    }
}

impl fmt::Display for LibString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The loaded library's version.
pub fn version() -> String {
    unsafe { text(ffi::cc_version()) }.unwrap_or_default()
}

/// A class-type filter as the header takes it: None for every card, else a JSON array.
fn filter(class_types: Option<&[&str]>) -> Result<Option<CString>> {
    match class_types {
        None => Ok(None),
        Some(types) => {
            let quoted: Vec<String> = types.iter().map(|t| json_string(t)).collect();
            c(&format!("[{}]", quoted.join(","))).map(Some)
        }
    }
}

/// A JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn ptr_of(f: &Option<CString>) -> *const c_char {
    f.as_ref().map_or(ptr::null(), |s| s.as_ptr())
}

/// Badge counts of the visible feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub total: i64,
    pub unviewed: i64,
    pub unread: i64,
}

/// A controller: closed on drop. `Send` and `Sync`, as the header allows any thread.
pub struct Controller(*mut ffi::cc_controller);

unsafe impl Send for Controller {}
unsafe impl Sync for Controller {}

impl Controller {
    /// Opens a controller from configuration JSON (README, "Configuration").
    pub fn open(config_json: &str) -> Result<Controller> {
        let config = c(config_json)?;
        let mut handle = ptr::null_mut();
        check(unsafe { ffi::cc_controller_open(&mut handle, config.as_ptr()) })?;
        Ok(Controller(handle))
    }

    /// Refreshes and returns the summary JSON.
    pub fn refresh(&self, timeout_seconds: f64) -> Result<LibString> {
        let mut out = ptr::null_mut();
        check(unsafe { ffi::cc_controller_refresh(&mut out, self.0, timeout_seconds) })?;
        Ok(LibString(out))
    }

    pub fn counts(&self, class_types: Option<&[&str]>) -> Result<Counts> {
        let f = filter(class_types)?;
        let mut counts = Counts { total: 0, unviewed: 0, unread: 0 };
        check(unsafe {
            ffi::cc_controller_all_counts(&mut counts.total, &mut counts.unviewed, &mut counts.unread, self.0, ptr_of(&f))
        })?;
        Ok(counts)
    }

    pub fn log_impression(&self, card_id: &str) -> Result<()> {
        let id = c(card_id)?;
        check(unsafe { ffi::cc_controller_log_impression(self.0, id.as_ptr()) })
    }

    pub fn log_click(&self, card_id: &str) -> Result<()> {
        let id = c(card_id)?;
        check(unsafe { ffi::cc_controller_log_click(self.0, id.as_ptr()) })
    }

    pub fn log_dismissal(&self, card_id: &str) -> Result<()> {
        let id = c(card_id)?;
        check(unsafe { ffi::cc_controller_log_dismissal(self.0, id.as_ptr()) })
    }

    pub fn log_feed_displayed(&self) -> Result<()> {
        check(unsafe { ffi::cc_controller_log_feed_displayed(self.0) })
    }

    /// Marks the card read (or unread); true when its state changed.
    pub fn mark_read(&self, card_id: &str, read: bool) -> Result<bool> {
        let id = c(card_id)?;
        let mut changed: c_int = 0;
        check(unsafe { ffi::cc_controller_mark_read(&mut changed, self.0, id.as_ptr(), read as c_int) })?;
        Ok(changed != 0)
    }

    /// Marks every visible card (of the class types) read; how many changed.
    pub fn mark_all_read(&self, class_types: Option<&[&str]>) -> Result<i64> {
        let f = filter(class_types)?;
        let mut changed = 0i64;
        check(unsafe { ffi::cc_controller_mark_all_read(&mut changed, self.0, ptr_of(&f)) })?;
        Ok(changed)
    }

    pub fn pending_events(&self) -> Result<i64> {
        let mut n = 0i64;
        check(unsafe { ffi::cc_controller_pending_events(&mut n, self.0) })?;
        Ok(n)
    }

    /// A snapshot of the visible feed (of the class types); it borrows the controller, so it
    /// cannot outlive it, and is closed on drop.
    pub fn snapshot(&self, class_types: Option<&[&str]>) -> Result<Snapshot<'_>> {
        let f = filter(class_types)?;
        let mut handle = ptr::null_mut();
        check(unsafe { ffi::cc_controller_snapshot(&mut handle, self.0, ptr_of(&f)) })?;
        // Owned from here: closed on drop, also when counting fails.
        let mut snapshot = Snapshot { handle, count: 0, _controller: std::marker::PhantomData };
        check(unsafe { ffi::cc_snapshot_count(&mut snapshot.count, handle) })?;
        Ok(snapshot)
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        unsafe { ffi::cc_controller_close(self.0) };
    }
}

/// A snapshot of the feed: every card field by name, without a JSON parser. Strings are copied
/// out, so nothing borrowed from the snapshot outlives it.
pub struct Snapshot<'a> {
    handle: *mut ffi::cc_snapshot,
    count: usize,
    _controller: std::marker::PhantomData<&'a Controller>,
}

impl Snapshot<'_> {
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// A string field ("id", "title", "classType", "imagePath"...); None where the card has none.
    pub fn string(&self, index: usize, field: &str) -> Result<Option<String>> {
        let name = c(field)?;
        let mut out = ptr::null();
        check(unsafe { ffi::cc_snapshot_string(&mut out, self.handle, index, name.as_ptr()) })?;
        Ok(unsafe { text(out) })
    }

    /// A boolean field ("isControl", "pinned", "read"...).
    pub fn bool(&self, index: usize, field: &str) -> Result<bool> {
        let name = c(field)?;
        let mut out: c_int = 0;
        check(unsafe { ffi::cc_snapshot_bool(&mut out, self.handle, index, name.as_ptr()) })?;
        Ok(out != 0)
    }

    /// An extras value by key; None when the card has no such key.
    pub fn extra(&self, index: usize, key: &str) -> Result<Option<String>> {
        let name = c(key)?;
        let mut out = ptr::null();
        check(unsafe { ffi::cc_snapshot_extra(&mut out, self.handle, index, name.as_ptr()) })?;
        Ok(unsafe { text(out) })
    }
}

impl Drop for Snapshot<'_> {
    fn drop(&mut self) {
        unsafe { ffi::cc_snapshot_close(self.handle) };
    }
}

/// The configuration the examples open: the sample feed, in memory.
pub fn sample_config(user: &str) -> String {
    format!("{{\"userId\":{},\"source\":{{\"file\":{}}}}}", json_string(user), json_string(env!("CC_SAMPLE_FEED")))
}
