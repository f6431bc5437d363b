//! The wrappers against the real library: the same results as the C and Python tests of the
//! sample feed, errors as `Err` with the library's status and message, and read state.
use contentcards::{sample_config, Controller};

#[test]
fn sample_feed_counts_and_order() {
    let c = Controller::open(&sample_config("u-1")).expect("open");
    let summary = c.refresh(10.0).expect("refresh");
    assert!(summary.as_str().contains("\"added\":11"), "{}", summary);
    let counts = c.counts(None).unwrap();
    assert_eq!((counts.total, counts.unviewed, counts.unread), (10, 9, 9));
    let snap = c.snapshot(Some(&["coupon_code"])).unwrap();
    assert_eq!(snap.len(), 2);
    assert_eq!(snap.string(0, "id").unwrap().as_deref(), Some("coupon-control"));
    assert!(snap.bool(0, "isControl").unwrap());
    assert_eq!(snap.extra(1, "discount_percentage").unwrap().as_deref(), Some("20"));
    assert_eq!(snap.string(1, "imagePath").unwrap(), None); // no image cache configured
}

#[test]
fn errors_carry_the_status_and_message() {
    let c = Controller::open(&sample_config("u-1")).unwrap();
    c.refresh(10.0).unwrap();
    let e = c.log_click("nope").unwrap_err();
    assert_eq!((e.code, e.name.as_str()), (-5, "CC_E_NOT_FOUND"));
    assert!(e.message.contains("nope"));
    let e = c.log_click("msg-2").unwrap_err(); // no url: refused
    assert_eq!(e.name, "CC_E_REFUSED");
    assert!(c.log_impression("a\0b").is_err()); // an interior NUL never reaches C
    let e = Controller::open("{\"userid\":\"x\"}").err().expect("unknown key");
    assert_eq!(e.name, "CC_E_CONFIG");
    assert!(e.message.contains("userid"));
    let snap = c.snapshot(None).unwrap();
    assert_eq!(snap.string(snap.len(), "id").unwrap_err().name, "CC_E_INVALID_ARGUMENT");
}

#[test]
fn read_state() {
    let c = Controller::open(&sample_config("u-1")).unwrap();
    c.refresh(10.0).unwrap();
    assert!(c.mark_read("msg-1", true).unwrap());
    assert!(!c.mark_read("msg-1", true).unwrap());
    let counts = c.counts(None).unwrap();
    assert_eq!((counts.unviewed, counts.unread), (9, 8)); // impressions keep their meaning
    assert_eq!(c.mark_all_read(Some(&["coupon_code"])).unwrap(), 2);
    assert_eq!(c.counts(None).unwrap().unread, 7);
    assert!(c.mark_read("msg-1", false).unwrap());
    assert_eq!(c.counts(None).unwrap().unread, 8);
    assert_eq!(c.pending_events().unwrap(), 4);
}

#[test]
fn controllers_from_threads() {
    let c = std::sync::Arc::new(Controller::open(&sample_config("u-1")).unwrap());
    c.refresh(10.0).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let c = c.clone();
            std::thread::spawn(move || (0..200).all(|_| c.counts(None).unwrap().total == 10))
        })
        .collect();
    assert!(threads.into_iter().all(|t| t.join().unwrap()));
}
