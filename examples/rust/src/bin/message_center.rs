//! message_center: an inbox, as message_center.c does, with read state: the unread badge
//! (cards not marked read), a message opened by class type and marked read, one marked unread
//! again, "mark all read", and a dismissal.
use contentcards::{sample_config, Controller, Result};

const MESSAGES: &[&str] = &["message_full_page", "message_webview"];

fn main() -> Result<()> {
    let c = Controller::open(&sample_config("reader"))?;
    c.refresh(10.0)?;
    c.log_feed_displayed()?;
    let snap = c.snapshot(Some(MESSAGES))?;
    println!("Messages:");
    println!("  inbox badge: {} unread", c.counts(Some(MESSAGES))?.unread);
    for i in 0..snap.len() {
        let id = snap.string(i, "id")?.unwrap_or_default();
        let title = snap.extra(i, "message_title")?.unwrap_or_default();
        println!("  * {}: {}", id, title);
        c.log_impression(&id)?; // displayed: viewed, not yet read
    }
    // The user opens the first message: the class type decides the screen; it is now read.
    if !snap.is_empty() {
        let id = snap.string(0, "id")?.unwrap_or_default();
        let screen = match snap.string(0, "classType")?.as_deref() {
            Some("message_full_page") => format!("full page \"{}\"", snap.extra(0, "message_header")?.unwrap_or_default()),
            _ => format!("web view {}", snap.extra(0, "message_url")?.unwrap_or_else(|| "(inline html)".into())),
        };
        println!("  -> {} opens {}", id, screen);
        if let Err(e) = c.log_click(&id) {
            println!("     click not logged: {}", e.message);
        }
        c.mark_read(&id, true)?;
        println!("  inbox badge: {} unread ({} marked read)", c.counts(Some(MESSAGES))?.unread, id);
        c.mark_read(&id, false)?;
        println!("  inbox badge: {} unread ({} marked unread again)", c.counts(Some(MESSAGES))?.unread, id);
    }
    let changed = c.mark_all_read(Some(MESSAGES))?;
    println!("  mark all read: {} changed; inbox badge: {} unread", changed, c.counts(Some(MESSAGES))?.unread);
    if let Some(first) = snap.string(0, "id")? {
        if let Err(e) = c.log_dismissal(&first) {
            println!("  dismiss {}: {}", first, e.message);
        }
    }
    println!("  events recorded: {}", c.pending_events()?);
    Ok(())
}
